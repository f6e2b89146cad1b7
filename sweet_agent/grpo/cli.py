"""``sweet-agent train-grpo``: online multi-turn GRPO on ColBench with TRL's ``GRPOTrainer``.

Each rollout plays one ColBench episode through tools (``ask_user``, ``submit_answer``,
``show_draft``) against the simulated person; the env's own reward (tests passed / success /
similarity) is the GRPO reward, optionally plus λ × the SWEET critic's score (``--critic DIR
--critic_weight λ``). Parsed like TRL's own scripts: ``TrlParser`` over
:class:`~sweet_agent.grpo.config.GRPOScriptArguments`,
:class:`~sweet_agent.grpo.config.ColBenchGRPOConfig` and ``trl.ModelConfig``; ``--config
cpu`` / ``--config paper`` (shipped presets) or ``--config my.yaml``; flags override presets.

Writes the LoRA adapter (or the model), ``trainer_state.json`` (per-step ``reward``,
``rewards/<Env>/mean``, ``tools/call_frequency``, ``colbench/*`` episode statistics) and
``grpo_steps.jsonl`` (one line per logged step) to ``--output_dir``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

PRESETS = Path(__file__).resolve().parent.parent / "configs" / "grpo"
#: Step metrics echoed to the console and written to grpo_steps.jsonl.
STEP_KEYS = ("reward", "reward_std", "tools/call_frequency", "colbench/questions", "colbench/drafts",
             "colbench/turns", "colbench/submitted", "colbench/success", "completions/mean_length")


def parse_args(argv: list[str], prog: str = "sweet-agent train-grpo", description: str | None = None):
    """``SimpleNamespace(script, training, model)`` from the command line (TRL's TrlParser)."""
    from trl import ModelConfig, TrlParser

    from sweet_agent.grpo.config import ColBenchGRPOConfig, GRPOScriptArguments

    args = list(argv)
    if "--config" in args:
        k = args.index("--config")
        if k + 1 >= len(args):
            raise SystemExit(f"{prog}: --config needs a YAML file or a preset name "
                             f"({', '.join(p.stem for p in sorted(PRESETS.glob('*.yaml')))})")
        spec = args[k + 1]
        if not Path(spec).is_file():
            shipped = PRESETS / f"{spec}.yaml"
            if not shipped.is_file():
                raise SystemExit(f"{prog}: --config {spec}: no such file and no shipped preset of that name "
                                 f"(shipped: {', '.join(p.stem for p in sorted(PRESETS.glob('*.yaml')))})")
            args[k + 1] = str(shipped)
    parser = TrlParser([GRPOScriptArguments, ColBenchGRPOConfig, ModelConfig], prog=prog,
                       description=description or __doc__.splitlines()[0], allow_abbrev=False)
    script, training, model = parser.parse_args_and_config(args)
    return SimpleNamespace(script=script, training=training, model=model)


def make_environment_factory(script) -> Any:
    """The TRL ``environment_factory`` for the script arguments: local ``gym.make`` or remote."""
    from colbench_gym.online import make_tool_env_factory
    from sweet_agent.prompts import env_kind

    if script.env_url:
        from colbench_gym.online.client import make_remote_tool_env_factory

        return make_remote_tool_env_factory(script.env_url)
    kind = env_kind(script.env_id)
    kw: dict[str, Any] = {"tasks": script.tasks, "simulator": script.simulator, "max_turns": script.max_turns}
    if script.simulator_kwargs:
        try:
            kw["simulator_kwargs"] = json.loads(script.simulator_kwargs)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--simulator_kwargs must be a JSON object ({exc})") from None
    if kind == "backend":
        kw["reward_mode"] = script.reward_mode
    return make_tool_env_factory(script.env_id, **kw)


def load_policy(model_args):
    """``(model, tokenizer)``: ``--model_name_or_path`` (default: the embedded 0.5B policy)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sweet_agent.training_setup import resolve_model

    path = resolve_model(model_args.model_name_or_path or "default")
    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    dtype = model_args.dtype
    kw: dict[str, Any] = {"dtype": dtype if dtype in (None, "auto") else getattr(torch, dtype)}
    if model_args.attn_implementation:
        kw["attn_implementation"] = model_args.attn_implementation
    return AutoModelForCausalLM.from_pretrained(path, **kw), tok


def build_trainer(script, training, model_args, model=None, tokenizer=None):
    """The :class:`ColBenchGRPOTrainer` for parsed arguments (``model``/``tokenizer`` override
    loading ``--model_name_or_path``)."""
    from trl import get_peft_config

    from sweet_agent.grpo.critic_reward import SweetCriticReward
    from sweet_agent.grpo.data import build_prompt_dataset
    from sweet_agent.grpo.trainer import ColBenchGRPOTrainer
    from sweet_agent.prompts import env_kind

    factory = make_environment_factory(script)
    dataset = build_prompt_dataset(env_kind(script.env_id), script.tasks, script.num_tasks, script.task_offset,
                                   seed=training.seed, max_turns=script.max_turns)
    reward_funcs = []
    if training.critic:
        reward_funcs.append(SweetCriticReward(training.critic, model_args.dtype or "float32",
                                              training.critic_reference))
        training.reward_weights = [training.critic_weight]
    if model is None:
        model, tokenizer = load_policy(model_args)
    return ColBenchGRPOTrainer(model=model, args=training, train_dataset=dataset, processing_class=tokenizer,
                               reward_funcs=reward_funcs or None, environment_factory=factory,
                               peft_config=get_peft_config(model_args))


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
    trainer = build_trainer(script, training, model_args)
    trainer.train()
    trainer.save_model(training.output_dir)
    trainer.save_state()
    steps = step_records(trainer.state.log_history)
    write_jsonl_atomic(Path(training.output_dir) / "grpo_steps.jsonl", steps)
    for rec in steps:
        env_reward = next((v for k, v in rec.items() if k.startswith("rewards/ColBench") and k.endswith("/mean")), None)
        print(f"[train-grpo] step {rec['step']}: reward {rec['reward']:.3f} env {env_reward} "
              f"questions {rec.get('colbench/questions')} turns {rec.get('colbench/turns')} "
              f"submitted {rec.get('colbench/submitted')} success {rec.get('colbench/success')}")
    print(f"[train-grpo] saved to {training.output_dir}", file=sys.stderr)
    return 0
