"""Error text never carries task material (issue 37).

An answer sees a hidden test's arguments while the test call runs, and it can read every test
call before any runs (they are in the forked child's memory). Before issue 37 the grader handed
text the answer chose back in ``GradeResult.error`` — so in ``info["grade_error"]``, in `colbench
evaluate` output, over the OpenEnv wire and in Inspect's explanation: the decoder quoted a
malformed record's payload (``invalid literal for int() with base 16: '<repr(args)>'``), a tag
it did not know, the position of a JSON error, and an import failure kept the answer's exception
message and class name (300 + 100 characters: all the hidden calls at once).

Now error text is made of the grader's own phrases: decoder errors name the failure only, an
answer's exception is named by its kind (a builtin exception's name, else a fixed phrase), never
by its message or its own class name. Each test below leaks ``LEAK`` + the hidden inputs when the
channel is open.
"""

from __future__ import annotations

import json

import pytest

from tests.grading.forge import forged_answer
from tests.grading.helpers import REFERENCE

MARK = "LEAK"
#: The hidden calls of the shared task are f(i, i*i): these are their argument texts.
HIDDEN = ["(1, 1)", "(2, 4)", "(3, 9)", "f(1, 1)", "f(2, 4)"]


def _send_during_call(record: str) -> str:
    """An answer whose first test call writes ``record`` (a Python expression building the line
    from the call's ``x`` and ``y``) to its result channel, then exits."""
    return ("import os, json\n"
            "def f(x, y):\n"
            f"    line = {record}\n"
            "    os.write(3, (line + '\\n').encode())\n"
            "    os._exit(0)\n")


#: Malformed records that quote the test's arguments, written while the test runs.
MALFORMED_DURING_A_CALL = {
    "int payload that is not hex": _send_during_call(
        "json.dumps({'t': 'r', 'i': 0, 'v': ['i', 'LEAK' + repr((x, y))]})"),
    "unknown tag": _send_during_call("json.dumps({'t': 'r', 'i': 0, 'v': ['LEAK' + repr((x, y)), []]})"),
    "tag with a bad payload": _send_during_call("json.dumps({'t': 'r', 'i': 0, 'v': ['LEAK' + repr((x, y)), 1]})"),
    "tagged value of the wrong length": _send_during_call(
        "json.dumps({'t': 'r', 'i': 0, 'v': ['LEAK' + repr((x, y)), 1, 2]})"),
}

#: Failures before any test runs whose message or class name carries every hidden call.
BEFORE_ANY_TEST = {
    "exception message": "import sys\ncalls = sys._getframe(1).f_locals['req']['calls']\n"
                         "raise ValueError('LEAK' + repr(calls))\n",
    "class name": "import sys\ncalls = sys._getframe(1).f_locals['req']['calls']\n"
                  "raise type('LEAK' + repr(calls), (Exception,), {})()\n",
    "class module": "import sys\ncalls = sys._getframe(1).f_locals['req']['calls']\n"
                    "E = type('E', (Exception,), {})\nE.__module__ = 'LEAK' + repr(calls)\nraise E()\n",
    "SyntaxError raised by hand": "import sys\ncalls = sys._getframe(1).f_locals['req']['calls']\n"
                                  "raise SyntaxError('LEAK' + repr(calls))\n",
    "a forged import-failure record": forged_answer(
        ['{"t":"import_error","x":"LEAK f(1, 1)","m":"LEAK f(2, 4) f(3, 9)"}']),
}


def _assert_no_leak(text: str, name: str) -> None:
    assert MARK not in text, f"{name}: {text!r}"
    for hidden in HIDDEN:
        assert hidden not in text, f"{name}: {text!r}"


@pytest.mark.parametrize("name", list(MALFORMED_DURING_A_CALL))
def test_a_malformed_record_does_not_echo_the_test_arguments(grader, task, name):
    res = grader.grade(MALFORMED_DURING_A_CALL[name], task)
    assert res.passed == 0 and res.error and "malformed" in res.error
    _assert_no_leak(json.dumps([res.error, res.reasons]), name)


@pytest.mark.parametrize("name", list(BEFORE_ANY_TEST))
def test_a_failure_before_any_test_does_not_echo_the_answers_text(grader, task, name):
    res = grader.grade(BEFORE_ANY_TEST[name], task)
    assert res.passed == 0 and res.error
    _assert_no_leak(json.dumps([res.error, res.reasons]), name)


def test_an_exceptions_kind_is_still_named(grader, task):
    """What an evaluator needs stays: the kind of a builtin exception, without its message."""
    res = grader.grade("raise ValueError('boom at import')\n", task)
    assert res.error == "ValueError: raised by the answer before any test ran"
    assert grader.grade("def f(x, y) return", task).error.startswith("SyntaxError")
    res = grader.grade("class Mine(Exception):\n    pass\nraise Mine('f(1, 1)')\n", task)
    assert res.error == "exception of a non-builtin class: raised by the answer before any test ran"


def test_an_exception_class_named_after_the_inputs_does_not_reach_the_reasons(grader, task):
    """Per-test reasons name the answer's exception by its kind too (the viewer shows them)."""
    code = "def f(x, y):\n    raise type('LEAK' + repr((x, y)), (Exception,), {})()\n"
    res = grader.grade(code, task)
    assert res.passed == 0
    _assert_no_leak(json.dumps([res.error, res.reasons]), "class named after the inputs")
    assert all("exception of a non-builtin class" in r for r in res.reasons.values())
    res = grader.grade("def f(x, y):\n    raise KeyError(x)\n", task)
    assert all("raised KeyError" in r for r in res.reasons.values())


def test_the_error_text_does_not_depend_on_the_bytes_sent(grader, task):
    """Two answers that differ only in what they would leak get the same error text (a JSON
    error's position, a payload's length: numbers the answer chooses are a channel too)."""
    def padded(n: int) -> str:
        return _send_during_call(f"' ' * {n} * x + 'LEAK'")

    def bad(tag: str, text: str) -> str:
        return _send_during_call(f"json.dumps({{'t': 'r', 'i': 0, 'v': [{tag!r}, {text!r} * x]}})")

    assert grader.grade(padded(7), task).error == grader.grade(padded(1000), task).error
    assert grader.grade(bad("i", "zz"), task).error == grader.grade(bad("i", "LEAK(1, 1)"), task).error
    # bytes.fromhex names the position of the first bad digit
    assert grader.grade(bad("y", "00zz"), task).error == grader.grade(bad("y", "0" * 40 + "zz"), task).error


def _task_record() -> dict:
    return {"problem_description": "Write f(x, y).", "ground_truth": REFERENCE,
            "test_cases": {f"test{i}": f"f({i}, {i * i})" for i in range(1, 11)}}


def test_no_hidden_input_reaches_the_envs_info():
    """Through ``gym.make("ColBench-Backend-v0")`` (what `colbench serve` sends over the wire)."""
    import gymnasium as gym

    import colbench_gym  # noqa: F401 - registers the ids

    env = gym.make("ColBench-Backend-v0")
    try:
        for name, code in (("int payload that is not hex", MALFORMED_DURING_A_CALL["int payload that is not hex"]),
                           ("unknown tag", MALFORMED_DURING_A_CALL["unknown tag"]),
                           ("exception message", BEFORE_ANY_TEST["exception message"]),
                           ("class name", BEFORE_ANY_TEST["class name"])):
            env.reset(seed=0, options={"task": _task_record()})
            _, reward, terminated, _, info = env.step("I WANT TO ANSWER:\n" + code)
            assert terminated and reward == 0.0 and info["end_reason"] == "answer", name
            assert info["grade_error"], name
            _assert_no_leak(info["grade_error"], name)
    finally:
        env.close()


def test_no_hidden_input_reaches_colbench_evaluate_output(tmp_path, capsys):
    """Through `colbench evaluate backend`: the output file and what it prints."""
    from colbench_gym.cli import main

    answers = [MALFORMED_DURING_A_CALL["int payload that is not hex"], _send_during_call("'LEAK' + repr((x, y))"),
               BEFORE_ANY_TEST["exception message"], BEFORE_ANY_TEST["class module"]]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"task": _task_record(), "answer": a}) + "\n" for a in answers))
    assert main(["evaluate", "backend", str(src), "--output", str(out), "--no-progress"]) == 0
    graded = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(g["grade_error"] for g in graded)
    for g in graded:
        _assert_no_leak(json.dumps({k: v for k, v in g.items() if k not in ("answer", "task")}), "evaluate")
    captured = capsys.readouterr()
    _assert_no_leak(captured.out + captured.err, "evaluate's report")
