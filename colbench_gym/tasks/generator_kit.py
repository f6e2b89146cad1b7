"""Building blocks of the backend task families: a family's draft, its tests, request wording.

WHY apart from the families and the driver: both family sets (the general families of
:mod:`colbench_gym.tasks.backend_families` and the collaboration-pays families of
:mod:`colbench_gym.tasks.collab_generator`) use the same draft shape, the same request templates
and the same test rendering (a lazy ten-test plan that drops calls landing on a rounding tie, or
tests given call by call); the driver (:mod:`colbench_gym.tasks.generator`) turns any draft into
a task. Generated tasks are byte-identical to those of the code this replaced:
``tests/tasks/test_task_generator.py`` pins their digest.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


def call_text(fn: str, *args: Any) -> str:
    return f"{fn}({', '.join(repr(a) for a in args)})"


@dataclass
class TestPlan:
    """Candidate test calls in priority order (boundaries first) plus a filler for top-ups.

    Kept lazy so the generator can drop a call whose expected value sits exactly on a rounding
    tie (e.g. ``round(14.945, 2)``): two correct answers that add the same numbers in another
    order may land on either side of such a tie, and the test would be unfair.
    """

    fn: str
    calls: Sequence[tuple]
    filler: Callable[[], tuple]

    def pick(self, accept: Callable[[str], bool]) -> list[str]:
        """The first ten distinct accepted calls, topped up from ``filler`` when short."""
        out: list[str] = []
        for args in self.calls:
            text = call_text(self.fn, *args)
            if text not in out and accept(text):
                out.append(text)
            if len(out) == 10:
                return out
        for _ in range(500):
            if len(out) == 10:
                break
            text = call_text(self.fn, *self.filler())
            if text not in out and accept(text):
                out.append(text)
        if len(out) != 10:
            raise RuntimeError(f"generator produced only {len(out)} usable tests for {self.fn}")
        return out

    def render(self, source: str) -> tuple[str, ...]:
        """The ten tests for the reference ``source`` (calls on a rounding tie left out)."""
        return tuple(self.pick(no_rounding_tie(source)))


@dataclass
class CallTests:
    """Tests given one by one: a tuple of arguments is one call ``fn(*args)``; a list of such
    tuples is one test whose result is the tuple of those calls' results (all must match).

    For families whose single calls cannot all depend on the hidden detail (the collaboration
    tasks): a test that bundles the decisive case with an ordinary one fails a guessed detail.
    """

    fn: str
    calls: Sequence[tuple | list[tuple]]

    def render(self, source: str) -> tuple[str, ...]:  # noqa: ARG002 - same signature as TestPlan.render
        """The tests as call texts, first occurrence of each kept, in order."""
        out: list[str] = []
        for test in self.calls:
            text = call_text(self.fn, *test) if isinstance(test, tuple) else \
                f"({', '.join(call_text(self.fn, *args) for args in test)})"
            if text not in out:
                out.append(text)
        return tuple(out)


def ten_tests(fn: str, calls: Sequence[tuple], filler: Callable[[], tuple]) -> TestPlan:
    return TestPlan(fn, calls, filler)


class _RoundingTie(Exception):
    pass


def _tie_checking_round(number: Any, ndigits: int | None = None) -> Any:
    if isinstance(number, float):
        scaled = abs(number) * 10 ** (ndigits or 0)
        if abs(scaled - int(scaled) - 0.5) < 1e-6:
            raise _RoundingTie
    return round(number) if ndigits is None else round(number, ndigits)


def no_rounding_tie(source: str) -> Callable[[str], bool]:
    """``accept(call)`` for :meth:`TestPlan.pick`: False when the call rounds an exact half.

    Runs our own template code (trusted, deterministic) with a ``round`` that spots ties.
    """
    namespace: dict[str, Any] = {"round": _tie_checking_round}
    exec(compile(source, "<generated reference>", "exec"), namespace)  # noqa: S102 - our own template

    def accept(call: str) -> bool:
        try:
            eval(compile(call, "<generated test>", "eval"), namespace)
        except _RoundingTie:
            return False
        except Exception:  # noqa: BLE001 - an expected error (e.g. ValueError) is a fine test
            return True
        return True

    return accept


REQUEST_TEMPLATES = (
    "{Context}. Can you write a python function {sig} that {goal}?",
    "{Context}, so I need a python function {sig} that {goal}.",
    "Write a python function {sig} that {goal}. {Context}.",
    "I'd like a python function {sig} that {goal}; {context}.",
    "{Context}. Please write me a python function {sig} which {goal}.",
)


def describe(rng: random.Random, fn: str, params: Sequence[str], context: str, goal: str, note: str = "",
             templates: Sequence[str] = REQUEST_TEMPLATES) -> str:
    """The vague first-person request: one of ``templates`` filled in, ``note`` appended."""
    sig = f"{fn}({', '.join(params)})"
    text = rng.choice(templates).format(Context=context[0].upper() + context[1:], context=context, sig=sig, goal=goal)
    if note:
        text += " " + note
    if re.search(r"\d", text):  # a programming error in a family: numbers are hidden details
        raise AssertionError(f"generated description leaks a number: {text!r}")
    return text


def money(rng: random.Random, lo: float, hi: float, step: float) -> float:
    n = round((hi - lo) / step)
    return round(lo + step * rng.randint(0, n), 2)


# --------------------------------------------------------------------------- families


@dataclass
class Draft:
    """What a family returns before the split and index are attached."""

    variant: str
    function_name: str
    description: str
    lines: list[str]
    tests: TestPlan | CallTests
    hidden: dict[str, Any]
    hidden_strings: list[str] = field(default_factory=list)
