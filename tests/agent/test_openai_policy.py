"""The OpenAI-compatible policy against a real local HTTP server speaking the protocol."""

from __future__ import annotations

import asyncio

import pytest

from sweet_agent.policies import load_policy
from sweet_agent.policies.base import PolicyError, SamplingParams
from sweet_agent.policies.openai_policy import OpenAIPolicy
from tests.local_openai_server import LocalOpenAIServer

CONV = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]


def test_requests_carry_messages_sampling_and_seed():
    with LocalOpenAIServer(lambda body: "Question? STOP and more") as server:
        policy = load_policy("openai:my-model", base_url=server.base_url)
        assert isinstance(policy, OpenAIPolicy) and policy.name == "openai:my-model"
        sp = SamplingParams(max_new_tokens=33, temperature=0.4, top_p=0.9, top_k=20, stop=("STOP",))
        gens = policy.generate([CONV, CONV[1:]], sp, seeds=[2**40 + 5, None])
        bodies = [r["body"] for r in server.requests]
    assert [g.text for g in gens] == ["Question? ", "Question? "]
    assert gens[0].finish_reason == "stop" and gens[0].completion_tokens == 1
    first = next(b for b in bodies if b["messages"] == CONV)
    assert first["model"] == "my-model" and first["max_tokens"] == 33 and first["temperature"] == 0.4
    assert first["top_p"] == 0.9 and first["top_k"] == 20 and first["stop"] == ["STOP"]
    assert first["seed"] == (2**40 + 5) & 0x7FFF_FFFF  # servers take 32-bit seeds
    assert "seed" not in next(b for b in bodies if b["messages"] == CONV[1:])


def test_retries_then_succeeds_and_reports_failures_clearly():
    with LocalOpenAIServer(lambda body: "ok", fail_first=1) as server:
        assert OpenAIPolicy("m", base_url=server.base_url, max_retries=2)(CONV) == "ok"
    with LocalOpenAIServer(lambda body: "ok", fail_first=10) as server:
        with pytest.raises(PolicyError, match="request failed"):
            OpenAIPolicy("m", base_url=server.base_url, max_retries=0)(CONV)


def test_configuration_errors(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PolicyError, match="--base-url"):
        OpenAIPolicy("m")
    with pytest.raises(PolicyError, match="model name"):
        OpenAIPolicy("", base_url="http://127.0.0.1:1/v1")

    async def inside_a_loop():
        OpenAIPolicy("m", base_url="http://127.0.0.1:1/v1").generate([CONV])

    with pytest.raises(PolicyError, match="await agenerate"):
        asyncio.run(inside_a_loop())


def _context_of(limit: int):
    """A server that refuses (HTTP 400) a request whose UTF-8 bytes pass ``limit``, as vLLM refuses
    a prompt longer than its context (bytes bound a byte-level tokenizer's tokens)."""
    import json

    def refuse(body):
        n = len(json.dumps(body["messages"], ensure_ascii=False).encode())
        return f"This model's maximum context length is {limit} tokens; you requested {n}" if n > limit else None

    return refuse


def test_a_dialogue_its_own_turns_overflow_is_the_agent_s_failure_scored_0(tmp_path):
    """The agent's long turns fill its model's context: the next request is refused, but the
    dialogue's opening is taken, so the episode is ``agent_error`` with reward 0, not
    ``endpoint_error`` (unscored: a failing agent's escape from its 0)."""
    from colbench_gym.protocol import ANSWER_MARKER
    from sweet_agent.rollout.collector import RolloutConfig, collect

    pad = "".join(chr(0x20000 + i) for i in range(1500))  # 6,000 bytes

    def agent(body):
        turns = sum(m["role"] == "assistant" for m in body["messages"])
        return f"What should it return? {pad}" if turns == 0 else f"{ANSWER_MARKER}\ndef nope():\n    return 0\n"

    cfg = RolloutConfig(tasks="embedded:test", num_tasks=1, max_turns=4, concurrency=1)
    with LocalOpenAIServer(agent, refuse=_context_of(5_000)) as server:
        res = collect(OpenAIPolicy("agent", base_url=server.base_url, max_retries=0), cfg, tmp_path / "long.jsonl",
                      progress=False)
    [rec] = res.records
    assert rec["meta"]["end_reason"] == "agent_error" and rec["reward"] == 0.0
    assert "no longer fit" in rec["error"]
    # the refused request, then the probe: the same request (every parameter) cut to its opening
    refused, probe = server.requests[-2]["body"], server.requests[-1]["body"]
    assert pad in str(refused["messages"]) and pad not in str(probe["messages"])
    assert probe["messages"] == refused["messages"][:len(probe["messages"])]
    assert [m["role"] for m in probe["messages"]] == ["system", "user"]
    assert {k: v for k, v in probe.items() if k != "messages"} == {k: v for k, v in refused.items() if k != "messages"}


def test_a_refused_opening_stays_the_endpoint_s_failure():
    """Refused even the opening (a context too small for the task itself, a wrong parameter): the
    endpoint's failure (unscored), as before; and the first turn, which is the opening, is not probed."""
    from sweet_agent.policies import ContextExhausted, EndpointError

    def always(body):
        return "bad request"

    later = [*CONV, {"role": "assistant", "content": "A question?"}, {"role": "user", "content": "An answer."}]
    with LocalOpenAIServer(lambda body: "ok", refuse=always) as server:
        policy = OpenAIPolicy("m", base_url=server.base_url, max_retries=0)
        with pytest.raises(EndpointError, match="HTTP 400") as err:
            policy(later)  # a dialogue past its opening: probed, refused too
        assert not isinstance(err.value, ContextExhausted) and len(server.requests) == 2
        with pytest.raises(EndpointError, match="HTTP 400") as err:
            policy(CONV)  # the opening itself: not probed
        assert not isinstance(err.value, ContextExhausted) and len(server.requests) == 3


def test_a_reply_in_content_parts_is_its_text_parts_for_the_agent_and_the_person(tmp_path):
    """Mistral's reasoning models answer with the message content as a list of parts (thinking,
    then text). It was read as a garbage body: every episode ended unscored (``endpoint_error``
    for the agent, ``simulator_error`` for the person), also where only some replies came so.
    Now the text parts are the reply, the thinking parts are not."""
    from colbench_gym.protocol import ANSWER_MARKER
    from colbench_gym.tasks.sources import resolve_task_source
    from sweet_agent.rollout.collector import RolloutConfig, collect

    task = resolve_task_source("embedded:test", "backend")[0]

    def parts(text: str) -> list:
        return [{"type": "thinking", "thinking": [{"type": "text", "text": "I WANT TO ANSWER: not this"}]},
                {"type": "text", "text": text}]

    def agent(body):
        asked = any(m["role"] == "assistant" for m in body["messages"])
        return parts(f"{ANSWER_MARKER}\n```python\n{task.ground_truth}\n```" if asked else "What should it return?")

    with LocalOpenAIServer(lambda body: parts("A list, sorted.")) as person, LocalOpenAIServer(agent) as server:
        cfg = RolloutConfig(tasks="embedded:test", num_tasks=1, max_turns=4, concurrency=1, simulator="openai",
                            simulator_kwargs={"model": "person", "base_url": person.base_url, "max_retries": 0})
        res = collect(OpenAIPolicy("agent", base_url=server.base_url, max_retries=0), cfg, tmp_path / "parts.jsonl",
                      progress=False)
    [rec] = res.records
    assert not rec.get("error") and rec["meta"]["end_reason"] == "answer" and rec["reward"] == 1.0
    assert [t["content"] for t in rec["dialogue_history"][1:3]] == ["What should it return?", "A list, sorted."]
