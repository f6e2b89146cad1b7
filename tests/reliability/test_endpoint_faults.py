"""Endpoint faults (policy and simulator, any OpenAI-compatible server): transient ones are
retried, a permanent one costs one episode (recorded as failed, counted apart by `evaluate`),
a failing simulator reply never consumes the agent's turn, and the default concurrency adapts
to what the server sustains. The server is real HTTP on 127.0.0.1 (tests/reliability/fault_server.py)."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest

from colbench_gym.simulators import make_simulator
from colbench_gym.simulators.base import SimulatorError
from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.evaluation.report import format_summary, summarize
from sweet_agent.policies.base import PolicyError, SamplingParams
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, collect
from sweet_agent.trajectories import read_trajectories, to_hf_dataset
from tests.reliability.fault_server import FaultServer

CONV = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]
SAMPLING = SamplingParams(max_new_tokens=32, temperature=0.0)


def scripted(body) -> str:
    """Agent: one question, then the reference answer; simulator (model 'sim'): a short reply."""
    if body.get("model") == "sim":
        return "It should return the total, rounded to 2 decimals."
    msgs = body["messages"]
    if sum(m["role"] == "assistant" for m in msgs) == 0:
        return "OUTPUT: What should it return for an empty input?"
    return "I WANT TO ANSWER:\ndef f(*args, **kwargs):\n    return None\n"


@pytest.mark.parametrize("fault", ["500", "503", "429", "garbage", "truncated", "drop", "timeout", "slow"])
def test_policy_recovers_from_each_transient_fault(fault):
    # Load-independent margins: a healthy reply has 3 s (30 s where the fault is not a timeout) on a
    # 127.0.0.1 server, the timeout fault never answers in the test's time (60 s), and the slow
    # reply (0.3 s) is 100 times below its client's timeout: no count depends on the machine's speed.
    with FaultServer(lambda b: "fine", hang=60.0, slow=0.3, retry_after=0.05) as server:
        n = 1 if fault == "slow" else 2  # a slow reply is not an error: no retry
        server.force(*[fault] * n)
        policy = OpenAIPolicy("m", base_url=server.base_url, timeout=3.0 if fault == "timeout" else 30.0, max_retries=3)
        assert policy(CONV) == "fine"
        assert server.injected[fault] == n and len(server.requests) == (1 if fault == "slow" else 3)


def test_retry_after_is_honoured():
    with FaultServer(lambda b: "fine", retry_after=1.0) as server:
        server.force("429", "503")
        assert OpenAIPolicy("m", base_url=server.base_url, max_retries=3)(CONV) == "fine"
        t = [r["t"] for r in server.requests]
    assert len(t) == 3 and t[1] - t[0] >= 0.9 and t[2] - t[1] >= 0.9  # waited what the server asked


def test_garbage_that_never_stops_is_a_clear_policy_error():
    with FaultServer(lambda b: "fine", rates={"garbage": 1.0}) as server:
        with pytest.raises(PolicyError, match="request failed.*garbage"):
            OpenAIPolicy("m", base_url=server.base_url, max_retries=1)(CONV)


def _rollout_cfg(server, n, **kw):
    base = dict(env_id="ColBench-Backend-v0", tasks="embedded:test", num_tasks=n, samples_per_task=1, max_turns=3,
                sampling=SAMPLING, seed=1, concurrency=4, system_prompt="Ask one question, then answer.",
                simulator="openai", simulator_kwargs={"model": "sim", "base_url": server.base_url, "max_retries": 0,
                                                      "timeout": 2.0})
    base.update(kw)
    return RolloutConfig(**base)


def _assert_alternating(rec):
    roles = [t["role"] for t in rec["dialogue_history"]]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles)), roles  # never two agent turns in a row


def test_permanent_error_fails_one_episode_and_the_others_go_on(tmp_path):
    source = resolve_task_source("embedded:test", "backend")
    doomed = source[2].problem_description

    def responder(body):
        return scripted(body)

    with FaultServer(responder) as server:
        def serve(body):
            return scripted(body)

        server.responder = serve
        # the agent's first request of task 2 gets HTTP 400 (e.g. its prompt is too long for the model)
        orig = server._draw

        def draw_400_for_task2():
            req = server.requests[-1]["body"]
            msgs = req.get("messages", [])
            if req.get("model") == "agent" and len(msgs) > 1 and msgs[1]["content"] == doomed:
                return "400"
            return orig()

        server._draw = draw_400_for_task2
        policy = OpenAIPolicy("agent", base_url=server.base_url, max_retries=2)
        result = collect(policy, _rollout_cfg(server, 5), tmp_path / "run.jsonl", progress=False)
    recs = {r["meta"]["episode_id"]: r for r in read_trajectories(tmp_path / "run.jsonl")}
    assert sorted(recs) == [f"{i}:0" for i in range(5)]
    failed = recs["2:0"]
    assert failed["reward"] is None and failed["success"] is None and failed["meta"]["failed"] is True
    assert "HTTP 400" in failed["error"] and server.base_url in failed["error"]
    assert failed["meta"]["end_reason"] == "endpoint_error" and failed["meta"]["infrastructure_failure"] is True
    for eid, rec in recs.items():
        _assert_alternating(rec)
        if eid != "2:0":
            assert rec["error"] == "" and rec["reward"] is not None and rec["meta"]["ended_by"] == "answer"
    assert len(result.failed) == 1
    # evaluate counts it apart and scores the rest
    s = summarize(list(recs.values()))
    assert s.infrastructure_failures == 1 and s.episodes == 5 and s.tests_passed is not None
    assert "infrastructure  1 episodes failed, not by the agent (endpoint_error 1)" in format_summary(s)
    assert to_hf_dataset(tmp_path / "run.jsonl").num_rows == 5  # a failed record still loads with datasets


def test_failing_simulator_replies_never_consume_the_agent_turn(tmp_path):
    with FaultServer(scripted) as server:
        seen: set[str] = set()

        def faulty(body):
            # every reply fails the first time it is asked for, then succeeds: per request, so an
            # episode's retry never depends on how other episodes' calls interleave (a global
            # "every other call" could fail one episode three times in a row under load)
            key = json.dumps(body.get("messages"), sort_keys=True)
            if body.get("model") == "sim" and key not in seen:
                seen.add(key)
                raise RuntimeError("simulator worker crashed")  # -> HTTP 500 from the server
            return scripted(body)

        server.responder = faulty
        policy = OpenAIPolicy("agent", base_url=server.base_url, max_retries=0)
        collect(policy, _rollout_cfg(server, 4, concurrency=2), tmp_path / "run.jsonl", progress=False)
    recs = read_trajectories(tmp_path / "run.jsonl")
    assert len(recs) == 4 and not any(r.get("error") for r in recs)
    for rec in recs:
        _assert_alternating(rec)
        assert [t["role"] for t in rec["dialogue_history"]] == ["user", "assistant", "user", "assistant"]
        assert rec["dialogue_history"][2]["content"].startswith("It should return the total")
        assert rec["meta"]["turns"] == 2
    agent_requests = [r for r in server.requests if r["body"].get("model") == "agent"]
    assert len(agent_requests) == 8  # each agent turn asked once: a failed reply never re-plays the agent


def test_simulator_reports_garbage_and_recovers():
    with FaultServer(scripted) as server:
        sim = make_simulator("openai", "backend", model="sim", base_url=server.base_url, max_retries=1)
        task = resolve_task_source("embedded:test", "backend")[0]
        dialogue = [{"role": "user", "content": task.problem_description}, {"role": "assistant", "content": "hm?"}]
        server.force("garbage")
        assert sim.respond(task, dialogue).startswith("It should return")
        server.force("garbage", "garbage")
        with pytest.raises(SimulatorError, match="unreadable reply"):
            sim.respond(task, dialogue)


def test_default_concurrency_adapts_to_a_one_slot_server():
    """A llama.cpp server with one slot answers 429 to anything beyond it: the default policy must
    back off instead of flooding it (and of failing requests). The server is found busy whenever
    the client may have a second request out (it holds a reply until that request arrives), so
    the overlaps do not depend on how fast this machine schedules threads."""
    policy = None

    def busy_while_a_second_may_come(in_flight: int) -> bool:
        control = policy.control
        return in_flight < 2 and control.limit >= 2 and 40 - control.successes >= 2

    with FaultServer(lambda b: "fine", latency=0.05, max_in_flight=1, retry_after=0.05,
                     hold=busy_while_a_second_may_come) as server:
        policy = OpenAIPolicy("m", base_url=server.base_url, concurrency=32, max_retries=5)

        async def many():
            try:
                return await policy.agenerate([CONV] * 40, SAMPLING, list(range(40)))
            finally:
                await policy.aclose()

        gens = asyncio.run(many())
    assert [g.text for g in gens] == ["fine"] * 40
    assert policy.control.limit <= 2 and policy.control.cuts >= 1, policy.control
    assert server.over_capacity < len(server.requests) / 2, (server.over_capacity, len(server.requests))


def test_explicit_concurrency_is_a_ceiling():
    with FaultServer(lambda b: "fine", latency=0.05) as server:
        policy = OpenAIPolicy("m", base_url=server.base_url, concurrency=3, initial_concurrency=3)

        async def many():
            try:
                return await policy.agenerate([CONV] * 12, SAMPLING, list(range(12)))
            finally:
                await policy.aclose()

        asyncio.run(many())
    assert server.peak_in_flight <= 3


def test_failed_record_shape_round_trips_through_json(tmp_path):
    with FaultServer(scripted, rates={"400": 1.0}) as server:
        policy = OpenAIPolicy("agent", base_url=server.base_url)
        collect(policy, _rollout_cfg(server, 1, max_consecutive_failures=0), tmp_path / "f.jsonl", progress=False)
    [rec] = read_trajectories(tmp_path / "f.jsonl")
    assert json.loads(json.dumps(rec)) == rec and rec["error"].startswith("EndpointError")
