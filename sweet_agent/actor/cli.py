"""``sweet-agent train-actor``: step-level pairs from the critic, then DPO on the policy.

Stages (each skippable): sample ``--num_candidates`` actions per agent turn of ``--data`` from the
policy, score them with the critic from ``train-critic``, write pairs to ``--pairs_out``
(``--only_pairs`` stops there); or ``--pairs_in`` reuses pairs; then train with TRL's DPO.
The command line is the dataclasses: :class:`StepPairArguments`,
:class:`~sweet_agent.actor.config.ActorConfig` and ``trl.ModelConfig`` (``--config cpu|paper``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from sweet_agent.training_setup import (
    TrainingCommand,
    TrainingDataArguments,
    check_run,
    load_model,
    nothing_to_train,
    read_jsonl,
    write_jsonl,
)

PROG = "sweet-agent train-actor"
PRESETS = "actor"


@dataclass
class StepPairArguments(TrainingDataArguments):
    """Where the step pairs come from (built from --data with --critic, or read from --pairs_in)."""

    critic: str | None = field(default=None, metadata={"help": "directory written by `sweet-agent train-critic`"})
    critic_ref: str | None = field(default=None, metadata={"help": "the critic's reference model (default: "
                                                                   "from sweet_critic.json)"})
    pairs_out: str | None = field(default=None, metadata={"help": "write step pairs here (default "
                                                                  "OUTPUT_DIR/step_pairs.jsonl)"})
    pairs_in: str | None = field(default=None, metadata={
        "help": "train on these step pairs instead of building them (several files: separated by commas)"})
    only_pairs: bool = field(default=False, metadata={"help": "build and write the pairs, do not train"})


COMMAND = TrainingCommand(PROG, PRESETS, StepPairArguments, "sweet_agent.actor.config:ActorConfig", __doc__)
dataclass_types, parse_args = COMMAND.dataclass_types, COMMAND.parse_args


def _load_critic(data_args: StepPairArguments, dtype: str | None, step_score: str = "critic-ref"):
    """The critic of ``--critic`` (the one loader, :func:`sweet_agent.critic.loading.load_critic`);
    the release's step score reads no critic reference (the sampling policy takes its place), so
    none is loaded for it."""
    from sweet_agent.critic.loading import CriticLoadError, load_critic, read_critic_meta

    try:
        if step_score == "release" and read_critic_meta(data_args.critic).get("critic_type") == "regression":
            raise SystemExit(f"{PROG}: --step_score release needs a log-probability critic, but {data_args.critic} "
                             "is a regression critic (no token log-probabilities); use --step_score critic-ref")
        return load_critic(data_args.critic, dtype, data_args.critic_ref, with_reference=step_score != "release")
    except CriticLoadError as exc:
        raise SystemExit(f"{PROG}: {exc}") from None


def build_pairs(data_args: StepPairArguments, cfg, policy, tok, dtype: str | None) -> list[dict]:
    """Sample, score and pair candidates for the offline agent turns; write and return the rows."""
    from sweet_agent.actor.candidates import build_step_pairs

    if not data_args.critic:
        raise SystemExit(f"{PROG}: pass --data and --critic to build step pairs, or --pairs_in")
    records = COMMAND.read_records(data_args)
    critic = _load_critic(data_args, dtype, cfg.step_score)
    if critic.meta.get("pair_rule") == "release" and cfg.step_score != "release":
        print(f"[train-actor] note: the critic was trained with --pair_rule release; candidates are scored with "
              f"--step_score {cfg.step_score} (ours); --step_score release scores them as the release does")
    stats: dict[str, int] = {}
    rows = build_step_pairs(records, policy, tok, critic, cfg,
                            system_prompt=data_args.system_prompt or critic.meta.get("system_prompt"),
                            seed=cfg.seed, progress=True, stats=stats)
    del critic
    out = data_args.pairs_out or f"{cfg.output_dir}/step_pairs.jsonl"
    write_jsonl(out, rows)
    print(f"[train-actor] {len(rows)} step pairs from {stats.get('turns', 0)} agent turns of {len(records)} "
          f"trajectories (step score: {cfg.step_score}) -> {out}")
    if stats.get("question_candidates"):
        print(f"[train-actor] {stats['question_candidates']} of {stats['candidates']} candidates started with a "
              f"question opener (--explore_candidates {cfg.explore_candidates:g}, first {cfg.explore_turns} turn(s))")
    if stats.get("truncated_candidates"):
        print(f"[train-actor] warning: {stats['truncated_candidates']} of {stats['candidates']} candidates were cut "
              f"at --max_new_tokens {cfg.max_new_tokens} (no end of turn); raise it to score whole actions")
    if stats.get("turns_without_pair"):
        print(f"[train-actor] {stats['turns_without_pair']} of {stats['turns']} turns gave no pair "
              "(all candidates identical)")
    return rows


def run(args: SimpleNamespace) -> int:
    data_args, cfg, model_args = args.script, args.training, args.model
    from sweet_agent.actor.trainer import make_dpo_trainer

    check_run(PROG, cfg)
    if data_args.pairs_in:
        paths = [p.strip() for p in data_args.pairs_in.split(",") if p.strip()]
        rows = [row for path in paths for row in read_jsonl(path)]
        print(f"[train-actor] {len(rows)} step pairs from {', '.join(paths)}")
        policy = tok = None
    else:
        policy, tok = load_model(model_args)
        rows = build_pairs(data_args, cfg, policy, tok, model_args.dtype)
        if data_args.only_pairs:
            return 0
    if not rows:
        nothing_to_train(PROG, "no step pairs (every turn's candidates were identical, or no turns were selected)",
                         "raise --num_candidates, --temperature or --turn_fraction")
    COMMAND.train_policy(make_dpo_trainer, rows, cfg, model_args, policy, tok)
    return 0
