"""Failure attribution and cost in records and reports (issue 26).

An evaluation run whose simulator endpoint (a real HTTP server on 127.0.0.1) fails on some
episodes reports them as infrastructure failures, apart from the agent's rates, in
``sweet-agent evaluate`` and ``colbench evaluate backend``; the agent's and the simulator's
tokens (the servers' usage fields) and wall time are in every record, summed in the reports and
priced with ``--prices``."""

from __future__ import annotations

import json

import pytest

from colbench_gym.tasks.accounting import END_REASONS, INFRASTRUCTURE
from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.policies.base import Policy, PolicyError, SamplingParams
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, collect
from sweet_agent.trajectories import read_trajectories
from tests.reliability.fault_server import FaultServer

TASKS = [resolve_task_source("embedded:test", "backend")[i] for i in range(4)]
DOOMED = (1, 3)  # the simulator endpoint fails (HTTP 500) on every request about these tasks
REPLY = "Use the obvious defaults, nothing special."
PRICES = {"agent-model": {"prompt": 1.0, "completion": 2.0}, "sim-model": {"prompt": 0.5, "completion": 4.0}}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)  # the fault server's usage: completion_tokens; prompt_tokens is 1


def _responder(body):
    msgs = body["messages"]
    if body["model"] == "sim-model":  # the simulated person: its system prompt holds the task
        if any(TASKS[i].problem_description in msgs[0]["content"] for i in DOOMED):
            raise RuntimeError("simulator backend crashed")  # -> HTTP 500, for good
        return REPLY
    if not any(m["role"] == "assistant" for m in msgs):
        return "OUTPUT: What exactly should happen at the boundaries?"
    task = next(t for t in TASKS if t.problem_description == msgs[1]["content"])
    return f"I WANT TO ANSWER:\n```python\n{task.ground_truth}```"  # the agent solves what it can


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("accounting") / "run.jsonl"
    with FaultServer(_responder) as server:
        policy = OpenAIPolicy("agent-model", base_url=server.base_url, max_retries=0)
        cfg = RolloutConfig(tasks=[t.to_record() for t in TASKS], num_tasks=4, max_turns=3, seed=0, concurrency=4,
                            sampling=SamplingParams(max_new_tokens=256, temperature=0.0), simulator="openai",
                            simulator_kwargs={"model": "sim-model", "base_url": server.base_url, "max_retries": 0,
                                              "timeout": 5.0})
        collect(policy, cfg, path, progress=False)
    prices = path.with_name("prices.json")
    prices.write_text(json.dumps(PRICES))
    return path, prices


def _by_task(path):
    return {r["meta"]["task_index"]: r for r in read_trajectories(path, require_reward=False)}


def test_records_say_why_each_episode_ended_and_what_it_cost(run_file):
    recs = _by_task(run_file[0])
    for i, rec in recs.items():
        meta = rec["meta"]
        agent_turns = [t["output"] for t in rec["dialogue_history"] if t["role"] == "assistant"]
        replies = [t["content"] for t in rec["dialogue_history"][1:] if t["role"] == "user"]
        assert meta["agent_model"] == "agent-model" and meta["simulator_model"] == "sim-model"
        assert meta["agent_usage"] == {"prompt_tokens": len(agent_turns),
                                       "completion_tokens": sum(_tokens(t) for t in agent_turns)}
        assert meta["simulator_usage"] == {"prompt_tokens": len(replies),
                                           "completion_tokens": sum(_tokens(r) for r in replies)}
        assert meta["wall_time_s"] > 0
        if i in DOOMED:  # the person's endpoint failed: not the agent's doing, no score
            assert meta["end_reason"] == "simulator_error" and meta["infrastructure_failure"] is True
            assert rec["reward"] is None and rec["success"] is None and "sim" not in replies
            assert rec["error"].startswith("SimulatorError") and meta["simulator_usage"]["prompt_tokens"] == 0
        else:
            assert meta["end_reason"] == meta["ended_by"] == "answer" and meta["infrastructure_failure"] is False
            assert rec["success"] is True and rec["error"] == "" and replies == [REPLY]


def _expected_cost(recs) -> float:
    total = 0.0
    for rec in recs.values():
        for who, model in (("agent_usage", "agent-model"), ("simulator_usage", "sim-model")):
            u = rec["meta"][who]
            total += (u["prompt_tokens"] * PRICES[model]["prompt"] + u["completion_tokens"] * PRICES[model]["completion"]) / 1e6
    return total


def test_sweet_agent_evaluate_reports_infrastructure_failures_apart_with_tokens_and_cost(run_file, capsys):
    from sweet_agent.cli import main

    path, prices = run_file
    recs = _by_task(path)
    assert main(["evaluate", str(path), "--prices", str(prices)]) == 0
    out = capsys.readouterr().out
    assert "success         100.0%" in out  # the two episodes the agent is accountable for
    assert "end reasons     answer 2 | infrastructure: simulator_error 2" in out
    assert ("infrastructure  2 episodes failed, not by the agent (simulator_error 2): left out of the rates above"
            in out) and "counted as failures, success 50.0%" in out
    agent = [sum(r["meta"]["agent_usage"][k] for r in recs.values()) for k in ("prompt_tokens", "completion_tokens")]
    sim = [sum(r["meta"]["simulator_usage"][k] for r in recs.values()) for k in ("prompt_tokens", "completion_tokens")]
    assert (f"tokens          agent {agent[0]} prompt + {agent[1]} completion; "
            f"simulator {sim[0]} prompt + {sim[1]} completion") in out
    assert f"  agent-model: {agent[0]} prompt + {agent[1]} completion" in out
    assert f"cost            ${_expected_cost(recs):.4f} (agent-model $" in out
    assert "wall time       " in out
    assert main(["evaluate", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["infrastructure_failures"] == 2
    assert {r: n for r, n in s["end_reasons"].items() if n} == {"answer": 2, "simulator_error": 2}
    assert s["success"] == 1.0 and s["success_all"] == 0.5 and s["agent_tokens"]["prompt_tokens"] == agent[0]


def test_colbench_evaluate_backend_reports_infrastructure_failures_apart(run_file, tmp_path, capsys):
    from colbench_gym.cli import main

    path, prices = run_file
    out_path = tmp_path / "graded.jsonl"
    assert main(["evaluate", "backend", str(path), "--output", str(out_path), "--no-progress",
                 "--prices", str(prices)]) == 0
    out = capsys.readouterr().out
    assert "success rate: 100.0%   tests passed: 100.0%" in out
    assert "end reasons: answer 2 | infrastructure: simulator_error 2" in out
    assert ("infrastructure failures: 2 of 4 records (simulator_error 2), not the agent's: left out of the rates "
            "above; counted as failures, success rate: 50.0%") in out
    assert f"cost: ${_expected_cost(_by_task(path)):.4f}" in out
    graded = {r["meta"]["task_index"]: r for r in map(json.loads, out_path.read_text().splitlines())}
    assert {i: (r["end_reason"], r["infrastructure_failure"]) for i, r in graded.items()} == {
        0: ("answer", False), 1: ("simulator_error", True), 2: ("answer", False), 3: ("simulator_error", True)}
    # a failed episode's record has no score in the graded file either (a reader that averages
    # 'reward' must not count it), whatever its answer graded to here
    assert [graded[i]["reward"] for i in (1, 3)] == [None, None] and [graded[i]["success"] for i in (1, 3)] == [None, None]
    assert graded[0]["reward"] == 1.0 and graded[0]["success"] is True


def test_a_bad_price_table_is_one_error_line(run_file, tmp_path, capsys):
    from sweet_agent.cli import main

    bad = tmp_path / "prices.json"
    bad.write_text(json.dumps({"agent-model": {"prompt": -1}}))
    assert main(["evaluate", str(run_file[0]), "--prices", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and "'prompt'" in err


class _BrokenPolicy(Policy):
    """A policy that cannot produce a turn (the agent's own failure, not an endpoint's)."""

    name = "broken"
    prefers_async = True

    async def agenerate(self, conversations, sampling=None, seeds=None):
        raise PolicyError("the model produced no tokens")


def test_an_agent_error_is_the_agents_failure_and_counts_in_its_rates(tmp_path):
    from sweet_agent.evaluation.report import summarize

    res = collect(_BrokenPolicy(), RolloutConfig(num_tasks=2, max_turns=2, max_consecutive_failures=0), tmp_path / "a.jsonl",
                  progress=False)
    for rec in res.records:
        assert rec["meta"]["end_reason"] == "agent_error" and rec["meta"]["infrastructure_failure"] is False
        assert rec["reward"] == 0.0 and rec["success"] is False and rec["error"].startswith("PolicyError")
    s = summarize(read_trajectories(tmp_path / "a.jsonl", require_reward=False))
    assert s.success == 0.0 and s.agent_errors == 2 and s.infrastructure_failures == 0


def test_a_task_no_test_can_measure_ends_as_a_task_error():
    import gymnasium as gym

    import colbench_gym  # noqa: F401

    task = {"problem_description": "Write f(x).", "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
            "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    env = gym.make("ColBench-Backend-v0")
    env.reset(seed=0, options={"task": task})
    *_, info = env.step("I WANT TO ANSWER:\ndef f(x):\n    return x\n")
    assert info["ended_by"] == "answer" and info["end_reason"] == "task_error" and info["tests_unpassable"] == 2
    assert END_REASONS["task_error"].infrastructure and "task_error" in INFRASTRUCTURE


def test_a_local_simulator_model_counts_its_tokens_with_its_tokenizer(tiny_model_dir):
    import gymnasium as gym

    import colbench_gym  # noqa: F401

    env = gym.make("ColBench-Backend-v0", simulator="transformers",
                   simulator_kwargs={"model": str(tiny_model_dir), "max_new_tokens": 4, "dtype": "float32"})
    try:
        _, info = env.reset(seed=0, options={"task_index": 0})
        assert info["simulator_usage"] == {"prompt_tokens": 0, "completion_tokens": 0}
        assert info["simulator_model"] == str(tiny_model_dir)
        *_, info = env.step("What should happen for an empty list?")
        sim = env.unwrapped.simulator
        calls = info["simulator_usage"]["completion_tokens"]
        assert info["simulator_usage"] == sim.token_usage()  # the episode's share is all of it so far
        assert 1 <= calls <= 4 * 3 and info["simulator_usage"]["prompt_tokens"] > 100  # the reference is in it
        env.reset(seed=1, options={"task_index": 1})
        *_, again = env.step("And for a negative number?")
        assert sum(again["simulator_usage"].values()) > 0
        assert sim.token_usage()["prompt_tokens"] == (info["simulator_usage"]["prompt_tokens"]
                                                     + again["simulator_usage"]["prompt_tokens"])  # per episode
    finally:
        env.close()


class _Answering(Policy):
    """Answers every task at once with the same function."""

    name = "answering"

    def generate(self, conversations, sampling=None, seeds=None):
        from sweet_agent.policies.base import Generation

        return [Generation(text="I WANT TO ANSWER:\ndef f(x):\n    return x\n", completion_tokens=9) for _ in conversations]


def test_a_score_that_measures_nothing_is_no_score_and_training_skips_it(tmp_path, capsys):
    """An answer graded against a task no test can measure (the reference cannot run: task_error)
    gets the env's number, but that number measures nothing: the record has no reward, says
    why, counts as an infrastructure failure, and training never learns from it."""
    from sweet_agent.evaluation.report import summarize
    from sweet_agent.training_data.records import load_records

    broken = {"problem_description": "Write f(x).", "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    good = {"problem_description": "Write f(x) returning x.", "ground_truth": "def f(x):\n    return x\n",
            "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    out = tmp_path / "run.jsonl"
    res = collect(_Answering(), RolloutConfig(tasks=[broken, good], num_tasks=2, max_turns=2, seed=0), out,
                  progress=False)
    recs = {r["task"]["problem_description"]: r for r in res.records}
    bad, ok = recs[broken["problem_description"]], recs[good["problem_description"]]
    assert bad["meta"]["end_reason"] == "task_error" and bad["meta"]["infrastructure_failure"] is True
    assert bad["reward"] is None and bad["success"] is None and bad["error"].startswith("task_error")
    assert ok["reward"] == 1.0 and ok["success"] is True and ok["error"] == ""
    s = summarize(read_trajectories(out, require_reward=False))
    assert s.infrastructure_failures == 1 and s.success == 1.0
    rows = load_records(out)
    assert [r["task"]["problem_description"] for r in rows] == [good["problem_description"]]
    assert "skipped 1 episode(s) that failed for infrastructure reasons" in capsys.readouterr().err
    # `colbench evaluate backend` writes its verdict beside the record (a release file graded before training)
    graded = tmp_path / "graded.jsonl"
    base = {"dialogue_history": [{"role": "user", "content": "p"}], "answer": "def f(x):\n    return x\n"}
    graded.write_text(json.dumps({**base, "task": broken, "reward": 0.0, "end_reason": "task_error",
                                  "infrastructure_failure": True}) + "\n"
                      + json.dumps({**base, "task": good, "reward": 1.0, "end_reason": "answer"}) + "\n")
    assert [r["task"]["problem_description"] for r in load_records(graded)] == [good["problem_description"]]


def test_a_failure_message_splits_back_into_its_reason_and_detail():
    from colbench_gym.tasks.accounting import failure_message, parse_failure_message, reason_in_message

    text = failure_message("simulator_error", "endpoint: connection refused")
    assert parse_failure_message(text) == ("simulator_error", "endpoint: connection refused")
    assert reason_in_message(text) == "simulator_error"
    # a message that does not lead with an end reason keeps its whole text and names none
    assert parse_failure_message("ValueError: bad task") == (None, "ValueError: bad task")
    assert parse_failure_message("no colon here") == (None, "no colon here")
    assert reason_in_message("task_error") == "task_error"  # a bare name (records' legacy errors)


def test_an_infrastructure_failure_crosses_a_process_whole():
    """Pickled (a worker process's exception reaching its parent), a failure keeps its class, end reason
    and message: the remote ones too, and a remote reference that did not render stays one."""
    import pickle

    from colbench_gym.integrations.conversation import ScoreUnavailable
    from colbench_gym.online.client import RemoteEnvironmentError, RemoteReferenceRenderError
    from colbench_gym.rendering.result import ReferenceRenderError
    from colbench_gym.tasks.accounting import InfrastructureFailure

    for exc in (InfrastructureFailure("grading_error", "the sandbox died"),
                ScoreUnavailable("task_error", "no test has a usable reference result"),
                RemoteEnvironmentError("simulator_error", "no reply in 10 s"),
                RemoteReferenceRenderError("rendering_error", "ReferenceRenderError: timed out")):
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)
        assert (back.end_reason, back.detail) == (exc.end_reason, exc.detail)
    assert isinstance(back, ReferenceRenderError) and back.reason == "ReferenceRenderError: timed out"
