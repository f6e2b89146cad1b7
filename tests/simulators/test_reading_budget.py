"""What the agent writes can make an LLM person skim, never fail.

An endpoint refuses a request longer than its served context (HTTP 400). Sent whole, an agent's
long turns (rare characters: up to 4 tokens each) made the person's endpoint refuse, and the
episode ended unscored as ``simulator_error``: a failing agent escaped its 0 (a helper's attack).
The person now reads the dialogue within a byte budget and asks again with less when refused;
only a request holding none of the dialogue failing is the simulator's failure.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401 - registers the environments
from colbench_gym.protocol import ANSWER_MARKER
from colbench_gym.simulators import SimulatorError
from colbench_gym.simulators.prompts import MAX_MESSAGE_BYTES, READING_BUDGETS, person_reads, person_reads_dialogue
from colbench_gym.tasks.embedded import load_embedded
from tests.local_openai_server import LocalOpenAIServer

TASK = load_embedded("backend", "test")[0]
WRONG = "def nope():\n    return 0\n"
#: 8,000 characters from the supplementary planes: 32,000 UTF-8 bytes, up to ~30,000 tokens.
PAD = "".join(chr(0x20000 + (i * 7919) % 40000) for i in range(8000))
CONTEXT = 20_000  # tokens of the emulated served model


def _tokens(body) -> int:
    """An upper bound of the request's tokens under a byte-level tokenizer: its UTF-8 bytes."""
    return len(json.dumps(body["messages"], ensure_ascii=False).encode()) + int(body.get("max_tokens") or 0)


def _over_context(body) -> str | None:
    n = _tokens(body)
    return f"This model's maximum context length is {CONTEXT} tokens. However, you requested {n} tokens." \
        if n > CONTEXT else None


def _env(server):
    env = gym.make("ColBench-Backend-v0", simulator="openai",
                   simulator_kwargs={"base_url": server.base_url, "model": "person", "max_retries": 0})
    env.reset(seed=0, options={"task": TASK.to_record()})
    return env


def test_person_reads_cuts_by_bytes_and_the_dialogue_by_its_budget():
    assert person_reads("short") == "short"
    cut = person_reads("Q? " + PAD)  # 32,003 bytes
    assert len(cut.encode()) < MAX_MESSAGE_BYTES + 100 and cut.startswith("Q? " + PAD[:100])
    assert cut.endswith(PAD[-100:]) and "characters of this message left out" in cut
    assert person_reads(PAD, 150) == "[a message of 8,000 characters, not read]"
    assert person_reads("", 0) == "[a message of 0 characters, not read]"  # not even an empty message
    dialogue = [{"role": "assistant", "content": PAD}, {"role": "user", "content": "I don't know."}] * 10
    assert person_reads_dialogue(dialogue) == [m["content"] for m in dialogue]  # first: all of it
    budget = READING_BUDGETS[1]
    read = person_reads_dialogue(dialogue, budget)
    # the budget holds the newest messages; notes aside, nothing beyond it is read
    assert sum(len(t.encode()) for t in read) < budget + 50 * len(read)
    assert read[-1] == "I don't know." and "left out" in read[-2] and read[0].endswith("not read]")
    assert all(t.endswith("not read]") for t in person_reads_dialogue(dialogue, 0))


def test_an_agent_cannot_overflow_the_person_s_context_into_an_unscored_episode():
    """Three 8,000-character turns of rare characters, then a wrong answer: the person still replies
    (the refused request asked again with less of the dialogue) and the answer scores 0 as the
    agent's, not ``simulator_error``."""
    with LocalOpenAIServer(lambda body: "I don't know.", refuse=_over_context) as server:
        env = _env(server)
        replies = [env.step("What should it return? " + PAD)[0] for _ in range(3)]
        _, reward, done, _, info = env.step(f"{ANSWER_MARKER}\n{WRONG}")
        env.close()
    assert replies == ["I don't know."] * 3
    assert done and reward == 0.0 and info["end_reason"] == "answer"
    tokens = [_tokens(r["body"]) for r in server.requests]
    assert any(t > CONTEXT for t in tokens)  # the attack did reach the limit ...
    assert sum(t <= CONTEXT for t in tokens) == 3  # ... and each turn got one request that fit


def test_an_honest_dialogue_is_read_whole_in_one_request():
    """What fits is sent whole at the first try, long messages too: 3,300 Chinese characters (9,900
    bytes, sent whole by the former 8,000-character rule) and a 6,000-byte draft."""
    question = "这个函数应该返回什么？" * 300
    draft = "def tip(bill):\n" + "    # a long comment line of the draft\n" * 150
    with LocalOpenAIServer(lambda body: "20 percent.", refuse=_over_context) as server:
        env = _env(server)
        env.step(question)
        env.step("Here is my draft:\n" + draft)
        env.step("Should it be rounded?")
        env.close()
    assert len(server.requests) == 3
    sent = [m["content"] for m in server.requests[-1]["body"]["messages"][1:]]
    assert sent == [question, "20 percent.", "Here is my draft:\n" + draft.strip(), "20 percent.",
                    "Should it be rounded?"]


def test_text_the_endpoint_will_not_take_makes_the_person_skim_not_fail():
    """An endpoint that refuses a request holding some word (a provider's content filter): the agent
    writing it still gets a reply, from a request without it."""
    def refuse(body):
        return "flagged" if "FORBIDDEN" in json.dumps(body) else None

    with LocalOpenAIServer(lambda body: "Round to cents.", refuse=refuse) as server:
        env = _env(server)
        obs, _, done, _, _ = env.step("FORBIDDEN " * 10 + "How do I round?")
        _, reward, _, _, info = env.step(f"{ANSWER_MARKER}\n{TASK.ground_truth}")
        env.close()
    assert obs == "Round to cents." and not done and reward == 1.0 and info["end_reason"] == "answer"
    assert len(server.requests) == len(READING_BUDGETS)  # the answer needs no reply
    assert "FORBIDDEN" not in json.dumps(server.requests[-1]["body"])


def test_a_refusal_of_the_request_holding_none_of_the_dialogue_is_the_simulator_s_failure():
    """Refused whatever it holds: one request per budget, the last without the agent's text, then
    ``SimulatorError`` (unscored, and rightly: the task's own prompt is what does not fit)."""
    with LocalOpenAIServer(lambda body: "unused", refuse=lambda body: "context length exceeded") as server:
        env = _env(server)
        with pytest.raises(SimulatorError, match="refused even the request holding none of the dialogue"):
            env.step("A question with MARKER-7 in it?")
        env.close()
    assert len(server.requests) == len(READING_BUDGETS)
    assert "MARKER-7" in json.dumps(server.requests[0]["body"])
    assert "MARKER-7" not in json.dumps(server.requests[-1]["body"])


def test_other_endpoint_failures_are_not_asked_again():
    """A 500 (or an unreachable server) is the endpoint's failure at once: no smaller request."""
    with LocalOpenAIServer(lambda body: "unused", fail_first=10, fail_status=500) as server:
        env = _env(server)
        with pytest.raises(SimulatorError, match="HTTP 500"):
            env.step("What is the tip?")
        env.close()
    assert len(server.requests) == 1


def test_the_grpo_tool_env_scores_the_overflow_attack():
    """The same attack through TRL's tool env: a reward of 0, not None (None gives no advantage)."""
    from colbench_gym.online.tool_env import tool_env_class

    with LocalOpenAIServer(lambda body: "I don't know.", refuse=_over_context) as server:
        env = gym.make("ColBench-Backend-v0", simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "person", "max_retries": 0})
        tool_env = tool_env_class("backend")(env)
        tool_env.reset(task=TASK.to_record())
        tool_env.ask_user(PAD)
        tool_env.ask_user(PAD)
        tool_env.submit_answer(WRONG)
        env.close()
    assert tool_env.get_reward() == 0.0 and not tool_env.infrastructure_failure


def test_the_transformers_person_reads_what_its_context_holds(tmp_path):
    """A local model's person counts tokens itself: a long turn is read in part (the prompt fits
    its context with room for the reply); a context that cannot hold even the task's own prompt
    is the simulator's failure, with what to do."""
    import torch

    from tests.training.tiny_model import save_tiny

    env = gym.make("ColBench-Backend-v0", simulator="transformers",
                   simulator_kwargs={"model": str(save_tiny(tmp_path / "tiny")), "max_new_tokens": 4})
    sim = env.unwrapped.simulator
    lengths: list[int] = []

    def generate(input_ids, **kwargs):  # the real tokenizer's prompt, a canned reply
        lengths.append(int(input_ids.shape[1]))
        return torch.cat([input_ids, sim.tokenizer("yes", return_tensors="pt")["input_ids"]], dim=1)

    sim.model.generate = generate
    env.reset(seed=0, options={"task": TASK.to_record()})
    assert env.step("What should it return? " + PAD)[0] == "yes"
    assert lengths[0] + 4 <= sim.context_tokens() < len(PAD)
    sim.model.config.max_position_embeddings = 40
    with pytest.raises(SimulatorError, match="cannot hold the task's own prompt"):
        env.step("And the rounding?")
    env.close()
