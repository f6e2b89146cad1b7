"""The one device rule: where a model that is not managed by a Trainer runs.

Every model this package loads outside a Trainer (the rollout and evaluation policy, best-of-N's
critic, the step-pair stage's policy, critic and critic reference, the GRPO critic reward, the
viewer's critic credit) is placed by :func:`resolve_device`, so ``--device auto`` (the default
everywhere) means the same thing in every command: CUDA, then Apple's MPS, then the CPU. An
explicit ``--device`` wins.

Under a multi-process launch (``accelerate launch``, ``torchrun``: ``LOCAL_RANK`` is set) each
process takes its own GPU, ``cuda:LOCAL_RANK`` (modulo the GPUs it sees), the device accelerate
gives that process's Trainer; ``--device cuda`` without an index means the same. Several models
of one process (policy, critic, critic reference) share that GPU.

WHY one function: the step-pair stage used to leave its three models on the CPU beside an idle
GPU, and ``rollout`` defaulted to ``--device cpu``; one rule, tested once, cannot drift per
command. Importing this module imports nothing heavy (torch is imported when resolving).
"""

from __future__ import annotations

import os
from typing import Any

#: What ``--device`` accepts besides any torch device string (``cuda:1``, ``cpu``, ``mps``).
AUTO = "auto"

DEVICE_HELP = ("torch device of local models: auto (CUDA, then MPS, then CPU; under accelerate launch / torchrun "
               "each process its own GPU, cuda:LOCAL_RANK), or cpu, cuda, cuda:N, mps")


class DeviceError(ValueError):
    """A ``--device`` that names no device this machine has."""


def local_rank() -> int | None:
    """This process's index on its machine under a multi-process launch (``LOCAL_RANK``), else None."""
    value = os.environ.get("LOCAL_RANK")
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _mps_available(torch: Any) -> bool:
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(device: str | None = AUTO, *, use_cpu: bool = False) -> str:
    """The torch device string for ``device`` (``None`` or ``"auto"``: CUDA, then MPS, then CPU).

    ``use_cpu`` (a Trainer's ``--use_cpu``) makes ``auto`` the CPU, so the models beside a
    CPU-only training run stay with it. ``cuda`` without an index is ``cuda:LOCAL_RANK`` under a
    multi-process launch (else ``cuda:0``'s current device, ``cuda``). A device this machine
    does not have is a :class:`DeviceError` naming what it has."""
    import torch

    spec = (device or AUTO).strip().lower()
    if spec == AUTO:
        if use_cpu:
            return "cpu"
        if torch.cuda.is_available():
            return _cuda_for_this_process(torch)
        if _mps_available(torch):
            return "mps"
        return "cpu"
    try:
        parsed = torch.device(spec)
    except (RuntimeError, ValueError):
        raise DeviceError(f"--device {device!r} is not a torch device; use {DEVICE_HELP.split(': ', 1)[1]}") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"--device {device}: no CUDA device is available on this machine "
                              f"({_what_there_is(torch)}); use --device auto or cpu")
        if parsed.index is None:
            return _cuda_for_this_process(torch)
        if parsed.index >= torch.cuda.device_count():
            raise DeviceError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s) "
                              f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
        return spec
    if parsed.type == "mps" and not _mps_available(torch):
        raise DeviceError(f"--device {device}: MPS is not available on this machine ({_what_there_is(torch)}); "
                          "use --device auto or cpu")
    return spec


def _cuda_for_this_process(torch: Any) -> str:
    rank = local_rank()
    if rank is None:
        return "cuda"
    return f"cuda:{rank % max(1, torch.cuda.device_count())}"


def _what_there_is(torch: Any) -> str:
    found = ["cpu"]
    if torch.cuda.is_available():
        found.append(f"{torch.cuda.device_count()} CUDA")
    if _mps_available(torch):
        found.append("mps")
    return "found: " + ", ".join(found)


def place(model: Any, device: str | None = AUTO) -> Any:
    """Move ``model`` (a torch module, or ``None``) to :func:`resolve_device` of ``device``; returns it."""
    if model is None:
        return None
    return model.to(resolve_device(device))


def model_device(model: Any) -> str:
    """The device a model's parameters are on (``"cpu"``, ``"cuda:0"``, ...)."""
    return str(next(model.parameters()).device)
