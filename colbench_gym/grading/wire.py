"""Decoding what the sandbox sends back: plain data only, validated, bounded, never unpickled.

The child encodes each call's result as tagged JSON (see ``_worker.encode``). Here, in the
trusted process, we rebuild Python values from it and reject anything that is not exactly
None, bool, int, float (incl. nan/inf), str, bytes, list, tuple, dict, set or frozenset.
A malformed record is not an error of the grader: it is a failed test.

Why every check below: the answer can write to its result channel itself and forge any
frame. Nothing it sends may raise out of the grader, cost more than linear work here, or
produce text that cannot be written out:

* element count (:data:`MAX_NODES` per value, counted *before* ``json.loads`` builds anything
  large), nesting depth (:data:`MAX_DEPTH`) and number size (:data:`MAX_HEX_DIGITS`) are
  bounded;
* numbers that do not convert (``float.fromhex("0x1p99999")`` raises ``OverflowError``) are a
  :class:`WireError`, like every other malformed payload;
* dicts, sets and frozensets are only built after checking that their keys do not collide in
  hashing: ints, floats and tuples of them hash deterministically, so a forged container of
  ``k * (2**61 - 1)`` would otherwise make each insertion scan every earlier key (quadratic);
* text that leaves the sandbox as a *message* (error names, exception types) goes through
  :func:`safe_text`: lone surrogates escaped, length capped;
* no error text built here echoes a byte the answer sent (issue 37): a record can carry the
  current test's arguments (``repr(args)``), so decoder errors name the failure from a fixed
  vocabulary, an answer's import failure keeps only its exception's *kind*
  (:func:`exception_label`: a builtin exception name, else a fixed phrase) and never its message,
  and nothing here decides whether the failure was the infrastructure's (the grader decides that
  on the host side, :attr:`GradeResult.end_reason`).
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64
#: Most tagged nodes one value may have (the child's encoder has the same budget).
MAX_NODES = 200_000
#: Most hex digits of one int (~ 4 * 10**6 bits): far beyond any plausible answer.
MAX_HEX_DIGITS = 1 << 20
#: Most keys of one hashed container that may share a single ``hash`` value.
MAX_SAME_HASH = 16
#: Longest message (error text, exception type name) kept from the sandbox.
MAX_TEXT = 300
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


def safe_text(text: Any, limit: int = MAX_TEXT) -> str:
    """``text`` made safe to store: a str, encodable as UTF-8 (lone surrogates escaped), capped."""
    if type(text) is not str:
        return ""
    text = text[:limit + 1]  # the escaping below at most sextuples it
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + "..."


def _reject_constant(name: str) -> Any:
    raise WireError(f"bare {name} is not allowed on the wire")


def loads(line: str, max_nodes: int = MAX_NODES) -> Any:
    """JSON without NaN/Infinity tokens (floats travel as hex strings), bounded in size.

    Every tagged node is a JSON array and every record an object, so counting ``[`` and ``{``
    bounds what ``json.loads`` may allocate before it allocates it (a string containing
    brackets only makes the bound stricter).
    """
    if type(line) is not str:
        raise WireError("record is not text")
    if line.count("[") + line.count("{") > 2 * max_nodes + 16:
        raise WireError("record has too many elements")
    try:
        return json.loads(line, parse_constant=_reject_constant)
    except WireError:
        raise
    except (ValueError, RecursionError, MemoryError):
        # json's message gives positions (and an escape it refused): numbers the answer chooses
        raise WireError("not valid JSON") from None


def decode(obj: Any, depth: int = 0, budget: list[int] | None = None) -> Any:
    """Rebuild a plain value from its tagged form; raise :class:`WireError` on anything else."""
    if budget is None:
        budget = [MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0:
        raise WireError("value has too many elements")
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if type(obj) is not list or not obj or type(obj[0]) is not str:
        raise WireError("malformed tagged value")
    tag = obj[0]
    if tag == "n" and len(obj) == 1:
        return None
    if len(obj) != 2:
        raise WireError("malformed tagged value")
    payload = obj[1]
    try:
        if tag == "b" and payload in (0, 1) and type(payload) is int:
            return payload == 1
        if tag == "i" and type(payload) is str:
            if len(payload) > MAX_HEX_DIGITS:
                raise WireError("int too large")
            return int(payload, 16)
        if tag == "f" and type(payload) is str:
            if len(payload) > 64:
                raise WireError("malformed float")
            return float.fromhex(payload)
        if tag == "s" and type(payload) is str:
            return payload
        if tag == "y" and type(payload) is str:
            return bytes.fromhex(payload)
    except WireError:
        raise
    except (ValueError, OverflowError, MemoryError):
        # int()'s message quotes the payload: the answer's bytes, never echoed
        raise WireError(_BAD_PAYLOAD.get(tag, "bad payload")) from None
    if type(payload) is not list:
        raise WireError("bad payload")
    if tag == "l":
        return [decode(v, depth + 1, budget) for v in payload]
    if tag == "t":
        return tuple([decode(v, depth + 1, budget) for v in payload])
    if tag == "d":
        keys, values = [], []
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise WireError("malformed dict entry")
            keys.append(decode(pair[0], depth + 1, budget))
            values.append(decode(pair[1], depth + 1, budget))
        _check_hashing(keys)
        return dict(zip(keys, values))
    if tag in ("S", "F"):
        items = [decode(v, depth + 1, budget) for v in payload]
        _check_hashing(items)
        return set(items) if tag == "S" else frozenset(items)
    raise WireError("unknown tag")


_BAD_PAYLOAD = {"i": "bad int payload", "f": "bad float payload", "y": "bad bytes payload"}


def _check_hashing(keys: list[Any]) -> None:
    """Refuse keys that are unhashable or built to collide (hash flooding is quadratic).

    The hashes are sorted, not put in a set: sorting plain ints cannot be flooded. Keys whose
    hashes differ but share low bits only cost a few extra probes each (CPython perturbs the
    probe sequence with the high bits), so equal full hashes are the case to bound.
    """
    if len(keys) <= MAX_SAME_HASH:
        try:
            for k in keys:
                hash(k)
        except TypeError:
            raise WireError("unhashable key") from None
        return
    try:
        hashes = sorted([hash(k) for k in keys])
    except TypeError:  # unhashable key / element
        raise WireError("unhashable key") from None
    run, prev = 0, None
    for h in hashes:
        run = run + 1 if h == prev else 1
        prev = h
        if run > MAX_SAME_HASH:
            raise WireError("container keys built to collide in hashing")


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


_END_REASONS = {"timeout": "timeout", "oversize": "output too large", "eof": "crashed", "done": "no result"}

#: The exception names error text may carry: the builtin exceptions' (a fixed vocabulary).
_LABELS = frozenset(name for name, value in vars(builtins).items()
                    if isinstance(value, type) and issubclass(value, BaseException))
#: How error text names an exception whose (sandbox-reported) name is not a builtin one.
OTHER_EXCEPTION = "exception of a non-builtin class"


def exception_label(name: Any) -> str:
    """How error text names an exception the answer raised: the name when it is a builtin
    exception's (``ValueError``, ``SyntaxError``, ``SystemExit`` ...), else
    :data:`OTHER_EXCEPTION`. The answer chooses its classes' names, modules and messages, so
    none of them is ever echoed: they could carry a hidden test's inputs, or read like a failure
    of the grader."""
    return name if type(name) is str and name in _LABELS else OTHER_EXCEPTION


def parse_segments(segments: Any, n_calls: int, *, answer: bool = True) -> tuple[list[Outcome], str | None]:
    """Turn the worker's raw segments into one :class:`Outcome` per call plus an error summary.

    Anything unexpected (wrong index, bad JSON, unknown record, absurd value) makes that call
    ``missing`` *and* sets the error summary; calls nobody reported on are ``missing`` too.
    Nothing here trusts the sandbox, and nothing here raises.

    ``answer``: the segments are an answer's, so the error summary of a failure before any test
    ran names only the exception's kind (:func:`exception_label`); a reference's (``False``,
    task material, never the agent's bytes) keeps ``"Type: message"`` for ``colbench tasks audit``.
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
                rec = loads(first)
            except WireError:
                rec = None
            if type(rec) is dict and rec.get("t") == "import_error":
                if answer:
                    error = error or f"{exception_label(rec.get('x'))}: raised by the answer before any test ran"
                else:
                    x = safe_text(rec.get("x"), 100) or "Error"
                    m = safe_text(rec.get("m"))
                    error = error or f"{x}: {m}".rstrip(": ")
            else:
                error = error or "malformed output from the sandbox"
            break
        expect = start
        for line in lines[1:]:
            if expect >= n_calls:
                break
            out, malformed = _outcome(line, expect)
            outcomes[expect] = out
            if malformed:
                error = error or f"malformed output from the sandbox ({out.value})"
            expect += 1
        if expect < n_calls and outcomes[expect] is None:
            why = _END_REASONS.get(end if type(end) is str else "", "no result")
            outcomes[expect] = Outcome.missing(why)
            error = error or why
    final = [o if o is not None else Outcome.missing("no result") for o in outcomes]
    return final, error


def _outcome(line: Any, index: int) -> tuple[Outcome, bool]:
    """One call's outcome, and whether its record was malformed (forged or corrupt)."""
    try:
        rec = loads(line)
        if type(rec) is not dict or type(rec.get("i")) is not int or rec.get("i") != index:
            return Outcome.missing("record out of order"), True
        t = rec.get("t")
        if t == "r":
            return Outcome("value", decode(rec.get("v"))), False
        if t == "e" and type(rec.get("x")) is str:
            return Outcome("raise", safe_text(rec["x"], 200)), False
        if t == "u":
            return Outcome.missing("result is not plain data"), False
    except WireError as exc:  # its text is ours alone (fixed phrases, see decode)
        return Outcome.missing(f"malformed record: {safe_text(str(exc), 120)}"), True
    except (RecursionError, MemoryError):  # belt and braces: bounded above, never fatal here
        return Outcome.missing("malformed record: too large"), True
    return Outcome.missing("malformed record"), True
