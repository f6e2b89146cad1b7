"""What the answer is compared with: the right reference output, compared exactly enough.

The reference must be computed under the same conditions as the answer (string-hash seed),
stored under the test it belongs to (never by position), compared with rules an RL policy
cannot bend (an int is exact, ``True`` is not ``1``), and crafted task material must fail
its own task, not the run.
"""

from __future__ import annotations

import json

import pytest

from colbench_gym.grading import BackendGrader
from colbench_gym.tasks import BackendTask


@pytest.fixture(scope="module")
def grader_settings() -> dict:
    return {"call_timeout": 1.0, "total_timeout": 5.0}


WORDS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper", "kiwi"]


def test_reference_submitted_as_the_answer_passes_even_when_set_order_matters(grader):
    """Answer and reference run under one fixed PYTHONHASHSEED: list(set(strings)) agrees."""
    reference = "def uniq(words):\n    return list(set(words))\n"
    tests = {f"test{i}": f"uniq({WORDS[i:] + WORDS[:i]!r})" for i in range(10)}
    task = BackendTask("unique words", reference, tests)
    res = grader.grade(reference, task)
    assert res.passed == 10, res.reasons
    # ...and both sides really iterate in the seeded order, not by luck of a shared process.
    other = BackendTask("unique words, fresh grader", reference, tests)
    with BackendGrader(call_timeout=1.0, total_timeout=5.0, memory_mb=256) as g2:
        assert g2.grade(reference, other).passed == 10


def _task(order: list[str]) -> BackendTask:
    tests = {"test1": "sq(1)", "test2": "sq(2)", "test3": "sq(3)"}
    return BackendTask("square it", "def sq(x):\n    return x * x\n", {k: tests[k] for k in order})


def test_reference_outputs_are_keyed_by_test_not_position(grader, tmp_path):
    """One task listed with its tests in two orders (same task id): each test keeps its own
    expected value, in memory and through the on-disk cache."""
    forward, backward = _task(["test1", "test2", "test3"]), _task(["test3", "test2", "test1"])
    assert forward.task_id == backward.task_id
    right, wrong = "def sq(x):\n    return x * x\n", "def sq(x):\n    return {1: 9, 3: 1}.get(x, x * x)\n"
    assert grader.grade(right, forward).passed == 3
    assert grader.grade(right, backward).passed == 3  # correct answers pass in either order
    assert grader.grade(wrong, backward).passed == 1  # and wrong ones fail
    with BackendGrader(cache_dir=tmp_path) as g:
        assert g.grade(right, backward).passed == 3
    with BackendGrader(cache_dir=tmp_path) as g:  # served from disk, other order
        assert g.grade(right, forward).passed == 3
        assert g.grade(wrong, forward).passed == 1
    stored = json.loads(next(tmp_path.glob("ref-*.json")).read_text())
    assert {(t["name"], t["call"]) for t in stored["tests"]} == {("test1", "sq(1)"), ("test2", "sq(2)"),
                                                                 ("test3", "sq(3)")}


EXACTNESS = [
    # (reference, answer, should pass)
    ("def g(x):\n    return x * 2\n", "def g(x):\n    return x * 2.0\n", False),           # int ref, float answer
    ("def g(x):\n    return x * 2\n", "def g(x):\n    return x * 2 + 1e-9\n", False),      # ...within tolerance
    ("def g(x):\n    return x > 0\n", "def g(x):\n    return int(x > 0)\n", False),        # True is not 1
    ("def g(x):\n    return {x: 'a'}\n", "def g(x):\n    return {float(x): 'a'}\n", False),  # 1 and 1.0 keys
    ("def g(x):\n    return {(x, 1)}\n", "def g(x):\n    return {(x, 1.0)}\n", False),      # in set elements too
    ("def g(x):\n    return x / 3\n", "def g(x):\n    return x * (1 / 3)\n", True),         # floats keep tolerance
    ("def g(x):\n    return x / 1\n", "def g(x):\n    return x\n", True),                   # exact int for a float
    ("def g(x):\n    return [x, x * 2]\n", "def g(x):\n    return [x, x * 2]\n", True),
]


@pytest.mark.parametrize("reference,answer,passes", EXACTNESS)
def test_exact_types_where_the_reference_is_exact(grader, reference, answer, passes):
    task = BackendTask("exactness", reference, {f"test{i}": f"g({i})" for i in range(1, 6)})
    res = grader.grade(answer, task)
    assert res.passed == (5 if passes else 0), res.reasons


DEEP_REFERENCE = "def f(x):\n    return x\n\nZ = " + "1 + " * 200_000 + "1\n"  # RecursionError in ast.parse
DEEP_CALL = "f(" + "-" * 100_000 + "1)"  # MemoryError in ast.parse


def test_crafted_task_material_fails_its_task_not_the_run(grader, tmp_path):
    honest = "def f(x):\n    return x\n"
    bad_ref = BackendTask("deep reference", DEEP_REFERENCE, {"test1": "f(1)", "test2": "f(2)"})
    res = grader.grade(honest, bad_ref)
    assert res.passed == 0 and res.error == "task error: the reference is nested too deeply to parse"
    bad_call = BackendTask("deep call", honest, {"test1": "f(1)", "test2": DEEP_CALL, "test3": "f(3)"})
    res = grader.grade(honest, bad_call)
    assert res.per_test == {"test1": True, "test2": False, "test3": True}
    assert res.error == "task error: test 'test2': the test call is nested too deeply to parse"
    # End to end: the run goes on and every record is written.
    from colbench_gym.cli import main

    ok = {"problem_description": "p", "ground_truth": honest, "test_cases": {"test1": "f(1)"}}
    records = [{"task": bad_ref.to_record(), "answer": honest}, {"task": bad_call.to_record(), "answer": honest},
               {"task": ok, "answer": honest}]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["evaluate", "backend", str(src), "--output", str(out), "--no-progress"]) == 0
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["tests_passed"] for g in graded] == [0, 2, 1]
    assert [bool(g["grade_error"]) for g in graded] == [True, True, False]


def test_reference_memory_is_bounded(monkeypatch):
    """An RL run over endless generated tasks must not grow the in-memory reference cache forever."""
    from colbench_gym.grading import grader as grader_module

    monkeypatch.setattr(grader_module, "REF_CACHE_TASKS", 3)
    with BackendGrader(call_timeout=1.0, total_timeout=5.0, memory_mb=256) as g:
        tasks = [BackendTask(f"task {i}", f"def k():\n    return {i}\n", {"test1": "k()"}) for i in range(6)]
        for i, t in enumerate(tasks):
            assert g.grade(f"def k():\n    return {i}\n", t).passed == 1
        assert list(g._refs) == [t.task_id for t in tasks[3:]]
        assert g.grade("def k():\n    return 0\n", tasks[0]).passed == 1  # recomputed when needed
