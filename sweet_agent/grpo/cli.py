"""``sweet-agent train-grpo``: online multi-turn GRPO on ColBench with TRL's ``GRPOTrainer``.

Each rollout plays one ColBench episode through tools (``ask_user``, ``submit_answer``,
``show_draft``) against the simulated person; the env's own reward (tests passed / success /
similarity) is the GRPO reward, optionally plus λ × the SWEET critic's score (``--critic DIR
--critic_weight λ``). Parsed like TRL's own scripts: ``TrlParser`` over
:class:`~sweet_agent.grpo.config.GRPOScriptArguments`,
:class:`~sweet_agent.grpo.config.ColBenchGRPOConfig` and ``trl.ModelConfig``; ``--config
cpu`` / ``--config paper`` (shipped presets) or ``--config my.yaml``; flags override presets.

The command line, the model loading, resuming (``--resume_from_checkpoint``) and the final save
are every training command's (:mod:`sweet_agent.training`): ``--output_dir`` receives the
model the next stage loads (with LoRA: the adapter in ``adapter/``, merged into a copy of the
base model beside it unless ``--merge_adapter false``), ``trainer_state.json`` (per-step ``reward``, ``rewards/<Env>/mean``,
``tools/call_frequency``, ``colbench/*`` episode statistics) and ``grpo_steps.jsonl`` (one line
per logged step).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sweet_agent.grpo.config import ColBenchGRPOConfig, GRPOScriptArguments
from sweet_agent.training.command import TrainingCommand, check_run
from sweet_agent.training.models import load_model, peft_config

PROG = "sweet-agent train-grpo"
PRESETS = "grpo"
#: Step metrics echoed to the console and written to grpo_steps.jsonl.
STEP_KEYS = ("reward", "reward_std", "tools/call_frequency", "colbench/questions", "colbench/drafts",
             "colbench/turns", "colbench/submitted", "colbench/success", "colbench/infrastructure_failures",
             "completions/mean_length")


# No --output_dir required: GRPOConfig has its own default (and the presets name one).
COMMAND = TrainingCommand(PROG, PRESETS, GRPOScriptArguments, ColBenchGRPOConfig, __doc__.splitlines()[0],
                          require_output_dir=False)
dataclass_types, parse_args = COMMAND.dataclass_types, COMMAND.parse_args


def make_environment_factory(script) -> Any:
    """The TRL ``environment_factory`` for the script arguments: local ``gym.make`` or remote."""
    from colbench_gym.online import make_tool_env_factory
    from colbench_gym.tasks.kinds import kind_of_env_id

    if script.env_url:
        from colbench_gym.online.client import make_remote_tool_env_factory

        return make_remote_tool_env_factory(script.env_url)
    kind = kind_of_env_id(script.env_id)
    kw: dict[str, Any] = {"tasks": script.tasks, "simulator": script.simulator, "max_turns": script.max_turns}
    if script.simulator_kwargs:
        try:
            kw["simulator_kwargs"] = json.loads(script.simulator_kwargs)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--simulator_kwargs must be a JSON object ({exc})") from None
    if "reward_mode" in kind.reward_options:  # only the kinds whose env takes it (the backend)
        kw["reward_mode"] = script.reward_mode
    return make_tool_env_factory(script.env_id, **kw)


def build_trainer(script, training, model_args, model=None, tokenizer=None):
    """The :class:`ColBenchGRPOTrainer` for parsed arguments (``model``/``tokenizer`` override
    loading ``--model_name_or_path``, default: the embedded 0.5B policy)."""
    from sweet_agent.grpo.critic_reward import SweetCriticReward
    from sweet_agent.grpo.data import build_prompt_dataset
    from sweet_agent.grpo.trainer import ColBenchGRPOTrainer
    from sweet_agent.prompts import env_kind

    factory = make_environment_factory(script)
    dataset = build_prompt_dataset(env_kind(script.env_id), script.tasks, script.num_tasks, script.task_offset,
                                   seed=training.seed, max_turns=script.max_turns)
    reward_funcs = []
    if training.critic:
        from sweet_agent.devices import resolve_device

        device = resolve_device(training.critic_device, use_cpu=bool(training.use_cpu))
        reward_funcs.append(SweetCriticReward(training.critic, model_args.dtype or "float32",
                                              training.critic_reference, device=device))
        training.reward_weights = [training.critic_weight]
    if model is None:
        model, tokenizer = load_model(model_args)
    return ColBenchGRPOTrainer(model=model, args=training, train_dataset=dataset, processing_class=tokenizer,
                               reward_funcs=reward_funcs or None, environment_factory=factory,
                               peft_config=peft_config(model_args))


def step_records(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-step training logs (TRL's ``log_history`` minus the end-of-training summary)."""
    out = []
    for entry in log_history:
        if "reward" not in entry:
            continue
        rec = {"step": entry.get("step")}
        rec.update({k: v for k, v in entry.items() if k in STEP_KEYS or k.startswith("rewards/")})
        rec["step_time"] = entry.get("step_time")
        out.append(rec)
    return out


def run(args) -> int:
    import os

    from colbench_gym.jsonl import write_jsonl_atomic

    script, training, model_args = args.script, args.training, args.model
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    check_run(PROG, training)
    trainer = build_trainer(script, training, model_args)
    COMMAND.train_and_save(trainer, trainer.processing_class, training, model_args, merge=script.merge_adapter)
    trainer.save_state()
    steps = step_records(trainer.state.log_history)
    write_jsonl_atomic(Path(training.output_dir) / "grpo_steps.jsonl", steps)
    for rec in steps:
        env_reward = next((v for k, v in rec.items() if k.startswith("rewards/ColBench") and k.endswith("/mean")), None)
        print(f"[train-grpo] step {rec['step']}: reward {rec['reward']:.3f} env {env_reward} "
              f"questions {rec.get('colbench/questions')} turns {rec.get('colbench/turns')} "
              f"submitted {rec.get('colbench/submitted')} success {rec.get('colbench/success')}")
    return 0
