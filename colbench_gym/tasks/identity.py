"""The one task-identity rule: a canonical, unambiguous content hash of a task record.

Every place that groups, caches or pairs by task (grading caches, evaluators, critic pairs,
simulator seeding) uses :func:`task_identity`. The hash covers a canonical JSON encoding of the
fields that define the task (kind, description, reference, and the backend's test cases as a
key-sorted mapping), so field boundaries can never collide the way a separator-joined string
can, and reordering test keys does not change the identity.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

_ID_HEX = 16


def canonical_task_payload(task: Mapping[str, Any]) -> str:
    """The canonical JSON text that :func:`task_identity` hashes (exposed for tests and debugging)."""
    tests = task.get("test_cases")
    if isinstance(tests, str):  # some dumps store the dict as a JSON string
        try:
            tests = json.loads(tests)
        except json.JSONDecodeError:
            pass
    payload: dict[str, Any] = {
        "kind": "backend" if tests is not None else "frontend",
        "problem_description": task.get("problem_description"),
        "ground_truth": task.get("ground_truth"),
    }
    if tests is not None:
        payload["test_cases"] = tests
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def task_identity(task: Mapping[str, Any]) -> str:
    """Stable id of a task record: the same task always gets the same id, different tasks never share one."""
    return hashlib.sha256(canonical_task_payload(task).encode("utf-8", "surrogatepass")).hexdigest()[:_ID_HEX]
