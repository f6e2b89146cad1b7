"""Load a ``sweet-agent train-critic`` output directory for scoring.

WHY one loader: the actor's step pairs, the viewer's step-level credit and critic-guided
decoding all score turns with the same critic the same way (its reference model, its
normalisation and whether it sees the privileged reference solution come from the metadata
the trainer wrote next to the weights), so reading that directory is written once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Written by ``train-critic`` next to the weights (its reference model, scoring settings and
#: held-out accuracy); read by everything that loads the critic.
META_FILE = "sweet_critic.json"


class CriticLoadError(ValueError):
    """The directory is not a ``sweet-agent train-critic`` output."""


@dataclass
class LoadedCritic:
    """A trained critic ready to score: ``ref`` is ``None`` for a regression-head critic.
    ``fingerprint`` is the checkpoint's :func:`~sweet_agent.training.models.model_fingerprint`
    (``None`` for a critic built in memory): what a step-pair file and the critic report record,
    so a critic trained again after a lost machine is told from the one that scored a file."""

    model: Any
    ref: Any
    tokenizer: Any
    meta: dict[str, Any]
    fingerprint: str | None = None

    @property
    def normalize(self) -> str:
        return str(self.meta.get("normalize", "turn"))

    @property
    def use_privileged_info(self) -> bool:
        return bool(self.meta.get("use_privileged_info", True))


def read_critic_meta(path: str | Path) -> dict[str, Any]:
    """The critic's metadata, or :class:`CriticLoadError` naming what to pass instead."""
    meta_path = Path(path) / META_FILE
    if not meta_path.is_file():
        raise CriticLoadError(f"{meta_path} not found; --critic must be a `sweet-agent train-critic` output directory")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CriticLoadError(f"{meta_path} is not readable JSON ({exc}); re-run `sweet-agent train-critic`") from None
    if not isinstance(meta, dict):
        raise CriticLoadError(f"{meta_path} must hold a JSON object; re-run `sweet-agent train-critic`")
    return meta


def load_critic(path: str | Path, dtype: str | None = "float32", reference: str | None = None,
                with_reference: bool = True, device: str | None = "auto") -> LoadedCritic:
    """Load the critic at ``path`` (and its frozen reference model) in eval mode, both on
    ``device`` (:func:`sweet_agent.devices.resolve_device`: ``auto`` = CUDA, then MPS, then CPU;
    under a multi-process launch this process's GPU). ``with_reference=False`` loads no reference
    (``ref`` is ``None``): for the paper release's step score, where the sampling policy takes
    its place."""
    from sweet_agent.devices import place, resolve_device
    from sweet_agent.training.models import load_model, model_fingerprint

    meta = read_critic_meta(path)
    device = resolve_device(device)
    weights = model_fingerprint(path).get("sha256")
    if meta.get("critic_type") == "regression":
        from transformers import AutoTokenizer

        from sweet_agent.critic.regression import RegressionCritic

        return LoadedCritic(place(RegressionCritic.from_pretrained(str(path)), device).eval(), None,
                            AutoTokenizer.from_pretrained(str(path)), meta, weights)
    critic, tok = load_model(str(path), dtype, device=device)
    if not with_reference:
        return LoadedCritic(critic.eval(), None, tok, meta, weights)
    ref_name = reference or meta.get("reference_model")
    if not ref_name:
        raise CriticLoadError(f"{Path(path) / META_FILE} names no reference_model; pass the reference explicitly")
    ref, _ = load_model(ref_name, dtype, device=device)
    return LoadedCritic(critic.eval(), ref.eval(), tok, meta, weights)
