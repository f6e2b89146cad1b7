"""The result channel is attacker-controlled: forged frames fail their test, never the grader.

An answer can write to its own result pipe (fd 3) and so choose every byte the trusted
process decodes. Each forged frame below must make *its* test fail with ``grade_error`` set
while the honest records around it still count; nothing may raise out of ``grade()``, cost
more than linear work, or produce text that cannot be written to the output file.
"""

from __future__ import annotations

import json
import math

import pytest

from colbench_gym.grading.wire import READY, WireError, decode, parse_segments
from tests.grading.forge import P, forge_first, forged_answer, record, right_value
from tests.grading.helpers import CORRECT


@pytest.fixture(scope="module")
def grader_settings() -> dict:
    # The strongest sandbox the machine has, whatever COLBENCH_GRADER_ISOLATION says: the wire is the subject here.
    return {"call_timeout": 1.0, "total_timeout": 5.0, "isolation": "auto"}


def test_forging_right_values_is_only_as_good_as_computing_them(grader, task):
    """Sanity of the forging helper: ten forged right values pass (the channel is the answer's)."""
    res = grader.grade(forged_answer([READY] + [record(k, right_value(k + 1)) for k in range(10)]), task)
    assert res.passed == 10 and res.error is None


COLLIDING_SET = ["S", [["i", format(k * P, "x")] for k in range(1, 5001)]]
ABSURD = {
    "float that does not convert (OverflowError)": record(0, ["f", "0x1p99999"]),
    "int of 2 million hex digits": record(0, ["i", "f" * 2_000_000]),
    "set of ints built to collide in hashing": record(0, COLLIDING_SET),
    "dict with colliding keys": record(0, ["d", [[["i", format(k * P, "x")], ["n"]] for k in range(1, 3001)]]),
    "more elements than any answer needs": record(0, ["l", [["n"]] * 250_000]),
    "nested 100 deep": record(0, json.loads("[" * 100 + '"n"' + "]" * 100)),
    "JSON nested 100000 deep": '{"t":"r","i":0,"v":' + "[" * 100_000 + "]" * 100_000 + "}",
    "bool payload 2": record(0, ["b", 2]),
    "unknown tag": record(0, ["q", 1]),
    "index as a string": '{"t":"r","i":"0","v":["n"]}',
    "record for another call": record(7, ["n"]),
    "bare NaN token": '{"t":"r","i":0,"v":NaN}',
    "exception name that is not text": '{"t":"e","i":0,"x":12}',
    "unhashable set element": record(0, ["S", [["l", []]]]),
    "invalid bytes hex": record(0, ["y", "zz"]),
    "not JSON": "\x00 garbage {[",
}


@pytest.mark.parametrize("frame", list(ABSURD.values()), ids=list(ABSURD))
def test_absurd_frame_fails_its_test_with_grade_error(grader, task, frame):
    res = grader.grade(forge_first(frame), task)  # must not raise
    assert res.total == 10
    assert res.per_test["test1"] is False
    assert res.passed == 9, res.reasons  # the honest records after it still count
    assert res.error is not None and "malformed" in res.error
    json.dumps([res.error, res.reasons], ensure_ascii=False).encode("utf-8")  # storable


def test_hash_flooding_is_refused_not_computed():
    """20 000 ints that all hash to 0 would cost 2e8 key comparisons; the decoder refuses them."""
    flood = ["S", [["i", format(k * P, "x")] for k in range(1, 20_001)]]
    with pytest.raises(WireError, match="collide"):
        decode(flood)
    with pytest.raises(WireError, match="collide"):
        decode(["d", [[["t", [["i", format(k * P, "x")]]], ["n"]] for k in range(1, 20_001)]])
    # Real data with a few equal hashes (hash(-1) == hash(-2), 0 and P) still decodes.
    assert decode(["S", [["i", "-1"], ["i", "-2"], ["i", "0"], ["i", format(P, "x")]]]) == {-1, -2, 0, P}
    assert len(decode(["S", [["f", "nan"]] * 50])) == 50  # nan keys are distinct objects, not a flood


def test_every_absurd_frame_is_a_missing_result_with_an_error():
    """Straight through the parser: no frame above raises, each sets the error summary."""
    for name, frame in ABSURD.items():
        outs, err = parse_segments([{"start": 0, "lines": [READY, frame], "end": "done"}], 1)
        assert outs[0].kind == "missing", name
        assert err is not None and "malformed" in err, name


def test_lone_surrogates_from_the_sandbox_are_stored_encodable(grader, task):
    """An error message or exception name with a lone surrogate would make the output write raise."""
    res = grader.grade("raise ValueError('bad \\ud800 text')\n", task)
    assert res.error is not None and res.error.startswith("ValueError")
    res.error.encode("utf-8")
    cls = "E = type('Oops\\udcff', (Exception,), {})\ndef f(x, y):\n    raise E()\n"
    res = grader.grade(cls, task)
    assert res.passed == 0
    json.dumps(res.reasons, ensure_ascii=False).encode("utf-8")
    forged = forged_answer(['{"t":"import_error","x":"X\\ud800","m":"' + "\\udfff" * 5000 + '"}'])
    res = grader.grade(forged, task)
    assert res.error is not None and len(res.error) < 400
    res.error.encode("utf-8")


def test_evaluate_cli_writes_its_output_despite_surrogates(tmp_path):
    """End to end: `colbench evaluate backend` keeps the whole run's output."""
    from colbench_gym.cli import main

    tsk = {"problem_description": "p", "ground_truth": "def f(x):\n    return x\n",
           "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    records = [{"task": tsk, "answer": "raise ValueError('\\ud800')\n"},
               {"task": tsk, "answer": "def f(x):\n    return x\n"}]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["evaluate", "backend", str(src), "--output", str(out), "--no-progress"]) == 0
    graded = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [g["tests_passed"] for g in graded] == [0, 2]
    assert graded[0]["grade_error"].startswith("ValueError")


def test_grade_turns_an_internal_error_into_an_error_record(grader, task, monkeypatch):
    """A bug anywhere on the trusted side fails one submission, it does not stop the run."""
    from colbench_gym.grading.pytest_driver import PytestDriver

    def broken_run(self, cases, prefix=""):
        raise RuntimeError("simulated internal fault")

    monkeypatch.setattr(PytestDriver, "run", broken_run)
    res = grader.grade(CORRECT, task)
    assert res.passed == 0 and res.total == 10 and not res.success
    assert res.error == "internal grading error: RuntimeError (details in the grader's log)"
    assert res.end_reason == "grading_error"  # the host's verdict, not read from the text
    monkeypatch.undo()
    assert grader.grade(CORRECT, task).passed == 10  # and the next submission is graded normally


def test_forged_floats_decode_within_bounds():
    """Hex floats the child really produces still decode (the bounds cost no legitimate value)."""
    for x in (0.1, -0.0, 1e308, 5e-324, math.inf, -math.inf):
        assert decode(["f", x.hex()]) == x
    assert math.isnan(decode(["f", "nan"]))
    assert decode(["i", format(3**5000, "x")]) == 3**5000


def test_evaluate_cli_output_survives_surrogates_in_the_input(tmp_path):
    """A task record with a lone surrogate escape (crafted input) must not cost the run's output."""
    from colbench_gym.cli import main

    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text('{"task": {"problem_description": "p \\ud800", "ground_truth": "def f(x):\\n    return x\\n", '
                   '"test_cases": {"test1": "f(1)"}}, "answer": "def f(x):\\n    return x\\n"}\n')
    assert main(["evaluate", "backend", str(src), "--output", str(out), "--no-progress"]) == 0
    graded = json.loads(out.read_text(encoding="utf-8"))
    assert graded["task"]["problem_description"] == "p \ud800" and graded["tests_passed"] == 1  # exact round trip


def test_a_record_line_that_explodes_in_escaping_is_refused(grader, task):
    """4 MiB of invalid UTF-8 on one line comes back as 24 MB of escaped U+FFFD: read in linear
    time (benchmarks/bench_grading.py times it), refused as malformed, and the grader goes on."""
    forged = ("import os\n"
              "data = b'{\"t\":\"ready\"}\\n' + b'\\xff' * (4 * 1024 * 1024 - 4096) + b'\\n'\n"
              "view = memoryview(data)\n"
              "while view:\n    view = view[os.write(3, view):]\n"
              "os._exit(0)\n")
    res = grader.grade(forged, task)
    assert res.passed == 0 and res.error is not None and "malformed" in res.error
    assert grader.grade(CORRECT, task).passed == 10
