"""A new environment kind is its entry in the kinds table plus its own modules: a throwaway third
kind ("echo", tests/tasks/echo_kind.py), registered through the table alone, is made with
``gym.make``, played, scored by ``score_answer`` and evaluated by ``colbench evaluate echo`` —
no consumer had to learn its name."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from colbench_gym.tasks import kinds
from colbench_gym.verdicts import score_answer

RECORD = {"problem_description": "Guess my favourite word.", "secret_word": "marmalade"}


@pytest.fixture
def echo():
    from tests.tasks.echo_kind import ECHO

    # into the one table every module reads (modules that imported KINDS hold this same dict);
    # the table as it was comes back afterwards
    kinds.register_kind(ECHO)
    try:
        yield ECHO
    finally:
        kinds.KINDS.pop(ECHO.name, None)
        gym.registry.pop(ECHO.env_id, None)


def test_a_third_kind_plays_scores_and_evaluates_through_the_table(echo, tmp_path, capsys):
    env = gym.make(echo.env_id, tasks=[RECORD])
    obs, info = env.reset(seed=0)
    assert obs == RECORD["problem_description"]
    reply, reward, done, _, info = env.step("What is the word?")
    assert reply == "The word is marmalade." and not done
    _, reward, done, _, info = env.step("I WANT TO ANSWER: marmalade")
    assert done and reward == 1.0 and info["end_reason"] == "answer" and info["success"] is True
    env.close()
    # the same score entry answers outside the env, for a record of the kind
    assert score_answer("banana", RECORD).reward == 0.0
    assert score_answer("Marmalade.", RECORD).reward == 1.0
    # `colbench evaluate echo`: the command exists because the kind is in the table
    from colbench_gym.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"task": RECORD, "answer": a}) + "\n" for a in ("marmalade", "jam")))
    assert main(["evaluate", "echo", str(src), "--output", str(tmp_path / "out.jsonl")]) == 0
    assert "success 1/2" in capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 0.0]


def test_a_kind_cannot_take_a_name_or_id_that_exists(echo):
    from dataclasses import replace

    with pytest.raises(ValueError, match="exists already"):
        kinds.register_kind(replace(echo, name="echo2"))  # same env id
    with pytest.raises(ValueError, match="exists already"):
        kinds.register_kind(replace(kinds.BACKEND, env_id="ColBench-Other-v0"))  # same name


def test_the_shipped_registration_is_the_table():
    import colbench_gym

    assert colbench_gym.ENVIRONMENTS == {k.env_id: k.env for k in kinds.KINDS.values()}
