"""Fixtures of the grading tests (one conftest for tests/grading): the task, and real sandboxed graders.

Every module gets one ``grader`` (module scope) with the defaults below; a module whose attacks
need other limits overrides ``grader_settings`` (a fixture of that name returning the keyword
arguments that differ) instead of copying the grader. ``make_grader`` builds further graders
(e.g. the rlimits-only fallback) that are closed with the module.
"""

from __future__ import annotations

import os

import pytest

from colbench_gym.grading import BackendGrader
from colbench_gym.tasks import BackendTask
from tests.grading.helpers import REFERENCE

# COLBENCH_GRADER_ISOLATION=rlimits-only runs the same suite against the fallback sandbox.
GRADER_DEFAULTS = {"call_timeout": 0.5, "total_timeout": 3.0, "memory_mb": 256}


@pytest.fixture(scope="module")
def task() -> BackendTask:
    return BackendTask("Write f(x, y).", REFERENCE, {f"test{i}": f"f({i}, {i * i})" for i in range(1, 11)})


@pytest.fixture(scope="module")
def make_grader():
    """Factory: ``make_grader(**settings)`` is a BackendGrader with GRADER_DEFAULTS updated by settings."""
    made: list[BackendGrader] = []

    def make(**settings) -> BackendGrader:
        options = {"isolation": os.environ.get("COLBENCH_GRADER_ISOLATION", "auto"), **GRADER_DEFAULTS, **settings}
        g = BackendGrader(**options)
        made.append(g)
        return g

    yield make
    for g in made:
        g.close()


@pytest.fixture(scope="module")
def grader_settings() -> dict:
    """The keyword arguments of this module's grader that differ from GRADER_DEFAULTS (override per module)."""
    return {}


@pytest.fixture(scope="module")
def grader(make_grader, grader_settings) -> BackendGrader:
    return make_grader(**grader_settings)
