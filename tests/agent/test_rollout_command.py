"""The `sweet-agent rollout` command end to end (a real tiny model playing against a local-model
simulator: output, refusal to overwrite, resume, bad inputs), and its records rescored identically
by `colbench evaluate backend` and `sweet-agent evaluate --regrade`."""

from __future__ import annotations

import json

import pytest

from sweet_agent.cli import main
from sweet_agent.trajectories import read_trajectories


def test_rollout_command_end_to_end(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "cli.jsonl"
    sim = json.dumps({"model": str(tiny_model_dir), "max_new_tokens": 6})
    argv = ["rollout", "--policy", str(tiny_model_dir), "--dtype", "float32", "--simulator", "transformers",
            "--simulator-kwargs", sim, "--episodes", "2", "--k", "2", "--max-new-tokens", "8", "--max-turns", "2",
            "--seed", "3", "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "played 4 episodes" in text and "episodes        4 (2 tasks, backend)" in text
    recs = read_trajectories(out)
    assert sorted(r["meta"]["episode_id"] for r in recs) == ["0:0", "0:1", "1:0", "1:1"]
    assert all(r["meta"]["seed"] == 3 and r["meta"]["turns"] == 2 for r in recs)
    # existing output: refuse, then resume plays nothing new
    assert main(argv) == 1
    assert "--resume" in capsys.readouterr().err
    assert main(argv + ["--resume"]) == 0
    assert "played 0 episodes (4 already in" in capsys.readouterr().out
    assert len(read_trajectories(out)) == 4
    # bad inputs
    assert main(["rollout", "--policy", str(tmp_path / "nope"), "--output", str(tmp_path / "x.jsonl")]) == 1
    assert "no such local path" in capsys.readouterr().err
    assert main(argv[:-1] + ["--overwrite", "--episodes", "999", "--no-progress"]) == 1
    assert "more tasks than the source holds" in capsys.readouterr().err
    assert len(read_trajectories(out)) == 4  # a bad plan never touches the existing output


def test_rollout_records_rescore_identically_with_colbench_evaluate(tmp_path):
    """`colbench evaluate backend` (the env package's grader CLI) gives our records the same scores."""
    import re

    from colbench_gym.cli import main as colbench_main
    from colbench_gym.tasks.sources import resolve_task_source
    from sweet_agent.policies.base import SamplingParams
    from sweet_agent.policies.openai_policy import OpenAIPolicy
    from sweet_agent.rollout.collector import RolloutConfig, collect
    from tests.local_openai_server import LocalOpenAIServer

    source = resolve_task_source("embedded:test", "backend")
    by_desc = {source[i].problem_description: (i, source[i]) for i in range(6)}

    def agent(body):  # right answers for even tasks, a half-right guess for odd ones
        i, task = by_desc[body["messages"][1]["content"]]
        if i % 2 == 0:
            return "I WANT TO ANSWER:\n```python\n" + task.ground_truth + "\n```"
        name = re.search(r"def (\w+)\(", task.ground_truth).group(1)
        return f"I WANT TO ANSWER:\ndef {name}(*args):\n    return 0\n"

    out = tmp_path / "ours.jsonl"
    with LocalOpenAIServer(agent) as server:
        collect(OpenAIPolicy("scripted", base_url=server.base_url), RolloutConfig(num_tasks=6, concurrency=6,
                sampling=SamplingParams(max_new_tokens=32)), out, progress=False)
    ours = {r["meta"]["episode_id"]: r for r in read_trajectories(out)}
    assert main(["evaluate", str(out), "--regrade"]) == 0  # our own regrade agrees
    assert colbench_main(["evaluate", "backend", str(out), "--output", str(tmp_path / "graded.jsonl"),
                          "--no-progress"]) == 0
    theirs = {r["meta"]["episode_id"]: r for r in read_trajectories(tmp_path / "graded.jsonl")}
    assert sorted(ours) == sorted(theirs)
    for eid, rec in ours.items():
        assert theirs[eid]["reward"] == pytest.approx(rec["reward"]) and theirs[eid]["success"] == rec["success"]
    assert {r["success"] for r in ours.values()} == {True, False}
