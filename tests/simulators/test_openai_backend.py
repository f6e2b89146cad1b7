"""The OpenAI-compatible simulator against a real local HTTP server speaking the protocol."""

from __future__ import annotations

import socket

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401
from colbench_gym.simulators import SimulatorError, make_simulator
from colbench_gym.tasks import BackendTask
from tests.local_openai_server import LocalOpenAIServer


def _reply(body):
    last = body["messages"][-1]["content"]
    return f"You asked: {last}. " + "Basic costs twenty." * 40


def test_episode_through_endpoint(backend_records):
    with LocalOpenAIServer(_reply) as server:
        env = gym.make("ColBench-Backend-v0", tasks=backend_records, simulator="openai",
                       simulator_kwargs={"base_url": server.base_url, "model": "sim-model", "temperature": 0.3,
                                         "max_tokens": 77})
        env.reset(seed=5, options={"task_index": 0})
        obs, *_ = env.step("I think members pay less OUTPUT: How much per hour for members?")
        assert obs.startswith("You asked: How much per hour for members?") and len(obs) == 400
        req = server.requests[-1]["body"]
        assert req["model"] == "sim-model" and req["temperature"] == 0.3 and req["max_tokens"] == 77
        system, *rest = req["messages"]
        assert system["role"] == "system"
        # the hidden reference and the opening request are in the simulator's prompt ...
        assert backend_records[0]["ground_truth"].strip() in system["content"]
        assert backend_records[0]["problem_description"] in system["content"]
        # ... and the agent speaks as "user" to the simulator, without its private thought
        assert rest == [{"role": "user", "content": "How much per hour for members?"}]
        env.step("And for others?")
        roles = [m["role"] for m in server.requests[-1]["body"]["messages"]]
        assert roles == ["system", "user", "assistant", "user"]
        assert isinstance(server.requests[-1]["body"].get("seed"), int)


def test_retries_transient_failures(backend_records):
    task = BackendTask.from_record(backend_records[1])
    with LocalOpenAIServer(lambda b: "Yes, lowercase.", fail_first=2, fail_status=503) as server:
        sim = make_simulator("openai", "backend", base_url=server.base_url, model="m", max_retries=3, timeout=5)
        sim.reset(task, seed=0)
        reply = sim.respond(task, [{"role": "user", "content": "x"}, {"role": "assistant", "content": "Lowercase?"}])
        assert reply == "Yes, lowercase." and len(server.requests) == 3


def test_clear_errors(backend_records):
    task = BackendTask.from_record(backend_records[1])
    dialogue = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "q?"}]
    with LocalOpenAIServer(lambda b: "", fail_first=99, fail_status=400) as server:
        sim = make_simulator("openai", "backend", base_url=server.base_url, model="m", max_retries=0)
        with pytest.raises(SimulatorError, match="HTTP 400"):
            sim.respond(task, dialogue)
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sim = make_simulator("openai", "backend", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1,
                         timeout=2)
    with pytest.raises(SimulatorError, match="cannot reach"):
        sim.respond(task, dialogue)
    with pytest.raises(SimulatorError, match="model name"):
        make_simulator("openai", "backend", base_url="http://127.0.0.1:1/v1")


def test_timeout_is_reported(backend_records):
    task = BackendTask.from_record(backend_records[1])
    with LocalOpenAIServer(lambda b: "late", latency=2.0) as server:
        sim = make_simulator("openai", "backend", base_url=server.base_url, model="m", max_retries=0, timeout=0.3)
        with pytest.raises(SimulatorError, match="cannot reach|timed out"):
            sim.respond(task, [{"role": "user", "content": "x"}, {"role": "assistant", "content": "q?"}])
