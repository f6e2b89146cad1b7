"""Any ``str`` is a valid turn (issue 37, item 2): every simulator answers it, none fails on it.

A turn holding a lone surrogate (``"What is the rate \\ud800?"``: a valid Python ``str`` and a
valid Gymnasium ``Text`` sample) made the backend env's ``step`` raise ``UnicodeEncodeError`` (the
offline person seeds a ``random.Random`` from the text, which encodes it), the LLM person a
``SimulatorError`` (the HTTP client cannot encode the request: the agent's own turn ended its
episode as the endpoint's failure, unscored) and the transformers person a ``TypeError`` (a fast
tokenizer takes no surrogate). Here each simulator is driven through ``gym.make`` with every kind
of text an agent can send: it answers, what reaches an endpoint or a tokenizer is valid Unicode
(lone surrogates as U+FFFD), and the episode goes on to a scored answer.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401
from colbench_gym.protocol import ANSWER_MARKER
from colbench_gym.simulators.prompts import MAX_MESSAGE_BYTES
from colbench_gym.spaces import UnicodeText, encodable, encodable_data
from colbench_gym.tasks.embedded import load_embedded
from tests.local_openai_server import LocalOpenAIServer

TASK = load_embedded("backend", "test")[0]

#: Every kind of text an agent can send (each a valid ``str`` and a member of the action space).
TURNS = {
    "lone high surrogate": "What is the rate \ud800?",
    "lone low surrogate": "\udfff What about ties?",
    "surrogates in the wrong order": "\ude00\ud83d Which plan names are there?",
    "a pair written as two code points": "Is \ud83d\ude00 a valid tip level?",
    "NUL": "What is the rate\x00 for great service?",
    "control characters": "rate?\x01\x07\x08\x1b[31m\x7f\x85\u2028\u2029\ufeff",
    "1 MB of text": "What is the rate for great service? " * 27_777,
    "1 MB of surrogates": "\ud800\udfff\udbff" * 333_333,
    "mixed": "rate \ud800\x00\x1b[0m " + "x" * 300_000 + " \udfff?",
}


def _utf8_json(body) -> bytes:
    """What a strict server receives: the request as UTF-8 JSON (raises on a lone surrogate)."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def test_every_turn_is_a_member_of_the_action_space():
    space = gym.make("ColBench-Backend-v0").action_space
    assert isinstance(space, UnicodeText)
    assert all(space.contains(t) for t in TURNS.values())


def test_encodable_joins_pairs_replaces_lone_surrogates_and_keeps_everything_else():
    assert encodable("rate \ud800?") == "rate \ufffd?"
    assert encodable("\ud83d\ude00") == "\U0001F600"  # a pair spelled as two code points: its character
    assert encodable("\ude00\ud83d") == "\ufffd\ufffd"  # the wrong order is no pair
    text = "nul\x00 ctrl\x01\x1b é 中 \U0001F600"
    assert encodable(text) is text  # valid text: the very same object, nothing copied or changed
    data = encodable_data({"k\ud800": ["a\udfff", ("b", 1, None, 2.5)], "n": True})
    assert data == {"k\ufffd": ["a\ufffd", ("b", 1, None, 2.5)], "n": True}
    for turn in TURNS.values():
        encodable(turn).encode("utf-8")


@pytest.mark.parametrize("name", list(TURNS))
def test_the_offline_person_answers_any_turn_and_the_episode_is_scored(name):
    env = gym.make("ColBench-Backend-v0")
    env.reset(seed=0, options={"task": TASK.to_record()})
    obs, reward, done, _, info = env.step(TURNS[name])
    assert isinstance(obs, str) and obs.strip() and not done and reward == 0.0
    obs.encode("utf-8")
    assert info["messages"][1]["content"] == TURNS[name][:200_000]  # the agent's turn is kept as it sent it
    _, reward, done, _, info = env.step(f"{ANSWER_MARKER}\n{TASK.ground_truth}")
    assert done and reward == 1.0 and info["end_reason"] == "answer"


def test_the_offline_person_reads_a_lone_surrogate_as_the_replacement_character():
    """The seed of a reply is the message made encodable (valid text: the text itself, so replies
    to it, and offline RL data, stay what they were)."""
    def reply(turn):
        env = gym.make("ColBench-Backend-v0")
        env.reset(seed=3, options={"task": TASK.to_record()})
        return env.step(turn)[0]

    assert reply("What is the rate \ud800?") == reply("What is the rate \ufffd?")


def _person(body) -> str:
    return "Great service gets 20%."


@pytest.mark.parametrize("name", list(TURNS))
def test_the_llm_person_gets_valid_text_for_any_turn(name):
    """The endpoint receives valid UTF-8 JSON (surrogates as U+FFFD), and an agent message no
    longer than MAX_MESSAGE_BYTES plus a note (a 1 MB turn would overflow a served model's context
    and be refused, ending the agent's episode as the endpoint's failure)."""
    turn = TURNS[name]
    with LocalOpenAIServer(_person) as server:
        env = gym.make("ColBench-Backend-v0", simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "person", "max_retries": 0})
        env.reset(seed=0, options={"task": TASK.to_record()})
        obs, _, done, _, _ = env.step(turn)
        _, reward, _, _, info = env.step(f"{ANSWER_MARKER}\n{TASK.ground_truth}")
        env.close()
    assert obs == "Great service gets 20%." and not done
    assert reward == 1.0 and info["end_reason"] == "answer"
    [request] = [r["body"] for r in server.requests]
    _utf8_json(request)
    sent = request["messages"][-1]["content"]
    visible = encodable(turn[:200_000]).strip()  # the env keeps 200,000 characters of a turn
    if len(visible.encode()) <= MAX_MESSAGE_BYTES:
        assert sent == visible
    else:
        assert len(sent.encode()) < MAX_MESSAGE_BYTES + 100 and "characters of this message left out" in sent
        assert sent.startswith(visible[:100]) and sent.endswith(visible[-100:])


def test_an_endpoint_reply_with_a_lone_surrogate_reaches_the_agent_as_valid_text():
    with LocalOpenAIServer(lambda body: "The rate is \ud800 15%.") as server:  # sent as the JSON escape \ud800
        env = gym.make("ColBench-Backend-v0", simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "person", "max_retries": 0})
        env.reset(seed=0, options={"task": TASK.to_record()})
        obs, *_ = env.step("What is the rate?")
        env.step("Thanks. And \ud800 the rounding?")  # this request holds the person's reply
        env.close()
    assert obs == "The rate is \ufffd 15%."
    _utf8_json(server.requests[-1]["body"])


@pytest.mark.browser
@pytest.mark.parametrize("name", ["lone high surrogate", "NUL", "1 MB of surrogates", "mixed"])
def test_the_vlm_person_gets_valid_text_for_any_turn(name, browser_ready):
    from tests.frontend.test_frontend_env import DRAFT
    from tests.frontend.test_frontend_env import TASK as PAGE

    with LocalOpenAIServer(lambda body: "Make the header dark green.") as server:
        env = gym.make("ColBench-Frontend-v0", scorer="fallback", simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "vlm", "max_retries": 0})
        env.reset(seed=0, options={"task": PAGE})
        obs, _, done, _, _ = env.step(TURNS[name])
        obs2, _, _, _, info = env.step(TURNS[name][:1000] + " " + DRAFT)  # a draft beside the text: rendered
        _, reward, done2, _, final = env.step(f"{ANSWER_MARKER}\n{DRAFT}")
        env.close()
    assert obs == obs2 == "Make the header dark green." and not done and info["rendered"]
    assert done2 and final["end_reason"] == "answer" and 0.0 <= reward <= 1.0
    for request in server.requests:
        _utf8_json(request["body"])
        texts = [p["text"] for p in request["body"]["messages"][-1]["content"] if p["type"] == "text"]
        assert sum(len(t.encode()) for t in texts) < MAX_MESSAGE_BYTES + 300


@pytest.mark.parametrize("name", ["lone high surrogate", "surrogates in the wrong order", "NUL", "1 MB of surrogates"])
def test_the_transformers_person_tokenizes_any_turn(name, tmp_path):
    """A fast tokenizer raises TypeError on a lone surrogate: the person gets the text encodable,
    and the prompt fits the model's context with room for the reply (a long turn is read in part,
    or, when even part of it does not fit, not at all)."""
    import torch

    from tests.training.tiny_model import save_tiny

    env = gym.make("ColBench-Backend-v0", simulator="transformers",
                   simulator_kwargs={"model": str(save_tiny(tmp_path / "tiny")), "max_new_tokens": 4})
    sim = env.unwrapped.simulator
    prompts: list[str] = []

    def generate(input_ids, **kwargs):  # the real tokenizer's prompt, a canned reply
        prompts.append(sim.tokenizer.decode(input_ids[0]))
        return torch.cat([input_ids, sim.tokenizer("yes", return_tensors="pt")["input_ids"]], dim=1)

    sim.model.generate = generate
    env.reset(seed=0, options={"task": TASK.to_record()})
    obs, _, done, _, _ = env.step(TURNS[name])
    _, reward, _, _, info = env.step(f"{ANSWER_MARKER}\n{TASK.ground_truth}")
    assert obs == "yes" and not done and reward == 1.0 and info["end_reason"] == "answer"
    [prompt] = prompts
    assert len(sim.tokenizer(prompt, add_special_tokens=False)["input_ids"]) + 4 <= sim.context_tokens()
    if len(encodable(TURNS[name]).encode()) < 1000:
        assert encodable(TURNS[name]) in prompt
    else:
        assert "characters of this message left out" in prompt or "characters, not read]" in prompt
