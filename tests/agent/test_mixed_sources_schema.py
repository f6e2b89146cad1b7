"""One record schema across runs and task sources (issue 39, item 3): rollouts of different task
sources (embedded:test, collab:train, generated:train, collab-multi:train: tasks with and without
provenance keys, with ten tests and with twelve), written by the real collector with a
scripted agent on a local endpoint, load together with the real ``datasets.load_dataset("json",
...)``; so do their ``sweet-agent evaluate --json`` results records; records written before the
schema (version 1: task extras beside the official keys) are still read, with the same numbers;
docs/trajectory-format.md documents every field both schemas have."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from colbench_gym.tasks.records import (
    TRAJECTORY_SCHEMA_VERSION,
    BackendTask,
    official_task,
    task_extras,
    trajectory_task,
)
from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.cli import main
from sweet_agent.policies.base import SamplingParams
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, collect
from sweet_agent.trajectories import (
    ROLLOUT_META,
    read_trajectories,
    record_schema_version,
    record_task_extras,
)
from tests.local_openai_server import LocalOpenAIServer

datasets = pytest.importorskip("datasets")

CARD = Path(__file__).resolve().parents[2] / "docs" / "trajectory-format.md"
SOURCES = ("embedded:test", "collab:train", "generated:train", "collab-multi:train")


def _agent(body):
    """Asks one question naming the function of its own conversation, then answers."""
    msgs = body["messages"]
    m = re.search(r"([a-z_]+)\(", msgs[1]["content"])
    name = m.group(1) if m else "f"
    if len(msgs) == 2:
        return f"OUTPUT: What should {name} return for an empty input?"
    return f"I WANT TO ANSWER:\n```python\ndef {name}(*args, **kwargs):\n    return 0\n```"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run of two episodes per task source, by the real collector."""
    out = tmp_path_factory.mktemp("runs")
    paths = {}
    with LocalOpenAIServer(_agent) as server:
        for spec in SOURCES:
            policy = OpenAIPolicy("scripted-agent", base_url=server.base_url, max_retries=0)
            cfg = RolloutConfig(tasks=spec, simulator="offline", num_tasks=2, max_turns=3, seed=5,
                                sampling=SamplingParams(max_new_tokens=64, temperature=0.0), concurrency=2)
            paths[spec] = out / f"{spec.replace(':', '_')}.jsonl"
            collect(policy, cfg, paths[spec], progress=False)
    return paths


def _load(files, tmp_path, **kw):
    return datasets.load_dataset("json", data_files=[str(f) for f in files], split="train",
                                 cache_dir=str(tmp_path / "hf-cache"), **kw)


def test_runs_of_different_task_sources_load_together_with_datasets(runs, tmp_path):
    recs = {spec: read_trajectories(path) for spec, path in runs.items()}
    # the sources really differ where the old records' task keys did
    assert {json.loads(r["task"]["extra"])["source"] for r in recs["collab:train"]} == {"collab:train"}
    assert {r["task"]["extra"] for r in recs["embedded:test"]} == {"{}"}
    counts = {spec: {len(json.loads(r["task"]["test_cases"])) for r in rs} for spec, rs in recs.items()}
    assert counts["embedded:test"] == {10} and counts["collab-multi:train"] == {12}
    for spec, spec_recs in recs.items():
        for r in spec_recs:
            assert list(r["task"]) == ["problem_description", "ground_truth", "test_cases", "extra"]
            assert BackendTask.from_record(r["task"]).to_record() == \
                resolve_task_source(spec, "backend")[r["meta"]["task_index"]].to_record()
            assert r["meta"]["schema_version"] == TRAJECTORY_SCHEMA_VERSION == record_schema_version(r)
            assert r["meta"]["turns"] == 2 and r["meta"]["ended_by"] == "answer" and isinstance(r["reward"], float)
    files = list(runs.values())
    for order in (files, files[::-1]):
        ds = _load(order, tmp_path)
        assert ds.num_rows == 2 * len(SOURCES)
        assert sorted(m["tasks"] for m in ds["meta"]) == sorted([*SOURCES, *SOURCES])
        extras = [json.loads(t["extra"]) for t in ds["task"]]
        assert sorted(e.get("source", "embedded:test") for e in extras) == sorted([*SOURCES, *SOURCES])
        assert ds.features["task"]["extra"] == ds.features["task"]["test_cases"] == datasets.Value("string")
        assert sorted(len(json.loads(t["test_cases"])) for t in ds["task"]) == [10] * 6 + [12] * 2


def _as_version_1(rec):
    """A record as written before the schema: the official task record (test cases an object,
    extra keys beside the official ones), no ``meta.schema_version``."""
    task = {k: v for k, v in rec["task"].items() if k != "extra"}
    task["test_cases"] = json.loads(task["test_cases"])
    meta = {k: v for k, v in rec["meta"].items() if k != "schema_version"}
    return {**rec, "task": {**task, **json.loads(rec["task"]["extra"])}, "meta": meta}


def test_old_records_are_still_read_with_the_same_numbers(runs, tmp_path, capsys):
    new = runs["collab:train"]
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(_as_version_1(r)) + "\n" for r in read_trajectories(new)))
    old_recs, new_recs = read_trajectories(old), read_trajectories(new)
    assert "extra" not in old_recs[0]["task"] and old_recs[0]["task"]["source"] == "collab:train"
    assert isinstance(old_recs[0]["task"]["test_cases"], dict) and isinstance(new_recs[0]["task"]["test_cases"], str)
    for o, n in zip(old_recs, new_recs):
        assert official_task(n["task"]) == official_task(o["task"]) == o["task"]
        assert trajectory_task(o["task"]) == n["task"]
        assert record_schema_version(o) == 1 and record_task_extras(o) == record_task_extras(n) == task_extras(n["task"])
        assert record_task_extras(o)["family"] and record_task_extras(o)["index"] == o["meta"]["task_index"]
        a, b = BackendTask.from_record(o["task"]), BackendTask.from_record(n["task"])
        assert a.extra == b.extra and a.test_cases == b.test_cases and a.task_id == b.task_id == n["meta"]["task_id"]
        assert a.to_record() == resolve_task_source("collab:train", "backend")[n["meta"]["task_index"]].to_record()
    reports = []
    for path in (old, new):
        assert main(["evaluate", str(path), "--json", "--regrade"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert {k: v for k, v in reports[0].items() if k != "file"} == {k: v for k, v in reports[1].items() if k != "file"}
    assert reports[0]["regraded"] == 2 and reports[0]["mismatches"] == []


def _results(path, capsys) -> dict:
    assert main(["evaluate", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_results_records_of_different_runs_load_together_with_datasets(runs, tmp_path, capsys):
    from sweet_agent.evaluation.report import RESULTS_SCHEMA_VERSION, results_features

    results = []
    for spec, path in runs.items():
        rec = _results(path, capsys)
        assert rec["schema"] == "colbench-results" and rec["schema_version"] == RESULTS_SCHEMA_VERSION == 1
        assert rec["task_sources"] == [spec] and rec["policies"] == ["openai:scripted-agent"]
        assert rec["agent_models"] == ["scripted-agent"] and rec["episodes"] == 2 and rec["kind"] == "backend"
        assert rec["end_reasons"]["answer"] == 2 and rec["end_reasons"]["endpoint_error"] == 0
        assert [row["model"] for row in rec["tokens_by_model"]][:1] == ["scripted-agent"]
        results.append(tmp_path / f"results-{len(results)}.json")
        results[-1].write_text(json.dumps(rec) + "\n")
    ds = _load(results, tmp_path)
    assert ds.num_rows == len(SOURCES) and ds["task_sources"] == [[s] for s in SOURCES]
    assert set(ds["schema_version"]) == {1} and [e["answer"] for e in ds["end_reasons"]] == [2] * len(SOURCES)
    # any mix with the schema's features: a file with no score (every rate null) first; an empty
    # file has no results record (sweet-agent evaluate refuses it), one whose every episode failed
    # for infrastructure reasons has one with every rate null
    failed = dict(read_trajectories(runs["embedded:test"])[0], reward=None, success=None,
                  error="endpoint_error: refused")
    failed["meta"] = dict(failed["meta"], end_reason="endpoint_error", infrastructure_failure=True, failed=True,
                          error="endpoint_error: refused")
    unscored = tmp_path / "unscored.jsonl"
    unscored.write_text(json.dumps(failed) + "\n")
    results.insert(0, tmp_path / "results-unscored.json")
    results[0].write_text(json.dumps(_results(unscored, capsys)) + "\n")
    ds = _load(results, tmp_path, features=results_features())
    assert ds.num_rows == 1 + len(SOURCES) and ds["success"][0] is None and ds["tests_passed"][0] is None
    assert ds["episodes"] == [1] + [2] * len(SOURCES) and ds["infrastructure_failures"][0] == 1
    assert set(ds.features) == set(json.loads(results[1].read_text()))


def _documented_fields() -> set[str]:
    """Backticked names in the card's field tables (first column)."""
    return set(re.findall(r"^\| `([\w.]+)`", CARD.read_text(), re.M))


def test_the_dataset_card_documents_every_field_of_both_schemas(runs, capsys):
    from sweet_agent.evaluation.report import RESULTS_SCHEMA_VERSION

    card = CARD.read_text()
    documented = _documented_fields()
    rec = read_trajectories(runs["embedded:test"])[0]
    trajectory = {*rec, *(f"task.{k}" for k in rec["task"]), *(f"meta.{k}" for k in ROLLOUT_META)}
    assert trajectory <= documented, sorted(trajectory - documented)
    results = set(_results(runs["embedded:test"], capsys))
    assert results <= documented, sorted(results - documented)
    assert f"schema version {TRAJECTORY_SCHEMA_VERSION}" in card and f"`schema_version` {RESULTS_SCHEMA_VERSION}" in card
