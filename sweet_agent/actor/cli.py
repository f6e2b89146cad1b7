"""``sweet-agent train-actor``: step-level pairs from the critic, then DPO on the policy.

Stages (each skippable): sample ``--num_candidates`` actions per agent turn of ``--data`` from the
policy, score them with the critic from ``train-critic``, write pairs to ``--pairs_out``
(``--only_pairs`` stops there); or ``--pairs_in`` reuses pairs; then train with TRL's DPO.
The command line is the dataclasses: :class:`StepPairArguments`,
:class:`~sweet_agent.actor.config.ActorConfig` and ``trl.ModelConfig`` (``--config cpu|paper``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from sweet_agent.training_setup import CRITIC_META_FILE, TrainingDataArguments

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


def dataclass_types() -> tuple[type, ...]:
    from trl import ModelConfig

    from sweet_agent.actor.config import ActorConfig

    return StepPairArguments, ActorConfig, ModelConfig


def parse_args(argv: Sequence[str], prog: str = PROG, description: str | None = None) -> SimpleNamespace:
    """``SimpleNamespace(script, training, model)`` from the command line (TRL's TrlParser)."""
    from sweet_agent.training_setup import parse_command

    script, training, model = parse_command(prog, PRESETS, dataclass_types(), argv, description or __doc__)
    return SimpleNamespace(script=script, training=training, model=model)


def _load_critic(data_args: StepPairArguments, dtype: str | None, step_score: str = "critic-ref"):
    """``(critic, reference or None, tokenizer, sweet_critic.json)``; the release's step score reads
    no critic reference (the sampling policy takes its place), so none is loaded for it."""
    from sweet_agent.training_setup import load_model

    meta_path = Path(data_args.critic) / CRITIC_META_FILE
    if not meta_path.is_file():
        raise SystemExit(f"{PROG}: {meta_path} not found; --critic must be a `sweet-agent train-critic` output")
    meta = json.loads(meta_path.read_text())
    if meta["critic_type"] == "regression" and step_score == "release":
        raise SystemExit(f"{PROG}: --step_score release needs a log-probability critic, but {data_args.critic} is a "
                         "regression critic (no token log-probabilities); use --step_score critic-ref")
    if meta["critic_type"] == "regression":
        from transformers import AutoTokenizer

        from sweet_agent.critic.regression import RegressionCritic

        critic = RegressionCritic.from_pretrained(data_args.critic).eval()
        return critic, None, AutoTokenizer.from_pretrained(data_args.critic), meta
    critic, tok = load_model(data_args.critic, dtype)
    if step_score == "release":
        return critic.eval(), None, tok, meta
    ref, _ = load_model(data_args.critic_ref or meta["reference_model"], dtype)
    return critic.eval(), ref.eval(), tok, meta


def build_pairs(data_args: StepPairArguments, cfg, policy, tok, dtype: str | None) -> list[dict]:
    """Sample, score and pair candidates for the offline agent turns; write and return the rows."""
    from sweet_agent.actor.candidates import build_step_pairs
    from sweet_agent.training_data import records as R
    from sweet_agent.training_setup import require_data, write_jsonl

    if not data_args.critic:
        raise SystemExit(f"{PROG}: pass --data and --critic to build step pairs, or --pairs_in")
    records = R.load_records(require_data(PROG, data_args.data))
    critic, critic_ref, critic_tok, meta = _load_critic(data_args, dtype, cfg.step_score)
    if meta.get("pair_rule") == "release" and cfg.step_score != "release":
        print(f"[train-actor] note: the critic was trained with --pair_rule release; candidates are scored with "
              f"--step_score {cfg.step_score} (ours); --step_score release scores them as the release does")
    stats: dict[str, int] = {}
    rows = build_step_pairs(records, policy, tok, critic, critic_ref, critic_tok,
                            num_candidates=cfg.num_candidates, pairs_per_turn=cfg.pairs_per_turn,
                            turn_fraction=cfg.turn_fraction, max_new_tokens=cfg.max_new_tokens,
                            temperature=cfg.temperature, top_p=cfg.top_p,
                            sampling_batch_size=cfg.sampling_batch_size,
                            system_prompt=data_args.system_prompt or meta.get("system_prompt"),
                            normalize=meta["normalize"], use_privileged_info=meta["use_privileged_info"],
                            step_score=cfg.step_score, seed=cfg.seed, explore_candidates=cfg.explore_candidates,
                            explore_turns=cfg.explore_turns, first_turns=cfg.first_turns,
                            skip_turns=cfg.skip_turns, progress=True,
                            stats=stats)
    del critic, critic_ref
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
    from sweet_agent.training_setup import (
        check_run,
        load_model,
        nothing_to_train,
        peft_config,
        read_jsonl,
        resume_checkpoint,
        save_final,
    )

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
    if policy is None:
        policy, tok = load_model(model_args)
    trainer = make_dpo_trainer(policy, tok, rows, cfg, peft_config=peft_config(model_args))
    trainer.train(resume_from_checkpoint=resume_checkpoint(cfg))
    save_final(trainer, tok, cfg.output_dir, model_args)
    print(f"[train-actor] saved to {cfg.output_dir}")
    return 0
