"""What a training config leaves to the machine it runs on: mixed precision and the DeepSpeed
process group, and a line saying what a multi-process launch really was.

WHY a module of its own: these are workarounds for how TRL, transformers, accelerate and
DeepSpeed behave on machines they do not expect (no bf16 GPU, DeepSpeed on CPU); every training
config calls :func:`resolve_machine_defaults` from its ``__post_init__``, and the reason for each
workaround is written down once, here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


def resolve_machine_defaults(cfg) -> None:
    """What a training config leaves to the machine, resolved before the config's own
    ``__post_init__``: mixed precision (:func:`resolve_precision`) and the process-group backend
    of a DeepSpeed launch without an accelerator (:func:`resolve_ddp_backend`). Every training
    config (critic, actor, RFT, multi-turn DPO, GRPO) calls this one function."""
    resolve_precision(cfg)
    resolve_ddp_backend(cfg)


@dataclass
class MachineDefaults:
    """Mixed in before a TRL config (``class RFTConfig(MachineDefaults, SFTConfig)``): runs
    :func:`resolve_machine_defaults` before the TRL config's own ``__post_init__``, and leaves
    activation checkpointing off unless asked (TRL turns it on by default; at CPU scale it only
    costs time; the paper presets turn it on with ``activation_checkpointing: true``)."""

    gradient_checkpointing: bool | None = None

    def __post_init__(self):
        resolve_machine_defaults(self)
        super().__post_init__()


def resolve_precision(cfg) -> None:
    """TRL's configs default to bf16 mixed precision (``bf16=None``), which a machine without a
    bf16 GPU rejects: resolve ``None`` to bf16 only where a GPU supports it."""
    if cfg.bf16 is None:
        import torch

        cfg.bf16 = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported() and not cfg.fp16)


def resolve_ddp_backend(cfg) -> None:
    """Name the process-group backend (``gloo``) for a DeepSpeed launch on a machine without an
    accelerator, unless ``--ddp_backend`` names one. Called before the config's own
    ``__post_init__`` (which sets up the processes).

    WHY: with no ``--ddp_backend``, accelerate 1.15's ``PartialState`` finds no accelerator backend
    on a CPU-only host (``backend=None``), lets DeepSpeed start torch.distributed (world size 2 for
    2 processes), then, because ``backend is None``, records one process (``accelerate/state.py``:
    ``self.num_processes = 1``). transformers then sizes DeepSpeed's batch for one process and
    DeepSpeed's check fails (``train_batch_size 1 != 1 * 1 * 2``). ``gloo`` is what DeepSpeed
    itself uses on CPU. (The trainer's ``--use_cpu`` also avoids it; the accelerate config's
    ``use_cpu`` does not, its DeepSpeed launcher does not pass it on.)"""
    if getattr(cfg, "ddp_backend", "") is not None:
        return
    if os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() != "true":
        return
    import torch

    found = getattr(torch, "accelerator", None)  # torch >= 2.6; before it, CUDA is what accelerate finds
    if not (found.is_available() if found is not None else torch.cuda.is_available()):
        cfg.ddp_backend = "gloo"


def distributed_summary(trainer) -> str | None:
    """``process I of N (DeepSpeed ZeRO stage S; this process holds X of Y parameter values)``
    for a multi-process or DeepSpeed run, ``None`` for a single plain process: what a run log
    needs to show that the launch really was what its config says."""
    acc = trainer.accelerator
    engine = trainer.model_wrapped
    stage = engine.zero_optimization_stage() if hasattr(engine, "zero_optimization_stage") else None
    if acc.num_processes == 1 and stage is None:
        return None
    line = f"process {acc.process_index} of {acc.num_processes}"
    if stage is not None:
        params = list(acc.unwrap_model(trainer.model).parameters())
        held = sum(p.ds_tensor.numel() if hasattr(p, "ds_tensor") else p.numel() for p in params)
        total = sum(getattr(p, "ds_numel", p.numel()) for p in params)
        line += f" (DeepSpeed ZeRO stage {stage}; this process holds {held:,} of {total:,} parameter values)"
    return line
