"""Official ColBench records, validated in one place with errors that say what to fix.

Task records — backend: ``{"problem_description": str, "ground_truth": str (Python), "test_cases":
{"test1": "f(...)", ...}}``; frontend: ``{"problem_description": str, "ground_truth": str (HTML)}``.
Extra keys are kept in :attr:`extra` so records round-trip unchanged.

Offline trajectory records (the paper's release format, which rollouts write and the evaluators,
trainers and viewers read) — ``{"task": {task record}, "dialogue_history": [{"role", "content"},
...], "answer": str, "reward": float | None, ...}``: :func:`check_trajectory_record` is the one
validator every reader calls, each asking for the keys it needs.

The task inside a trajectory record has one shape whatever its source
(:func:`trajectory_task`, schema version :data:`TRAJECTORY_SCHEMA_VERSION`): the request and the
reference as strings, the backend's ``test_cases`` as the JSON text of its ``{name: call}``
mapping, then ``extra``, the JSON text of every other key of the task (``{"source":
"collab:train", "index": 3, ...}`` for a generated task, ``{}`` for an embedded one). WHY:
``datasets`` infers one Arrow struct per file and casts every other file to it, so generated
tasks' extra keys (``source``, ``index``, ``family``, ``generator_version``) beside embedded
tasks' none, or ten tests named ``test1``..``test10`` beside twelve, made two runs on different
sources fail to load together. Version 1 records (the official task record: ``test_cases`` an
object, extra keys beside the official ones) are still read: :meth:`BackendTask.from_record` /
:meth:`FrontendTask.from_record`, :func:`task_extras` and :func:`official_task` take both.
docs/trajectory-format.md is the dataset card.
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
    "reward": "the episode's score, a number in [0, 1] (null before grading)",
}
_ROLES = ("user", "assistant", "system")


def check_trajectory_record(rec: Any, where: str = "record", required: tuple[str, ...] = TRAJECTORY_KEYS, *,
                            null_answer: bool = False, error: type[ValueError] = RecordFormatError,
                            hints: Mapping[str, str] | None = None) -> None:
    """Raise ``error`` naming the first thing wrong with an offline trajectory record.

    ``required`` keys must be present (``task`` always is); every official key that is present
    must have its official type: ``task`` a dict with a ``problem_description``,
    ``dialogue_history`` a list of turns with role user/assistant/system and str content,
    ``answer`` a str (or null when ``null_answer``: an unanswered episode scores 0), and every
    score, flag and count of :func:`check_record_fields` its type and range (``reward`` a finite
    number in [0, 1] or null, ``success`` and ``meta.infrastructure_failure`` JSON booleans, ...).
    Callers pass their own ``error`` class
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
    check_record_fields(rec, where, error=error)


#: What each score, flag and count of a trajectory or result record must hold when present and
#: not null, top level and in ``meta``: the fields reports, trainers and the no-score rule read.
#: Kinds: ``"score"`` a finite number in [0, 1]; ``"bool"`` a JSON boolean; ``"str"`` a string;
#: ``"count"`` an integer >= 0; ``"seconds"`` a finite number >= 0; ``"win"`` 0, 0.5 or 1;
#: ``"usage"`` an object of token counts.
RECORD_FIELDS: dict[str, str] = {
    # the grade (``reward``: fraction of hidden tests passed, or the frontend similarity)
    "reward": "score", "success": "bool", "reward_ours": "score", "success_ours": "bool",
    "similarity": "score", "reference_similarity": "score", "win": "win", "html_found": "bool",
    "tests_passed": "count", "tests_total": "count", "tests_unpassable": "count",
    # how the episode ended: what decides "no score" (colbench_gym.tasks.accounting)
    "end_reason": "str", "infrastructure_failure": "bool", "error": "str", "grade_error": "str",
}
META_FIELDS: dict[str, str] = {
    "schema_version": "count", "end_reason": "str", "infrastructure_failure": "bool", "failed": "bool", "error": "str", "ended_by": "str",
    "grade_error": "str", "tests_passed": "count", "tests_total": "count", "tests_unpassable": "count",
    "turns": "count", "max_turns": "count", "sample": "count", "policy": "str", "episode_id": "str",
    "agent_model": "str", "simulator_model": "str", "wall_time_s": "seconds", "completion_tokens": "count",
    "agent_usage": "usage", "simulator_usage": "usage",
}
_EXPECTED = {"score": "a finite number in [0, 1] or null", "bool": "true or false (a JSON boolean) or null",
             "str": "a string or null", "count": "a whole number >= 0 or null",
             "seconds": "a finite number >= 0 or null", "win": "0, 0.5 or 1 or null",
             "usage": "an object of token counts (whole numbers >= 0) or null"}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _field_ok(kind: str, v: Any) -> bool:
    if kind == "score":
        return _is_number(v) and math.isfinite(v) and 0.0 <= v <= 1.0
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "str":
        return isinstance(v, str)
    if kind == "count":
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if kind == "seconds":
        return _is_number(v) and math.isfinite(v) and v >= 0
    if kind == "win":
        return _is_number(v) and v in (0, 0.5, 1)
    if kind == "usage":
        return isinstance(v, Mapping) and all(_field_ok("count", c) for c in v.values() if c is not None)
    raise ValueError(f"unknown field kind {kind!r}")


def check_record_fields(rec: Mapping[str, Any], where: str = "record", *,
                        error: type[ValueError] = RecordFormatError) -> None:
    """Raise ``error`` naming ``where`` and the first field of :data:`RECORD_FIELDS` /
    :data:`META_FIELDS` that holds the wrong type or range (``reward`` 5.0 or -3, ``"success":
    "yes"``, ``meta.infrastructure_failure: "no"``, NaN): the one check behind every reader, so no
    report computes a rate from a value it would have to coerce. Null means "not recorded"."""
    def check(name: str, kind: str, v: Any) -> None:
        if v is None or _field_ok(kind, v):
            return
        shown = repr(v) if isinstance(v, (bool, int, float)) else f"{type(v).__name__} {json.dumps(v)[:60]}"
        hint = " (regrade the record, or drop it)" if kind == "score" else ""
        raise error(f"{where}: {name!r} must be {_EXPECTED[kind]}, got {shown}{hint}")

    for name, kind in RECORD_FIELDS.items():
        check(name, kind, rec.get(name))
    for a, b in (("tests_passed", "tests_total"),):
        if _is_number(rec.get(a)) and _is_number(rec.get(b)) and rec[a] > rec[b]:
            raise error(f"{where}: {a!r} ({rec[a]}) exceeds {b!r} ({rec[b]})")
    meta = rec.get("meta")
    if meta is None or isinstance(meta, str):  # a JSON-string meta is parsed (and checked) by its reader
        return
    if not isinstance(meta, Mapping):
        raise error(f"{where}: 'meta' must be a JSON object, got {type(meta).__name__}")
    for name, kind in META_FIELDS.items():
        check(f"meta.{name}", kind, meta.get(name))
    if _is_number(meta.get("tests_passed")) and _is_number(meta.get("tests_total")) \
            and meta["tests_total"] and meta["tests_passed"] > meta["tests_total"]:
        raise error(f"{where}: 'meta.tests_passed' ({meta['tests_passed']}) exceeds 'meta.tests_total' "
                    f"({meta['tests_total']})")


def record_success(rec: Mapping[str, Any], threshold: float | None = None) -> bool | None:
    """Whether a backend trajectory record solved its task: the one success rule of every report
    and trainer. None when ungraded: no ``reward`` (and, without a threshold, no ``success``).

    With no ``threshold``: the record's ``success`` when it carries one, else every hidden test
    passed (``reward`` >= 1, the fraction passed). With a ``threshold``: ``reward`` >= threshold,
    whatever ``success`` says (partial-credit training sets: a record passing most tests counts).
    """
    check_record_fields(rec)  # "success": "yes" is no success, reward 5.0 no pass
    if threshold is None and rec.get("success") is not None:
        return rec["success"]
    reward = rec.get("reward")
    return None if reward is None else float(reward) >= (1.0 if threshold is None else threshold)


#: Version of the trajectory record schema (docs/trajectory-format.md): 2 = ``task.test_cases`` and
#: the task's other keys (``task.extra``) as JSON text, and ``meta.schema_version``; 1 (no
#: ``meta.schema_version``) = the official task record (``test_cases`` an object, extra keys beside
#: the official ones). Readers take both.
TRAJECTORY_SCHEMA_VERSION = 2
#: The official keys of a task record, in the order a trajectory's task keeps them.
TASK_KEYS = ("problem_description", "ground_truth", "test_cases")
#: The one field of a trajectory's task holding every other key, as JSON text.
TASK_EXTRA = "extra"


def _decoded_extra(value: Any) -> dict[str, Any] | None:
    """The keys a ``task.extra`` JSON text holds, or None when ``value`` is not such a text."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def task_extras(task: Mapping[str, Any]) -> dict[str, Any]:
    """Every key of a task record besides the official ones, from either schema: version 2's
    ``extra`` JSON text (``{"source": "collab:train", ...}``) or version 1's keys beside the
    official ones. ``{}`` for a task without any (an embedded task)."""
    out = {k: v for k, v in task.items() if k not in TASK_KEYS}
    decoded = _decoded_extra(out.get(TASK_EXTRA))
    if decoded is not None:
        del out[TASK_EXTRA]
        out = {**decoded, **out}
    return out


def trajectory_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """A task record in the one shape of a trajectory record's ``task`` (schema version 2): the
    official keys it has (``problem_description``, ``ground_truth``; backend ``test_cases`` as the
    JSON text of the ``{name: call}`` mapping, in its order), then ``extra``: the JSON text of every
    other key, keys sorted (``"{}"`` when none). Idempotent; a version 1 task (the official record)
    comes out in version 2's shape, and :func:`official_task` turns it back."""
    out = {k: task[k] for k in TASK_KEYS if k in task}
    if isinstance(out.get("test_cases"), Mapping):
        out["test_cases"] = json.dumps(dict(out["test_cases"]), ensure_ascii=False)
    out[TASK_EXTRA] = json.dumps(task_extras(task), ensure_ascii=False, sort_keys=True, default=str)
    return out


def official_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """A trajectory's task (either schema version) as the official task record: ``test_cases`` an
    object, the other keys beside the official ones (what the paper's release tools and task files
    hold; :func:`trajectory_task` inverted)."""
    out = {k: task[k] for k in TASK_KEYS if k in task}
    if isinstance(out.get("test_cases"), str):
        decoded = _decoded_extra(out["test_cases"])
        if decoded is not None:
            out["test_cases"] = decoded
    return {**out, **task_extras(task)}


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
        task = cls(desc, gt, {str(k): v for k, v in tests.items()}, task_extras(record))
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
        return cls(desc, gt, task_extras(record))

    def to_record(self) -> dict[str, Any]:
        return {"problem_description": self.problem_description, "ground_truth": self.ground_truth, **self.extra}
