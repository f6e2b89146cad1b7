"""Decoding what the sandbox sends back: plain data only, validated, never unpickled.

The child encodes each call's result as tagged JSON (see ``_worker.encode``). Here, in the
trusted process, we rebuild Python values from it and reject anything that is not exactly
None, bool, int, float (incl. nan/inf), str, bytes, list, tuple, dict, set or frozenset.
A malformed record is not an error of the grader: it is a failed test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64
READY = '{"t":"ready"}'


class WireError(ValueError):
    """A record from the sandbox is not valid plain data."""


@dataclass(frozen=True)
class Outcome:
    """What one call produced: ``kind`` is "value", "raise" or "missing"."""

    kind: str
    value: Any = None  # the value, the exception type name, or why it is missing

    @classmethod
    def missing(cls, why: str) -> "Outcome":
        return cls("missing", why)


def _reject_constant(name: str) -> Any:
    raise WireError(f"bare {name} is not allowed on the wire")


def loads(line: str) -> Any:
    """JSON without NaN/Infinity tokens (floats travel as hex strings)."""
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"not valid JSON: {exc}") from None


def decode(obj: Any, depth: int = 0) -> Any:
    """Rebuild a plain value from its tagged form; raise :class:`WireError` on anything else."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if type(obj) is not list or not obj or type(obj[0]) is not str:
        raise WireError("malformed tagged value")
    tag = obj[0]
    if tag == "n" and len(obj) == 1:
        return None
    if len(obj) != 2:
        raise WireError(f"malformed tagged value {tag!r}")
    payload = obj[1]
    try:
        if tag == "b" and payload in (0, 1) and type(payload) is int:
            return payload == 1
        if tag == "i" and type(payload) is str:
            return int(payload, 16)
        if tag == "f" and type(payload) is str:
            return float.fromhex(payload)
        if tag == "s" and type(payload) is str:
            return payload
        if tag == "y" and type(payload) is str:
            return bytes.fromhex(payload)
    except ValueError as exc:
        raise WireError(f"bad {tag!r} payload: {exc}") from None
    if type(payload) is not list:
        raise WireError(f"bad payload for tag {tag!r}")
    if tag == "l":
        return [decode(v, depth + 1) for v in payload]
    if tag == "t":
        return tuple(decode(v, depth + 1) for v in payload)
    try:
        if tag == "d":
            out = {}
            for pair in payload:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("malformed dict entry")
                out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
            return out
        if tag == "S":
            return {decode(v, depth + 1) for v in payload}
        if tag == "F":
            return frozenset(decode(v, depth + 1) for v in payload)
    except TypeError as exc:  # unhashable key / element
        raise WireError(str(exc)) from None
    raise WireError(f"unknown tag {tag!r}")


def encode(value: Any, depth: int = 0) -> Any:
    """Trusted-side inverse of :func:`decode` (used for the on-disk reference cache)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    t = type(value)
    if value is None:
        return ["n"]
    if t is bool:
        return ["b", int(value)]
    if t is int:
        return ["i", format(value, "x")]
    if t is float:
        return ["f", value.hex()]
    if t is str:
        return ["s", value]
    if t is bytes:
        return ["y", value.hex()]
    tags = {list: "l", tuple: "t", set: "S", frozenset: "F"}
    if t in tags:
        return [tags[t], [encode(v, depth + 1) for v in value]]
    if t is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    raise WireError(f"not plain data: {t.__name__}")


def parse_segments(segments: Any, n_calls: int) -> tuple[list[Outcome], str | None]:
    """Turn the worker's raw segments into one :class:`Outcome` per call plus an error summary.

    Anything unexpected (wrong index, bad JSON, unknown record) makes that call ``missing``;
    calls nobody reported on are ``missing`` too. Nothing here trusts the sandbox.
    """
    outcomes: list[Outcome | None] = [None] * n_calls
    error: str | None = None
    if type(segments) is not list:
        return [Outcome.missing("sandbox crashed")] * n_calls, "sandbox crashed"
    for seg in segments:
        if type(seg) is not dict or type(seg.get("lines")) is not list or type(seg.get("start")) is not int:
            error = error or "sandbox crashed"
            continue
        start, lines, end = seg["start"], seg["lines"], seg.get("end")
        if not 0 <= start < max(n_calls, 1):
            continue
        if not lines:
            error = error or ("timeout" if end == "timeout" else "answer exited or crashed before defining anything")
            break
        first = lines[0]
        if first != READY:
            try:
                rec = loads(first) if type(first) is str else None
            except WireError:
                rec = None
            if type(rec) is dict and rec.get("t") == "import_error":
                x, m = rec.get("x"), rec.get("m")
                error = error or f"{x if type(x) is str else 'Error'}: {m if type(m) is str else ''}".rstrip(": ")
            else:
                error = error or "malformed output from the sandbox"
            break
        expect = start
        for line in lines[1:]:
            if expect >= n_calls:
                break
            outcomes[expect] = _outcome(line, expect)
            expect += 1
        if expect < n_calls and outcomes[expect] is None:
            why = {"timeout": "timeout", "oversize": "output too large", "eof": "crashed",
                   "done": "no result"}.get(end if type(end) is str else "", "no result")
            outcomes[expect] = Outcome.missing(why)
            error = error or why
    final = [o if o is not None else Outcome.missing("no result") for o in outcomes]
    return final, error


def _outcome(line: Any, index: int) -> Outcome:
    if type(line) is not str:
        return Outcome.missing("malformed record")
    try:
        rec = loads(line)
        if type(rec) is not dict or rec.get("i") != index or type(rec.get("i")) is not int:
            return Outcome.missing("record out of order")
        t = rec.get("t")
        if t == "r":
            return Outcome("value", decode(rec.get("v")))
        if t == "e" and type(rec.get("x")) is str:
            return Outcome("raise", rec["x"])
        if t == "u":
            return Outcome.missing("result is not plain data")
    except WireError as exc:
        return Outcome.missing(f"malformed record: {exc}")
    return Outcome.missing("malformed record")
