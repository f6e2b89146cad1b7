"""Rollouts: concurrent episodes keep their own dialogues, seeds make them reproducible,
interrupted runs resume without losing or duplicating an episode, endpoints run concurrently."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time

import pytest

from colbench_gym.protocol import parse_action
from colbench_gym.tasks.records import trajectory_task
from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.policies.base import SamplingParams
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, RolloutError, collect
from sweet_agent.trajectories import read_trajectories
from tests.agent.conftest import TaggingSimulator, fingerprint
from tests.local_openai_server import LocalOpenAIServer

SAMPLING = SamplingParams(max_new_tokens=10, temperature=1.0)


def _cfg(**kw) -> RolloutConfig:
    # a short system prompt keeps the tiny model's prompts short (its toy tokenizer spends ~1 token per character)
    base = {"simulator": TaggingSimulator(), "num_tasks": 4, "samples_per_task": 2, "max_turns": 3,
            "sampling": SAMPLING, "seed": 7, "system_prompt": "Ask, then reply I WANT TO ANSWER: and the code."}
    base.update(kw)
    return RolloutConfig(**base)


def _by_id(records):
    return {r["meta"]["episode_id"]: r for r in records}


def _check_intact(rec) -> None:
    """Every person reply answers this episode's own previous agent message, about its own task."""
    source = resolve_task_source("embedded:test", "backend")
    task = source[rec["meta"]["task_index"]]
    assert rec["task"] == trajectory_task(task.to_record())
    hist = rec["dialogue_history"]
    assert hist[0] == {"role": "user", "content": task.problem_description}
    fn = task.ground_truth.split("def ", 1)[1].split("(", 1)[0]
    for prev, turn in itertools.pairwise(hist):
        if turn["role"] == "user":
            assert prev["role"] == "assistant"
            assert turn["content"] == f"[{fn}] re {fingerprint(parse_action(prev['output']).message)}: keep it simple."
    assert hist[-1]["role"] == "assistant"
    assert rec["meta"]["turns"] == sum(t["role"] == "assistant" for t in hist)


def test_batched_rollout_is_intact_and_independent_of_concurrency(tiny_policy, tmp_path):
    wide = collect(tiny_policy, _cfg(concurrency=5), tmp_path / "wide.jsonl", progress=False)
    collect(tiny_policy, _cfg(concurrency=1), tmp_path / "narrow.jsonl", progress=False)
    assert len(wide.records) == 8 and wide.skipped == 0
    a, b = _by_id(read_trajectories(tmp_path / "wide.jsonl")), _by_id(read_trajectories(tmp_path / "narrow.jsonl"))
    assert sorted(a) == sorted(f"{i}:{k}" for i in range(4) for k in range(2))
    for eid, rec in a.items():
        _check_intact(rec)
        assert rec["dialogue_history"] == b[eid]["dialogue_history"], eid
        assert rec["meta"]["turns"] == 3 and rec["meta"]["ended_by"] == "turn_limit"  # a random model never answers
        assert rec["reward"] == rec["meta"]["tests_passed"] / rec["meta"]["tests_total"]
    # samples of one task differ (their seeds differ)
    assert a["0:0"]["dialogue_history"][1]["output"] != a["0:1"]["dialogue_history"][1]["output"]
    # a different base seed gives different episodes
    other = collect(tiny_policy, _cfg(seed=8, num_tasks=1, samples_per_task=1), None, progress=False)
    assert other.records[0]["dialogue_history"] != a["0:0"]["dialogue_history"]


def test_a_local_model_that_raises_on_one_episode_fails_that_episode_not_the_run(tiny_policy, tmp_path):
    """A local model raises on one dialogue (absolute positions run out: IndexError; a device
    assert): the batched driver called it outside any episode's guard, so the whole run stopped.
    Now the batch is asked again one episode at a time; the episode the model cannot take ends as
    the agent's (``agent_error``, scored 0, as the async driver ends it) and the others play on."""
    from sweet_agent.policies.base import Policy

    bad = resolve_task_source("embedded:test", "backend")[2].problem_description

    class RunsOutOfPositions(Policy):
        name = "tiny-short-context"

        def generate(self, conversations, sampling=None, seeds=None, prefixes=None):
            if any(c[1]["content"] == bad for c in conversations):  # [system, user request, ...]
                raise IndexError("index out of range in self")
            return tiny_policy.generate(conversations, sampling, seeds)

    result = collect(RunsOutOfPositions(), _cfg(concurrency=4, samples_per_task=1), tmp_path / "out.jsonl",
                     progress=False)
    by_task = {r["meta"]["task_index"]: r for r in result.records}
    assert sorted(by_task) == [0, 1, 2, 3]
    failed = by_task.pop(2)
    assert failed["meta"]["end_reason"] == "agent_error" and failed["reward"] == 0.0 and failed["success"] is False
    assert not failed["meta"]["infrastructure_failure"] and failed["error"].startswith("IndexError")
    for rec in by_task.values():
        assert not rec.get("error") and rec["meta"]["ended_by"] == "turn_limit" and rec["meta"]["turns"] == 3
        _check_intact(rec)


def test_a_model_that_fails_every_episode_stops_the_run_instead_of_scoring_0s(tiny_policy, tmp_path):
    """A device assert sticks: after it every call fails, one episode at a time too. That is the
    model's failure, not the agents': the run stops (as before the per-episode retry) rather than
    recording each episode as ``agent_error`` 0."""
    from sweet_agent.policies.base import Policy

    class BrokenDevice(Policy):
        name = "tiny-broken-device"

        def generate(self, conversations, sampling=None, seeds=None, prefixes=None):
            raise RuntimeError("CUDA error: device-side assert triggered")

    for concurrency in (1, 4):
        with pytest.raises(RuntimeError, match="device-side assert"):
            collect(BrokenDevice(), _cfg(concurrency=concurrency, samples_per_task=1), tmp_path / f"{concurrency}.jsonl",
                    progress=False)


class _Interrupt(Exception):
    pass


def test_resume_continues_without_losing_or_duplicating(tiny_policy, tmp_path):
    out = tmp_path / "run.jsonl"
    seen = []

    def stop_after_three(rec):
        seen.append(rec)
        if len(seen) == 3:
            raise _Interrupt

    with pytest.raises(_Interrupt):
        collect(tiny_policy, _cfg(concurrency=3), out, progress=False, on_record=stop_after_three)
    assert len(read_trajectories(out)) == 3
    with open(out, "ab") as fh:  # and the machine died mid-write of the next one
        fh.write(b'{"task": {"problem_description": "x"}, "dialo')
    with pytest.raises(FileExistsError):
        collect(tiny_policy, _cfg(), out, progress=False)
    res = collect(tiny_policy, _cfg(concurrency=3), out, resume=True, progress=False)
    assert res.skipped == 3 and len(res.records) == 5
    final = read_trajectories(out)
    ids = [r["meta"]["episode_id"] for r in final]
    assert len(ids) == len(set(ids)) == 8
    # identical to a run that was never interrupted
    clean = _by_id(collect(tiny_policy, _cfg(concurrency=4), None, progress=False).records)
    for rec in final:
        assert rec["dialogue_history"] == clean[rec["meta"]["episode_id"]]["dialogue_history"]
    # resuming a finished file plays nothing
    again = collect(tiny_policy, _cfg(), out, resume=True, progress=False)
    assert again.records == [] and again.skipped == 8


def test_plan_errors_are_clear(tiny_policy):
    with pytest.raises(RolloutError, match="more tasks than the source holds"):
        collect(tiny_policy, _cfg(num_tasks=10_000), None, progress=False)
    with pytest.raises(RolloutError, match="out of range"):
        collect(tiny_policy, _cfg(task_indices=[0, 99_999]), None, progress=False)
    with pytest.raises(RolloutError, match="--episodes N"):
        collect(tiny_policy, _cfg(tasks="generated:train", num_tasks=None), None, progress=False)
    with pytest.raises(ValueError, match="--k"):
        _cfg(samples_per_task=0)


class _ScriptedAgentServer:
    """An OpenAI-compatible endpoint playing a scripted agent: it asks one question naming the
    function of *its own* conversation, then answers; it echoes the request's seed. Tracks how
    many requests are in flight at once."""

    def __init__(self, delay: float):
        self.delay, self.in_flight, self.max_in_flight = delay, 0, 0
        self.lock = threading.Lock()

    def __call__(self, body):
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            msgs = body["messages"]
            assert msgs[0]["role"] == "system" and "I WANT TO ANSWER:" in msgs[0]["content"]
            fn = re.search(r"([a-z_]+)\(", msgs[1]["content"])
            name = fn.group(1) if fn else "f"
            if len(msgs) == 2:
                return f"Thinking. OUTPUT: What should {name} return? (seed {body.get('seed')})"
            return f"I WANT TO ANSWER:\n```python\ndef {name}(*args):\n    return None\n```"
        finally:
            with self.lock:
                self.in_flight -= 1


def test_async_rollout_against_an_endpoint(tmp_path):
    agent = _ScriptedAgentServer(delay=0.15)
    with LocalOpenAIServer(agent) as server:
        policy = OpenAIPolicy("scripted", base_url=server.base_url, concurrency=8)
        cfg = _cfg(concurrency=8, max_turns=10, sampling=SamplingParams(max_new_tokens=64, temperature=0.5),
                   system_prompt=None)
        collect(policy, cfg, tmp_path / "api.jsonl", progress=False)
        again = collect(policy, cfg, None, progress=False)
    assert agent.max_in_flight >= 6  # episodes really overlap
    recs = _by_id(read_trajectories(tmp_path / "api.jsonl"))
    assert len(recs) == 8
    for eid, rec in recs.items():
        _check_intact(rec)
        assert rec["meta"]["turns"] == 2 and rec["meta"]["ended_by"] == "answer"
        assert rec["answer"].startswith("```python\ndef ")
        assert rec["dialogue_history"] == _by_id(again.records)[eid]["dialogue_history"]  # seeds are sent
    bodies = [r["body"] for r in server.requests]
    assert all(b["temperature"] == 0.5 and b["max_tokens"] == 64 and isinstance(b["seed"], int) for b in bodies)
    assert len({b["seed"] for b in bodies}) == len(bodies) // 2  # one seed per (episode, turn), replayed once


def test_endpoint_failure_names_the_endpoint(tmp_path):
    # one failed episode is recorded as failed (error names the endpoint); the run is not lost
    policy = OpenAIPolicy("m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    collect(policy, _cfg(num_tasks=1, samples_per_task=1), tmp_path / "x.jsonl", progress=False)
    [rec] = read_trajectories(tmp_path / "x.jsonl")
    assert "127.0.0.1:9" in rec["error"] and rec["reward"] is None and rec["meta"]["failed"] is True
    # a server that is down for good stops the run after max_consecutive_failures, naming it
    with pytest.raises(RolloutError, match="127.0.0.1:9"):
        collect(policy, _cfg(num_tasks=4, samples_per_task=1, max_consecutive_failures=2, concurrency=1),
                tmp_path / "y.jsonl", progress=False)
    assert len(read_trajectories(tmp_path / "y.jsonl")) == 2


def test_record_meta_is_json_and_carries_the_system_prompt(tiny_policy):
    rec = collect(tiny_policy, _cfg(num_tasks=1, samples_per_task=1, max_turns=1, system_prompt=None), None,
                  progress=False).records[0]
    meta = json.loads(json.dumps(rec["meta"]))
    assert "I WANT TO ANSWER:" in meta["system_prompt"]
    assert meta["sampling"]["max_new_tokens"] == 10 and meta["policy"] == tiny_policy.name


def test_rollout_with_the_offline_simulator_by_name(tiny_policy, tmp_path):
    """The default set-up of `sweet-agent rollout` (offline simulator, embedded tasks), tiny policy."""
    cfg = _cfg(simulator="offline", num_tasks=2, samples_per_task=1, max_turns=2)
    res = collect(tiny_policy, cfg, tmp_path / "off.jsonl", progress=False)
    recs = read_trajectories(tmp_path / "off.jsonl")
    assert len(recs) == 2 == len(res.records)
    source = resolve_task_source("embedded:test", "backend")
    for rec in recs:
        task = source[rec["meta"]["task_index"]]
        hist = rec["dialogue_history"]
        assert rec["task"] == trajectory_task(task.to_record()) and hist[0]["content"] == task.problem_description
        assert [t["role"] for t in hist] == ["user", "assistant", "user", "assistant"]
        assert hist[2]["content"] and len(hist[2]["content"]) <= 400  # the person's reply, capped as in the paper
        assert task.ground_truth not in hist[2]["content"]


@pytest.mark.browser
def test_frontend_rollout_records_similarity(tmp_path, monkeypatch):
    """The collector is env-generic: ColBench-Frontend-v0 episodes get the frontend prompt, a
    rendered draft per turn and the page similarity as reward."""
    from colbench_gym.rendering import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium")
    monkeypatch.setenv("COLBENCH_CACHE_DIR", str(tmp_path / "cache"))
    page = '<html><body class="bg-blue-600 p-8"><h1 class="text-white text-3xl">Welcome</h1></body></html>'

    def agent(body):
        msgs = body["messages"]
        assert "OUTPUT:" in msgs[0]["content"] and "<html>" in msgs[0]["content"]
        if len(msgs) == 2:
            return f"A first draft. OUTPUT: Is this close? {page}"
        return f"Done. OUTPUT: I WANT TO ANSWER: {page}"

    with LocalOpenAIServer(agent) as server:
        cfg = RolloutConfig(env_id="ColBench-Frontend-v0", num_tasks=2, concurrency=2,
                            env_kwargs={"scorer": "fallback"}, sampling=SamplingParams(max_new_tokens=64))
        res = collect(OpenAIPolicy("scripted", base_url=server.base_url), cfg, tmp_path / "front.jsonl", progress=False)
    recs = read_trajectories(tmp_path / "front.jsonl")
    assert len(recs) == 2 == len(res.records)
    for rec in recs:
        assert "test_cases" not in rec["task"] and rec["success"] is None
        assert 0.0 <= rec["reward"] <= 1.0 and rec["answer"].strip().startswith("<html>")
        assert rec["meta"]["turns"] == 2 and rec["dialogue_history"][1]["content"].startswith("Is this close?")
    from sweet_agent.evaluation.report import summarize

    s = summarize(recs, reference=recs)
    assert s.kind == "frontend" and s.win_rate == 0.5 and s.similarity == pytest.approx(sum(r["reward"] for r in recs) / 2)


class _BrokenForSomeTasks(TaggingSimulator):
    """A person whose backend is down for the tasks in ``down`` (a SimulatorError: infrastructure)."""

    def __init__(self, down: set[str]):
        self.down = down

    def respond(self, task, dialogue, **context):
        from colbench_gym.simulators.base import SimulatorError

        if task.ground_truth.split("def ", 1)[1].split("(", 1)[0] in self.down:
            raise SimulatorError("simulator endpoint unreachable")
        return super().respond(task, dialogue, **context)


def test_resume_plays_infrastructure_failures_again_and_keeps_their_records(tiny_policy, tmp_path, monkeypatch):
    import sweet_agent.rollout.collector as collector

    monkeypatch.setattr(collector, "SIMULATOR_RETRIES", 0)
    source = resolve_task_source("embedded:test", "backend")
    down = {source[1].ground_truth.split("def ", 1)[1].split("(", 1)[0]}
    out = tmp_path / "run.jsonl"
    person = _BrokenForSomeTasks(down)
    first = collect(tiny_policy, _cfg(simulator=person), out, progress=False)
    broken = sorted(r["meta"]["episode_id"] for r in first.infrastructure_failures)
    # only episodes that reached the person fail; at least one asked (the tiny model rarely answers at once)
    assert broken and all(i.startswith("1:") for i in broken)
    assert all(r["reward"] is None for r in first.infrastructure_failures)

    person.down = set()  # the person's backend is back
    res = collect(tiny_policy, _cfg(simulator=person), out, resume=True, progress=False)
    assert sorted(res.replayed) == broken and sorted(r["meta"]["episode_id"] for r in res.records) == broken
    assert res.skipped == 8 - len(broken)
    final = read_trajectories(out, require_reward=False)
    ids = [r["meta"]["episode_id"] for r in final]
    assert len(ids) == len(set(ids)) == 8 and not any(r["meta"]["infrastructure_failure"] for r in final)
    # what was taken out is kept beside the file, byte for byte
    kept = [json.loads(x) for x in (tmp_path / "run.jsonl.replaced").read_text().splitlines()]
    assert sorted(r["meta"]["episode_id"] for r in kept) == broken and all(r["error"] for r in kept)
    # the replayed episodes are the ones a clean run plays (same seeds)
    clean = _by_id(collect(tiny_policy, _cfg(), None, progress=False).records)
    for rec in final:
        assert rec["dialogue_history"] == clean[rec["meta"]["episode_id"]]["dialogue_history"]
    # a finished file: nothing to replay, nothing played
    again = collect(tiny_policy, _cfg(simulator=person), out, resume=True, progress=False)
    assert again.records == [] and again.replayed == [] and again.skipped == 8


def test_an_episode_that_fails_every_time_is_kept_after_the_replays(tiny_policy, tmp_path, monkeypatch):
    """A failure that repeats (a task no grader can use) is played again MAX_REPLAYS times, then
    its failed record stays, so a resumed run can finish; a symlinked output keeps its link and
    the file its permissions."""
    import os

    import sweet_agent.rollout.collector as collector
    from sweet_agent.trajectories import MAX_REPLAYS, replay_counts

    monkeypatch.setattr(collector, "SIMULATOR_RETRIES", 0)
    source = resolve_task_source("embedded:test", "backend")
    person = _BrokenForSomeTasks({source[2].ground_truth.split("def ", 1)[1].split("(", 1)[0]})
    real = tmp_path / "data" / "run.jsonl"
    real.parent.mkdir()
    link = tmp_path / "run.jsonl"
    link.symlink_to(real)
    cfg = _cfg(simulator=person, num_tasks=3, samples_per_task=1)
    first = collect(tiny_policy, cfg, link, progress=False)
    broken = [r["meta"]["episode_id"] for r in first.infrastructure_failures]
    assert broken == ["2:0"]
    os.chmod(real, 0o600)
    for attempt in range(MAX_REPLAYS):
        res = collect(tiny_policy, cfg, link, resume=True, progress=False)
        assert res.replayed == broken and res.kept_failures == [] and len(res.failed) == 1
        assert replay_counts(link)["2:0"] == attempt + 1
    last = collect(tiny_policy, cfg, link, resume=True, progress=False)
    assert last.records == [] and last.replayed == [] and last.kept_failures == broken
    assert link.is_symlink() and (real.stat().st_mode & 0o777) == 0o600
    final = read_trajectories(real, require_reward=False)
    assert sorted(r["meta"]["episode_id"] for r in final) == ["0:0", "1:0", "2:0"]
    assert len((tmp_path / "data" / "run.jsonl.replaced").read_text().splitlines()) == MAX_REPLAYS
