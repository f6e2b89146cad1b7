"""``sweet-agent rollout --overwrite`` never replaces a good file with a run in which nothing succeeded."""

from __future__ import annotations

import json

from sweet_agent.cli import main
from sweet_agent.trajectories import read_trajectories


def _rollout(out, *extra: str) -> int:
    return main(["rollout", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0",
                 "--request-timeout", "2", "--episodes", "2", "--max-turns", "2", "--no-progress",
                 "--output", str(out), *extra])


def test_overwrite_whose_every_episode_failed_keeps_the_old_file_and_exits_non_zero(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    good = {"task": {"problem_description": "p", "ground_truth": "def f():\n    return 1\n",
                     "test_cases": {"t": "f()"}},
            "dialogue_history": [{"role": "user", "content": "p"}], "answer": "x", "reward": 1.0, "success": True}
    out.write_text(json.dumps(good) + "\n")
    before = out.read_bytes()
    status = _rollout(out, "--overwrite")  # the endpoint is unreachable: every episode fails
    err = capsys.readouterr().err
    assert status != 0
    assert out.read_bytes() == before, "the previous good file was replaced by a run of failures"
    assert "127.0.0.1:9" in err and "failed" in err and str(out) in err
    assert len(err.strip().splitlines()) <= 2  # one error line (and the note saying the file is untouched)


def test_a_fresh_run_whose_every_episode_failed_exits_non_zero(tmp_path, capsys):
    out = tmp_path / "fresh.jsonl"
    assert _rollout(out) != 0
    assert "every" in capsys.readouterr().err
    recs = read_trajectories(out, require_reward=False)  # the failures stay on disk for inspection
    assert len(recs) == 2 and all(r["error"] for r in recs)


def test_a_resume_that_only_replays_a_failure_beside_finished_episodes_exits_zero(tiny_model_dir, tmp_path, capsys):
    """A task no test can measure fails every time (task_error, no score): the resume plays it
    again and it fails again, but the file holds finished episodes, so the run is usable (exit 0)
    and says what it replayed."""
    broken = {"problem_description": "Write f(x).", "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    good = {"problem_description": "Write f(x) returning x.", "ground_truth": "def f(x):\n    return x\n",
            "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(good) + "\n" + json.dumps(broken) + "\n")
    out = tmp_path / "run.jsonl"
    argv = ["rollout", "--policy", str(tiny_model_dir), "--dtype", "float32", "--tasks", str(tasks), "--episodes", "2",
            "--max-turns", "1", "--max-new-tokens", "8", "--no-progress", "--output", str(out)]
    assert main(argv) == 0  # the last turn is taken as the answer: both are graded
    recs = {r["meta"]["task_index"]: r for r in read_trajectories(out, require_reward=False)}
    assert recs[1]["meta"]["end_reason"] == "task_error" and recs[1]["reward"] is None
    assert recs[0]["reward"] is not None
    capsys.readouterr()
    assert main(argv + ["--resume"]) == 0
    assert "1 played again after an infrastructure failure" in capsys.readouterr().out
