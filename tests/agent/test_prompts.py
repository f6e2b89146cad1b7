"""The agent's system prompt per environment: the kind comes from the one table of kinds."""

from __future__ import annotations

import pytest

from colbench_gym.instructions import instructions
from colbench_gym.tasks.kinds import KINDS
from sweet_agent.prompts import env_kind, system_prompt


@pytest.mark.parametrize("name", list(KINDS))
def test_env_ids_and_kind_names_give_the_kinds_instructions(name):
    env_id = KINDS[name].env_id
    assert env_kind(env_id) == env_kind(f"colbench_gym:{env_id}") == name
    assert system_prompt(env_id, 4) == system_prompt(name, 4) == instructions(name, 4)
    assert "at most 4 turns" in system_prompt(name, 4)


def test_an_id_of_no_colbench_environment_is_an_error():
    # the old substring rule took any id containing "backend" (e.g. "MyBackendEnv-v0") for ColBench's
    for env_id in ("MyBackendEnv-v0", "CartPole-v1"):
        with pytest.raises(ValueError, match="is not a ColBench environment id; expected one of ColBench-Backend-v0"):
            system_prompt(env_id)
