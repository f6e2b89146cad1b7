"""Rejection fine-tuning (RFT) baseline: SFT on the successful trajectories, agent turns only.

``sweet-agent train-rft --data trajs.jsonl --output-dir out/rft``. The loss covers only the
agent's tokens (TRL ``SFTTrainer`` with ``assistant_only_loss=True``; TRL swaps in a training
chat template with ``{% generation %}`` markers for templates that lack them).
"""

from __future__ import annotations

import argparse
from typing import Any

from sweet_agent.critic import records as R


def rft_rows(records: list[dict[str, Any]], success_threshold: float | None = None,
             system_prompt: str | None = None, rule: str = "success") -> list[dict[str, Any]]:
    """``{"messages": [...]}`` rows of the successful trajectories (what the policy saw + did);
    with ``rule="best"``, of each task's best trajectories when no sample of it succeeded."""
    from collections import defaultdict

    from sweet_agent.critic.pairs import chosen_candidates

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        R.check_record(rec)
        groups[R.task_key(rec)].append(rec)
    keep = [r for g in groups.values() for r in chosen_candidates(g, success_threshold, rule)]
    rows = []
    for rec in keep:
        turns = R.agent_prompts(rec, system_prompt)
        if turns:
            prompt, output = turns[-1]
            rows.append({"messages": [*prompt, {"role": "assistant", "content": output}]})
    return rows


def make_rft_trainer(model, tokenizer, rows, args, peft_config=None, **kwargs):
    from datasets import Dataset
    from trl import SFTTrainer

    if not rows:
        raise ValueError("no successful trajectories to fine-tune on; collect more rollouts or lower "
                         "--success-threshold")
    ds = rows if isinstance(rows, Dataset) else Dataset.from_list(list(rows))
    return SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer,
                      peft_config=peft_config, **kwargs)


def rft_config(**kw):
    """``SFTConfig`` with agent-turn-only loss and CPU-safe precision."""
    from trl import SFTConfig

    kw.setdefault("assistant_only_loss", True)
    kw.setdefault("report_to", "none")
    return SFTConfig(**kw)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sweet_agent.training_setup import add_common_arguments

    parser.add_argument("--data", nargs="+", required=True, help="trajectory JSONL file(s) with rewards")
    parser.add_argument("--success-threshold", type=float, default=None,
                        help="reward counting as success (default: the record's success flag, else reward 1)")
    parser.add_argument("--pair-rule", default="success", choices=["success", "best"],
                        help="train on successful trajectories (paper) or on each task's best ones (small models)")
    parser.add_argument("--system-prompt", default=None, help="agent system prompt used in rollouts")
    add_common_arguments(parser, model_help="policy to fine-tune", default_lr=2e-7, default_epochs=1.0,
                         default_batch=8)


def run(args: argparse.Namespace) -> int:
    from sweet_agent.training_setup import (
        last_checkpoint,
        load_model,
        lora_config,
        save_final,
        training_kwargs,
    )

    records = R.load_records(args.data)
    rows = rft_rows(records, args.success_threshold, args.system_prompt, args.pair_rule)
    print(f"[train-rft] fine-tuning on {len(rows)} of {len(records)} trajectories (rule: {args.pair_rule})")
    model, tok = load_model(args.model, args.dtype)
    cfg = rft_config(max_length=args.max_length, **training_kwargs(args))
    trainer = make_rft_trainer(model, tok, rows, cfg, peft_config=lora_config(args))
    trainer.train(resume_from_checkpoint=last_checkpoint(args.output_dir) if args.resume else None)
    save_final(trainer, tok, args.output_dir)
    print(f"[train-rft] saved to {args.output_dir}")
    return 0
