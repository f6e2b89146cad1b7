"""What a checkpoint folder is: a plain model, or a LoRA adapter (where a training run saves one).

WHY its own module: resolving a ``--policy`` spec (:mod:`~sweet_agent.policies.default_model`)
must tell an adapter folder from a model, and loading an adapter
(:mod:`~sweet_agent.policies.checkpoints`) must resolve its base model spec; with the folder's
layout here, below both, neither imports the other from inside a function.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where a LoRA training run saves its adapter inside ``--output_dir``.
ADAPTER_SUBDIR = "adapter"


def adapter_dir(path: str | os.PathLike[str]) -> Path | None:
    """The PEFT adapter folder ``path`` stands for, or ``None`` when ``path`` is a plain model
    (or not a directory)."""
    p = Path(path)
    if not p.is_dir():
        return None
    if (p / "adapter_config.json").is_file():
        return p
    if not (p / "config.json").is_file() and (p / ADAPTER_SUBDIR / "adapter_config.json").is_file():
        return p / ADAPTER_SUBDIR
    return None
