"""The report of `sweet-agent evaluate` (:mod:`sweet_agent.evaluation.report`): the paper's metrics by
hand, `--regrade`, win rates against a reference run, the command's output and exit statuses.
(The rollout command that writes such files is tested in tests/agent/test_rollout_command.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweet_agent.cli import main
from sweet_agent.evaluation.metrics import episode_metrics
from sweet_agent.evaluation.report import summarize, win_rate
from sweet_agent.trajectories import load_paper_offline, write_jsonl_atomic

#: Six backend episodes in the paper's offline format, shared with the trajectory tests (and read
#: by scripts/gpu_proof.py), so it stays beside them.
PAPER = Path(__file__).parents[1] / "agent" / "fixtures" / "paper_offline_sample.jsonl"


def _front(desc: str, sim: float) -> dict:
    return {"task": {"problem_description": desc, "ground_truth": "<html><body>x</body></html>"},
            "dialogue_history": [{"role": "user", "content": desc}], "answer": "<html></html>", "reward": sim}


def test_backend_metrics_by_hand():
    recs = load_paper_offline(PAPER)  # rewards 1.0, 1.0, 0.5, 0.0, 0.7, 0.0
    s = summarize(recs)
    assert s.kind == "backend" and s.episodes == 6 and s.tasks == 2
    assert s.success == pytest.approx(2 / 6)
    assert s.tests_passed == pytest.approx((1 + 1 + 0.5 + 0 + 0.7 + 0) / 6)
    assert s.mean_turns == pytest.approx(11 / 6)


def test_regrade_reproduces_stored_scores_and_catches_tampering():
    recs = load_paper_offline(PAPER)
    s = summarize(recs, regrade=True)
    assert s.regraded == 6 and s.mismatches == []
    recs[1]["reward"] = 0.9  # a record that lies about its score
    s = summarize(recs, regrade=True)
    assert len(s.mismatches) == 1 and "regraded 1.0000" in s.mismatches[0]
    assert s.tests_passed == pytest.approx((1 + 1 + 0.5 + 0 + 0.7 + 0) / 6)  # regraded numbers are reported


def test_a_regrade_that_measures_nothing_is_no_score():
    """A task whose reference cannot run (no test has a usable result: task_error) scored 1.0 in
    its stored record: the regrade neither reports it as a mismatch nor averages a 0 for it — it
    is counted with the infrastructure failures, out of the rates."""
    recs = load_paper_offline(PAPER)[:2]
    broken = json.loads(json.dumps(recs[0]))
    broken["task"]["ground_truth"] = "import numpy_is_not_here\n\n" + broken["task"]["ground_truth"]
    s = summarize([recs[0], broken, recs[1]], regrade=True)
    assert s.regraded == 2 and s.mismatches == [] and s.regrade_failures == {"task_error": 1}
    assert s.infrastructure_failures == 1 and s.success == pytest.approx(1.0) and s.tests_passed == pytest.approx(1.0)
    assert s.success_all == pytest.approx(2 / 3)
    kept = [episode_metrics(r) for r in recs]  # every rate is over the scored episodes only
    assert s.mean_turns == pytest.approx(sum(e.turns for e in kept) / 2) and s.tasks == len({e.task_id for e in kept})


def test_win_rate_leaves_out_infrastructure_failures_of_either_side():
    ours = [_front("a", 0.9), _front("b", 0.5)]
    failed = {**_front("a", 1.0), "end_reason": "rendering_error", "infrastructure_failure": True}  # evaluate's verdict
    ref = [failed, _front("b", 0.4)]
    assert win_rate(ours, ref) == (1.0, 1)  # task a has no reference score: only b is compared


def test_frontend_similarity_and_win_rate():
    ours = [_front("a", 0.9), _front("a", 0.7), _front("b", 0.5), _front("c", 0.6)]
    ref = [_front("a", 0.75), _front("b", 0.8), _front("c", 0.6), _front("d", 1.0)]
    s = summarize(ours, reference=ref)
    assert s.kind == "frontend" and s.similarity == pytest.approx(0.675)
    # a: 0.8 > 0.75 win; b: 0.5 < 0.8 loss; c: tie -> 1/2; d: not in ours
    assert s.win_rate == pytest.approx(1.5 / 3) and s.compared_tasks == 3
    assert win_rate(ours, [_front("z", 1.0)]) == (None, 0)


def test_evaluate_command(tmp_path, capsys):
    assert main(["evaluate", str(PAPER)]) == 0
    out = capsys.readouterr().out
    assert "success         33.3%" in out and "tests passed    53.3%" in out
    assert main(["evaluate", str(PAPER), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["episodes"] == 6 and data["success"] == pytest.approx(1 / 3)
    bad = load_paper_offline(PAPER)
    bad[0]["reward"] = 0.1
    write_jsonl_atomic(tmp_path / "bad.jsonl", bad)
    assert main(["evaluate", str(tmp_path / "bad.jsonl"), "--regrade"]) == 1  # stored scores disagree
    assert main(["evaluate", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such trajectory file" in capsys.readouterr().err
