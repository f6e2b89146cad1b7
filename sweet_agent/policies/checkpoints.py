"""Checkpoints every model loader accepts: a plain model directory, or a LoRA adapter without the
base model's weights.

WHY: a LoRA run of the 0.5B default model changes ~4.4M parameters (r 8, every linear layer:
~17 MB in float32, ~9 MB in bfloat16) but a merged copy is a whole model (~2 GB in float32). A
benchmark that trains ~27 models (``benchmarks/bench_learning.py``) would fill the disk with
merged copies, and a trained policy small enough to ship in the repository (``make demo``) is an
adapter. So a training command can save the adapter alone (``--merge_adapter false``: the
adapter in ``OUTPUT_DIR/adapter/``, the tokenizer beside it), and every loader — rollouts and
evaluation (``--policy``), the critic, the step-pair stage, the next training stage — loads such a
directory as its base model with the adapter merged in memory.

An adapter directory is either ``DIR/adapter_config.json`` (a PEFT adapter as ``save_pretrained``
writes it) or a training run's ``DIR/adapter/adapter_config.json`` when ``DIR`` holds no model of
its own (no ``config.json``). Its base is the adapter's ``base_model_name_or_path``: a local path
when it exists, the built-in name whose cache folder it names (``default``: the path was written
on another machine), or a hub id from the cache.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sweet_agent.policies.checkpoint_layout import adapter_dir
from sweet_agent.policies.default_model import ALIASES, resolve_model_path


def adapter_base(adapter: str | os.PathLike[str]) -> str:
    """The base model spec of an adapter folder, for :func:`resolve_model_path`."""
    cfg = json.loads((Path(adapter) / "adapter_config.json").read_text(encoding="utf-8"))
    base = str(cfg.get("base_model_name_or_path") or "default")
    if Path(base).expanduser().exists() or base in ALIASES:
        return base
    name = Path(base).name.lower()  # a cache folder of another machine
    for alias, copy in ALIASES.items():
        if name in (copy.name.lower(), copy.hub_id.lower().rpartition("/")[2]):
            return alias
    return base


def load_causal_lm(path: str | os.PathLike[str], **kwargs: Any):
    """``AutoModelForCausalLM.from_pretrained(path, **kwargs)``, or, for an adapter folder, its
    base model (same ``kwargs``) with the adapter merged in (a plain model either way)."""
    from transformers import AutoModelForCausalLM

    adapter = adapter_dir(path)
    if adapter is None:
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
    import torch
    from peft import PeftModel

    # merged in float32 then cast once, as a merged checkpoint is (merging in bf16 rounds twice)
    dtype = kwargs.get("dtype")
    base = load_causal_lm(resolve_model_path(adapter_base(adapter), quiet=True),  # an adapter's adapter too
                          **{**kwargs, "dtype": torch.float32})
    model = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
    if dtype not in (None, "auto", torch.float32, "float32"):
        model = model.to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
    # what this model is: an adapter trained on top of it records this folder as its base
    model.config._name_or_path = model.name_or_path = os.path.abspath(path)
    return model


def tokenizer_dir(path: str | os.PathLike[str]) -> str:
    """Where the tokenizer of checkpoint ``path`` is: the folder itself when it holds one, else
    (an adapter saved without it) the adapter's base model."""
    p = Path(path)
    if any((p / f).is_file() for f in ("tokenizer_config.json", "tokenizer.json")):
        return str(p)
    adapter = adapter_dir(p)
    if adapter is not None and any((adapter / f).is_file() for f in ("tokenizer_config.json", "tokenizer.json")):
        return str(adapter)
    if adapter is not None:
        return tokenizer_dir(resolve_model_path(adapter_base(adapter), quiet=True))  # its base may be an adapter
    return str(p)


#: What a saved plain model consists of (removed when an adapter-only save reuses the folder, so a
#: stale merged model cannot shadow the new adapter).
MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", "model.safetensors.index.json",
               "pytorch_model.bin", "pytorch_model.bin.index.json")


def remove_plain_model(folder: str | os.PathLike[str]) -> list[str]:
    """Delete a plain model's files from ``folder`` (its weight shards included); the names removed."""
    p = Path(folder)
    gone = []
    for f in [*(p / n for n in MODEL_FILES), *p.glob("model-*-of-*.safetensors"), *p.glob("pytorch_model-*-of-*.bin")]:
        if f.is_file():
            f.unlink()
            gone.append(f.name)
    return gone
