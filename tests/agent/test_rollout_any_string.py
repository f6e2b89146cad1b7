"""The rollout collector with an agent that writes any ``str`` (issue 37, item 2).

A model's turn holding a lone surrogate (an endpoint's ``\\ud800`` JSON escape decodes to one) made
the env's step raise, and the collector recorded the episode as ``environment_error``: unscored,
left out of the rates, played again on ``--resume``. Now the episode ends as it does in a local
``gym.make`` episode, with the same end reason and reward; the policy's next request and the
trajectory file hold valid Unicode (lone surrogates as U+FFFD).
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401
from colbench_gym.protocol import ANSWER_MARKER
from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, collect
from sweet_agent.trajectories import read_trajectories
from tests.local_openai_server import LocalOpenAIServer

TASK = resolve_task_source("embedded:test", "backend")[0]

QUESTIONS = {
    "lone surrogate": "What is the rate \ud800?",
    "NUL and control characters": "What is the rate\x00 \x1b[31m\x7f?",
    "a long turn of surrogates": "\udfff" * 250_000,
}


def _agent(question: str):
    """Asks ``question``, then answers with the reference."""
    def respond(body) -> str:
        asked = any(m["role"] == "assistant" for m in body["messages"])
        return f"{ANSWER_MARKER}\n{TASK.ground_truth}" if asked else question
    return respond


def _local(question: str) -> tuple[float, dict]:
    env = gym.make("ColBench-Backend-v0", max_turns=3)
    env.reset(seed=0, options={"task_index": 0})
    env.step(question)
    _, reward, _, _, info = env.step(f"{ANSWER_MARKER}\n{TASK.ground_truth}")
    return reward, info


@pytest.mark.parametrize("name", list(QUESTIONS))
def test_an_agent_turn_with_any_text_ends_the_episode_as_it_does_locally(name, tmp_path):
    question = QUESTIONS[name]
    out = tmp_path / "t.jsonl"
    with LocalOpenAIServer(_agent(question)) as server:
        cfg = RolloutConfig(tasks="embedded:test", num_tasks=1, max_turns=3, concurrency=1)
        result = collect(OpenAIPolicy("agent", base_url=server.base_url, max_retries=0), cfg, out, progress=False)
        bodies = [r["body"] for r in server.requests]
    [rec] = result.records
    reward, info = _local(question)
    assert rec["error"] == "" and rec["meta"]["end_reason"] == info["end_reason"] == "answer"
    assert rec["reward"] == reward == 1.0 and rec["success"] is True and not rec["meta"]["infrastructure_failure"]
    assert len(bodies) == 2  # the question, then the answer: the policy's second request went out
    for body in bodies:
        json.dumps(body, ensure_ascii=False).encode("utf-8")  # valid Unicode on the wire
    out.read_bytes().decode("utf-8")  # a valid UTF-8 file
    [on_disk] = read_trajectories(out)
    assert on_disk["meta"]["end_reason"] == "answer" and on_disk["reward"] == 1.0
    asked = next(t for t in on_disk["dialogue_history"] if t["role"] == "assistant")
    assert "\ufffd" in asked["content"] or asked["content"].startswith("What is the rate\x00")
