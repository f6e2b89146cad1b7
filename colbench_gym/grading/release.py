"""The paper release's grading semantics, reproduced in our sandbox (``--semantics release``).

Our own grader (:mod:`colbench_gym.grading.grader`, :data:`~colbench_gym.grading.compare.STRICT`
rules) is the default and the right reward for RL. Researchers comparing with the numbers
published with SWEET-RL need the verdicts of the release's grader instead; this module gives
them, case by case (facts read from the release's ``sweet_rl/utils/code_utils.py``; no code of
it is used here):

1. **Rejected answers.** An answer containing any of :data:`BANNED` scores 0 before anything runs
   (a substring test on the whole answer: a comment saying "import sys" is enough).
2. **Code extraction.** If the answer contains ```` ```python ```` the text between it and the
   next fence is taken; then, if a fence is still in it, the text between the first two fences.
   No fence: the whole answer is the code (prose around it is a syntax error: 0).
3. **Scope.** The release runs ``exec(code)`` then ``eval(call)`` inside a function: on Python
   <= 3.12 the code's top-level names land in that function's *locals*, which functions defined
   by the code cannot see. So a function that uses a module-level constant, a top-level import or
   a helper function (or calls itself recursively) raises ``NameError``. We reproduce this with a
   ``"scope": "split"`` sandbox request (globals and locals kept apart), on any Python. (On Python
   3.13 the release's eval no longer sees the definitions at all and scores every answer 0; we
   reproduce the <= 3.12 behaviour the paper's numbers were measured with.)
4. **Results.** Reference and answer outputs are taken the same way; any exception, a non-plain
   result we cannot bring out of the sandbox, or (answer only) a call over 1 s is ``None``.
5. **Comparison.** A test passes iff ``reference == answer and reference is not None`` with
   Python's plain ``==``: ``1 == 1.0 == True`` pass, float round-off (``0.1 + 0.2`` vs ``0.3``)
   fails, a reference that raises or returns ``None`` can never be passed, ``[1] != (1,)``.
6. **Score.** passed / number of tests; success is every test passing.

Differences that remain (documented in docs/interop.md): the release execs the code once per
test (module state is fresh for each call; here the calls of one submission share one
execution), its functions see the release module's own globals (``signal``, ``multiprocessing``)
where ours see only builtins, and results of non-plain types (e.g. numpy scalars) compare with
their ``==`` there but count as failed here (they never leave the sandbox).
"""

from __future__ import annotations

from typing import Any

from colbench_gym.grading.grader import BackendGrader, GradeResult, _task_problems
from colbench_gym.grading.wire import Outcome
from colbench_gym.tasks.records import BackendTask

#: Substrings that make the release's grader score an answer 0 without running it.
BANNED = ("import os", "from os", "import sys", "from sys", "sudo", "transformers", "exit(", "quit(", "argparse")
#: The release's per-call alarm for the answer (seconds).
RELEASE_CALL_TIMEOUT = 1.0


def release_rejects(answer: str) -> str | None:
    """The banned substring that makes the release score ``answer`` 0, or None."""
    return next((b for b in BANNED if b in answer), None)


def release_code(answer: str) -> str:
    """The code the release's grader executes for ``answer`` (its fence rules, applied in order)."""
    code = answer
    if "```python" in code:
        code = code.split("```python")[1].split("```")[0]
    if "```" in code:
        code = code.split("```")[1].split("```")[0]
    return code


def release_value(outcome: Outcome) -> tuple[bool, Any]:
    """``(is_none, value)``: what the release's ``get_function_output`` would have returned."""
    if outcome.kind != "value" or outcome.value is None:
        return True, None
    return False, outcome.value


def release_passes(expected: Outcome, actual: Outcome) -> bool:
    """The release's verdict: ``reference == answer and reference is not None`` (plain ``==``)."""
    ref_none, ref = release_value(expected)
    if ref_none:
        return False
    ans_none, ans = release_value(actual)
    if ans_none:
        return False
    try:
        return bool(ref == ans)
    except (ValueError, TypeError, RecursionError):  # the release counts a ValueError from == as a fail
        return False


class ReleaseGrader(BackendGrader):
    """A :class:`BackendGrader` giving the release's verdicts (see the module docstring).

    Same sandbox and options; the reference outputs are computed in the release's scope and kept
    in memory only (never in the disk cache of our own semantics). ``call_timeout`` defaults to
    the release's 1 s.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("call_timeout", RELEASE_CALL_TIMEOUT)
        kwargs["cache_dir"] = None  # reference outcomes differ from ours: never share a cache file
        super().__init__(**kwargs)

    def _request(self, code: str, calls: list[str], preamble: str) -> dict[str, Any]:
        # No import preamble (the release evaluates calls in the code's own namespace), split scope.
        return {**super()._request(code, calls, ""), "scope": "split"}

    def _grade(self, code: str, task: BackendTask, names: list[str]) -> GradeResult:
        """``code`` here is the raw answer: the release applies its checks before extracting code."""
        banned = release_rejects(code)
        if banned is not None:
            why = f"release semantics: the answer contains {banned!r} (rejected without running)"
            return GradeResult(0, len(names), {n: False for n in names}, why, {n: why for n in names})
        calls = [task.test_cases[n] for n in names]
        ref_error, _ = _task_problems(task.ground_truth, tuple(zip(names, calls)))
        if ref_error is not None:
            return GradeResult(0, len(names), {n: False for n in names}, ref_error, {n: ref_error for n in names})
        refs = self._reference_map(task)
        expected = [refs[(n, c)] for n, c in zip(names, calls)]
        actual, error = self._execute(self._pool, release_code(code), calls, "")
        per_test: dict[str, bool] = {}
        reasons: dict[str, str] = {}
        unpassable: dict[str, str] = {}
        never = "the reference gives None (raises or returns None): never passable"
        for name, exp, act in zip(names, expected, actual):
            per_test[name] = release_passes(exp, act)
            if release_value(exp)[0]:
                unpassable[name] = never
            if not per_test[name]:
                reasons[name] = never if name in unpassable else "answer != reference (plain ==) or no result"
        return GradeResult(sum(per_test.values()), len(names), per_test, error, reasons, unpassable)

    def unpassable_tests(self, task: BackendTask) -> dict[str, str]:
        """Tests the release's grader can never pass (its reference gives None), with why."""
        out = {}
        for (name, _), outcome in self._reference_map(task).items():
            if outcome.kind == "raise":
                out[name] = f"the reference raises {outcome.value}"
            elif outcome.kind == "missing":
                out[name] = f"the reference gives no result ({outcome.value})"
            elif outcome.value is None:
                out[name] = "the reference returns None"
        return out


def release_compatible(records: list[dict[str, Any]], grader: ReleaseGrader | None = None
                       ) -> tuple[list[dict[str, Any]], str]:
    """Backend task records without the tests the release's grader can never pass; tasks left with
    no test are dropped. Returns the records and a report (one line per changed task, then totals)."""
    own = grader is None
    grader = grader or ReleaseGrader(call_timeout=5.0)  # references have no alarm there: be generous
    kept, lines, n_tests, n_tasks = [], [], 0, 0
    try:
        for i, rec in enumerate(records):
            task = BackendTask.from_record(rec, where=f"task {i}")
            bad = grader.unpassable_tests(task)
            if not bad:
                kept.append(rec)
                continue
            n_tests += len(bad)
            tests = {k: v for k, v in task.test_cases.items() if k not in bad}
            why = "; ".join(f"{k}: {v}" for k, v in list(bad.items())[:3]) + ("; ..." if len(bad) > 3 else "")
            if tests:
                kept.append({**rec, "test_cases": tests})
                lines.append(f"task {i}: dropped {len(bad)} of {len(task.test_cases)} tests ({why})")
            else:
                n_tasks += 1
                lines.append(f"task {i}: dropped (no test the release can pass: {why})")
    finally:
        if own:
            grader.close()
    lines.append(f"release-compatible: dropped {n_tests} tests the release's grader can never pass "
                 f"({n_tasks} tasks left without tests, dropped); {len(kept)} of {len(records)} tasks kept")
    return kept, "\n".join(lines)
