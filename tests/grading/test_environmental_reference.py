"""Exceptions the sandbox causes are never the reference's expected result (issue 24, item 2).

A reference that imports a module the sandbox lacks, runs over the memory limit, opens a file
that is not there (or reads stdin, or recurses past the interpreter's limit) raises under grading
only because of where it runs. Taking that exception as the expected result would let an answer
that just raises it pass. Such tests are unpassable, like a reference timeout, and counted and
reported: per grade (``GradeResult.unpassable``), in the env's ``info``, in ``colbench evaluate
backend``'s output and report, and by ``colbench tasks audit``.
"""

from __future__ import annotations

import json

import pytest

from colbench_gym.cli import main
from colbench_gym.grading.environmental import ENVIRONMENTAL_EXCEPTIONS, environmental_exception
from colbench_gym.tasks import BackendTask

NUMPY = BackendTask("mean", "def mean(xs):\n    import numpy as np\n    return float(np.mean(xs))\n",
                    {"t1": "mean([1, 2])", "t2": "mean([3])", "t3": "mean([1, 2, 3, 4])"})
MEMORY = BackendTask("buffer", "def size(n):\n    return len(bytearray(n))\n",
                     {"t1": "size(2 ** 40)", "t2": "size(3 * 2 ** 40)"})
FILE = BackendTask("config", "def read_config(path):\n    with open(path) as fh:\n        return fh.read()\n",
                   {"t1": "read_config('settings.ini')", "t2": "read_config('/etc/app/app.conf')"})
STDIN = BackendTask("ask", "def ask(prompt):\n    return input(prompt)\n", {"t1": "ask('name? ')"})
# Exceptions the task itself raises stay results: an answer must raise the same type.
DELIBERATE = BackendTask("check", "def check(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
                         {"t1": "check(-1)", "t2": "check(2)"})

RAISERS = {
    "ModuleNotFoundError": (NUMPY, "def mean(xs):\n    import numpy\n"),
    "MemoryError": (MEMORY, "def size(n):\n    raise MemoryError\n"),
    "FileNotFoundError": (FILE, "def read_config(path):\n    raise FileNotFoundError(path)\n"),
    "EOFError": (STDIN, "def ask(prompt):\n    raise EOFError\n"),
}


@pytest.mark.parametrize("exc", sorted(RAISERS))
def test_an_answer_raising_the_sandboxs_exception_does_not_pass(grader, exc):
    task, answer = RAISERS[exc]
    assert [o.value for o in grader.reference_outputs(task)] == [exc] * len(task.test_cases)  # what the sandbox did
    res = grader.grade(answer, task)
    assert res.passed == 0, f"an answer raising {exc} passed {res.passed}/{res.total} tests"
    assert set(res.unpassable) == set(task.test_cases)
    assert all(exc in why and "environment" in why for why in res.unpassable.values())
    assert all(exc in res.reasons[name] for name in task.test_cases)


def test_a_reference_failing_at_import_names_the_environment(grader):
    task = BackendTask("stats", "import numpy as np\n\ndef mean(xs):\n    return float(np.mean(xs))\n", {"t1": "mean([1])"})
    res = grader.grade("import numpy\n", task)
    assert res.passed == 0 and "ModuleNotFoundError" in res.unpassable["t1"]
    assert "error of the grading environment" in res.unpassable["t1"]


def test_a_deliberate_exception_stays_a_result(grader):
    res = grader.grade("def check(x):\n    if x < 0:\n        raise ValueError\n    return x\n", DELIBERATE)
    assert res.passed == 2 and res.unpassable == {}


def test_the_environmental_set_is_the_documented_one():
    for name in ("ImportError", "ModuleNotFoundError", "MemoryError", "RecursionError", "EOFError", "OSError",
                 "FileNotFoundError", "PermissionError", "TimeoutError", "ConnectionRefusedError",
                 "socket.gaierror", "urllib.error.URLError"):
        assert name in ENVIRONMENTAL_EXCEPTIONS and environmental_exception(name), name
    for name in ("ValueError", "KeyError", "ZeroDivisionError", "TypeError", "solution.MyError"):
        assert not environmental_exception(name), name
    # every builtin OSError subclass is in the set (a new Python adding one is caught here)
    import builtins

    for name, value in vars(builtins).items():
        if isinstance(value, type) and issubclass(value, (OSError, ImportError)):
            assert value.__name__ in ENVIRONMENTAL_EXCEPTIONS, name


def _trajectories(path):
    recs = [{"task": NUMPY.to_record(), "answer": "def mean(xs):\n    import numpy\n"},
            {"task": DELIBERATE.to_record(), "answer": "def check(x):\n    return x\n"},
            {"task": FILE.to_record(), "answer": "def read_config(path):\n    return open(path).read()\n"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_evaluate_backend_counts_and_reports_unpassable_tests(tmp_path, capsys):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _trajectories(src)
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress"]) == 0
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["tests_passed"] for g in graded] == [0, 1, 0]
    assert [g["tests_unpassable"] for g in graded] == [3, 0, 2]
    assert "ModuleNotFoundError" in graded[0]["unpassable_tests"]["t1"]
    report = capsys.readouterr().out
    assert "unpassable: 5 of 7 tests in 2 of 3 tasks" in report
    assert "ModuleNotFoundError" in report and "FileNotFoundError" in report


def test_tasks_audit_lists_the_tests_whose_reference_result_is_environmental(tmp_path, capsys):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t.to_record()) + "\n" for t in (NUMPY, DELIBERATE, MEMORY)))
    assert main(["tasks", "audit", str(path)]) == 1  # two tasks no answer can pass: the audit fails
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert any("tasks.jsonl:1" in ln and "3 of 3" in ln and "ModuleNotFoundError" in ln for ln in lines)
    assert any("tasks.jsonl:3" in ln and "2 of 2" in ln and "MemoryError" in ln for ln in lines)
    assert [ln for ln in lines if "tasks.jsonl:2" in ln][0].endswith(" OK")  # a clean task's verdict
    assert lines[-1].startswith("audited 3 tasks (7 tests): 1 ok, 0 with warnings, 2 unsolvable (2 reference), 0 invalid; "
                                "5 tests in 2 tasks have no usable reference result")


def test_the_env_reports_unpassable_tests_in_info():
    import gymnasium as gym

    import colbench_gym  # noqa: F401

    env = gym.make("ColBench-Backend-v0", tasks=[NUMPY.to_record()])
    try:
        env.reset(seed=0, options={"task_index": 0})
        _, reward, done, _, info = env.step("I WANT TO ANSWER: def mean(xs):\n    import numpy\n")
    finally:
        env.close()
    assert done and reward == 0.0 and info["tests_passed"] == 0
    assert info["tests_unpassable"] == 3
