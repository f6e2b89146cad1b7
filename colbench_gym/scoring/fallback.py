"""A scorer that needs no model weights, for machines without CLIP weights. It is NOT CLIP.

Why it exists: no package registry ships CLIP weights, and an offline machine without a cached
copy would otherwise have no reward at all. Its numbers are on a different scale from CLIP's and
must not be mixed with CLIP results; every output names the scorer that produced it.

Why this measure (issue 24): the first fallback compared grey and colour thumbnails, so a *blank*
page scored 0.654 on average against the 30 embedded references (they are light pages), above a
well-formed unrelated site (0.548): a policy trained on it learns to submit nothing. This one
compares what is *drawn* on the page — edges: text, borders, boxes, images — and counts empty
background in neither page's favour, so a page with nothing on it scores about 0. It is checked
against the ordering suite (:mod:`colbench_gym.scoring.suite`): identical > same layout and text
in other colours > same layout with other text > an unrelated site > a blank page.

The score of a page ``a`` against a reference ``b`` (both scaled to 640 px wide and compared over
the taller one's height, the shorter padded with empty white page) is a weighted sum of three parts in [0, 1]:

- **structure** (weight 0.6): SSIM-style block statistics of the two *edge maps* (luminance
  gradient, saturated so that contrast hardly matters: a recoloured page keeps its edges) at four
  scales (640, 320, 160 and 80 px wide, weighted 4:2:1:1), over 8x8 blocks weighted by how much
  edge either page has there. Empty background, where a blank page "agrees" with every
  reference, weighs nothing; ink in the wrong place or missing ink costs. The fine scales see
  glyph shapes (other text), the coarse ones where blocks of text and boxes are.
- **layout** (0.25): the overlap ``sum(min)/sum(max)`` of the two pages' ink-density maps at
  16, 32 and 64 px cells: missing content and extra content both lower it.
- **colour** (0.15): mean colours of 32 px cells (RGB distance between the two grids) and the
  two palettes (8x8x8 histogram intersection), half each, *multiplied by the layout part*: a
  page earns colour credit only where it also has the reference's content, so a blank page in
  the reference's background colour earns none.

The weights were chosen on the suite built from the 30 ``embedded:test`` references and checked
on the 90 ``embedded:train`` ones (docs/frontend.md has both tables).

Features are computed once per image (cached by content, like CLIP embeddings); comparing a
pair costs a few milliseconds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from colbench_gym.scoring.base import ImageScorer, image_key

FALLBACK_NAME = "structure-fallback-v2 (not CLIP)"

_WIDTH = 640  # pages are compared at half the viewport's width
_SCALES = (1, 2, 4, 8)  # structure: edge maps pooled by these factors (640 .. 80 px wide)
_SCALE_WEIGHTS = (4, 2, 1, 1)  # the fine scales see glyphs: other text must cost more than other colours
_BLOCK = 8  # structure: block side (in pooled pixels) of the SSIM-style statistics
_LAYOUT_CELLS = (16, 32, 64)  # layout: ink-density cells, in 640-px-wide pixels
_COLOUR_CELL = 32
_SHIFTS = (1, 1, 1, 1)  # structure: blocks may match up to this many pixels off, per scale
_TONE_SCALE = 0.2  # mean lightness difference of the colour cells at which the tone part is 1/e
_HUE_SCALE = 0.1  # the same for chroma
_EDGE_KNEE = 0.05  # a luminance step of 0.05 counts as half an edge, 0.2 as 0.8 of one
WEIGHTS = {"structure": 0.6, "layout": 0.2, "tone": 0.12, "hue": 0.08}
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


@dataclass
class PageFeatures:
    """What the fallback keeps of one screenshot (640 px wide, rows padded to a multiple of 64
    with empty, white page): per structure scale the pooled edge map and its block means of
    ``x`` and ``x**2``; ink density per layout cell; colour cells; palette."""

    height: int  # rows at 640 px wide (a multiple of 64)
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per scale: (edges, block mean, block mean of square)
    ink: list[np.ndarray]  # per layout cell size: mean edge strength per cell
    cells: np.ndarray  # float32 (H/32, 20, 3): mean RGB of 32 px cells
    palette: np.ndarray  # float32 (512,): 8x8x8 colour histogram, sums to 1
    _integrals: list[tuple[np.ndarray, np.ndarray]] | None = field(default=None, repr=False)

    @property
    def integrals(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per scale: integral images of the edges and of their squares, padded by the scale's
        shift radius; made when the page is first used as a reference (answers never need them)."""
        if self._integrals is None:
            out = []
            for (x, _, _), radius in zip(self.levels, _SHIFTS):
                xp = np.pad(x, radius)
                out.append((_integral(xp), _integral(xp * xp)))
            self._integrals = out
        return self._integrals


def _pool(x: np.ndarray, k: int) -> np.ndarray:
    """Mean over ``k`` x ``k`` cells (rows/columns that do not fill a cell are dropped)."""
    if k == 1:
        return x
    h, w = x.shape[0] // k, x.shape[1] // k
    x = x[: h * k, : w * k]
    cols = x.reshape(h * k, w, k, *x.shape[2:]).sum(axis=2)  # contiguous sums: much faster than mean((1, 3))
    return cols.reshape(h, k, w, *x.shape[2:]).sum(axis=1) / float(k * k)


def _pad_rows(x: np.ndarray, rows: int, value: float) -> np.ndarray:
    if x.shape[0] >= rows:
        return x[:rows]
    return np.concatenate([x, np.full((rows - x.shape[0], *x.shape[1:]), value, dtype=x.dtype)], axis=0)


_UNIT = max(_SCALES) * _BLOCK  # feature rows are padded to a multiple of this


def page_features(image: Any) -> PageFeatures:
    """Edge pyramid, ink density, colour cells and palette of a screenshot (any PIL image)."""
    from PIL import Image  # noqa: PLC0415

    im = image.convert("RGB")
    w, h = im.size
    rows = max(8, int(round(h * _WIDTH / max(w, 1))))
    rgb = np.asarray(im.resize((_WIDTH, rows), Image.BILINEAR), dtype=np.float32) / 255.0
    padded = -(-rows // _UNIT) * _UNIT
    rgb = _pad_rows(rgb, padded, 1.0)  # below the page: white, without edges
    lum = rgb @ _LUMA
    grad = np.zeros_like(lum)
    grad[:, 1:] = np.abs(np.diff(lum, axis=1))
    np.maximum(grad[1:], np.abs(np.diff(lum, axis=0)), out=grad[1:])
    grad[rows:] = 0.0
    edges = (grad / (grad + _EDGE_KNEE)).astype(np.float32)
    levels = []
    for s in _SCALES:
        x = _pool(edges, s)
        levels.append((x, _pool(x, _BLOCK), _pool(x * x, _BLOCK)))
    small = _pool(rgb[:rows], 4) if rows >= 4 else rgb
    q = np.minimum((small * 8).astype(np.int64), 7)
    hist = np.bincount((q[..., 0] * 64 + q[..., 1] * 8 + q[..., 2]).ravel(), minlength=512).astype(np.float32)
    return PageFeatures(height=padded, levels=levels, ink=[_pool(edges, c) for c in _LAYOUT_CELLS],
                        cells=_pool(rgb, _COLOUR_CELL).astype(np.float32), palette=hist / max(float(hist.sum()), 1.0))


def _block_sums(integral: np.ndarray, r0: int, c0: int, nb: int, wb: int) -> np.ndarray:
    """Sums over the ``_BLOCK``-sized blocks whose top-left corners are ``(r0 + i*B, c0 + j*B)``,
    read from an integral image (a leading row and column of zeros)."""
    b = _BLOCK
    rows, cols = slice(r0, r0 + nb * b + 1, b), slice(c0, c0 + wb * b + 1, b)
    s = integral[rows, cols]
    return s[1:, 1:] - s[:-1, 1:] - s[1:, :-1] + s[:-1, :-1]


def _extend_rows(integral: np.ndarray, rows: int) -> np.ndarray:
    """The integral image of the same content with empty rows added below (the last row repeats)."""
    if integral.shape[0] >= rows:
        return integral
    return np.concatenate([integral, np.repeat(integral[-1:], rows - integral.shape[0], axis=0)], axis=0)


def _integral(x: np.ndarray) -> np.ndarray:
    out = np.zeros((x.shape[0] + 1, x.shape[1] + 1), dtype=np.float64)
    np.cumsum(np.cumsum(x, axis=0, dtype=np.float64), axis=1, out=out[1:, 1:])
    return out


def _structure(a: PageFeatures, b: PageFeatures, rows: int) -> list[float]:
    """Per scale: edge-map agreement, SSIM-style per block, weighted by the edge mass in the
    block. Each block of ``a`` is compared with the reference's content at the best of a few
    small displacements (:data:`_SHIFTS`), so a box a few pixels off its place still matches
    while other words in the same place do not; a displacement that only moves the reference's
    content out of the block earns nothing (an empty pair of blocks counts 0, not 1)."""
    per_scale = []
    c1 = c2 = 1e-4
    area = float(_BLOCK * _BLOCK)
    for s, radius, (xa, ma, sa), (xb, mb, sb), (iy, iyy) in zip(_SCALES, _SHIFTS, a.levels, b.levels, b.integrals):
        n, nb = rows // s, rows // (s * _BLOCK)
        x, y = _pad_rows(xa, n, 0.0), _pad_rows(xb, n, 0.0)
        mx, my = _pad_rows(ma, nb, 0.0), _pad_rows(mb, nb, 0.0)
        vx = np.maximum(_pad_rows(sa, nb, 0.0) - mx * mx, 0)
        weight = np.maximum(mx, my)
        total = float(weight.sum())
        if total < 1e-6:
            per_scale.append(1.0)
            continue
        wb = x.shape[1] // _BLOCK
        yp = np.pad(y, radius)
        iy, iyy = _extend_rows(iy, n + 2 * radius + 1), _extend_rows(iyy, n + 2 * radius + 1)
        best = np.zeros_like(mx)
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                if dy == 0 and dx == 0:  # in place: the same statistics as the reference's own
                    mys, vys = my, np.maximum(_pad_rows(sb, nb, 0.0) - my * my, 0)
                    cxy = _pool(x * y, _BLOCK) - mx * my
                else:
                    r0, c0 = radius - dy, radius - dx  # the reference's content moved by (dy, dx)
                    mys = _block_sums(iy, r0, c0, nb, wb) / area
                    vys = np.maximum(_block_sums(iyy, r0, c0, nb, wb) / area - mys * mys, 0)
                    moved = yp[r0: r0 + nb * _BLOCK, c0: c0 + wb * _BLOCK]
                    cxy = _pool(x[: nb * _BLOCK, : wb * _BLOCK] * moved, _BLOCK) - mx * mys
                ssim = (2 * mx * mys + c1) * (2 * cxy + c2) / ((mx * mx + mys * mys + c1) * (vx + vys + c2))
                if dy or dx:  # moving the reference's content out of a block earns nothing
                    ssim[np.maximum(mx, mys) < 1e-3] = 0.0
                np.maximum(best, ssim, out=best)
        per_scale.append(max(0.0, float((best * weight).sum()) / total))
    return per_scale


def _layout(a: PageFeatures, b: PageFeatures, rows: int) -> list[float]:
    """Per cell size: ``sum(min)/sum(max)`` of the two ink-density maps."""
    out = []
    for cell, xa, xb in zip(_LAYOUT_CELLS, a.ink, b.ink):
        x, y = _pad_rows(xa, rows // cell, 0.0), _pad_rows(xb, rows // cell, 0.0)
        top = float(np.maximum(x, y).sum())
        out.append(1.0 if top < 1e-6 else float(np.minimum(x, y).sum()) / top)
    return out


def _colour(a: PageFeatures, b: PageFeatures, rows: int) -> tuple[float, float, float]:
    """``(tone, hue cells, palette)``: agreement of the 32-px cells' lightness (where the page is
    light or dark: an inverted theme differs here), of their chroma (position-aware), and of the
    palettes (position-free)."""
    n = rows // _COLOUR_CELL
    ca, cb = _pad_rows(a.cells, n, 1.0), _pad_rows(b.cells, n, 1.0)
    la, lb = ca @ _LUMA, cb @ _LUMA
    tone = float(np.exp(-float(np.abs(la - lb).mean()) / _TONE_SCALE))
    chroma = float(np.sqrt((((ca - la[..., None]) - (cb - lb[..., None])) ** 2).sum(axis=-1)).mean())
    return tone, float(np.exp(-chroma / _HUE_SCALE)), float(np.minimum(a.palette, b.palette).sum())


def raw_parts(a: PageFeatures, b: PageFeatures) -> dict[str, Any]:
    rows = max(a.height, b.height)
    return {"structure": _structure(a, b, rows), "layout": _layout(a, b, rows), "colour": _colour(a, b, rows)}


def compare(a: PageFeatures, b: PageFeatures) -> dict[str, float]:
    """The parts and the weighted ``score`` of page ``a`` against reference ``b``."""
    raw = raw_parts(a, b)
    structure = float(np.dot(raw["structure"], _SCALE_WEIGHTS) / sum(_SCALE_WEIGHTS))
    layout = float(np.mean(raw["layout"]))
    tone_raw, hue_cells, palette = raw["colour"]
    tone = tone_raw * layout  # colour credit only where the page also has the reference's content
    hue = 0.5 * (hue_cells + palette) * layout
    score = (WEIGHTS["structure"] * structure + WEIGHTS["layout"] * layout + WEIGHTS["tone"] * tone
             + WEIGHTS["hue"] * hue)
    return {"score": float(min(max(score, 0.0), 1.0)), "structure": structure, "layout": layout, "tone": tone, "hue": hue}


class FallbackScorer(ImageScorer):
    """Deterministic, weight-free page similarity (edge structure, ink layout, colour); reported
    as ``structure-fallback-v2 (not CLIP)``. ``similarity(page, reference)`` is not a cosine of
    embeddings: it compares cached per-image features pairwise (see the module docstring).
    ``embed`` still gives a compact unit-norm descriptor (coarse ink and colour) for callers that
    want one."""

    name = FALLBACK_NAME
    is_clip = False

    def __init__(self, batch_size: int = 64, cache_size: int = 64):
        super().__init__(batch_size=batch_size, cache_size=cache_size)
        self._features: OrderedDict[str, PageFeatures] = OrderedDict()
        self._features_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_features"] = OrderedDict()  # a per-process speed-up: copies start empty
        return state

    def features(self, image: Any) -> PageFeatures:
        """The features of ``image``, computed once per content (LRU of ``cache_size`` pages)."""
        key = image_key(image)
        with self._features_lock:
            hit = self._features.get(key)
            if hit is not None:
                self._features.move_to_end(key)
                return hit
        feats = page_features(image)
        with self._features_lock:
            self._features[key] = feats
            while len(self._features) > self._cache_size:
                self._features.popitem(last=False)
        return feats

    def parts(self, image: Any, reference: Any) -> dict[str, float]:
        """The score and its three parts, for reports and debugging."""
        return compare(self.features(image), self.features(reference))

    def similarities(self, images: list[Any], references: list[Any]) -> np.ndarray:
        if len(images) != len(references):
            raise ValueError(f"{len(images)} images but {len(references)} references")
        # the same pixels score exactly 1 (two renders of one page are usually pixel-identical)
        return np.asarray([1.0 if image_key(a) == image_key(b) else self.parts(a, b)["score"]
                           for a, b in zip(images, references)], dtype=np.float32)

    def _embed_batch(self, images: list[Any]) -> np.ndarray:
        out = []
        for im in images:
            f = self.features(im)
            ink = _pad_rows(f.ink[-1], 20, 0.0).ravel()  # 20 x 10 cells of 64 px
            colour = _pad_rows(f.cells, 40, 1.0)[::2, ::2].ravel()
            vec = np.concatenate([ink / (np.linalg.norm(ink) + 1e-6), colour / (np.linalg.norm(colour) + 1e-6)])
            out.append(vec / (np.linalg.norm(vec) + 1e-12))
        return np.stack(out).astype(np.float32)
