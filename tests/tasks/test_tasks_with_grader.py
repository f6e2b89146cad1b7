"""Our task sets through the real sandboxed grader: each reference passes all of its own tests,
and a guess with one personal detail wrong loses at least one test."""

from __future__ import annotations

import pytest

from colbench_gym.grading import BackendGrader
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.generator import generate_backend_spec, generate_backend_task
from tests.tasks.refcheck import mutants


@pytest.fixture(scope="module")
def grader():
    g = BackendGrader()
    yield g
    g.close()


def test_every_reference_passes_its_own_hidden_tests(grader):
    tasks = load_embedded("backend", "test") + load_embedded("backend", "train")
    tasks += [generate_backend_task(i, split) for split in ("train", "test") for i in range(25)]
    failures = []
    for task in tasks:
        result = grader.grade(task.ground_truth, task)
        if result.passed != result.total:
            failures.append((task.task_id, result.passed, result.error))
    assert failures == []


def test_a_wrong_guess_of_a_hidden_detail_loses_tests(grader):
    """References with one literal changed (threshold, rate, label...) fail under the real grader."""
    for index in range(8):
        spec = generate_backend_spec(index, "test")
        task = spec.to_task()
        wrong = [source for _, source in mutants(task.ground_truth)]
        caught = sum(grader.grade(source, task).passed < len(task.test_cases) for source in wrong)
        assert caught >= 0.6 * len(wrong), (spec.family, caught, len(wrong))
