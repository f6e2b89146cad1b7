"""Unit tests of the trusted side: comparison, wire decoding, the warm pytest driver."""

from __future__ import annotations

import math
import os

import pytest

from colbench_gym.grading.compare import outcomes_match, values_equal
from colbench_gym.grading.pytest_driver import Case, PytestDriver
from colbench_gym.grading.wire import (
    READY,
    Outcome,
    WireError,
    decode,
    encode,
    loads,
    parse_segments,
)


@pytest.mark.parametrize("a,b,equal", [
    (1, 1, True), (True, 1, False), (1, True, False), (False, 0, False), (True, True, True),
    (0.1 + 0.2, 0.3, True), (1.0, 1.001, False), (1e-12, 0.0, True), (math.nan, math.nan, True),
    (math.nan, 1.0, False), (math.inf, math.inf, True), (math.inf, -math.inf, False), (10**400, 1.0, False),
    ("a", "a", True), ("a", b"a", False), (None, None, True), (None, 0, False),
    ([1.0, 2.0], [1.0, 2.0000000001], True), ([1, 2], (1, 2), False), ([1], [1, 1], False),
    ({"a": [0.3]}, {"a": [0.1 + 0.2]}, True), ({"a": 1}, {"b": 1}, False), ({1: "x"}, {True: "x"}, False),
    ({1, 2}, {2, 1}, True), ({1}, frozenset({1}), False), ({True}, {1}, False), ({math.nan}, {math.nan}, True),
    ({(1, "a"): None}, {(1, "a"): None}, True),
])
def test_values_equal(a, b, equal):
    assert values_equal(a, b) is equal
    assert values_equal(b, a) is equal


@pytest.mark.parametrize("expected,actual,equal", [
    # an int reference is exact: no float matches it, however close
    (1, 1.0, False), (2, 2.0000000001, False), ([1, 2], [1, 2.0000000001], False), ({"n": 3}, {"n": 3.0}, False),
    # a float reference keeps the tolerance, and an int within it is an exact number that matches
    (1.0, 1, True), (2.0000000001, 2, True), ([1.0, 2.0000000001], [1, 2], True), (2.5, 2, False),
    # dict keys are exact: 1 and 1.0 are different keys
    ({1: "a"}, {1.0: "a"}, False), ({1.0: "a"}, {1: "a"}, False), ({(1, 2.0): 0}, {(1, 2): 0}, False),
])
def test_values_equal_is_directional_for_numbers(expected, actual, equal):
    assert values_equal(expected, actual) is equal


def test_outcomes_match():
    assert outcomes_match(Outcome("raise", "ValueError"), Outcome("raise", "ValueError"))[0]
    assert not outcomes_match(Outcome("raise", "ValueError"), Outcome("raise", "KeyError"))[0]
    assert not outcomes_match(Outcome("raise", "ValueError"), Outcome("value", None))[0]
    assert not outcomes_match(Outcome("value", None), Outcome("raise", "ValueError"))[0]
    assert not outcomes_match(Outcome.missing("timeout"), Outcome.missing("timeout"))[0]
    assert not outcomes_match(Outcome("value", 1), Outcome.missing("crashed"))[0]


def test_wire_round_trip_and_rejections():
    value = {"a": [1, 2.5, math.inf, None, True], (1, "x"): frozenset({b"\x00"}), "s": {3}, 10**50: -0.0}
    back = decode(loads(__import__("json").dumps(encode(value))))
    assert values_equal(value, back) and type(back[(1, "x")]) is frozenset
    assert math.isnan(decode(["f", "nan"]))
    for bad in (["x", 1], ["b", 2], ["b", True], ["i", "zz"], ["l", "notalist"], ["d", [[["l", []], ["n"]]]],
                "plain", [], ["n", 1], ["S", [["l", []]]]):
        with pytest.raises(WireError):
            decode(bad)
    with pytest.raises(WireError):
        loads('{"v": NaN}')
    deep = ["n"]
    for _ in range(200):
        deep = ["l", [deep]]
    with pytest.raises(WireError):
        decode(deep)


def test_parse_segments_trusts_nothing():
    rec = '{"t":"r","i":%d,"v":["i","1"]}'
    outs, err = parse_segments([{"start": 0, "lines": [READY, rec % 0, rec % 5, "garbage"], "end": "eof"}], 4)
    assert [o.kind for o in outs] == ["value", "missing", "missing", "missing"]
    assert outs[1].value == "record out of order" and outs[3].value == "crashed"
    assert err == "malformed output from the sandbox (record out of order)"  # a forged frame is reported
    outs, err = parse_segments([{"start": 0, "lines": ['{"t":"import_error","x":"SyntaxError","m":"bad"}'],
                                 "end": "eof"}], 2)
    assert err == "SyntaxError: raised by the answer before any test ran" and all(o.kind == "missing" for o in outs)
    # a reference's failure (task material, not the agent's bytes) keeps its message for the audit
    assert parse_segments([{"start": 0, "lines": ['{"t":"import_error","x":"SyntaxError","m":"bad"}'],
                            "end": "eof"}], 2, answer=False)[1] == "SyntaxError: bad"
    outs, err = parse_segments("not a list", 2)
    assert err == "sandbox crashed" and len(outs) == 2
    outs, err = parse_segments([{"start": 0, "lines": [READY, rec % 0], "end": "timeout"},
                                {"start": 2, "lines": [READY, rec % 2], "end": "done"}], 3)
    assert [o.kind for o in outs] == ["value", "missing", "value"] and outs[1].value == "timeout"


def test_pytest_driver_outcomes_come_from_reports():
    driver = PytestDriver()
    try:
        def boom():
            raise RuntimeError("checker crashed")

        cases = [Case("ok", lambda: (True, "")), Case("differs", lambda: (False, "result differs")),
                 Case("crash", boom), Case("truthy-not-true", lambda: (1, ""))]
        out, reasons = driver.run(cases)
        assert out == {"ok": True, "differs": False, "crash": False, "truthy-not-true": False}
        assert "result differs" in reasons["differs"] and "checker crashed" in reasons["crash"]
        # The outer pytest's bookkeeping is untouched.
        assert os.environ.get("PYTEST_CURRENT_TEST", "").endswith("(call)")
    finally:
        driver.close()
