"""Loading the model a training run starts from, and copying it as a frozen reference.

WHY a module of its own: every trainer (and the stages that run models outside a Trainer: the
step-pair stage, the critic report, the critic reward) loads through :func:`load_model`, so a
default model name, a LoRA adapter folder, the chat-template check and the attention choice
behave the same everywhere; :func:`initial_copy` is the one way to copy a model that also works
under DeepSpeed ZeRO-3; :func:`model_fingerprint` is the one identity of a checkpoint on disk
(which base policy sampled shared candidates, which critic scored a step-pair file).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any


def resolve_model(spec: str | None) -> str:
    """A local checkpoint directory for ``spec`` (``None``: the embedded default policy model)."""
    spec = spec or "default"
    try:
        from sweet_agent.policies.default_model import resolve_model_path
    except ImportError:  # pragma: no cover - policies ship with the package
        return spec
    return resolve_model_path(spec)


def model_fingerprint(path: str | os.PathLike[str] | None, chunk: int = 4 << 20, whole_below: int = 64 << 20
                      ) -> dict[str, Any]:
    """The identity of a model checkpoint (folder or single file such as a GGUF): its path and a
    sha256 over every file's name and size, the whole content of files under ``whole_below``
    bytes (configs, tokenizers, LoRA adapters) and the first and last ``chunk`` bytes of larger
    ones (weights: reading 16 GB per stage would cost more than the check is worth). Hidden files
    and a Trainer's ``checkpoint-N`` folders (optimizer and RNG states to resume from, not the
    model; a run may keep or prune them) are left out. A name that is not a local path (a hub id)
    is its own identity."""
    if path is None:
        return {"model": None}
    p = Path(path)
    if not p.exists():
        return {"model": str(path)}

    def counted(f: Path) -> bool:
        parts = f.relative_to(p if p.is_dir() else p.parent).parts
        return not any(part.startswith(".") for part in parts) and not (
            p.is_dir() and len(parts) > 1 and parts[0].startswith("checkpoint-"))

    files = sorted(f for f in (p.rglob("*") if p.is_dir() else [p]) if f.is_file() and counted(f))
    h = hashlib.sha256()
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.relative_to(p) if p.is_dir() else f.name}\0{size}\0".encode())
        with open(f, "rb") as fh:
            if size <= whole_below:
                h.update(fh.read())
            else:
                h.update(fh.read(chunk))
                fh.seek(size - chunk)
                h.update(fh.read(chunk))
    return {"model": str(p.resolve()), "sha256": h.hexdigest(), "files": len(files)}


def load_model(spec, dtype: str | None = "float32", attn_implementation: str | None = None,
               device: str | None = None):
    """``(model, tokenizer)`` for training. ``spec`` is a path / model id or a ``trl.ModelConfig``
    (its model, dtype and attention implementation are used). ``device`` (``auto``, ``cuda``, ...:
    :func:`sweet_agent.devices.resolve_device`) moves the model there, for the models a stage
    runs outside a Trainer (the step-pair stage's policy, critic and reference); ``None`` leaves
    it where it loads (the CPU), for the Trainer to place."""
    import torch
    from transformers import AutoTokenizer

    from sweet_agent.policies.checkpoints import load_causal_lm, tokenizer_dir

    if hasattr(spec, "model_name_or_path"):
        spec, dtype, attn_implementation = spec.model_name_or_path, spec.dtype, spec.attn_implementation
    path = resolve_model(spec)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir(path))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if not tok.chat_template:
        raise ValueError(f"{path}: the tokenizer has no chat template; training needs an instruct/chat model")
    kw: dict[str, Any] = {"dtype": dtype if dtype in (None, "auto") else getattr(torch, dtype)}
    if attn_implementation:
        kw["attn_implementation"] = attention_implementation(attn_implementation)
    model = load_causal_lm(path, **kw)  # a LoRA adapter (--merge_adapter false): merged into its base
    model.config.use_cache = False
    if device is not None:
        from sweet_agent.devices import place

        place(model, device)
    return model, tok


def initial_copy(model):
    """A frozen copy of ``model`` as it is now: the reference of a full fine-tuning run (critic,
    actor, multi-turn DPO). Under DeepSpeed ZeRO-3 the model was loaded already partitioned
    across processes (``deepspeed.zero.Init``) and a deep copy holds only empty shards, so the
    copy is loaded again from the model's checkpoint, partitioned the same way (this is why TRL's
    ``create_reference_model`` refuses ZeRO-3)."""
    import copy

    from transformers.integrations import is_deepspeed_zero3_enabled

    if not is_deepspeed_zero3_enabled():
        return copy.deepcopy(model).eval()
    if not getattr(model, "name_or_path", None):
        raise ValueError("under DeepSpeed ZeRO-3 the reference model cannot be copied from a partitioned model: "
                         "pass ref_model=AutoModelForCausalLM.from_pretrained(...)")
    from sweet_agent.policies.checkpoint_layout import adapter_dir
    from sweet_agent.policies.checkpoints import load_causal_lm

    if adapter_dir(model.name_or_path) is not None:
        return load_causal_lm(model.name_or_path, dtype=model.dtype,
                              attn_implementation=model.config._attn_implementation).eval()
    return type(model).from_pretrained(model.name_or_path, dtype=model.dtype,
                                       attn_implementation=model.config._attn_implementation).eval()


def attention_implementation(spec: str) -> str:
    """``auto``: FlashAttention-2 when ``flash_attn`` is installed and a GPU is present, else
    PyTorch's ``sdpa``. ``flash_attention_2`` without the package: a one-line error."""
    import importlib.util

    import torch

    has_flash = importlib.util.find_spec("flash_attn") is not None and torch.cuda.is_available()
    if spec == "auto":
        return "flash_attention_2" if has_flash else "sdpa"
    if spec == "flash_attention_2" and not has_flash:
        raise SystemExit("--attn_implementation flash_attention_2 needs a GPU and `pip install flash-attn "
                         "--no-build-isolation`; use sdpa (or auto) otherwise")
    return spec


def peft_config(model_args):
    """TRL's LoRA config from ``ModelConfig`` (``None`` without ``--use_peft``)."""
    from trl import get_peft_config

    return get_peft_config(model_args)
