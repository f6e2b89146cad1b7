"""One record schema for every run (issue 26): trajectory files written with different options
load together with the real ``datasets.load_dataset("json", ...)``, and a file written from
``to_hf_dataset(...).to_json(...)`` (meta as a JSON string) is read back by ``sweet-agent evaluate``."""

from __future__ import annotations

import json
import re

import pytest

from sweet_agent.policies.base import SamplingParams
from sweet_agent.policies.exploration import ExplorationConfig, ExploringPolicy
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, collect
from sweet_agent.trajectories import ROLLOUT_META, read_trajectories, to_hf_dataset
from tests.reliability.fault_server import FaultServer

datasets = pytest.importorskip("datasets")


def _agent(body):
    """An endpoint agent: answers at once with a function that runs (so grade_error is empty),
    except on task 1, whose request is refused (HTTP 500: a failed record in the same file)."""
    first = body["messages"][1]["content"]
    if "TASK-ONE" in first:
        raise RuntimeError("refused")
    m = re.search(r"([a-z_]+)\(", first)
    name = m.group(1) if m else "f"
    return f"I WANT TO ANSWER:\n```python\ndef {name}(*args, **kwargs):\n    return None\n```"


def _endpoint_run(tmp_path):
    from colbench_gym.tasks.sources import resolve_task_source

    tasks = [resolve_task_source("embedded:test", "backend")[i].to_record() for i in range(3)]
    tasks[1]["problem_description"] += " TASK-ONE"
    with FaultServer(_agent) as server:
        policy = OpenAIPolicy("scripted-agent", base_url=server.base_url, max_retries=0)
        cfg = RolloutConfig(tasks=tasks, simulator="offline", num_tasks=3, max_turns=2, seed=3,
                            sampling=SamplingParams(max_new_tokens=64, temperature=0.0), concurrency=2)
        collect(policy, cfg, tmp_path / "endpoint.jsonl", progress=False)
    return tmp_path / "endpoint.jsonl"


def _explored_run(tiny_policy, tmp_path):
    policy = ExploringPolicy(tiny_policy, ExplorationConfig(rate=1.0, turns=1))
    cfg = RolloutConfig(tasks="embedded:test", simulator="offline", num_tasks=2, max_turns=2, seed=1,
                        sampling=SamplingParams(max_new_tokens=8, temperature=1.0), concurrency=2,
                        system_prompt="Ask, then answer.")
    collect(policy, cfg, tmp_path / "explored.jsonl", progress=False)
    return tmp_path / "explored.jsonl"


def test_runs_with_different_options_load_together_with_datasets(tiny_policy, tmp_path):
    explored, endpoint = _explored_run(tiny_policy, tmp_path), _endpoint_run(tmp_path)
    a = read_trajectories(explored)
    b = sorted(read_trajectories(endpoint, require_reward=False), key=lambda r: r["meta"]["episode_id"])
    # the two runs really differ where the old records' keys and types did
    assert all(r["meta"]["exploration"]["prefilled"] == 1 for r in a)
    assert all(r["meta"]["exploration"]["prefilled"] == 0 for r in b)
    assert [r["error"] != "" for r in b] == [False, True, False]
    assert b[1]["meta"]["end_reason"] == "endpoint_error" and b[1]["reward"] is None
    assert {r["meta"]["grade_error"] for r in b if not r["error"]} == {""}
    for rec in a + b:  # every key of the one schema, in order, never null
        assert list(rec["meta"]) == list(ROLLOUT_META)
        assert all(v is not None for v in rec["meta"].values())
    for files in ([explored, endpoint], [endpoint, explored]):
        ds = datasets.load_dataset("json", data_files=[str(f) for f in files], split="train",
                                   cache_dir=str(tmp_path / "hf-cache"))
        assert ds.num_rows == 5
        assert sorted(ds[i]["meta"]["episode_id"] for i in range(5)) == ["0:0", "0:0", "1:0", "1:0", "2:0"]


def test_evaluate_reads_a_file_written_from_to_hf_dataset(tmp_path, capsys):
    from sweet_agent.cli import main

    path = _endpoint_run(tmp_path)
    exported = tmp_path / "exported.jsonl"
    to_hf_dataset(path).to_json(str(exported))
    row = json.loads(exported.read_text().splitlines()[0])
    assert isinstance(row["meta"], str)  # what users get: meta as a JSON string
    assert main(["evaluate", str(path), "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["evaluate", str(exported), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in again.items() if k != "file"} == {k: v for k, v in direct.items() if k != "file"}
    assert direct["episodes"] == 3 and direct["infrastructure_failures"] == 1


def test_a_meta_string_that_is_not_an_object_is_one_error_line(tmp_path, capsys):
    from sweet_agent.cli import main

    rec = {"task": {"problem_description": "p", "ground_truth": "def f():\n    return 1\n", "test_cases": {"t": "f()"}},
           "dialogue_history": [{"role": "user", "content": "p"}], "answer": "", "reward": 0.0}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "meta": "not json"}) + "\n")
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{path}:2" in err and "'meta'" in err
