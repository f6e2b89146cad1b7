"""Correct answers pass, wrong ones fail, with the documented comparison semantics (real sandbox)."""

from __future__ import annotations

import json
import threading

import pytest

from colbench_gym.grading import BackendGrader, GradeResult, get_default_grader
from colbench_gym.tasks import BackendTask
from tests.grading.helpers import CORRECT, HONEST_WRONG


def make_task(reference: str, calls: list[str]) -> BackendTask:
    return BackendTask("desc", reference, {f"test{i + 1}": c for i, c in enumerate(calls)})


def test_correct_and_wrong(grader, task):
    ok = grader.grade(CORRECT, task)
    assert (ok.passed, ok.total, ok.success, ok.fraction, ok.error) == (10, 10, True, 1.0, None)
    assert list(ok.per_test) == list(task.test_cases) and all(ok.per_test.values())
    bad = grader.grade(HONEST_WRONG, task)
    assert (bad.passed, bad.success, bad.fraction) == (0, False, 0.0)
    assert set(bad.reasons) == set(task.test_cases)


def test_partial_credit_is_per_test(grader, task):
    res = grader.grade("def f(x, y):\n    return 31 * x + y if x <= 4 else 0\n", task)
    assert res.passed == 4 and res.fraction == 0.4
    assert [res.per_test[f"test{i}"] for i in range(1, 11)] == [True] * 4 + [False] * 6


def test_helpers_constants_and_top_level_imports_work(grader):
    task = make_task("import math\ndef area(r):\n    return math.pi * r * r\n", [f"area({r})" for r in (0, 1, 2.5, 10)])
    answer = ("from math import pi as PI_CONST\n"
              "import functools\n"
              "SCALE = 1.0\n"
              "def _square(v):\n    return v * v\n"
              "@functools.lru_cache(maxsize=None)\n"
              "def area(r):\n    return SCALE * PI_CONST * _square(r)\n")
    assert grader.grade(answer, task).success


def test_syntax_error_is_reported_not_raised(grader, task):
    res = grader.grade("def f(x, y) return", task)
    assert res.passed == 0 and res.error and res.error.startswith("SyntaxError")
    res = grader.grade("", task)
    assert res.passed == 0
    res = grader.grade("raise ValueError('boom at import')", task)
    # the kind only: the answer's message could carry hidden test inputs (issue 37)
    assert res.error == "ValueError: raised by the answer before any test ran"


def test_float_tolerance_nan_and_inf(grader):
    task = make_task("def g(a, b):\n    return a + b\n", ["g(0.1, 0.2)", "g(1e20, 1.0)", "g(float('nan'), 0.0)",
                                                          "g(float('inf'), 1.0)"])
    assert grader.grade("def g(a, b):\n    return round(a + b, 12)\n", task).success
    off = grader.grade("def g(a, b):\n    return a + b + 0.001\n", task)
    assert off.per_test == {"test1": False, "test2": True, "test3": True, "test4": True}
    assert grader.grade("def g(a, b):\n    return -(a + b) if a == float('inf') else a + b\n", task).passed == 3


def test_strict_types(grader):
    task = make_task("def h(x):\n    return x > 0\n", ["h(1)", "h(-1)"])
    assert grader.grade("def h(x):\n    return int(x > 0)\n", task).passed == 0  # 1 is not True
    task = make_task("def h(x):\n    return [x, x]\n", ["h(1)"])
    assert grader.grade("def h(x):\n    return (x, x)\n", task).passed == 0  # tuple is not list
    task = make_task("def h(x):\n    return {x: 'a'}\n", ["h(1)"])
    assert grader.grade("def h(x):\n    return {True: 'a'}\n", task).passed == 0  # key True is not 1
    task = make_task("def h(x):\n    return x / 2\n", ["h(4)"])
    assert grader.grade("def h(x):\n    return x // 2\n", task).success  # numbers: 2 matches 2.0


def test_containers_recursive(grader):
    ref = ("def s(xs):\n    return {'sum': sum(xs) / 3, 'items': sorted(set(xs)), "
           "'pairs': [(x, str(x)) for x in xs], 'set': frozenset(xs), 'b': bytes(xs)}\n")
    task = make_task(ref, ["s([1, 2, 2])", "s([])"])
    same = ("def s(xs):\n    out = {}\n    out['b'] = bytes(xs)\n    out['set'] = frozenset(xs)\n"
            "    out['pairs'] = [(x, str(x)) for x in xs]\n    out['items'] = sorted(set(xs))\n"
            "    out['sum'] = sum(xs) * (1 / 3)\n    return out\n")
    assert grader.grade(same, task).success


def test_exceptions_are_results(grader):
    ref = "def d(a, b):\n    if b == 0:\n        raise ValueError('no')\n    return a // b\n"
    task = make_task(ref, ["d(4, 2)", "d(1, 0)"])
    assert grader.grade("def d(a, b):\n    if not b:\n        raise ValueError\n    return a // b\n", task).success
    wrong_type = grader.grade("def d(a, b):\n    return a // b\n", task)  # ZeroDivisionError
    assert wrong_type.per_test == {"test1": True, "test2": False}
    no_raise = grader.grade("def d(a, b):\n    return a // b if b else None\n", task)
    assert no_raise.per_test == {"test1": True, "test2": False}


def test_a_reference_that_raises_still_gives_a_passable_test(grader):
    """The paper's release turns a raising reference into an unpassable test; ours does not."""
    task = make_task("def k(d):\n    return d['missing']\n", ["k({})"])
    assert grader.grade("def k(d):\n    return d['missing']\n", task).success


def test_every_call_gets_fresh_inputs(grader):
    task = make_task("def m(xs):\n    xs.append(1)\n    return len(xs)\n", ["m([])", "m([])", "m([0])"])
    assert grader.grade("def m(xs):\n    xs.append(1)\n    return len(xs)\n", task).success


def test_calls_may_use_modules_the_answer_did_not_import(grader):
    ref = "import datetime\ndef wd(d):\n    return d.weekday()\n"
    task = make_task(ref, ["wd(datetime.date(2024, 1, 1))", "wd(datetime.date(2024, 1, 6))"])
    assert grader.grade("def wd(d):\n    return d.weekday()\n", task).success


def test_one_slow_call_fails_alone(grader):
    ref = "def p(n):\n    return n * 2\n"
    task = make_task(ref, ["p(1)", "p(2)", "p(3)"])
    slow = "def p(n):\n    while n == 2:\n        pass\n    return n * 2\n"
    res = grader.grade(slow, task)
    assert res.per_test == {"test1": True, "test2": False, "test3": True}
    assert res.error == "timeout"
    crash = "import os\ndef p(n):\n    if n == 1:\n        os._exit(3)\n    return n * 2\n"
    assert grader.grade(crash, task).per_test == {"test1": False, "test2": True, "test3": True}


def test_results_that_are_not_plain_data_fail(grader):
    task = make_task("def q():\n    return [1, 2]\n", ["q()"])
    assert grader.grade("def q():\n    return iter([1, 2])\n", task).passed == 0
    assert grader.grade("def q():\n    a = []\n    a.append(a)\n    return a\n", task).passed == 0


def test_thread_safe_pool():
    task = make_task("def t(x):\n    return x * 3\n", [f"t({i})" for i in range(10)])
    answers = ["def t(x):\n    return 3 * x\n", "def t(x):\n    return x\n"] * 6
    with BackendGrader(workers=2) as g:
        results: list[GradeResult | None] = [None] * len(answers)

        def work(i: int) -> None:
            results[i] = g.grade(answers[i], task)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(answers))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert [r.passed for r in results] == [10, 1] * 6


def test_reference_cache_on_disk(tmp_path):
    task = make_task("def c(x):\n    return {'v': x, 'nan': float('nan')}\n", ["c(1)", "c('a')"])
    with BackendGrader(cache_dir=tmp_path) as g:
        assert g.grade("def c(x):\n    return {'nan': float('nan'), 'v': x}\n", task).success
    files = list(tmp_path.glob("ref-*.json"))
    assert len(files) == 1 and task.task_id in files[0].name
    # The expected values stay the owner's alone: an answer run as another user (rlimits-only
    # as root) must not read them, whatever the umask.
    assert files[0].stat().st_mode & 0o777 == 0o600
    data = json.loads(files[0].read_text())
    assert [(o["name"], o["call"], o["kind"]) for o in data["tests"]] == [("test1", "c(1)", "value"),
                                                                          ("test2", "c('a')", "value")]
    # A second grader takes the reference outputs from disk (proof: an edited entry is used).
    data["tests"][0].update(kind="raise", v="ValueError")
    files[0].write_text(json.dumps(data))
    with BackendGrader(cache_dir=tmp_path) as g2:
        res = g2.grade("def c(x):\n    return {'nan': float('nan'), 'v': x}\n", task)
        assert res.per_test == {"test1": False, "test2": True}
    files[0].write_text("{broken")  # a damaged entry is recomputed, not trusted
    with BackendGrader(cache_dir=tmp_path) as g3:
        assert g3.grade("def c(x):\n    return {'v': x, 'nan': float('nan')}\n", task).success


def test_accepts_records_and_rejects_bad_options(grader, task):
    assert grader.grade(CORRECT, task.to_record()).success
    with pytest.raises(ValueError, match="workers"):
        BackendGrader(workers=0)
    with pytest.raises(ValueError, match="isolation"):
        BackendGrader(isolation="docker")


def test_default_grader_is_shared():
    g = get_default_grader()
    assert get_default_grader() is g
    task = make_task("def one():\n    return 1\n", ["one()"])
    assert g.grade("def one():\n    return 1\n", task).success


def test_closed_grader_leaves_no_process():
    import os

    from tests.grading.helpers import descendants

    before = descendants(os.getpid())
    g = BackendGrader()
    g.grade("def z():\n    return 0\n", make_task("def z():\n    return 0\n", ["z()"]))
    assert len(descendants(os.getpid())) > len(before)
    cgroups = [w._cgroup for w in [*g._pool.workers, *g._ref_pool.workers] if w._cgroup]
    g.close()
    assert descendants(os.getpid()) <= before
    for cg in cgroups:
        assert not os.path.exists(cg)
    with pytest.raises(RuntimeError, match="closed"):
        g.grade("x = 1", make_task("def z():\n    return 0\n", ["z()"]))


def test_a_test_call_that_is_not_an_expression_is_unpassable(grader):
    task = make_task("def u(x):\n    return x\n", ["u(1)", "u(2", "  u(3)\n"])
    res = grader.grade("def u(x):\n    return x\n", task)
    assert res.per_test == {"test1": True, "test2": False, "test3": True}
    assert "not a Python expression" in res.reasons["test2"]


def _grade_in_child(g, task, q):
    q.put(g.grade("def t(x):\n    return 3 * x\n", task).passed)
    g.close()  # closes the child's own sandboxes only


def test_fork_and_pickle_safe():
    """A forked process (multiprocessing vector envs) gets its own sandboxes; the parent's live on."""
    import multiprocessing
    import pickle

    task = make_task("def t(x):\n    return x * 3\n", [f"t({i})" for i in range(10)])
    with BackendGrader() as g:
        assert g.grade("def t(x):\n    return 3 * x\n", task).passed == 10
        worker_pid = g._pool.workers[0].proc.pid
        ctx = multiprocessing.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=_grade_in_child, args=(g, task, q))
        p.start()
        assert q.get(timeout=60) == 10
        p.join(30)
        assert g.grade("def t(x):\n    return 3 * x\n", task).passed == 10
        assert g._pool.workers[0].proc.pid == worker_pid and g._pool.workers[0].restarts == 0
        with pickle.loads(pickle.dumps(g)) as copy:
            assert copy.grade("def t(x):\n    return x\n", task).passed == 1


def test_a_reference_call_that_timed_out_once_is_run_again(tmp_path, monkeypatch):
    """A reference call that timed out (a loaded machine) is run again before any answer is scored
    against it: the correct answer scores 2/2 at the first grade (before, the test was unpassable
    in that score and in every later one of the process). A reference that never finishes is run
    REF_ATTEMPTS times, once per process; one that fails for a reason of the task, once."""
    from colbench_gym.grading import grader as grader_module
    from colbench_gym.grading.wire import Outcome

    task = make_task("def f(x):\n    return x + 1\n", ["f(1)", "f(2)"])
    with BackendGrader() as g:
        runs = []
        real = g._execute

        def planted(late_runs):
            def execute(pool, code, calls, preamble, *, answer=True):
                outs, error = real(pool, code, calls, preamble, answer=answer)
                if not answer:
                    runs.append(1)
                    if len(runs) <= late_runs:  # these reference runs: the second call timed out
                        return [outs[0], Outcome.missing("timeout")], "timeout"
                return outs, error
            return execute

        monkeypatch.setattr(g, "_execute", planted(1))
        for _ in range(3):
            res = g.grade("def f(x):\n    return x + 1\n", task)
            assert (res.passed, res.total) == (2, 2) and not res.unpassable
        assert len(runs) == 2  # the timed-out run and the one that settled it, then kept

        runs.clear()
        monkeypatch.setattr(g, "_execute", planted(10 ** 6))
        stuck = make_task("def h(x):\n    return x\n", ["h(1)", "h(2)"])
        for _ in range(3):
            res = g.grade("def h(x):\n    return x\n", stuck)
            assert res.passed == 1 and list(res.unpassable) == ["test2"]
        assert len(runs) == grader_module.REF_ATTEMPTS

        runs.clear()
        monkeypatch.setattr(g, "_execute", planted(0))
        broken = make_task("import numpy\ndef k(x):\n    return x\n", ["k(1)"])
        for _ in range(2):
            g.grade("def k(x):\n    return x\n", broken)
        assert len(runs) == 1  # a reference that fails for a reason of the task: settled at once
