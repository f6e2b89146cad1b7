"""`sweet-agent evaluate` trusts no field it would have to coerce (issue 37, item 6).

Every reader of trajectory and result files goes through one validator
(:func:`colbench_gym.tasks.records.check_trajectory_record` / ``check_record_fields``): rewards are
finite numbers in [0, 1] or null, ``success`` and the infrastructure flags JSON booleans, counts
whole numbers >= 0. A record that breaks one is one error line naming file, line and field, and no
report is printed from it. Before: reward 5.0 read "tests passed 500.0%", reward -3 was averaged,
``"success": "yes"`` counted as a success, ``meta.infrastructure_failure: "no"`` dropped the record
as an infrastructure failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweet_agent.cli import main

TASK = {"problem_description": "double it", "ground_truth": "def dbl(x):\n    return 2 * x\n",
        "test_cases": {"t1": "dbl(1)", "t2": "dbl(2)"}}


def record(**fields) -> dict:
    meta = fields.pop("meta", {"episode_id": "0:0", "end_reason": "answer", "infrastructure_failure": False})
    rec = {"task": TASK, "dialogue_history": [{"role": "user", "content": "double it"},
                                              {"role": "assistant", "content": "def dbl(x): return x + x"}],
           "answer": "def dbl(x):\n    return x + x\n", "reward": 0.5, "success": False, "meta": meta}
    rec.update(fields)
    return rec


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


GOOD = record(reward=1.0, success=True)

# (the bad record's fields, the field the error must name): each was read as a number or a flag before
BAD = {
    "reward 5.0": ({"reward": 5.0, "success": True}, "'reward'"),
    "reward -3": ({"reward": -3}, "'reward'"),
    "reward true": ({"reward": True}, "'reward'"),
    "reward a string": ({"reward": "1.0"}, "'reward'"),
    "success yes": ({"success": "yes"}, "'success'"),
    "success 1": ({"success": 1}, "'success'"),
    "meta.infrastructure_failure no": ({"meta": {"end_reason": "answer", "infrastructure_failure": "no"}},
                                       "'meta.infrastructure_failure'"),
    "meta.failed 0": ({"meta": {"failed": 0}}, "'meta.failed'"),
    "infrastructure_failure false (a string)": ({"infrastructure_failure": "false"}, "'infrastructure_failure'"),
    "meta.end_reason a number": ({"meta": {"end_reason": 7}}, "'meta.end_reason'"),
    "tests_passed -1": ({"tests_passed": -1, "tests_total": 2}, "'tests_passed'"),
    "tests_passed > tests_total": ({"tests_passed": 3, "tests_total": 2}, "'tests_passed' (3) exceeds 'tests_total'"),
    "meta.tests_passed > tests_total": ({"meta": {"tests_passed": 9, "tests_total": 2}}, "'meta.tests_passed'"),
    "meta.wall_time_s -1": ({"meta": {"wall_time_s": -1.0}}, "'meta.wall_time_s'"),
    "meta.agent_usage negative": ({"meta": {"agent_usage": {"prompt_tokens": -5}}}, "'meta.agent_usage'"),
    "meta.sample a string": ({"meta": {"sample": "0"}}, "'meta.sample'"),
    "similarity 1.5": ({"similarity": 1.5}, "'similarity'"),
}


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("as_json", [False, True])
def test_evaluate_refuses_a_field_of_the_wrong_type_or_range_in_one_line(tmp_path, capsys, name, as_json):
    fields, field = BAD[name]
    path = write(tmp_path / "run.jsonl", [GOOD, record(**fields), GOOD])
    assert main(["evaluate", str(path), *(["--json"] if as_json else [])]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("sweet-agent evaluate: error: ") and f"{path}:2:" in err and field in err, err
    assert captured.out == ""  # no report built on it (no "tests passed 500.0%")


def test_the_reference_run_is_checked_too(tmp_path, capsys):
    ours = write(tmp_path / "ours.jsonl", [GOOD])
    ref = write(tmp_path / "ref.jsonl", [GOOD, record(reward=3.0)])
    assert main(["evaluate", str(ours), "--reference", str(ref)]) == 2
    err = capsys.readouterr().err
    assert f"{ref}:2:" in err and "'reward'" in err


def test_meta_as_a_json_string_is_checked_after_it_is_parsed(tmp_path, capsys):
    bad = record()
    bad["meta"] = json.dumps({"infrastructure_failure": "no"})
    path = write(tmp_path / "run.jsonl", [GOOD, bad])
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:" in err and "'meta.infrastructure_failure'" in err


def test_valid_flags_still_count_as_they_say(tmp_path, capsys):
    """The rule, not just refusals: a real infrastructure failure is left out, a real success counts."""
    infra = record(reward=None, success=None, error="EndpointError: refused",
                   meta={"end_reason": "endpoint_error", "infrastructure_failure": True})
    path = write(tmp_path / "run.jsonl", [GOOD, record(reward=0.0, success=False), infra])
    assert main(["evaluate", str(path), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["episodes"] == 3 and s["infrastructure_failures"] == 1
    assert s["success"] == pytest.approx(0.5) and s["tests_passed"] == pytest.approx(0.5)


def test_an_empty_file_is_refused_not_zero_percent(tmp_path, capsys):
    """No episodes is bad input, not a report: one error line naming the file, status 2, no rate
    (a 0 % would read as an agent that failed everything); the other files are still reported."""
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    for extra in ([], ["--json"]):
        assert main(["evaluate", str(path), *extra]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.strip() == (f"sweet-agent evaluate: error: no episodes in {path}: pass a trajectory "
                                        "file that `sweet-agent rollout` wrote into (an interrupted run continues "
                                        "with --resume)")
    good = write(tmp_path / "good.jsonl", [GOOD])
    assert main(["evaluate", str(good), str(path)]) == 2
    captured = capsys.readouterr()
    assert f"== {good}" in captured.out and "success         100.0%" in captured.out
    assert f"no episodes in {path}" in captured.err and str(good) not in captured.err


def test_a_record_built_in_memory_is_checked_by_the_metrics_too():
    """Code that measures records without reading a file (the learning benchmark, the viewer's
    summaries) gets the same refusal, never a coerced number."""
    from sweet_agent.evaluation.metrics import episode_metrics
    from sweet_agent.trajectories import TrajectoryFormatError

    with pytest.raises(ValueError, match="'success' must be true or false"):
        episode_metrics(record(success="yes"))
    with pytest.raises(ValueError, match="'reward' must be a finite number in"):
        episode_metrics(record(reward=float("nan")))
    assert issubclass(TrajectoryFormatError, ValueError)
    assert episode_metrics(GOOD).success == 1.0


def _infra(reason: str, error: str) -> dict:
    return record(reward=None, success=None, error=error,
                  meta={"episode_id": reason, "end_reason": reason, "infrastructure_failure": True})


@pytest.mark.parametrize("regrade", [[], ["--regrade"]])
def test_all_infrastructure_failures_never_suggest_regrading(tmp_path, capsys, regrade):
    """Every episode failed, not by the agent (the end-reason table): --regrade leaves those out
    before it grades, so it cannot score them; the report says to play them again instead."""
    path = write(tmp_path / "run.jsonl", [_infra("endpoint_error", "EndpointError: refused"),
                                          _infra("grading_error", "grading_error: internal grading error")])
    assert main(["evaluate", str(path), *regrade]) == 0
    out = capsys.readouterr().out
    assert "success         n/a" in out and "regraded" not in out  # what --regrade really does with them
    assert "pass --regrade" not in out
    assert "no score: all 2 episodes failed for infrastructure reasons, and regrading cannot score them" in out
    assert "`sweet-agent rollout --resume`" in out
    # an ungraded answer the agent is accountable for (the release's rollouts) is what --regrade is for
    ungraded = write(tmp_path / "ungraded.jsonl", [record(reward=None, success=None), _infra("endpoint_error", "x")])
    assert main(["evaluate", str(ungraded)]) == 0
    out = capsys.readouterr().out
    assert "no stored rewards: pass --regrade" in out and "regrading cannot" not in out
