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
