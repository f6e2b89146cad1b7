"""Gymnasium conventions both ColBench envs must keep (issue 14): async vector envs return exactly
what sync ones do, envs pickle before reset, ``render_mode="human"`` prints the dialogue once and
returns None, a failing simulator reply never consumes the agent's turn, and ``check_env`` passes."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import colbench_gym  # noqa: F401 - registers the envs
from colbench_gym.simulators.base import HumanSimulator, SimulatorError

UNICODE_TASK = {"problem_description": "Écris f(x) — ça double x ✓ 中文 \t tab, emoji 🙂",
                "ground_truth": "def f(x):\n    return 2 * x\n",
                "test_cases": {"test1": "f(1)", "test2": "f(2)"}}


def _frontend_ready() -> bool:
    from colbench_gym.rendering import find_chromium, locate

    return find_chromium() is not None and locate(required=False) is not None


def _play(vec, actions):
    obs, _ = vec.reset(seed=11)
    out = [tuple(obs)]
    for a in actions:
        obs, reward, term, trunc, _ = vec.step(a)
        out.append((tuple(obs), tuple(float(r) for r in reward), tuple(bool(t) for t in term)))
    return out


@pytest.mark.parametrize("env_id", ["ColBench-Backend-v0"])
def test_async_vector_env_returns_exactly_the_sync_observations(env_id):
    tasks = [UNICODE_TASK, dict(UNICODE_TASK, problem_description="naïve café — 🙂 second task")]
    actions = [("Qu'est-ce que x? é 🙂", "what about 中文?"), ("ok OUTPUT: more ✓", "hmm")]
    results = {}
    for mode in ("sync", "async"):
        vec = gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, tasks=tasks)
        try:
            results[mode] = _play(vec, actions)
        finally:
            vec.close()
    assert results["async"] == results["sync"]
    first = results["sync"][0]
    assert set(first) <= {t["problem_description"] for t in tasks}  # really the Unicode descriptions
    assert any("🙂" in o for o in first)


@pytest.mark.skipif(not _frontend_ready(), reason="needs Chromium and the offline Tailwind assets")
def test_frontend_async_vector_env_matches_sync():
    results = {}
    for mode in ("sync", "async"):
        vec = gym.make_vec("ColBench-Frontend-v0", num_envs=2, vectorization_mode=mode)
        try:
            results[mode] = _play(vec, [("Quelle couleur — 🙂 ?", "<html><body><h1>Hé</h1></body></html>")])
        finally:
            vec.close()
    assert results["async"] == results["sync"]
    assert all(results["sync"][0]) and all(results["sync"][1][0])


_EPISODE = {"ColBench-Backend-v0": ["What exactly should it return?", "I WANT TO ANSWER: def f(x):\n    return x\n"],
            "ColBench-Frontend-v0": ["What exactly should it look like?",
                                     "I WANT TO ANSWER: <html><body><h1>Hi</h1></body></html>"]}


@pytest.mark.parametrize("env_id", ["ColBench-Backend-v0", "ColBench-Frontend-v0"])
def test_envs_pickle_before_reset(env_id):
    """The clone is the same environment: same task source, task for task, and the same episode
    (observations, rewards, flags, infos) when reset with the same seed and given the same actions."""
    env = gym.make(env_id)
    try:
        clone = pickle.loads(pickle.dumps(env))
        try:
            assert clone.unwrapped.max_turns == env.unwrapped.max_turns
            mine, theirs = env.unwrapped.task_source, clone.unwrapped.task_source
            assert (type(theirs), theirs.name, theirs.kind, len(theirs)) == (type(mine), mine.name, mine.kind, len(mine))
            assert len(mine) == 30 and [theirs[i] for i in range(len(mine))] == [mine[i] for i in range(len(mine))]
            if env_id == "ColBench-Frontend-v0" and not _frontend_ready():
                pytest.skip("the frontend episode needs Chromium and the offline Tailwind assets")
            for seed in (3, 11):
                assert clone.reset(seed=seed) == env.reset(seed=seed)
                for action in _EPISODE[env_id]:
                    assert clone.step(action) == env.step(action)
                assert env.unwrapped.task_index == clone.unwrapped.task_index
        finally:
            clone.close()
    finally:
        env.close()


def test_render_human_prints_dialogue_once_and_returns_none(capsys):
    env = gym.make("ColBench-Backend-v0", render_mode="human")
    env.reset(seed=0, options={"task": UNICODE_TASK})
    env.step("What should f return for 3?")
    out = capsys.readouterr().out
    assert "[AGENT] What should f return for 3?" in out and "[PERSON]" in out
    assert "None" not in out
    assert env.render() is None
    out = capsys.readouterr().out
    assert out.count("[AGENT] What should f return for 3?") == 1 and "None" not in out
    env.close()


class _FlakySimulator(HumanSimulator):
    kind = "backend"

    def __init__(self) -> None:
        self.fail = True

    def respond(self, task, dialogue, **context):
        if self.fail:
            raise SimulatorError("endpoint answered HTTP 503")
        return f"reply to {dialogue[-1]['content']}"


def test_failed_simulator_reply_does_not_consume_the_agent_turn():
    sim = _FlakySimulator()
    env = gym.make("ColBench-Backend-v0", simulator=sim, max_turns=3)
    env.reset(seed=0, options={"task": UNICODE_TASK})
    with pytest.raises(SimulatorError):
        env.step("first question?")
    base = env.unwrapped
    assert base.turn == 0 and [m["role"] for m in base.messages] == ["user"]
    sim.fail = False
    obs, _, term, _, info = env.step("first question?")  # the same turn, retried
    assert obs == "reply to first question?" and not term and info["turn"] == 1
    assert [m["role"] for m in info["messages"]] == ["user", "assistant", "user"]
    env.close()


def test_check_env_backend_offline():
    env = gym.make("ColBench-Backend-v0", simulator="offline")
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.skipif(not _frontend_ready(), reason="needs Chromium and the offline Tailwind assets")
def test_check_env_frontend_offline():
    env = gym.make("ColBench-Frontend-v0", simulator="offline")
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


@pytest.mark.parametrize("env_id", ["ColBench-Backend-v0", "ColBench-Frontend-v0"])
def test_envs_with_an_endpoint_simulator_pickle_before_reset(env_id):
    env = gym.make(env_id, simulator="openai", simulator_kwargs={"model": "m", "base_url": "http://127.0.0.1:9/v1"})
    try:
        clone = pickle.loads(pickle.dumps(env))
        assert clone.unwrapped.simulator.base_url == "http://127.0.0.1:9/v1"
        clone.close()
    finally:
        env.close()
