"""`sweet-agent view` reads trajectories through the one record validator (issue 37, item 6): a
NaN reward, a reward out of [0, 1] or a ``"success": "yes"`` is one error line naming file, line
and field, and no site is written. Before: the viewer read records unchecked and a NaN reward
ended in a JSON serialisation error that named neither file nor line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweet_agent.cli import main

TASK = {"problem_description": "I need tip(amount) for my cafe.",
        "ground_truth": "def tip(amount):\n    return round(amount * 0.15, 2)\n",
        "test_cases": {"test1": "tip(10)", "test2": "tip(20)"}}


def _record(sample: int, **fields) -> dict:
    answer = "```python\ndef tip(amount):\n    return 0\n```"
    rec = {"task": TASK, "dialogue_history": [{"role": "user", "content": TASK["problem_description"]},
                                              {"role": "assistant", "content": answer, "output": "I WANT TO ANSWER: " + answer}],
           "answer": answer, "reward": 0.0, "success": False, "meta": {"episode_id": f"0:{sample}", "sample": sample}}
    rec.update(fields)
    return rec


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("bad_line,field", [
    (json.dumps(_record(1, reward=0.5)).replace("0.5", "NaN"), "'reward'"),
    (json.dumps(_record(1, reward=5.0, success=True)), "'reward'"),
    (json.dumps(_record(1, reward=-3)), "'reward'"),
    (json.dumps(_record(1, success="yes")), "'success'"),
    (json.dumps(_record(1, meta={"infrastructure_failure": "no"})), "'meta.infrastructure_failure'"),
])
def test_view_refuses_a_bad_field_in_one_line_naming_file_and_line(tmp_path, capsys, bad_line, field):
    run = _write(tmp_path / "run.jsonl", [json.dumps(_record(0)), bad_line])
    site = tmp_path / "site"
    assert main(["view", str(run), "--output", str(site), "--no-tests", "--no-screenshots"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{run}:2:" in err and field in err, err
    assert not (site / "index.html").exists()


def test_view_builds_a_valid_file(tmp_path, capsys):
    run = _write(tmp_path / "run.jsonl", [json.dumps(_record(0)), json.dumps(_record(1, reward=1.0, success=True))])
    site = tmp_path / "site"
    assert main(["view", str(run), "--output", str(site), "--no-tests", "--no-screenshots"]) == 0
    assert (site / "index.html").is_file()
