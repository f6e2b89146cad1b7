"""A trajectory file with a NaN (or infinite) reward is refused, naming the line, in one line."""

from __future__ import annotations

import json

import pytest

from sweet_agent.cli import main
from sweet_agent.trajectories import TrajectoryFormatError, read_trajectories


def _record(reward) -> dict:
    return {"task": {"problem_description": "p", "ground_truth": "def f():\n    return 1\n", "test_cases": {"t": "f()"}},
            "dialogue_history": [{"role": "user", "content": "p"}, {"role": "assistant", "content": "x"}],
            "answer": "def f():\n    return 1\n", "reward": reward, "success": False}


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_reward_is_refused_with_its_line_number(tmp_path, bad):
    path = tmp_path / "t.jsonl"
    lines = [json.dumps(_record(1.0)), json.dumps(_record(0.5)).replace("0.5", bad), json.dumps(_record(0.0))]
    path.write_text("\n".join(lines) + "\n")
    assert bad in path.read_text()
    with pytest.raises(TrajectoryFormatError, match=r"t\.jsonl:2: 'reward' must be a finite number"):
        read_trajectories(path)


def test_the_cli_reports_a_nan_reward_in_one_line(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_record(1.0)) + "\n" + json.dumps(_record(0.25)).replace("0.25", "NaN") + "\n")
    assert main(["evaluate", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "t.jsonl:2" in err and "reward" in err
