"""The actor stage driver: step pairs (from the critic) → TRL's ``DPOTrainer``.

WHY no DPOTrainer subclass: once the pairs are built, SWEET-RL's actor update *is* DPO with an
NLL term (``loss_type=["sigmoid", "sft"]``, ``loss_weights=[1, 0.01]``) on single-turn
conversational rows, which TRL implements exactly; we only choose the reference model.
"""

from __future__ import annotations

from typing import Any

from datasets import Dataset
from trl import DPOTrainer

from sweet_agent.actor.config import ActorConfig
from sweet_agent.training.models import initial_copy

_EXTRA_COLUMNS = ("chosen_score", "rejected_score", "task_key", "agent_turn", "turn_index", "turn", "candidates_from")


def make_dpo_trainer(model, tokenizer, rows: list[dict[str, Any]] | Dataset, args: ActorConfig,
                     ref_model=None, peft_config=None, eval_rows=None, **kwargs) -> DPOTrainer:
    """A ``DPOTrainer`` over step pairs. Without LoRA and without ``ref_model`` the reference is
    a frozen copy of ``model`` (TRL would otherwise reload it by name, which fails for models
    built in memory or converted from GGUF)."""
    ds = rows if isinstance(rows, Dataset) else Dataset.from_list(list(rows))
    if len(ds) == 0:
        raise ValueError("no step pairs to train on: every turn's candidates were identical or no turns were "
                         "selected; raise --num-candidates / --temperature or --turn-fraction")
    ds = ds.remove_columns([c for c in _EXTRA_COLUMNS if c in ds.column_names])
    if eval_rows is not None and not isinstance(eval_rows, Dataset):
        eval_rows = Dataset.from_list(list(eval_rows))
    if peft_config is None and ref_model is None and not hasattr(model, "disable_adapter"):
        ref_model = initial_copy(model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return DPOTrainer(model=model, ref_model=ref_model, args=args, train_dataset=ds, eval_dataset=eval_rows,
                      processing_class=tokenizer, peft_config=peft_config, **kwargs)


def train_actor(model, tokenizer, rows, args: ActorConfig, ref_model=None, peft_config=None,
                resume_from_checkpoint: str | bool | None = None, **kwargs) -> DPOTrainer:
    """Train the policy on step pairs and save it to ``args.output_dir``; returns the trainer."""
    trainer = make_dpo_trainer(model, tokenizer, rows, args, ref_model=ref_model, peft_config=peft_config, **kwargs)
    trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    trainer.save_model(args.output_dir)
    return trainer
