"""Any ``str`` is a valid answer (issue 37, item 2): the grader and the renderer score it as the
agent's, never as an infrastructure failure, through ``gym.make`` as an agent reaches them.

An answer holding lone surrogates, NULs, control characters or a megabyte of text is an answer
like any other: a backend one that is not Python scores 0 (the grader runs it in the sandbox,
which reports the answer's own failure); a frontend page is rendered and compared. And the
person's reply the env returns is valid text even when it quotes such a draft.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401
from colbench_gym.protocol import ANSWER_MARKER
from colbench_gym.tasks.accounting import is_infrastructure
from colbench_gym.tasks.embedded import load_embedded

TASK = load_embedded("backend", "test")[0]

ODD = {
    "lone surrogate": "\ud800",
    "NUL": "\x00",
    "control characters": "\x01\x07\x1b[31m\x7f\x85",
    "mixed": "\udfff\x00\x1b\ud83d\ude00",
}


def _final(env, answer):
    _, reward, done, _, info = env.step(f"{ANSWER_MARKER}\n{answer}")
    assert done
    return reward, info


@pytest.mark.parametrize("name", list(ODD))
def test_a_backend_answer_with_any_text_is_graded_as_the_agents(name):
    env = gym.make("ColBench-Backend-v0")
    odd = ODD[name]
    answers = [
        odd,  # nothing but the text
        f"def split_bill(total, people, service):\n    return '{odd}'\n",  # inside a string literal
        f"{TASK.ground_truth}\n# {odd}\n",  # the right function, the text in a comment
    ]
    for answer in answers:
        env.reset(seed=0, options={"task": TASK.to_record()})
        reward, info = _final(env, answer)
        assert info["end_reason"] == "answer" and not is_infrastructure(info["end_reason"]), info["grade_error"]
        assert reward in (0.0, 1.0) and info["tests_total"] > 0
        assert info["answer"] == answer.strip() or info["answer"] == answer
    env.reset(seed=0, options={"task": TASK.to_record()})
    reward, info = _final(env, odd)
    assert reward == 0.0 and info["grade_error"]  # not Python: the answer's own failure, scored 0


def test_a_megabyte_backend_answer_is_graded_as_the_agents():
    env = gym.make("ColBench-Backend-v0")
    env.reset(seed=0, options={"task": TASK.to_record()})
    reward, info = _final(env, TASK.ground_truth + "\n" + "# padding \x1b\x7f\n" * 80_000)  # 1 MB: cut to 200,000
    assert info["action_truncated"] and info["end_reason"] == "answer" and reward == 1.0


@pytest.mark.browser
@pytest.mark.parametrize("name", list(ODD))
def test_a_frontend_draft_and_answer_with_any_text_are_rendered_and_scored(name, browser_ready):
    from tests.frontend.test_frontend_env import TASK as PAGE

    odd = ODD[name]
    page = f'<html><body class="bg-emerald-50"><h1 class="text-5xl">Grow {odd} something {odd} today</h1></body></html>'
    env = gym.make("ColBench-Frontend-v0", scorer="fallback")
    env.reset(seed=0, options={"task": PAGE})
    obs, _, done, _, info = env.step(f"How is this? {odd}\n{page}")
    assert not done and info["rendered"] and info["render_error"] is None and obs.strip()
    obs.encode("utf-8")
    reward, info = _final(env, page)
    assert info["end_reason"] == "answer" and info["html_found"] and 0.0 < reward <= 1.0
    env.close()


@pytest.mark.browser
def test_a_megabyte_frontend_answer_is_rendered_and_scored(browser_ready):
    from tests.frontend.test_frontend_env import TASK as PAGE

    page = "<html><body><h1>Fern &amp; Fig</h1><p>" + "\ud800\x00 leaf " * 150_000 + "</p></body></html>"
    env = gym.make("ColBench-Frontend-v0", scorer="fallback")
    env.reset(seed=0, options={"task": PAGE})
    reward, info = _final(env, page)
    assert info["action_truncated"] and info["end_reason"] == "answer" and 0.0 <= reward <= 1.0
    env.close()


# ------------------------------------------------------------------ the person's reply
def test_a_reply_holding_a_lone_surrogate_reaches_the_agent_as_valid_text():
    """Whatever a simulator returns (a user's own, one quoting the agent), the observation is what
    the agent's policy reads (a tokenizer, an endpoint): valid text, U+FFFD for a lone surrogate."""
    from colbench_gym.simulators import HumanSimulator

    class Echo(HumanSimulator):
        kind = "backend"

        def respond(self, task, dialogue, **context):
            return f"You said: {dialogue[-1]['content']}"

    env = gym.make("ColBench-Backend-v0", simulator=Echo())
    env.reset(seed=0, options={"task": TASK.to_record()})
    obs, _, _, _, info = env.step("rate \ud800?")
    assert obs == "You said: rate \ufffd?" and info["messages"][-1]["content"] == obs
    assert info["messages"][1]["content"] == "rate \ud800?"  # the agent's own turn is kept as it sent it


@pytest.mark.browser
def test_the_offline_page_person_quoting_a_drafts_lone_surrogate_replies_valid_text(browser_ready):
    from tests.frontend.test_frontend_env import TASK as PAGE

    draft = ('<html><body class="bg-emerald-50"><header class="bg-emerald-800 text-white p-6 text-2xl">Fern Fig'
             '</header><h1 class="text-5xl">Grow \ud800 something</h1></body></html>')
    env = gym.make("ColBench-Frontend-v0", scorer="fallback")
    env.reset(seed=0, options={"task": PAGE})
    obs, *_ = env.step(f"How is this? {draft}")
    env.close()
    obs.encode("utf-8")
    assert "Grow \ufffd something" in obs  # the person quotes the draft's heading, as it reads it
