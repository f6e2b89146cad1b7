"""The end of a training run: the final model where the next stage loads it (a LoRA adapter
merged into its base, or kept alone), and the checkpoint an interrupted run resumes from.

WHY a module of its own: every stage hands its model to the next one through a folder; how that
folder looks (a plain checkpoint, or ``adapter/`` with ``--merge_adapter false``) and which
checkpoint counts as finished are decided here once, for every trainer and every launch
(single process, multi-process, ZeRO-3).
"""

from __future__ import annotations

import os

from sweet_agent.training.machine import distributed_summary
from sweet_agent.training.models import resolve_model


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


def resume_checkpoint(cfg) -> str | None:
    """``--resume_from_checkpoint``: a path, or ``last``/``true`` for the newest checkpoint in
    ``--output_dir`` (none yet: start afresh)."""
    spec = cfg.resume_from_checkpoint
    if spec is None or str(spec).lower() in ("", "false", "none"):
        return None
    if str(spec).lower() in ("last", "true"):
        return last_checkpoint(cfg.output_dir)
    return str(spec)


def save_final(trainer, tokenizer, output_dir: str, model_args=None, merge: bool = True) -> None:
    """Save a plain checkpoint the next stage loads like any model, through the trainer's own
    saving path (which gathers ZeRO-3-partitioned weights). A LoRA run saves its adapter that way
    (in ``adapter/``), then the main process merges it into a fresh copy of the base model; with
    ``merge=False`` (``--merge_adapter false``) the adapter and the tokenizer are all it saves,
    which every loader accepts (:mod:`sweet_agent.policies.checkpoints`)."""
    from sweet_agent.policies.checkpoint_layout import ADAPTER_SUBDIR
    from sweet_agent.policies.checkpoints import load_causal_lm, remove_plain_model

    summary = distributed_summary(trainer)
    if summary:
        print(f"[save] {summary}; saving the final model to {output_dir}", flush=True)
    model = trainer.accelerator.unwrap_model(trainer.model)
    if not hasattr(model, "merge_and_unload"):
        if not merge and trainer.accelerator.is_main_process:
            print("[save] note: --merge_adapter false applies to LoRA runs (--use_peft); this run trained every "
                  "weight, so it saves the whole model", flush=True)
        trainer.save_model(output_dir)
        return
    adapter_dir = os.path.join(output_dir, ADAPTER_SUBDIR)
    trainer.save_model(adapter_dir)
    trainer.accelerator.wait_for_everyone()
    if not merge:
        if trainer.accelerator.is_main_process:
            tokenizer.save_pretrained(adapter_dir)
            remove_plain_model(output_dir)  # a merged model left from an earlier run would shadow the adapter
        trainer.accelerator.wait_for_everyone()
        return
    if trainer.accelerator.is_main_process:
        import torch
        from peft import PeftModel

        if model_args is not None:
            base_path = resolve_model(model_args.model_name_or_path)
        else:
            base_path = model.peft_config["default"].base_model_name_or_path
        dtype = next(model.parameters()).dtype if model_args is None else model_args.dtype
        dtype = getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else dtype
        base = load_causal_lm(base_path, dtype=dtype)
        merged = PeftModel.from_pretrained(base, adapter_dir).merge_and_unload()
        merged.save_pretrained(output_dir)
        tokenizer.save_pretrained(output_dir)
    trainer.accelerator.wait_for_everyone()
