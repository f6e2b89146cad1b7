"""The paper's comparison rule between two agents, in one place.

The frontend metric of ColBench is a *win rate* against a reference agent (the paper uses GPT-4o):
per task, the agent wins (1) when its score beats the reference's, ties (0.5) when the two are
equal, and loses (0) otherwise. Scores are floats (CLIP cosine similarities, fractions of tests
passed), so "equal" means within :data:`TIE_TOLERANCE`: two renders of one page can differ in the
last digits of their similarity, and that noise must not decide a win.
``colbench evaluate frontend --reference-run`` and ``sweet-agent evaluate --reference`` both use
:func:`win_value`.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Scores closer than this (absolute difference) are a tie.
TIE_TOLERANCE = 1e-6


def win_value(ours: float, theirs: float, tolerance: float = TIE_TOLERANCE) -> float:
    """1.0 if ``ours`` beats ``theirs``, 0.5 if they are within ``tolerance``, else 0.0."""
    if abs(ours - theirs) <= tolerance:
        return 0.5
    return 1.0 if ours > theirs else 0.0


def win_rate(pairs: Iterable[tuple[float, float]], tolerance: float = TIE_TOLERANCE) -> float | None:
    """Mean :func:`win_value` over ``(ours, theirs)`` pairs; None when there are none."""
    values = [win_value(a, b, tolerance) for a, b in pairs]
    return sum(values) / len(values) if values else None
