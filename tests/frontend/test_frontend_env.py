"""ColBench-Frontend-v0 end to end with the real browser and the offline simulator."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import colbench_gym  # noqa: F401 - registers the envs
from colbench_gym.envs.base import EpisodeOverError
from colbench_gym.scoring import FALLBACK_NAME
from colbench_gym.simulators import HumanSimulator
from tests.html_pages import V3

pytestmark = pytest.mark.browser

REF = f'<html><head>{V3}</head><body class="bg-emerald-50"><header class="bg-emerald-800 text-white p-6 text-2xl">Fern &amp; Fig</header><section class="p-12 text-center"><h1 class="text-5xl">Grow something today</h1></section></body></html>'
TASK = {"problem_description": "A page for my plant shop, Fern & Fig.", "ground_truth": REF}
DRAFT = f'<html><head>{V3}</head><body class="bg-white"><h1 class="text-xl">Plants</h1></body></html>'


class RecordingSimulator(HumanSimulator):
    kind = "frontend"

    def __init__(self, reply="ok"):
        self.reply, self.contexts = reply, []

    def respond(self, task, dialogue, **context):
        self.contexts.append(context)
        return self.reply


def _make(**kw):
    kw.setdefault("scorer", "fallback")
    return gym.make("ColBench-Frontend-v0", **kw)


def test_check_env_passes(browser_ready):
    env = _make()
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_no_import_make_and_seeded_reset(browser_ready):
    env = gym.make("colbench_gym:ColBench-Frontend-v0", scorer="fallback")
    a, _ = env.reset(seed=7)
    b, _ = env.reset(seed=7)
    assert a == b and isinstance(a, str) and env.observation_space.contains(a)
    env.close()


def test_episode_protocol_draft_rendering_and_reward(browser_ready):
    sim = RecordingSimulator(reply="x" * 5000)
    env = _make(simulator=sim)
    obs, info = env.reset(options={"task": TASK})
    assert obs == TASK["problem_description"] and REF not in str(info)
    obs, r, term, trunc, info = env.step("Which colours do you like?")
    assert (r, term, trunc) == (0.0, False, False) and info["rendered"] is False
    assert sim.contexts[-1]["agent_image"] is None and sim.contexts[-1]["reference_image"].size[0] == 1280
    assert len(obs) == 1000  # replies cut to the paper's 1000 characters
    two = DRAFT + DRAFT.replace("Plants", "Second")
    obs, r, term, trunc, info = env.step(f"thinking... OUTPUT: Here is a draft: {two}")
    ctx = sim.contexts[-1]
    assert info["rendered"] and ctx["agent_html"] == DRAFT  # only the first snippet is rendered
    assert [n["text"] for n in ctx["agent_dom"]["nodes"] if n["tag"] == "h1"] == ["Plants"]
    assert "thinking" not in str(sim.contexts)
    assert REF not in obs and REF not in str(info)
    obs, r, term, trunc, info = env.step("I WANT TO ANSWER: " + REF)
    assert term and obs == "" and r == pytest.approx(1.0, abs=1e-6) and info["similarity"] == r
    assert info["scorer"] == FALLBACK_NAME and info["scorer_is_clip"] is False
    with pytest.raises(EpisodeOverError):
        env.step("more")
    env.reset(options={"task": TASK})
    *_, info = env.step("I WANT TO ANSWER: " + DRAFT)
    assert 0.0 < info["similarity"] < 0.95
    env.reset(options={"task": TASK})
    *_, r, term, _, info = env.step("I WANT TO ANSWER: sorry, no page")
    assert term and r == 0.0 and info["html_found"] is False
    env.close()


def test_offline_simulator_feedback_through_env(browser_ready):
    env = _make(render_mode="rgb_array")
    env.reset(options={"task": TASK})
    obs, *_ = env.step("Draft: " + DRAFT)
    assert "green" in obs.lower() and len(obs) <= 1000
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.shape[1:] == (1280, 3)
    for _ in range(8):
        obs, r, term, *_ = env.step("Is this better? " + DRAFT)
    assert not term
    obs, r, term, _, info = env.step(REF)  # 10th turn: counted as the answer
    assert term and info["ended_by"] == "turn_limit" and r == pytest.approx(1.0, abs=1e-6)
    env.close()


def test_embedded_and_generated_sources(browser_ready):
    for tasks in ("embedded:test", "embedded:train", "generated:test"):
        env = _make(tasks=tasks)
        obs, info = env.reset(seed=1)
        assert obs and info["task_id"]
        env.close()


def test_a_turn_undone_by_a_failed_reply_takes_its_draft_with_it(browser_ready):
    """The person's reply fails after the draft was rendered: the turn is undone (the caller may
    step again), and render() shows the draft of the last turn that stands, not the undone one."""
    from colbench_gym.simulators.base import SimulatorError

    class FailsOnSecondDraft(RecordingSimulator):
        def respond(self, task, dialogue, **context):
            if len(self.contexts) == 1:
                self.contexts.append(context)
                raise SimulatorError("the person's endpoint is down")
            return super().respond(task, dialogue, **context)

    env = _make(simulator=FailsOnSecondDraft(), render_mode="rgb_array")
    env.reset(options={"task": TASK})
    env.step(f"A first draft: {DRAFT}")
    first = env.render()
    with pytest.raises(SimulatorError):
        env.step(f"A second draft: {REF}")
    assert env.unwrapped._turn == 1 and np.array_equal(env.render(), first)
    env.step(f"A second draft: {REF}")  # retried: this time the person answers
    assert env.unwrapped._turn == 2 and not np.array_equal(env.render(), first)
    env.close()
