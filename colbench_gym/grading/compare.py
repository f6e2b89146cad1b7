"""How an answer's result is compared with the reference's, in the trusted process.

All comparison rules live here, in one place: :class:`ComparisonRules` holds the knobs and
:data:`STRICT` is the default rule set (documented in docs/grading.md):

* types are strict: ``True`` is not ``1``, a list is not a tuple, str is not bytes, a set is
  not a frozenset;
* an ``int`` reference is exact: only an ``int`` of the same value matches it (``2.0`` or
  ``2.0000001`` do not);
* a ``float`` reference matches a float, or an int, within ``rel_tol``/``abs_tol``
  (``math.isclose``); ``nan`` matches ``nan``; ``inf`` matches only the same infinity;
* lists/tuples element-wise, dicts by key then value (values with the rules above), sets and
  dict keys exactly, with strict types: ``{1: "a"}`` and ``{1.0: "a"}`` differ, nan keys match
  nan keys;
* an exception is a result: it matches only an exception of the same type name — except an
  exception the *sandbox* caused in the reference (:mod:`colbench_gym.grading.environmental`:
  ImportError, MemoryError, RecursionError, EOFError, the OSError family), which the grader turns
  into a missing result before comparing;
* a missing result (timeout, crash, non-plain value) never matches anything.

Why strict: the score is a reward for RL, and whatever a comparison forgives, a policy learns
to exploit. A later rule set (e.g. the paper release's looser ``==``) is one more
:class:`ComparisonRules` value beside :data:`STRICT`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from colbench_gym.grading.wire import Outcome, exception_label

REL_TOL = 1e-6
ABS_TOL = 1e-9


@dataclass(frozen=True)
class ComparisonRules:
    """The knobs of the comparison (see the module docstring for what each rule means)."""

    name: str = "strict"
    rel_tol: float = REL_TOL
    abs_tol: float = ABS_TOL
    #: an int reference also accepts a float (within tolerance); strict: no
    int_reference_accepts_float: bool = False
    #: a float reference also accepts an int (within tolerance); strict: yes (an exact number)
    float_reference_accepts_int: bool = True


STRICT = ComparisonRules()


def _number_kind(x: Any) -> type | None:
    t = type(x)
    return t if t is int or t is float else None


def _numbers_equal(expected: int | float, actual: int | float, rules: ComparisonRules) -> bool:
    te, ta = type(expected), type(actual)
    if te is int and ta is int:
        return expected == actual
    if te is int and not rules.int_reference_accepts_float:
        return False
    if te is float and ta is int and not rules.float_reference_accepts_int:
        return False
    try:
        e, a = float(expected), float(actual)
    except OverflowError:
        return False
    if math.isnan(e) or math.isnan(a):
        return math.isnan(e) and math.isnan(a)
    if math.isinf(e) or math.isinf(a):
        return e == a
    return math.isclose(e, a, rel_tol=rules.rel_tol, abs_tol=rules.abs_tol)


def values_equal(expected: Any, actual: Any, rules: ComparisonRules = STRICT) -> bool:
    """Strictly typed, tolerance-aware equality of two plain values (``expected`` = reference)."""
    te, ta = type(expected), type(actual)
    if _number_kind(expected) and _number_kind(actual):
        return _numbers_equal(expected, actual, rules)
    if te is not ta:
        return False
    if expected is None or te in (bool, str, bytes):
        return expected == actual
    if te in (list, tuple):
        return len(expected) == len(actual) and all(
            values_equal(e, a, rules) for e, a in zip(expected, actual))
    if te is dict:
        if len(expected) != len(actual):
            return False
        ek = {canonical(k): v for k, v in expected.items()}
        ak = {canonical(k): v for k, v in actual.items()}
        return ek.keys() == ak.keys() and all(values_equal(ek[k], ak[k], rules) for k in ek)
    if te in (set, frozenset):
        return len(expected) == len(actual) and {canonical(v) for v in expected} == {canonical(v) for v in actual}
    return False  # not plain data: never equal


_NAN = ("nan",)


def canonical(x: Any) -> Any:
    """A hashable key with the exact type kept apart (``True``, ``1`` and ``1.0`` differ); nan folded.

    Only called on values the wire decoder built, whose hashed containers were checked for
    colliding keys; the tag tuples here refine those hashes, they cannot add collisions.
    """
    t = type(x)
    if x is None:
        return ("n",)
    if t is bool:
        return ("b", x)
    if t is int:
        return ("i", x)
    if t is float:
        return _NAN if math.isnan(x) else ("f", x)
    if t is str:
        return ("s", x)
    if t is bytes:
        return ("y", x)
    if t is tuple:
        return ("t", tuple(canonical(v) for v in x))
    if t is frozenset:
        return ("F", frozenset(canonical(v) for v in x))
    raise TypeError(f"unhashable result type {t.__name__}")


#: A test's reason when the answer's code gave no result for it and nothing else is known (it
#: failed to load, or stopped before this call): the answer's failure, scored as failed.
NOT_RUN = "no result: the answer's code did not run this test (it failed to load or stopped before it)"


def outcomes_match(expected: Outcome, actual: Outcome, rules: ComparisonRules = STRICT) -> tuple[bool, str]:
    """Compare one call's outcomes; return ``(passed, reason)``."""
    if expected.kind == "missing":
        why = str(expected.value)
        return False, why if why.startswith("the reference") else f"the reference produced no result ({why})"
    if actual.kind == "missing":
        why = str(actual.value)
        return False, NOT_RUN if why == "no result" else f"no result ({why})"
    if expected.kind == "raise":
        if actual.kind == "raise":
            if actual.value == expected.value:
                return True, ""
            # the answer's exception by its kind only: its class name is the answer's text
            return False, f"raised {exception_label(actual.value)}, expected {expected.value}"
        return False, f"returned a value, expected {expected.value} to be raised"
    if actual.kind == "raise":
        return False, f"raised {exception_label(actual.value)}"
    try:
        if values_equal(expected.value, actual.value, rules):
            return True, ""
    except (TypeError, RecursionError):
        pass
    return False, "result differs from the reference"
