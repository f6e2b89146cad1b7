"""How an answer's result is compared with the reference's, in the trusted process.

Semantics (documented in docs/sections/grading.md):
* types are strict: ``True`` is not ``1``, a list is not a tuple, str is not bytes, a set is
  not a frozenset; int and float are both *numbers* (``2`` matches ``2.0``) because the paper's
  release compares with ``==`` and answers legitimately differ there;
* floats match within ``rel_tol``/``abs_tol`` (``math.isclose``); ``nan`` matches ``nan``;
  ``inf`` matches only the same infinity;
* lists/tuples element-wise, dicts by key then value (values with tolerance), sets and dict
  keys exactly (with the same strict types; nan keys match nan keys);
* an exception is a result: it matches only an exception of the same type name;
* a missing result (timeout, crash, non-plain value) never matches anything.
"""

from __future__ import annotations

import math
from typing import Any

from colbench_gym.grading.wire import Outcome

REL_TOL = 1e-6
ABS_TOL = 1e-9


def _is_number(x: Any) -> bool:
    return type(x) is int or type(x) is float


def values_equal(expected: Any, actual: Any, rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL) -> bool:
    """Strictly typed, tolerance-aware equality of two plain values."""
    te, ta = type(expected), type(actual)
    if _is_number(expected) and _is_number(actual):
        if te is int and ta is int:
            return expected == actual
        try:
            e, a = float(expected), float(actual)
        except OverflowError:
            return False
        if math.isnan(e) or math.isnan(a):
            return math.isnan(e) and math.isnan(a)
        if math.isinf(e) or math.isinf(a):
            return e == a
        return math.isclose(e, a, rel_tol=rel_tol, abs_tol=abs_tol)
    if te is not ta:
        return False
    if expected is None or te in (bool, str, bytes):
        return expected == actual
    if te in (list, tuple):
        return len(expected) == len(actual) and all(
            values_equal(e, a, rel_tol, abs_tol) for e, a in zip(expected, actual))
    if te is dict:
        ek = {canonical(k): v for k, v in expected.items()}
        ak = {canonical(k): v for k, v in actual.items()}
        return ek.keys() == ak.keys() and all(values_equal(ek[k], ak[k], rel_tol, abs_tol) for k in ek)
    if te in (set, frozenset):
        return {canonical(v) for v in expected} == {canonical(v) for v in actual}
    return False  # not plain data: never equal


_NAN = ("nan",)


def canonical(x: Any) -> Any:
    """A hashable key that keeps the strict types apart (``True`` vs ``1``) and folds nan."""
    t = type(x)
    if x is None:
        return ("n",)
    if t is bool:
        return ("b", x)
    if t is int:
        return ("num", x)
    if t is float:
        return _NAN if math.isnan(x) else ("num", x)
    if t is str:
        return ("s", x)
    if t is bytes:
        return ("y", x)
    if t is tuple:
        return ("t", tuple(canonical(v) for v in x))
    if t is frozenset:
        return ("F", frozenset(canonical(v) for v in x))
    raise TypeError(f"unhashable result type {t.__name__}")


def outcomes_match(expected: Outcome, actual: Outcome, rel_tol: float = REL_TOL,
                   abs_tol: float = ABS_TOL) -> tuple[bool, str]:
    """Compare one call's outcomes; return ``(passed, reason)``."""
    if expected.kind == "missing":
        return False, f"the reference produced no result ({expected.value})"
    if actual.kind == "missing":
        return False, f"no result: {actual.value}"
    if expected.kind == "raise":
        if actual.kind == "raise":
            if actual.value == expected.value:
                return True, ""
            return False, f"raised {actual.value}, expected {expected.value}"
        return False, f"returned a value, expected {expected.value} to be raised"
    if actual.kind == "raise":
        return False, f"raised {actual.value}"
    try:
        if values_equal(expected.value, actual.value, rel_tol, abs_tol):
            return True, ""
    except (TypeError, RecursionError):
        pass
    return False, "result differs from the reference"
