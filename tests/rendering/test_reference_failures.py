"""Issue 24, item 1: a reference page that fails to render is an error for its task, never a score.

Before: ``ColBenchFrontendEnv._on_reset``, ``score_answers`` and ``render_many(cache=True)``
ignored ``RenderResult.error``, so a reference that timed out became a white image and a blank
answer earned reward 1.0 (``render_error=None``), in the env and in ``colbench evaluate
frontend`` alike. Now a failed reference is rendered once more, then the episode is refused
(``ReferenceRenderError``) or the evaluator records the task as failed, with the reason; nothing
of it is cached, and nothing of it reaches the policy as a reply.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401 - registers the envs
from colbench_gym.cli import main
from colbench_gym.envs.base import EpisodeOverError
from colbench_gym.rendering import ReferenceRenderError, Renderer, ScreenshotCache
from colbench_gym.tasks.embedded import load_embedded

pytestmark = pytest.mark.browser

#: A reference page whose script never lets it load: it fails at every timeout.
STUCK = "<html><body><h1>Never loads</h1><script>for (;;) {}</script></body></html>"
BLANK_ANSWER = "I WANT TO ANSWER: <html><body></body></html>"


@pytest.fixture()
def quick_renderer(browser_ready, tmp_path):
    r = Renderer(pool_size=1, timeout=2.0, cache=ScreenshotCache(tmp_path / "shots"))
    yield r
    r.close()


def _count_batches(renderer, monkeypatch) -> list[int]:
    calls: list[int] = []
    original = renderer._render_batch

    def counting(htmls, dom, domain):
        calls.append(len(htmls))
        return original(htmls, dom, domain)

    monkeypatch.setattr(renderer, "_render_batch", counting)
    return calls


def test_env_refuses_an_episode_whose_reference_did_not_render(quick_renderer, tmp_path, monkeypatch):
    env = gym.make("ColBench-Frontend-v0", scorer="fallback", renderer=quick_renderer).unwrapped
    calls = _count_batches(quick_renderer, monkeypatch)
    task = {"problem_description": "A page.", "ground_truth": STUCK}
    with pytest.raises(ReferenceRenderError, match="did not render, also when retried") as err:
        env.reset(options={"task": task})
    assert err.value.end_reason == "rendering_error"
    assert calls == [1, 1]  # rendered, then retried once
    with pytest.raises(EpisodeOverError):  # no episode to play (and no stale reference to score against)
        env.step(BLANK_ANSWER)
    assert len(quick_renderer.cache) == 0 and not any((tmp_path / "shots").iterdir())  # never cached
    # the same env goes on with a task whose reference renders
    obs, _ = env.reset(options={"task": load_embedded("frontend", "test")[0].to_record()})
    assert obs
    env.close()


def test_tool_env_does_not_turn_a_failed_reference_into_text_for_the_policy(quick_renderer):
    """TRL calls reset unguarded: one task's failed reference page must not end a GRPO run. The
    episode is skipped: reset gives the policy nothing (None: TRL adds no text), every tool
    refuses, the reward is None (left out of the group's baseline) and the failure is named."""
    from colbench_gym.online.tool_env import ToolEnvError, tool_env_class

    env = gym.make("ColBench-Frontend-v0", scorer="fallback", renderer=quick_renderer)
    tool = tool_env_class("frontend")(env)
    assert tool.reset(task={"problem_description": "A page.", "ground_truth": STUCK}) is None
    assert tool.get_reward() is None and tool.infrastructure_failure == "rendering_error"
    with pytest.raises(ToolEnvError, match="could not start"):
        tool.show_draft("<html><body></body></html>")
    # the next row plays normally
    assert tool.reset(task=load_embedded("frontend", "test")[0].to_record())
    assert tool.infrastructure_failure is None and tool.get_reward() == 0.0


def test_evaluator_records_a_failed_reference_as_a_failed_task(browser_ready, tmp_path, capsys):
    good = load_embedded("frontend", "test")[0].to_record()
    stuck = {"problem_description": "A page.", "ground_truth": STUCK}
    records = [{"task": stuck, "answer": BLANK_ANSWER, "reward": 0.9},
               {"task": good, "answer": "I WANT TO ANSWER: " + good["ground_truth"]}]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    rc = main(["evaluate", "frontend", str(src), "--output", str(out), "--scorer", "fallback", "--timeout", "2",
               "--pool-size", "1", "--no-progress"])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    failed, scored = rows
    assert failed["reward"] is None and failed["similarity"] is None  # not a score, and not the stored 0.9
    assert "did not finish loading" in failed["reference_error"]
    assert failed["end_reason"] == "rendering_error" and failed["infrastructure_failure"] is True
    assert scored["reference_error"] is None and scored["similarity"] == pytest.approx(1.0, abs=1e-6)
    printed = capsys.readouterr().out
    assert "mean similarity: 1.0000" in printed and "did not render" in printed


def test_harness_scorer_refuses_to_score_against_a_failed_reference(quick_renderer):
    """The scorer Inspect's and verifiers' frontend tasks call: a reference page that did not
    render raises ScoreUnavailable (``rendering_error``), never a similarity to a blank page."""
    from colbench_gym.integrations.conversation import ScoreUnavailable, entry_task, score_frontend

    task = entry_task("frontend", "A page.", STUCK, {})
    with pytest.raises(ScoreUnavailable, match="rendering_error: the reference page did not render") as err:
        score_frontend(BLANK_ANSWER, task, "fallback", renderer=quick_renderer)
    assert err.value.end_reason == "rendering_error"
