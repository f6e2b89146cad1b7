"""A scorer that needs no model weights, for machines without CLIP weights. It is NOT CLIP.

Why it exists: no package registry ships CLIP weights, and an offline machine without a cached
copy would otherwise have no reward at all. The fallback compares what a glance at two
screenshots compares — overall layout (where light and dark, busy and empty regions are) and
palette — using pure numpy on downscaled images. Its numbers are on a different scale from
CLIP's and must not be mixed with CLIP results; every output names the scorer that produced it.

Embedding (unit norm, so cosine works like CLIP's):
- a 32x48 (w x h) grey thumbnail of the top of the page, mean-centred (layout structure);
- 16x24 per-channel colour thumbnails, mean-centred (where colours are);
- a 4x4x4 colour histogram (palette, position-free), square-rooted (Hellinger).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from colbench_gym.scoring.base import ImageScorer

FALLBACK_NAME = "pixel-layout-fallback (not CLIP)"


class FallbackScorer(ImageScorer):
    """Deterministic, weight-free image similarity; reported as ``pixel-layout-fallback (not CLIP)``."""

    name = FALLBACK_NAME
    is_clip = False

    def __init__(self, batch_size: int = 64, cache_size: int = 4096, crop_height: int = 2400):
        super().__init__(batch_size=batch_size, cache_size=cache_size)
        self.crop_height = crop_height

    def _one(self, image: Any) -> np.ndarray:
        from PIL import Image  # noqa: PLC0415

        im = image.convert("RGB")
        w, h = im.size
        # Compare pages at the same aspect: the top of the page, padded with white if shorter.
        crop_h = min(self.crop_height, max(h, int(w * 1.5)))
        canvas = Image.new("RGB", (w, crop_h), (255, 255, 255))
        canvas.paste(im.crop((0, 0, w, min(h, crop_h))), (0, 0))
        grey = np.asarray(canvas.convert("L").resize((32, 48), Image.BILINEAR), dtype=np.float32) / 255.0
        colour = np.asarray(canvas.resize((16, 24), Image.BILINEAR), dtype=np.float32) / 255.0
        small = np.asarray(canvas.resize((64, 96), Image.BILINEAR), dtype=np.int64) // 64
        hist = np.bincount((small[..., 0] * 16 + small[..., 1] * 4 + small[..., 2]).ravel(), minlength=64)
        hist = np.sqrt(hist / max(hist.sum(), 1)).astype(np.float32)
        parts = [grey - grey.mean(), colour - colour.mean(axis=(0, 1)), hist]
        # Equal weight per part, whatever its length; a constant offset keeps blank pages comparable.
        vec = np.concatenate([p.ravel() / (np.linalg.norm(p) + 1e-6) for p in parts] + [np.ones(1, np.float32)])
        return vec / np.linalg.norm(vec)

    def _embed_batch(self, images: list[Any]) -> np.ndarray:
        return np.stack([self._one(im) for im in images])
