"""A hidden reference the offline backend simulator cannot read is reported, never silent.

A task set may hold a reference crafted to be nested deeper than the parser or the reader can
follow (record loading accepts it: it is valid Python), and a task built in code may hold one
that does not parse at all (record loading rejects that with a ``TaskFormatError``; a
``BackendTask`` made directly is not checked). The simulator must not crash the environment step on it
(one bad task must not end a rollout of thousands), must not hide it either: it emits an
``UnreadableReferenceWarning`` naming the task and the reason, and the simulated person says
"I don't know" about what it could not read.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401 - registers the environments
from colbench_gym.simulators.offline_backend import (
    OfflineBackendSimulator,
    UnreadableReferenceWarning,
    extract_facts,
)
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.generator import generate_backend_tasks
from colbench_gym.tasks.records import BackendTask

# (name, reference, the start of the reported reason)
UNREADABLE = [
    ("syntax error", "def f(x:\n    return x\n", "SyntaxError"),
    ("null byte", "def f(x):\n    return 1\x00\n", "SyntaxError"),
    ("nested parentheses", "def f(x):\n    return " + "(" * 300 + "x" + ")" * 300 + "\n", "SyntaxError"),
    ("deep unary chain", "def f(x):\n    return " + "-" * 100_000 + "x\n", ("MemoryError", "RecursionError")),
    ("deep sum", "def f(x):\n    return x" + " + x" * 50_000 + "\n", ("MemoryError", "RecursionError")),
    ("no function", "RATE = 0.2\n", "no function definition"),
]


def task_of(reference: str) -> BackendTask:
    # built directly, as code may do: from_record would reject the references that do not parse
    return BackendTask("Write f(x) for me.", reference, {"t": "f(1)"})


def ask(sim: OfflineBackendSimulator, task: BackendTask, question: str) -> str:
    return sim.respond(task, [{"role": "user", "content": task.problem_description},
                              {"role": "assistant", "content": question}])


@pytest.mark.parametrize("name,reference,reason", UNREADABLE, ids=[u[0] for u in UNREADABLE])
def test_an_unreadable_reference_is_reported_and_answered_with_i_dont_know(name, reference, reason):
    task = task_of(reference)
    sim = OfflineBackendSimulator()
    with pytest.warns(UnreadableReferenceWarning) as caught:
        reply = ask(sim, task, "What should the function return?")
    message = str(caught[0].message)
    assert task.task_id[:12] in message and "cannot read the hidden reference" in message, message
    sheet = sim.facts_for(task)
    assert sheet.parse_error and sheet.parse_error.startswith(reason), sheet.parse_error
    assert sheet.parse_error in message
    assert sheet.facts == []
    assert "don't know" in reply, reply


def test_it_is_reported_once_per_task():
    sim = OfflineBackendSimulator()
    bad, other = task_of("def f(x:\n"), task_of("def g(:\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            ask(sim, bad, "What should it return?")
        sim.reset(bad, seed=1)
        ask(sim, other, "Any edge cases?")
    reported = [str(w.message) for w in caught if issubclass(w.category, UnreadableReferenceWarning)]
    assert len(reported) == 2, reported
    assert bad.task_id[:12] in reported[0] and other.task_id[:12] in reported[1]


def test_a_part_it_cannot_put_into_words_is_reported_and_the_rest_still_read():
    # parses, but the sum is too deep to say in words: the signature is still known
    task = task_of("def f(x):\n    return x" + " + x" * 900 + "\n")
    sim = OfflineBackendSimulator()
    with pytest.warns(UnreadableReferenceWarning, match="skipped part of the hidden reference") as caught:
        reply = ask(sim, task, "What is the function called and what are its parameters?")
    sheet = sim.facts_for(task)
    assert sheet.parse_error is None
    assert any("too deeply" in p and "RecursionError" in p for p in sheet.problems), sheet.problems
    assert sheet.problems[0] in str(caught[0].message)
    assert "The function is f and it takes x" in reply, reply


def test_a_user_can_make_it_an_error():
    sim = OfflineBackendSimulator()
    task = task_of("def f(x:\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreadableReferenceWarning)
        for _ in range(2):  # not cached as if it were fine: every call raises
            with pytest.raises(UnreadableReferenceWarning, match="SyntaxError"):
                ask(sim, task, "What should it return?")


def test_an_environment_step_survives_an_unreadable_task():
    # valid Python nested beyond the parser's limits: task loading accepts it, the simulator cannot read it
    deep = "def f(x):\n    return " + "-" * 100_000 + "x\n"
    records = [{"problem_description": "Write f(x) for me.", "ground_truth": deep, "test_cases": {"t": "f(1)"}}]
    env = gym.make("ColBench-Backend-v0", tasks=records, simulator="offline")
    try:
        with pytest.warns(UnreadableReferenceWarning):
            env.reset(seed=0)
            obs, reward, terminated, truncated, info = env.step("What should the function return?")
        assert not terminated and reward == 0.0
        assert "don't know" in obs, obs
    finally:
        env.close()


def test_shipped_and_generated_references_are_read_without_problems():
    tasks = load_embedded("backend", "train") + load_embedded("backend", "test")
    tasks += generate_backend_tasks(20, "train") + generate_backend_tasks(20, "test")
    for task in tasks:
        sheet = extract_facts(task.ground_truth, task.problem_description, task.test_cases.values())
        assert sheet.parse_error is None and sheet.problems == (), (task.task_id, sheet.parse_error, sheet.problems)
