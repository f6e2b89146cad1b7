"""Task records in the official ColBench shapes, validated with errors that say what to fix.

Backend: ``{"problem_description": str, "ground_truth": str (Python), "test_cases":
{"test1": "f(...)", ...}}``. Frontend: ``{"problem_description": str, "ground_truth": str
(HTML)}``. Extra keys are kept in :attr:`extra` so records round-trip unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from colbench_gym.tasks.identity import task_identity


class TaskFormatError(ValueError):
    """A task record does not have the official shape."""


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
    def from_record(cls, record: Mapping[str, Any], where: str = "task") -> "BackendTask":
        if isinstance(record, BackendTask):
            return record
        if not isinstance(record, Mapping):
            raise TaskFormatError(f"{where}: expected a dict in the official backend shape, got {type(record).__name__}")
        desc = _require_str(record, "problem_description", where)
        gt = _require_str(record, "ground_truth", where)
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
        return cls(desc, gt, {str(k): v for k, v in tests.items()}, extra)

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
    def from_record(cls, record: Mapping[str, Any], where: str = "task") -> "FrontendTask":
        if isinstance(record, FrontendTask):
            return record
        if not isinstance(record, Mapping):
            raise TaskFormatError(f"{where}: expected a dict in the official frontend shape, got {type(record).__name__}")
        desc = _require_str(record, "problem_description", where)
        gt = _require_str(record, "ground_truth", where)
        if "<" not in gt:
            raise TaskFormatError(f"{where}: 'ground_truth' of a frontend task must be an HTML page")
        extra = {k: v for k, v in record.items() if k not in ("problem_description", "ground_truth")}
        return cls(desc, gt, extra)

    def to_record(self) -> dict[str, Any]:
        return {"problem_description": self.problem_description, "ground_truth": self.ground_truth, **self.extra}
