"""Official ColBench records, validated in one place with errors that say what to fix.

Task records — backend: ``{"problem_description": str, "ground_truth": str (Python), "test_cases":
{"test1": "f(...)", ...}}``; frontend: ``{"problem_description": str, "ground_truth": str (HTML)}``.
Extra keys are kept in :attr:`extra` so records round-trip unchanged.

Offline trajectory records (the paper's release format, which rollouts write and the evaluators,
trainers and viewers read) — ``{"task": {task record}, "dialogue_history": [{"role", "content"},
...], "answer": str, "reward": float | None, ...}``: :func:`check_trajectory_record` is the one
validator every reader calls, each asking for the keys it needs.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from colbench_gym.tasks.identity import task_identity


class TaskFormatError(ValueError):
    """A task record does not have the official shape."""


class RecordFormatError(TaskFormatError):
    """An offline trajectory record does not have the official shape."""


#: Keys of the official offline trajectory record.
TRAJECTORY_KEYS = ("task", "dialogue_history", "answer", "reward")
#: What each key holds, for error messages that say what to fix.
_KEY_HINTS = {
    "task": 'an official task record; expected an offline trajectory record {"task": {...}, "answer": "...", ...}',
    "dialogue_history": "a list of {role, content} turns",
    "answer": "the agent's final answer, a string",
    "reward": "the episode's score, a number (null before grading)",
}
_ROLES = ("user", "assistant", "system")


def check_trajectory_record(rec: Any, where: str = "record", required: tuple[str, ...] = TRAJECTORY_KEYS, *,
                            null_answer: bool = False, error: type[ValueError] = RecordFormatError,
                            hints: Mapping[str, str] | None = None) -> None:
    """Raise ``error`` naming the first thing wrong with an offline trajectory record.

    ``required`` keys must be present (``task`` always is); every official key that is present
    must have its official type: ``task`` a dict with a ``problem_description``,
    ``dialogue_history`` a list of turns with role user/assistant/system and str content,
    ``answer`` a str (or null when ``null_answer``: an unanswered episode scores 0), ``reward`` a
    finite number or null (NaN and infinities are refused). Callers pass their own ``error`` class
    so their existing ``except`` clauses keep working, and may say in ``hints`` what a missing key
    should hold for them.
    """
    hints = {**_KEY_HINTS, **(hints or {})}
    if not isinstance(rec, Mapping):
        raise error(f"{where}: expected a JSON object (a trajectory record), got {type(rec).__name__}")
    for key in dict.fromkeys(("task", *required)):
        if key not in rec:
            raise error(f"{where}: missing {key!r} ({hints.get(key, 'required here')})")
    task = rec["task"]
    if not isinstance(task, Mapping) or "problem_description" not in task:
        raise error(f"{where}: 'task' must be an official task record with 'problem_description' "
                    f"(expected an offline trajectory record {{\"task\": {{...}}, \"answer\": \"...\"}})")
    if "dialogue_history" in rec:
        hist = rec["dialogue_history"]
        if not isinstance(hist, list):
            raise error(f"{where}: 'dialogue_history' must be a list of {{role, content}} turns")
        for i, turn in enumerate(hist):
            if not isinstance(turn, Mapping) or turn.get("role") not in _ROLES or not isinstance(turn.get("content"), str):
                raise error(f"{where}: dialogue_history[{i}] needs role user/assistant/system and str content")
    if "answer" in rec and not isinstance(rec["answer"], str) and not (null_answer and rec["answer"] is None):
        raise error(f"{where}: 'answer' must be a string, got {type(rec['answer']).__name__}")
    reward = rec.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))):
        raise error(f"{where}: 'reward' must be a number, got {type(reward).__name__}")
    if isinstance(reward, float) and not math.isfinite(reward):
        # JSON readers accept NaN/Infinity tokens; one NaN turns every mean (and a training loss) into nan.
        raise error(f"{where}: 'reward' must be a finite number, got {reward!r} (regrade the record, or drop it)")


def record_success(rec: Mapping[str, Any], threshold: float | None = None) -> bool | None:
    """Whether a backend trajectory record solved its task: the one success rule of every report
    and trainer. None when ungraded: no ``reward`` (and, without a threshold, no ``success``).

    With no ``threshold``: the record's ``success`` when it carries one, else every hidden test
    passed (``reward`` >= 1, the fraction passed). With a ``threshold``: ``reward`` >= threshold,
    whatever ``success`` says (partial-credit training sets: a record passing most tests counts).
    """
    if threshold is None and rec.get("success") is not None:
        return bool(rec["success"])
    reward = rec.get("reward")
    return None if reward is None else float(reward) >= (1.0 if threshold is None else threshold)


def _task_fields(record: Any, where: str, shape: str) -> tuple[str, str]:
    """The two fields every task shape has, validated (``shape`` names the expected shape)."""
    if not isinstance(record, Mapping):
        raise TaskFormatError(f"{where}: expected a dict in the official {shape} shape, got {type(record).__name__}")
    return _require_str(record, "problem_description", where), _require_str(record, "ground_truth", where)


def _require_str(record: Mapping[str, Any], key: str, where: str) -> str:
    if key not in record:
        raise TaskFormatError(f"{where}: missing key {key!r} (a task needs 'problem_description' and 'ground_truth')")
    value = record[key]
    if not isinstance(value, str) or not value.strip():
        raise TaskFormatError(f"{where}: {key!r} must be a non-empty string, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class BackendTask:
    """A backend programming task: hidden reference function plus hidden test calls."""

    problem_description: str
    ground_truth: str
    test_cases: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def task_id(self) -> str:
        """Stable content hash: the same task always gets the same id (used for caching)."""
        return task_identity({"problem_description": self.problem_description, "ground_truth": self.ground_truth,
                              "test_cases": self.test_cases})

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str = "task", *,
                    check_python: bool = False) -> "BackendTask":
        if isinstance(record, BackendTask):
            return record
        desc, gt = _task_fields(record, where, "backend")
        tests = record.get("test_cases")
        if isinstance(tests, str):  # some dumps store the dict as a JSON string
            try:
                tests = json.loads(tests)
            except json.JSONDecodeError as exc:
                raise TaskFormatError(f"{where}: 'test_cases' is a string but not JSON: {exc}") from None
        if not isinstance(tests, Mapping) or not tests:
            raise TaskFormatError(
                f"{where}: 'test_cases' must be a non-empty dict of name -> call expression, "
                f"e.g. {{'test1': 'f(1, 2)'}}; got {type(tests).__name__}"
            )
        for name, call in tests.items():
            if not isinstance(call, str) or not call.strip():
                raise TaskFormatError(f"{where}: test case {name!r} must be a call expression string")
        extra = {k: v for k, v in record.items() if k not in ("problem_description", "ground_truth", "test_cases")}
        task = cls(desc, gt, {str(k): v for k, v in tests.items()}, extra)
        if check_python:
            task.check_python(where)
        return task

    def check_python(self, where: str = "task") -> None:
        """Raise :class:`TaskFormatError` when the reference or a test call is not valid Python.

        WHY the readers of task *files* call this and :meth:`from_record` does not by default: a
        reference that does not parse makes every test impossible to pass, which a user loading a
        file must hear about (naming the file and line); code that builds a task on purpose (the
        simulators' tests, the release's semantics) may still hold one. Material nested beyond the
        parser's limits (RecursionError / MemoryError) passes here: grading reports it per task.
        """
        for name, call in self.test_cases.items():
            try:
                ast.parse(call.strip(), mode="eval")
            except (SyntaxError, ValueError):
                raise TaskFormatError(f"{where}: test case {name!r} is not a Python expression: {call[:80]!r}") from None
            except (RecursionError, MemoryError):
                pass
        try:
            ast.parse(self.ground_truth)
        except (SyntaxError, ValueError) as exc:
            line = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
            raise TaskFormatError(f"{where}: 'ground_truth' is not valid Python{line} "
                                  f"({exc.msg if isinstance(exc, SyntaxError) else exc})") from None
        except (RecursionError, MemoryError):
            pass

    def to_record(self) -> dict[str, Any]:
        return {"problem_description": self.problem_description, "ground_truth": self.ground_truth,
                "test_cases": dict(self.test_cases), **self.extra}


@dataclass(frozen=True)
class FrontendTask:
    """A frontend design task: hidden reference HTML page (Tailwind CSS)."""

    problem_description: str
    ground_truth: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def task_id(self) -> str:
        """Stable content hash (see :mod:`colbench_gym.tasks.identity`)."""
        return task_identity({"problem_description": self.problem_description, "ground_truth": self.ground_truth})

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str = "task", *,
                    check_python: bool = False) -> "FrontendTask":
        """``check_python`` is accepted for symmetry with :meth:`BackendTask.from_record` (HTML is not parsed)."""
        if isinstance(record, FrontendTask):
            return record
        desc, gt = _task_fields(record, where, "frontend")
        if "<" not in gt:
            raise TaskFormatError(f"{where}: 'ground_truth' of a frontend task must be an HTML page")
        extra = {k: v for k, v in record.items() if k not in ("problem_description", "ground_truth")}
        return cls(desc, gt, extra)

    def to_record(self) -> dict[str, Any]:
        return {"problem_description": self.problem_description, "ground_truth": self.ground_truth, **self.extra}
