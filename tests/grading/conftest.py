"""Fixtures of the grading tests: one real sandboxed grader per module."""

from __future__ import annotations

import os

import pytest

from colbench_gym.grading import BackendGrader
from colbench_gym.tasks import BackendTask
from tests.grading.helpers import REFERENCE


@pytest.fixture(scope="module")
def task() -> BackendTask:
    return BackendTask("Write f(x, y).", REFERENCE, {f"test{i}": f"f({i}, {i * i})" for i in range(1, 11)})


@pytest.fixture(scope="module")
def grader():
    # COLBENCH_GRADER_ISOLATION=rlimits-only runs the same suite against the fallback sandbox.
    g = BackendGrader(call_timeout=0.5, total_timeout=3.0, memory_mb=256,
                      isolation=os.environ.get("COLBENCH_GRADER_ISOLATION", "auto"))
    yield g
    g.close()
