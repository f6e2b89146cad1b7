"""An answer cannot make its own failure look like the infrastructure's (issue 37).

An episode the infrastructure could not score is left out of the rates (reward None,
``end_reason = grading_error``). Before issue 37 the grader's catch-all marked that with the text
prefix "internal grading error" and every consumer read the prefix back from ``GradeResult.error``
— text an answer writes itself: an exception class renamed to "internal grading error" (by
``__qualname__``, ``__module__`` or ``type()``), or a forged record on the result channel, gave
``grading_error`` and `colbench evaluate backend` reported 100 % for 1 right answer of 2.

Now whether grading failed is the grader's host-side verdict (``GradeResult.end_reason``), read by
:func:`colbench_gym.tasks.accounting.grading_failure` in every consumer. Each forgery below goes
through a public entry point (the grader, ``gym.make("ColBench-Backend-v0")``, ``colbench evaluate
backend``, the harnesses' ``grade_backend``, ``sweet-agent evaluate --regrade``) and must score 0
as the answer's own failure; a real failure of the host still says ``grading_error``.
"""

from __future__ import annotations

import json

import pytest

from colbench_gym.grading import GradeResult
from colbench_gym.tasks.accounting import grading_failure
from tests.grading.forge import forged_answer
from tests.grading.helpers import CORRECT, REFERENCE, parent_killer

FORGED = "internal grading error"

#: Answers that fail on purpose, dressed up as a failure of the grader.
FORGERIES = {
    "class renamed by __qualname__":
        "class E(Exception):\n    pass\nE.__qualname__ = 'internal grading error'\nraise E('the sandbox died')\n",
    "__qualname__ set in the class body":
        "class E(Exception):\n    __qualname__ = 'internal grading error'\nraise E()\n",
    "class whose __module__ reads like the grader":
        "class E(Exception):\n    pass\nE.__module__ = 'internal grading error'\nraise E()\n",
    "__module__ and __qualname__ of the grader's catch-all":
        "class E(RuntimeError):\n    pass\nE.__module__ = 'colbench_gym.grading.grader'\n"
        "E.__qualname__ = 'internal grading error: RuntimeError'\nraise E()\n",
    "type name set via type()":
        "raise type('internal grading error', (Exception,), {})('boom')\n",
    "type name with the catch-all's colon":
        "raise type('internal grading error: WorkerFailed', (RuntimeError,), {})()\n",
    "type named like an end reason":
        "raise type('grading_error', (Exception,), {})('grading_error: sandbox crashed')\n",
    "BaseException subclass":
        "class E(BaseException):\n    pass\nE.__qualname__ = 'internal grading error'\nraise E()\n",
    "a message that starts like an infrastructure reason":
        "raise RuntimeError('internal grading error: RuntimeError: the worker died')\n",
    "SystemExit with infrastructure text":
        "raise SystemExit('internal grading error: sandbox crashed')\n",
    "__str__ / __repr__ that lie, __class__ that lies":
        "class Fake(Exception):\n    pass\nFake.__qualname__ = 'internal grading error'\n"
        "class E(Exception):\n"
        "    __class__ = property(lambda self: Fake)\n"
        "    def __str__(self):\n        return 'internal grading error: x'\n"
        "    def __repr__(self):\n        return 'internal grading error: x'\n"
        "E.__qualname__ = 'internal grading error'\nraise E('internal grading error')\n",
    "__str__ that raises":
        "class E(Exception):\n    def __str__(self):\n        raise E()\n"
        "E.__qualname__ = 'internal grading error'\nraise E()\n",
    "a metaclass that lies about the name":
        "class M(type):\n"
        "    def __getattribute__(cls, name):\n"
        "        if name in ('__name__', '__qualname__', '__module__'):\n"
        "            return 'internal grading error'\n"
        "        return type.__getattribute__(cls, name)\n"
        "class E(Exception, metaclass=M):\n    pass\n"
        "type.__setattr__(E, '__qualname__', 'internal grading error')\nraise E()\n",
    "fake failure text on stdout and stderr":
        "import os, sys\nprint('internal grading error: RuntimeError', file=sys.stderr)\n"
        "os.write(2, b'grading_error: the sandbox crashed\\n')\nos.write(1, b'internal grading error\\n')\n"
        "raise SystemExit(1)\n",
    "a forged import-failure record on the result channel":
        forged_answer(['{"t":"import_error","x":"internal grading error","m":"RuntimeError: worker died"}']),
    "a forged record naming the catch-all's module":
        forged_answer(['{"t":"import_error","x":"colbench_gym.grading.grader.internal grading error","m":""}']),
    "raised inside every test call":
        "class E(Exception):\n    pass\nE.__qualname__ = 'internal grading error'\n"
        "def f(x, y):\n    raise E('internal grading error')\n",
    "a forged raise record inside a test call":
        "import os, json\n"
        "def f(x, y):\n"
        "    os.write(3, (json.dumps({'t': 'e', 'i': 0, 'x': 'internal grading error'}) + '\\n').encode())\n"
        "    os._exit(0)\n",
}


def _task_record() -> dict:
    return {"problem_description": "Write f(x, y).", "ground_truth": REFERENCE,
            "test_cases": {f"test{i}": f"f({i}, {i * i})" for i in range(1, 11)}}


def _assert_the_answers_failure(res: GradeResult) -> None:
    assert res.total == 10 and res.passed == 0
    # the forged text reaches no verdict, no error text and no reason...
    assert FORGED not in (res.error or "")
    assert not any(FORGED in r for r in res.reasons.values())
    # ...and the one rule says: the answer's own score
    assert res.end_reason is None
    assert grading_failure(res) is None


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_forged_infrastructure_failure_is_the_answers_failure(grader, task, name):
    """Through the grader API: every forgery scores 0 with no infrastructure verdict."""
    _assert_the_answers_failure(grader.grade(FORGERIES[name], task))


def test_a_forged_infrastructure_failure_scores_zero_in_the_env():
    """Through ``gym.make("ColBench-Backend-v0")``: reward 0, no end reason, no forged text in info."""
    import gymnasium as gym

    import colbench_gym  # noqa: F401 - registers the ids

    env = gym.make("ColBench-Backend-v0")
    try:
        for name in ("class renamed by __qualname__", "class whose __module__ reads like the grader",
                     "type name set via type()", "a forged import-failure record on the result channel",
                     "raised inside every test call"):
            env.reset(seed=0, options={"task": _task_record()})
            _, reward, terminated, _, info = env.step("I WANT TO ANSWER:\n" + FORGERIES[name])
            assert terminated and reward == 0.0, name
            assert info["end_reason"] == info["ended_by"] == "answer", name
            assert info["tests_passed"] == 0 and info["success"] is False, name
            assert FORGED not in (info["grade_error"] or ""), name
        env.reset(seed=0, options={"task": _task_record()})
        _, reward, _, _, info = env.step("I WANT TO ANSWER:\n" + CORRECT)
        assert reward == 1.0 and info["end_reason"] == "answer"
    finally:
        env.close()


def test_colbench_evaluate_backend_counts_forged_infrastructure_failures_as_failures(tmp_path, capsys):
    """Through the CLI: 1 right answer of 4 is a 25 % success rate, not 100 %; nothing left out."""
    from colbench_gym.cli import main

    names = ["class renamed by __qualname__", "type name set via type()",
             "a forged import-failure record on the result channel"]
    records = [{"task": _task_record(), "answer": CORRECT}]
    records += [{"task": _task_record(), "answer": FORGERIES[n]} for n in names]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["evaluate", "backend", str(src), "--output", str(out), "--no-progress"]) == 0
    graded = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [g["infrastructure_failure"] for g in graded] == [False] * 4
    assert [g["reward"] for g in graded] == [1.0, 0.0, 0.0, 0.0]
    assert [g["success"] for g in graded] == [True, False, False, False]
    assert [g["end_reason"] for g in graded] == [None] * 4
    assert not any(FORGED in (g["grade_error"] or "") for g in graded)
    printed = capsys.readouterr().out
    assert "success rate: 25.0%" in printed
    assert "infrastructure failures" not in printed and "grading_error" not in printed


def test_the_harnesses_score_a_forged_failure_instead_of_refusing_to(grader):
    """Inspect, verifiers and the OpenEnv tool env grade through ``grade_backend``: a forgery is a
    score of 0 there too, never ``ScoreUnavailable`` (an Inspect sample error, a verifiers
    ``InfraError`` that is dropped and retried)."""
    from colbench_gym.integrations.conversation import grade_backend

    for name in ("class renamed by __qualname__", "type name with the catch-all's colon",
                 "a forged record naming the catch-all's module"):
        result = grade_backend(FORGERIES[name], _task_record(), grader)  # the answer, after the marker
        assert result["success"] is False and result["fraction"] == 0.0, name
        assert result["grade_error"] and not result["grade_error"].startswith("SyntaxError"), name
        assert FORGED not in result["grade_error"], name


def test_sweet_agent_regrade_scores_a_forged_failure():
    """``sweet-agent evaluate --regrade``: the forged record is regraded to 0, not counted with
    the infrastructure failures (which would drop it from the rates)."""
    from sweet_agent.evaluation.report import summarize

    good = {"task": _task_record(), "answer": CORRECT, "reward": 1.0,
            "dialogue_history": [{"role": "user", "content": "Write f(x, y)."}]}
    forged = {**good, "answer": FORGERIES["class renamed by __qualname__"], "reward": 0.0}
    s = summarize([good, forged], regrade=True)
    assert s.regrade_failures == {} and s.infrastructure_failures == 0
    assert s.regraded == 2 and s.mismatches == []
    assert s.success == pytest.approx(0.5)


def test_grading_failure_never_reads_text():
    """The one rule: the verdict, never the error text (a str is refused outright)."""
    forged = GradeResult(0, 2, {"a": False, "b": False}, "internal grading error: RuntimeError: x")
    assert grading_failure(forged) is None
    with pytest.raises(TypeError):
        grading_failure("internal grading error: RuntimeError")  # type: ignore[arg-type]
    host = GradeResult(0, 2, {"a": False, "b": False}, "anything", end_reason="grading_error")
    assert grading_failure(host) == "grading_error"
    assert grading_failure(GradeResult(0, 2, {}, None, unpassable={"a": "x", "b": "y"})) == "task_error"


# ------------------------------------------------------------- what the host sees still counts
def test_a_failure_of_the_trusted_process_is_still_a_grading_error(grader, task, monkeypatch):
    """Host-side evidence (the trusted process raised) keeps its verdict: grading_error."""
    from colbench_gym.grading.pytest_driver import PytestDriver

    def broken_run(self, cases, prefix=""):
        raise RuntimeError("simulated internal fault with f(3, 9) in it")

    monkeypatch.setattr(PytestDriver, "run", broken_run)
    res = grader.grade(CORRECT, task)
    assert res.end_reason == "grading_error" and grading_failure(res) == "grading_error"
    assert res.passed == 0 and res.error.startswith("internal grading error: RuntimeError")
    assert "f(3, 9)" not in res.error  # the host's message goes to the log, not into info
    monkeypatch.undo()
    res = grader.grade(CORRECT, task)
    assert res.passed == 10 and res.end_reason is None


def test_a_sandbox_the_host_cannot_start_is_a_grading_error(make_grader, task, monkeypatch):
    """The worker process's fate as the host observed it: no worker could be started at all."""
    from colbench_gym.grading import sandbox

    def no_spawn(cmd, env, cwd):
        raise OSError("no processes left on the host")

    g = make_grader()
    monkeypatch.setattr(sandbox, "_spawn", no_spawn)
    res = g.grade(CORRECT, task)
    assert res.end_reason == "grading_error" and grading_failure(res) == "grading_error"
    monkeypatch.undo()
    assert g.grade(CORRECT, task).passed == 10


def test_an_infrastructure_failure_of_the_host_leaves_the_env_episode_unscored(monkeypatch):
    """The env and `colbench serve` take the verdict from the same rule: grading_error."""
    import gymnasium as gym

    import colbench_gym  # noqa: F401
    from colbench_gym.grading.pytest_driver import PytestDriver

    def broken_run(self, cases, prefix=""):
        raise RuntimeError("simulated internal fault")

    env = gym.make("ColBench-Backend-v0")
    try:
        env.reset(seed=0, options={"task": _task_record()})
        monkeypatch.setattr(PytestDriver, "run", broken_run)
        *_, info = env.step("I WANT TO ANSWER:\n" + CORRECT)
        assert info["end_reason"] == "grading_error"
    finally:
        monkeypatch.undo()
        env.close()


# ------------------------------------------------------------------------- held: scored 0
HELD = {
    "SystemExit at import": "raise SystemExit(0)\n",
    "KeyboardInterrupt at import": "raise KeyboardInterrupt\n",
    "KeyboardInterrupt in a call": "def f(x, y):\n    raise KeyboardInterrupt\n",
    "os._exit": "import os\nos._exit(3)\n",
    "closing the result channel": "import os\nos.close(3)\ndef f(x, y):\n    return 31 * x + y\n",
    "sleeping": "import time\ndef f(x, y):\n    time.sleep(60)\n",
    "fake verdict lines": "print('10 passed')\nprint('PASSED test1')\ndef f(x, y):\n    return 0\n",
    "memory bomb": "def f(x, y):\n    a = bytearray(10**10)\n",
    "thread bomb": "import threading, time\n"
                   "def f(x, y):\n"
                   "    for _ in range(10000):\n"
                   "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
}


@pytest.mark.parametrize("name", list(HELD))
def test_held_attacks_stay_the_answers_failure(grader, task, name):
    """Held before issue 37, kept: each scores 0 and is never an infrastructure failure."""
    res = grader.grade(HELD[name], task)
    assert res.passed == 0 and res.end_reason is None and grading_failure(res) is None


def test_killing_the_worker_stays_the_answers_failure(grader, task):
    res = grader.grade(parent_killer(kill_all=grader.isolation.pid_namespace), task)
    assert res.passed == 0 and res.end_reason is None and grading_failure(res) is None
    assert grader.grade(CORRECT, task).passed == 10


def test_every_consumer_asks_the_one_rule():
    """No consumer decides "infrastructure failure" from the grade's text: the catch-all's prefix
    is written in one place (the grader) and read nowhere; the rule (``grading_failure``, given the
    GradeResult itself) is asked in one place, the backend's score entry, and every consumer scores
    through that entry (``score_answer`` or the kind's ``score``), never with the grader directly."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    calls, prefix_users, scorers, direct = [], [], set(), []
    for path in sorted([*root.joinpath("colbench_gym").rglob("*.py"), *root.joinpath("sweet_agent").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        if ("INTERNAL_GRADING_ERROR" in text or FORGED in text) and rel not in (
                "colbench_gym/tasks/accounting.py", "colbench_gym/grading/grader.py"):
            prefix_users.append(rel)
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name == "grading_failure":
                calls.append((rel, len(node.args) + len(node.keywords)))
            if name in ("score_answer", "score"):
                scorers.add(rel)
            receiver = getattr(getattr(node.func, "value", None), "id", None)
            if name == "grade" and receiver != "rgrader" and not rel.startswith(("colbench_gym/grading/",
                                                                                 "colbench_gym/verdicts/")):
                direct.append(rel)  # (rgrader: `evaluate --semantics release`, the release's own grader beside ours)
    assert not prefix_users, f"reads the catch-all's text: {prefix_users}"
    assert calls == [("colbench_gym/verdicts/backend.py", 1)], calls
    assert {"colbench_gym/envs/backend.py", "colbench_gym/evaluation/backend.py",
            "colbench_gym/integrations/conversation.py", "sweet_agent/evaluation/report.py",
            "sweet_agent/viewer/episodes.py"} <= scorers
    # the task audit grades references and oracle answers (task checks, not an agent's score)
    assert set(direct) <= {"colbench_gym/evaluation/task_audit.py"}, direct
