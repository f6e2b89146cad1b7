"""The ``sweet-agent`` command: rollouts, evaluation, and SWEET-RL / baseline training."""

from __future__ import annotations

import sys

from colbench_gym.cli import dispatch

#: (command words, module, help). Modules by name, imported by ``dispatch`` only for the command
#: that runs: several import torch/transformers/trl at module level (``sweet_agent.baselines.rft``
#: took ~20 s on the loaded 2-core machine), which ``sweet-agent --help`` or ``sweet-agent evaluate``
#: must not pay. tests/reliability/test_cli_errors.py runs every entry, so a wrong name fails there.
COMMANDS: list[tuple[tuple[str, ...], str, str]] = [
    (("rollout",), "sweet_agent.rollout.cli", "play episodes with a policy and write trajectories"),
    (("evaluate",), "sweet_agent.rollout.evaluate",
     "print success, % tests passed, similarity, win rate (of files, or of best-of-N episodes it plays)"),
    (("fetch-model",), "sweet_agent.policies.default_model", "prepare the embedded default policy model offline"),
    (("train-critic",), "sweet_agent.critic.cli", "train SWEET-RL's privileged step-level critic"),
    (("train-actor",), "sweet_agent.actor.cli", "build step-level pairs with the critic and train the policy with DPO"),
    (("mc-values",), "sweet_agent.actor.mc_values",
     "Monte-Carlo value of candidate turns: complete each k times with the behaviour policy, grade the endings"),
    (("critic-report",), "sweet_agent.actor.critic_report",
     "per agent turn, how often a critic's step score orders candidates as their Monte-Carlo values do"),
    (("merge-pairs",), "sweet_agent.actor.pair_files",
     "join the step-pair shards of train-actor --shard I/N (refusing shards of other settings)"),
    (("train-rft",), "sweet_agent.baselines.rft", "rejection fine-tuning baseline"),
    (("train-mtdpo",), "sweet_agent.baselines.mtdpo", "multi-turn (trajectory-level) DPO baseline"),
    (("train-grpo",), "sweet_agent.grpo.cli", "online multi-turn GRPO against the environments (TRL GRPOTrainer)"),
    (("export",), "sweet_agent.interop.cli", "write trajectories in the paper release's shapes (--format release) or ours"),
    (("view",), "sweet_agent.viewer.build", "write a static trajectory viewer (transcripts, verdicts, critic credit)"),
    (("plot",), "sweet_agent.viewer.plots", "plot training curves from trainers' trainer_state.json"),
    (("leaderboard",), "sweet_agent.leaderboard.cli",
     "a results table from results files and submissions, beside the paper's published numbers"),
    (("submission", "check"), "sweet_agent.leaderboard.submission",
     "check a submission: recompute its results from its trajectories, its episodes against its task source"),
]


def main(argv: list[str] | None = None) -> int:
    try:
        code = dispatch("sweet-agent", COMMANDS, list(sys.argv[1:] if argv is None else argv))
    except BaseException:
        _close_process_group(barrier=False)  # the other ranks may never reach a barrier
        raise
    return _end_launch(code)


def _process_group():
    """``torch.distributed`` when this process is one rank of an initialised group, else None.
    torch is looked up, never imported, so commands that do not train stay light."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def _close_process_group(barrier: bool) -> None:
    dist = _process_group()
    if dist is None:
        return
    if barrier:
        dist.barrier()  # no rank tears down while another still saves or merges the model
    dist.destroy_process_group()


def _end_launch(code: int) -> int:
    """End one rank of a multi-process launch (``accelerate launch``).

    WHY: after the model was saved, a rank could still abort in the interpreter's teardown
    ("terminate called without an active exception": gloo's C++ worker threads still hold work
    objects when the interpreter is torn down, as pytorch/pytorch#179291 describes), and the
    launcher then fails the whole run with SIGABRT. Closing the group first made it rarer, not
    gone: a CI run of 2026-11-28 still lost a two-process DeepSpeed launch to it. So a rank whose
    command succeeded waits for the others (no rank tears down while another still saves or
    merges), closes the group, and leaves as the interpreter would (threads joined, ``atexit``
    handlers run, output flushed) but with ``os._exit``, skipping the teardown where the abort
    happens. A rank whose command failed closes the group without waiting (its peers may be inside
    a collective it will never join: the launcher stops them) and returns its code. A single
    process (every command without a launcher, every in-process caller such as the tests) returns."""
    dist = _process_group()
    if dist is None or dist.get_world_size() < 2 or code != 0:
        _close_process_group(barrier=False)
        return code
    try:
        _close_process_group(barrier=True)
    except Exception as exc:  # noqa: BLE001 - one line, and the launch fails
        print(f"sweet-agent: error: ending the launch: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        code = 1
    from sweet_agent.forkserver import leave_as_the_interpreter_does

    leave_as_the_interpreter_does()
    import os

    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
