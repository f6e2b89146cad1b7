"""Screenshot similarity for frontend rewards: CLIP (the paper's metric) or a declared fallback.

``make_scorer("auto")`` uses CLIP ViT-B/32 with OpenAI's weights when torch, open_clip and the
cached weights are all present; otherwise it warns once, saying why and how to get CLIP, and
returns :class:`FallbackScorer`, whose name (``structure-fallback-v2 (not CLIP)``) travels in
every ``info`` and output record. ``"clip"`` insists on CLIP (clear error without weights),
``"fallback"`` never loads a model. Nothing here imports torch until a CLIP scorer is built.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

from colbench_gym.scoring.base import ImageScorer, image_key
from colbench_gym.scoring.fallback import FALLBACK_NAME, FallbackScorer

_shared: dict[tuple, ImageScorer] = {}
_lock = threading.Lock()
_warned = False


class ClipUnavailableWarning(UserWarning):
    """CLIP could not be used; the declared fallback scorer is used instead."""


def make_scorer(spec: str | ImageScorer | None = "auto", **kwargs: Any) -> ImageScorer:
    """Build a scorer: ``"auto"`` | ``"clip"`` | ``"clip-random"`` (tests) | ``"fallback"`` | an instance."""
    global _warned
    if isinstance(spec, ImageScorer):
        return spec
    spec = spec or "auto"
    if spec == "fallback":
        return FallbackScorer(**kwargs)
    from colbench_gym.scoring.clip import ClipScorer, ClipWeightsUnavailable, clip_available  # noqa: PLC0415

    if spec == "clip":
        return ClipScorer(**kwargs)
    if spec == "clip-random":
        return ClipScorer(pretrained=None, **kwargs)
    if spec == "auto":
        ok, why = clip_available(kwargs.get("model", "ViT-B-32"), kwargs.get("pretrained", "openai"))
        if ok:
            try:
                return ClipScorer(**kwargs)
            except ClipWeightsUnavailable as exc:
                why = str(exc)
        if not _warned:
            _warned = True
            warnings.warn(
                f"CLIP scoring unavailable ({why}). Using the weight-free '{FALLBACK_NAME}' scorer instead: "
                "its similarities are NOT comparable with CLIP numbers (info['scorer'] names it).",
                ClipUnavailableWarning, stacklevel=2,
            )
        return FallbackScorer(**{k: v for k, v in kwargs.items() if k in ("batch_size", "cache_size")})
    raise ValueError(f"unknown scorer {spec!r}; choose 'auto', 'clip', 'clip-random' or 'fallback'")


def shared_scorer(spec: str | ImageScorer | None = "auto", **kwargs: Any) -> ImageScorer:
    """One scorer (and embedding cache) per spec for the whole process."""
    if isinstance(spec, ImageScorer):
        return spec
    key = (spec or "auto", tuple(sorted(kwargs.items())))
    with _lock:
        if key not in _shared:
            _shared[key] = make_scorer(spec, **kwargs)
        return _shared[key]


__all__ = ["ClipUnavailableWarning", "FALLBACK_NAME", "FallbackScorer", "ImageScorer", "image_key",
           "make_scorer", "shared_scorer"]
