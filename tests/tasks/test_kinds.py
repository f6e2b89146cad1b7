"""The one table of environment kinds (colbench_gym.tasks.kinds): every part it names exists, and
what matches no kind is an error, never a silent "frontend"."""

from __future__ import annotations

import importlib

import pytest

import colbench_gym
from colbench_gym.tasks import TaskFormatError, resolve_task_source
from colbench_gym.tasks.kinds import BACKEND, FRONTEND, KINDS, env_kind, kind_of_env_id, kind_of_task, load
from colbench_gym.tasks.records import BackendTask, FrontendTask

BACKEND_RECORD = {"problem_description": "Write f(x).", "ground_truth": "def f(x):\n    return x\n",
                  "test_cases": {"test1": "f(1)"}}
FRONTEND_RECORD = {"problem_description": "A page.", "ground_truth": "<html><body>Hi</body></html>"}


@pytest.mark.parametrize("name", list(KINDS))
def test_every_part_the_table_names_exists(name):
    kind = KINDS[name]
    assert kind.name == name and env_kind(name) is kind and kind_of_env_id(kind.env_id) is kind
    entry = colbench_gym.ENVIRONMENTS[kind.env_id]  # registered under the table's id
    env_cls = load(entry)
    assert env_cls.kind == name
    for target in (*kind.generators.values(), *kind.simulators.values(), kind.tool_env):
        assert load(target) is not None, target
    evaluator = importlib.import_module(kind.evaluator)
    assert callable(evaluator.run) and callable(evaluator.add_arguments)
    assert "offline" in kind.simulators  # every environment works without a model
    assert kind_of_task(kind.task_cls.from_record(BACKEND_RECORD if kind is BACKEND else FRONTEND_RECORD)) is kind


def test_every_registered_environment_has_a_kind():
    assert sorted(colbench_gym.ENVIRONMENTS) == sorted(kind.env_id for kind in KINDS.values())
    assert kind_of_env_id("colbench_gym:ColBench-Frontend-v0") is FRONTEND  # gym's module:id form


def test_every_kind_has_agent_instructions():
    from colbench_gym.instructions import INSTRUCTIONS, TOOL_INSTRUCTIONS, instructions, tool_instructions

    assert set(INSTRUCTIONS) == set(KINDS) == set(TOOL_INSTRUCTIONS)
    assert all("I WANT TO ANSWER:" in instructions(name) for name in KINDS)
    assert all("submit_answer(code)" in tool_instructions(name, 7) and "at most 7 tool calls" in tool_instructions(name, 7)
               for name in KINDS)
    with pytest.raises(ValueError, match="no tool-calling instructions for kind 'mobile'"):
        tool_instructions("mobile")


@pytest.mark.parametrize("name", list(KINDS))
def test_reward_options_and_record_fields_belong_to_their_kind(name):
    """``reward_options`` are parameters of the kind's env (``colbench serve`` and ``train-grpo``
    pass them to that kind only); ``record_fields`` are what its records carry beside the request
    and the reference, so a harness sample rebuilds the task (colbench_gym.integrations)."""
    import inspect

    from colbench_gym.integrations.conversation import entry_task, task_entries

    kind = KINDS[name]
    env_params = inspect.signature(load(colbench_gym.ENVIRONMENTS[kind.env_id])).parameters
    assert kind.reward_options and all(option in env_params for option in kind.reward_options)
    _, [(task, info)] = task_entries(name, "embedded:test", num_tasks=1, seed=5)
    assert set(kind.record_fields) <= set(task.to_record()) and set(kind.record_fields) <= set(info)
    assert info["seed"] == 5 and info["task_index"] == 0 and info["task_id"] == task.task_id
    assert entry_task(name, task.problem_description, task.ground_truth, info) == task


def test_records_and_task_objects_have_one_kind():
    assert kind_of_task(BACKEND_RECORD) is BACKEND
    assert kind_of_task(FRONTEND_RECORD) is FRONTEND
    assert kind_of_task({**FRONTEND_RECORD, "test_cases": {"t": "f()"}}) is BACKEND  # hidden tests: backend
    assert kind_of_task(BackendTask.from_record(BACKEND_RECORD)) is BACKEND
    assert kind_of_task(FrontendTask.from_record(FRONTEND_RECORD)) is FRONTEND


@pytest.mark.parametrize("task", [{"problem_description": "x"}, {"problem_description": "x", "ground_truth": "plain"},
                                  {"problem_description": "x", "ground_truth": None}])
def test_a_record_of_no_kind_is_an_error_naming_the_shapes(task):
    with pytest.raises(TaskFormatError) as err:
        kind_of_task(task, "runs.jsonl:3 task")
    message = str(err.value)
    assert "\n" not in message and message.startswith("runs.jsonl:3 task: the task record matches no environment kind")
    assert "'test_cases'" in message and "HTML 'ground_truth'" in message


def test_not_a_record_at_all_and_a_caller_error_class():
    with pytest.raises(TaskFormatError, match="expected a task record"):
        kind_of_task(["not", "a", "dict"])

    class Mine(ValueError):
        pass

    with pytest.raises(Mine):
        kind_of_task({"problem_description": "x"}, error=Mine)


def test_unknown_names_are_errors():
    with pytest.raises(ValueError, match="unknown environment kind 'mobile'; expected one of backend, frontend"):
        env_kind("mobile")
    with pytest.raises(ValueError, match="not a ColBench environment id"):
        kind_of_env_id("CartPole-v1")
    # a list of records for an unknown kind used to become frontend tasks
    with pytest.raises(ValueError, match="unknown environment kind"):
        resolve_task_source([FRONTEND_RECORD], "mobile")


def test_generators_belong_to_their_kinds():
    assert resolve_task_source("collab:test", "backend").name == "collab:test"
    with pytest.raises(ValueError, match="collab:train / collab:test hold backend tasks only"):
        resolve_task_source("collab:test", "frontend")
    with pytest.raises(ValueError, match="neither a file nor one of 'embedded:test', 'embedded:train', "
                                         "'generated:train', 'generated:test', 'collab:train', 'collab:test'"):
        resolve_task_source("nowhere:test", "backend")
