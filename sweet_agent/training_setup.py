"""Training set-up shared by every ``sweet-agent train-*`` command: model loading, LoRA, trainer
arguments, final saving, JSON(L) files.

WHY a module of its own: the critic, the actor and the baselines are independent of each other;
what they share (how a model is loaded, configured and saved) lives here, below all three."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_jsonl_atomic


def add_common_arguments(parser: argparse.ArgumentParser, *, model_help: str, default_lr: float,
                         default_epochs: float, default_batch: int) -> None:
    g = parser.add_argument_group("model and training")
    g.add_argument("--model", default="default", help=model_help + " (checkpoint dir, .gguf, cached hub id or `default`)")
    g.add_argument("--output-dir", required=True, help="where checkpoints and the final model go")
    g.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                   help="training dtype (float32 on CPU; bfloat16 on GPUs)")
    g.add_argument("--lora-r", type=int, default=0, help="train a LoRA adapter of this rank (0 = full fine-tuning); "
                   "the merged model is saved at the end")
    g.add_argument("--lora-alpha", type=int, default=None, help="LoRA alpha (default 2 × rank)")
    g.add_argument("--learning-rate", type=float, default=default_lr)
    g.add_argument("--epochs", type=float, default=default_epochs)
    g.add_argument("--batch-size", type=int, default=default_batch, help="per-device batch size")
    g.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
    g.add_argument("--max-steps", type=int, default=-1, help="stop after this many optimizer steps (-1 = epochs)")
    g.add_argument("--max-length", type=int, default=2048, help="truncate sequences to this many tokens")
    g.add_argument("--gradient-checkpointing", action="store_true", help="trade compute for memory")
    g.add_argument("--logging-steps", type=float, default=1)
    g.add_argument("--save-steps", type=int, default=0, help="checkpoint every N steps (0 = once per epoch)")
    g.add_argument("--resume", action="store_true", help="resume from the last checkpoint in --output-dir")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--report-to", default="none", help="TRL/transformers logging integrations (tensorboard, wandb, ...)")


def training_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """TrainingArguments fields from the common flags (CPU/GPU aware)."""
    import torch

    cuda = torch.cuda.is_available()
    kw = dict(  # noqa: C408 - keyword form reads as a settings table
        output_dir=args.output_dir, learning_rate=args.learning_rate, num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=args.batch_size,
        gradient_accumulation_steps=args.grad_accum, max_steps=args.max_steps, seed=args.seed,
        logging_steps=args.logging_steps, report_to=args.report_to, use_cpu=not cuda,
        bf16=cuda and args.dtype == "bfloat16", fp16=cuda and args.dtype == "float16",
        gradient_checkpointing=args.gradient_checkpointing,
        save_strategy="steps" if args.save_steps else "epoch", save_total_limit=2,
    )
    if args.save_steps:
        kw["save_steps"] = args.save_steps
    return kw


def resolve_model(spec: str) -> str:
    """A local checkpoint directory for ``spec`` (via the policies' resolver when installed)."""
    try:
        from sweet_agent.policies.default_model import resolve_model_path
    except ImportError:  # pragma: no cover - policies ship with the package
        return spec
    return resolve_model_path(spec)


def load_model(spec: str, dtype: str = "float32"):
    """``(model, tokenizer)`` for training. Padding side left (TRL's preference trainers)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model(spec)
    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template:
        raise ValueError(f"{path}: the tokenizer has no chat template; training needs an instruct/chat model")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    model.config.use_cache = False
    return model, tok


def lora_config(args: argparse.Namespace):
    if not args.lora_r:
        return None
    from peft import LoraConfig

    return LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha or 2 * args.lora_r, lora_dropout=0.0,
                      target_modules="all-linear", task_type="CAUSAL_LM")


def last_checkpoint(output_dir: str) -> str | None:
    """The newest *complete* ``checkpoint-N`` in ``output_dir``. The Trainer writes a checkpoint
    in place and ``trainer_state.json`` last, so a run killed while saving (Ctrl-C, SIGTERM,
    SIGKILL) leaves a folder without it: skipped, so ``--resume_from_checkpoint last`` resumes
    from the previous finished checkpoint instead of failing on the torn one."""
    import re

    if not os.path.isdir(output_dir):
        return None
    steps = []
    for name in os.listdir(output_dir):
        m = re.fullmatch(r"checkpoint-(\d+)", name)
        path = os.path.join(output_dir, name)
        if m and os.path.isfile(os.path.join(path, "trainer_state.json")):
            steps.append((int(m.group(1)), path))
    return max(steps)[1] if steps else None


def save_final(trainer, tokenizer, output_dir: str) -> None:
    """Save a plain (merged) checkpoint so the next stage loads it like any model."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    if trainer.accelerator.is_main_process:
        model.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)


write_jsonl = write_jsonl_atomic  # atomic: temp file, fsync, os.replace


def write_json(path: str | Path, obj: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
