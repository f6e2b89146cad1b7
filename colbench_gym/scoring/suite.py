"""The ordering suite for frontend similarity: does a scorer rank page pairs the way a person would?

A screenshot similarity is a reward: whatever it ranks too high, RL learns to submit. Issue 24
measured the first weight-free fallback giving a *blank page* 0.654 on average over the 30
embedded tasks, above a well-formed unrelated site (0.548) and level with the reference page in
neutral colours (0.679). This suite pins the order a similarity must respect, built from each
task's reference HTML only (no hand-made images, nothing downloaded):

======================  =====================================================================
variant                 what the candidate page is
======================  =====================================================================
``identical``           the reference itself (rendered again)
``recoloured``          same layout, same text, every Tailwind colour family made neutral
                        (``bg-emerald-800`` -> ``bg-gray-800``: same shade, no hue)
``retexted``            same layout and colours, every word of the visible text replaced by
                        another word of the same length (so lines wrap about the same)
``unrelated``           another task's reference (half the task list away): a well-formed site
``blank``               an empty page
======================  =====================================================================

Required order, per task: identical > recoloured > retexted > unrelated > blank
(:data:`ORDERINGS`, each adjacent pair); a good measure holds each on >= 90 % of the tasks
(:data:`REQUIRED_HOLD_RATE`). ``benchmarks/bench_similarity_suite.py`` prints the whole table for
any scorer; ``tests/scoring/test_similarity_suite.py`` asserts it for the fallback.

The module builds HTML and computes statistics; rendering is the caller's (this folder does not
import the renderer).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

VARIANTS = ("identical", "recoloured", "retexted", "unrelated", "blank")
ORDERINGS = tuple(zip(VARIANTS, VARIANTS[1:]))
REQUIRED_HOLD_RATE = 0.9
BLANK_HTML = "<html><head></head><body></body></html>"

#: Tailwind's chromatic colour families (v2 and v3); ``gray`` and friends are already neutral.
_FAMILIES = ("red", "orange", "amber", "yellow", "lime", "green", "emerald", "teal", "cyan", "sky", "blue",
             "indigo", "violet", "purple", "fuchsia", "pink", "rose")
_COLOUR_CLASS = re.compile(
    r"(?<![\w-])((?:[a-z-]+:)*(?:bg|text|border(?:-[trblxy])?|from|via|to|ring|divide|outline|decoration|"
    r"placeholder|accent|caret|fill|stroke|shadow)-)(" + "|".join(_FAMILIES) + r")(-\d{2,3}(?:/\d+)?)(?![\w-])")
_NEUTRAL_CLASS = re.compile(_COLOUR_CLASS.pattern.replace("|".join(_FAMILIES), "gray|slate|zinc|neutral|stone"))
_CLASS_ATTR = re.compile(r"""(\bclass\s*=\s*)(["'])(.*?)\2""", re.I | re.S)
_SKIP_BLOCK = re.compile(r"<(script|style|title|head|noscript)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>|&[#\w]+;", re.S)
_WORD = re.compile(r"[A-Za-z]+|\d")

#: Words to put in place of the page's own (lower-case, grouped by length below).
_LEXICON = (
    "a i an at be by do go he if in is it me my no of on or so to up us we ox ax "
    "ace and any are art bay bed big box car cat cup day dog ear egg eye fan fig fox gem hat ice ink jam "
    "jar key kit leg lid log map mud net nut oak owl pan pen pig pot rag ray rod rug saw sea sun tea toe "
    "tub van web wig yak zip "
    "acre bark bell bolt cake coat crab deer dusk fern flag frog gate goat harp hive iris jade kite lamp "
    "leaf lime mask mint moth nest opal pear pine plum quay reed ruby sail silk snow sock star tide tusk "
    "vase wolf wren yarn zinc "
    "amber badge bison cabin cedar cloud coral daisy eagle ember flute glove grape heron igloo ivory "
    "jelly koala lemon llama maple melon noble ocean olive otter panda pearl piano quail raven river "
    "robin salad shell sloth stone tiger tulip umber viola whale yacht zebra "
    "almond anchor basket beacon bottle candle canyon carrot cobalt donkey falcon forest garlic ginger "
    "hammer harbor jigsaw kettle lagoon lizard magnet meadow nutmeg orchid parrot pepper pillow puffin "
    "rabbit saddle salmon spruce teapot timber turnip velvet walnut willow zither "
    "acrobat balloon biscuit cabbage caramel cypress dolphin emerald fiddler giraffe granite harvest "
    "hickory iceberg jasmine kestrel lantern lobster mustard nectar octopus orchard pelican pumpkin "
    "quarrel raccoon saffron sparrow thistle trumpet unicorn vanilla walrus whistle "
    "aardvark backpack blizzard cardinal chestnut cinnamon compass daffodil elephant flamingo gardenia "
    "hedgehog hyacinth kangaroo lavender mandolin marigold mulberry nightowl pancakes peppermint porpoise "
    "sapphire seahorse snowdrop tangerine tortoise treehouse umbrella woodland"
).split()


def _words_by_length() -> dict[int, list[str]]:
    by: dict[int, list[str]] = {}
    for w in _LEXICON:
        by.setdefault(len(w), []).append(w)
    return by


_BY_LENGTH = _words_by_length()


def _rng(html: str, salt: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256((salt + "\x00" + html).encode()).digest()[:8], "big"))


def _swap_families(html: str, pattern: re.Pattern, family: str) -> str:
    def fix_classes(m: re.Match) -> str:
        return m.group(1) + m.group(2) + pattern.sub(lambda c: c.group(1) + family + c.group(3), m.group(3)) + m.group(2)

    return _CLASS_ATTR.sub(fix_classes, html)


def recolour(html: str) -> str:
    """The page with every chromatic Tailwind colour class turned neutral at the same shade:
    same layout, same text, other colours (``hover:bg-blue-700`` -> ``hover:bg-gray-700``). A
    page that is neutral already gets its grays turned blue instead (so the variant always
    differs from the reference)."""
    out = _swap_families(html, _COLOUR_CLASS, "gray")
    return out if out != html else _swap_families(html, _NEUTRAL_CLASS, "blue")


def _replace_word(word: str, rng: random.Random) -> str:
    if word.isdigit():
        return str((int(word) + rng.randint(1, 8)) % 10)
    pool = [w for w in _BY_LENGTH.get(len(word), []) if w != word.lower()]
    if not pool:  # longer than the lexicon: a run of letters of the same length
        new = "".join(rng.choice("etaoinshrdlu") for _ in word)
    else:
        new = rng.choice(pool)
    if word.isupper() and len(word) > 1:
        return new.upper()
    if word[0].isupper():
        return new[0].upper() + new[1:]
    return new


def retext(html: str) -> str:
    """The page with every word of its visible text replaced by another word of the same length
    (digits by other digits): same layout and colours, other text. Markup, ``<head>``, scripts,
    styles and entities are left alone."""
    rng = _rng(html, "retext")
    out: list[str] = []
    pos = 0
    protected = [(m.start(), m.end()) for m in _SKIP_BLOCK.finditer(html)]
    protected += [(m.start(), m.end()) for m in _TAG.finditer(html)]
    protected.sort()
    for start, end in protected:
        if start < pos:  # overlaps what is already kept as it is (a tag inside a skipped block)
            if end > pos:
                out.append(html[pos:end])
                pos = end
            continue
        out.append(_WORD.sub(lambda m: _replace_word(m.group(0), rng), html[pos:start]))
        out.append(html[start:end])
        pos = end
    out.append(_WORD.sub(lambda m: _replace_word(m.group(0), rng), html[pos:]))
    return "".join(out)


def unrelated_index(i: int, n: int) -> int:
    """The task whose reference is task ``i``'s unrelated site: half the list away."""
    if n < 2:
        raise ValueError("the suite needs at least two tasks (one is the other's unrelated site)")
    return (i + n // 2) % n


def variant_htmls(references: Sequence[str]) -> list[dict[str, str]]:
    """For each reference page, the HTML of each variant (:data:`VARIANTS`)."""
    n = len(references)
    return [{"identical": ref, "recoloured": recolour(ref), "retexted": retext(ref),
             "unrelated": references[unrelated_index(i, n)], "blank": BLANK_HTML}
            for i, ref in enumerate(references)]


def embedded_references(split: str = "test") -> list[str]:
    """The reference pages of the embedded frontend tasks (30 for ``test``): the suite's default."""
    from colbench_gym.tasks.embedded import load_embedded  # noqa: PLC0415

    return [t.ground_truth for t in load_embedded("frontend", split)]


@dataclass
class SuiteReport:
    """Scores of every (task, variant) pair and how often each required ordering held."""

    scorer: str
    scores: dict[str, np.ndarray]  # variant -> one score per task
    hold: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def tasks(self) -> int:
        return len(next(iter(self.scores.values())))

    def means(self) -> dict[str, float]:
        return {v: float(np.mean(s)) for v, s in self.scores.items()}

    def failures(self) -> dict[tuple[str, str], list[int]]:
        """Per ordering, the tasks where it did not hold (strictly greater required)."""
        return {(a, b): [i for i in range(self.tasks) if not self.scores[a][i] > self.scores[b][i]]
                for a, b in ORDERINGS}

    def passes(self, rate: float = REQUIRED_HOLD_RATE) -> bool:
        return all(h >= rate for h in self.hold.values())

    def table(self) -> str:
        lines = [f"scorer: {self.scorer}   tasks: {self.tasks}", "", "| variant | mean score | min | max |",
                 "|---|---|---|---|"]
        for v in VARIANTS:
            s = self.scores[v]
            lines.append(f"| {v} | {np.mean(s):.3f} | {np.min(s):.3f} | {np.max(s):.3f} |")
        lines += ["", "| ordering | holds on | tasks where it fails |", "|---|---|---|"]
        fails = self.failures()
        for a, b in ORDERINGS:
            lines.append(f"| {a} > {b} | {100 * self.hold[(a, b)]:.0f} % | {fails[(a, b)] or '-'} |")
        return "\n".join(lines)


def score_suite(scorer: Any, reference_images: Sequence[Any], variant_images: Sequence[dict[str, Any]]) -> SuiteReport:
    """Score each task's variant screenshots against its reference screenshot with ``scorer``
    (an :class:`~colbench_gym.scoring.base.ImageScorer`) and count how often each ordering held."""
    if len(reference_images) != len(variant_images):
        raise ValueError(f"{len(reference_images)} references but {len(variant_images)} variant sets")
    scores: dict[str, np.ndarray] = {}
    for v in VARIANTS:
        scores[v] = np.asarray(scorer.similarities([imgs[v] for imgs in variant_images], list(reference_images)),
                               dtype=np.float64)
    report = SuiteReport(getattr(scorer, "name", type(scorer).__name__), scores)
    n = report.tasks
    report.hold = {(a, b): float(np.mean(scores[a] > scores[b])) if n else 0.0 for a, b in ORDERINGS}
    return report


def render_suite(render_many: Callable[[list[str]], list[Any]], references: Sequence[str]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Render the suite with ``render_many`` (e.g. ``Renderer(...).render_many``, returning
    results with ``.image()`` and ``.error``): ``(reference images, variant images per task)``.
    Each distinct page is rendered once; a page that fails to render is an error, not a score."""
    sets = variant_htmls(references)
    pages = list(dict.fromkeys([*references, *(h for s in sets for h in s.values())]))
    results = render_many(pages)
    bad = [(p[:80], r.error) for p, r in zip(pages, results) if getattr(r, "error", None)]
    if bad:
        raise RuntimeError(f"{len(bad)} suite page(s) failed to render, e.g. {bad[0]}")
    image = {p: r.image() for p, r in zip(pages, results)}
    # "identical" is a second render of the reference, not the same image object.
    identical = render_many(list(references))
    if any(getattr(r, "error", None) for r in identical):
        raise RuntimeError("a reference failed to render the second time")
    variants = [{**{v: image[h] for v, h in s.items()}, "identical": r.image()} for s, r in zip(sets, identical)]
    return [image[r] for r in references], variants


__all__ = ["BLANK_HTML", "ORDERINGS", "REQUIRED_HOLD_RATE", "SuiteReport", "VARIANTS", "embedded_references",
           "recolour", "render_suite", "retext", "score_suite", "unrelated_index", "variant_htmls"]
