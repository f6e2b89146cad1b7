"""Task files whose reference or tests do not parse are refused when read, naming file and line;
tasks built on purpose in code may still hold such a reference (the simulator must cope)."""

from __future__ import annotations

import json

import pytest

from colbench_gym.tasks import load_tasks
from colbench_gym.tasks.records import BackendTask, TaskFormatError

GOOD = {"problem_description": "Write f(x).", "ground_truth": "def f(x):\n    return x\n", "test_cases": {"t": "f(1)"}}


@pytest.mark.parametrize("bad, message", [
    ({**GOOD, "ground_truth": "def f(x:\n  pass"}, "'ground_truth' is not valid Python at line 1"),
    ({**GOOD, "test_cases": {"t": "f(1"}}, "test case 't' is not a Python expression"),
])
def test_a_task_file_with_unparsable_python_names_file_and_line(tmp_path, bad, message):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TaskFormatError) as err:
        load_tasks(path)
    assert f"{path}:2" in str(err.value) and message in str(err.value)


def test_from_record_builds_it_unless_asked_to_check():
    bad = {**GOOD, "ground_truth": "def f(x:\n  pass"}
    assert BackendTask.from_record(bad).ground_truth == bad["ground_truth"]
    with pytest.raises(TaskFormatError, match="not valid Python"):
        BackendTask.from_record(bad, check_python=True)


@pytest.mark.parametrize("call", ["f(" + "1" + "+1" * 200_000 + ")",  # RecursionError in the parser
                                  "f(" + "-" * 100_000 + "1)"])  # MemoryError in the parser
def test_nesting_beyond_the_parser_is_left_to_grading(call):
    deep = {**GOOD, "test_cases": {"t": call}, "ground_truth": "x = " + "1" + "+1" * 200_000}
    task = BackendTask.from_record(deep, check_python=True)  # no RecursionError/MemoryError escapes
    assert task.test_cases["t"] == call
