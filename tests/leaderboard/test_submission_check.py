"""``sweet-agent submission check DIR`` through the CLI: a real submission passes; each way a
submission can be wrong is refused with a line naming it (exit status 1), every number recomputed
from the trajectories."""

from __future__ import annotations

import json
from pathlib import Path

from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.cli import main
from tests.leaderboard.conftest import SOURCE, evaluate_into


def _check(folder: Path, capsys) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    status = main(["submission", "check", str(folder)])
    out, err = capsys.readouterr()
    return status, out, [ln for ln in err.splitlines() if ln.strip()]


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _results(folder: Path) -> list[dict]:
    return _lines(folder / "results.json")


def test_a_real_submission_passes(submission, capsys):
    status, out, err = _check(submission, capsys)
    assert status == 0 and err == []
    assert out.strip() == (f"{submission}: ok — scripted half-oracle (scripted-agent) on {SOURCE}: "
                           "12 episodes, 2 file(s)")
    # the fixture is what it says: half of the episodes solved, by the real grader
    assert [r["success"] for r in _results(submission)] == [0.5, 0.5]


def test_results_that_disagree_with_the_trajectories_are_refused(submission, capsys):
    results = _results(submission)
    results[1]["success"] = 0.75
    results[1]["mean_turns"] = 1.0
    results[0]["regraded"] = 6
    _write(submission / "results.json", results)
    status, _, err = _check(submission, capsys)
    assert status == 1
    assert err == [f"sweet-agent submission check: error: {submission}: results.json (s0.jsonl): made with --regrade; "
                   "grade the file first (`colbench evaluate backend IN --output OUT`), submit the graded file and its "
                   "`sweet-agent evaluate --json`",
                   f"sweet-agent submission check: error: {submission}: results.json (s1.jsonl): success is 0.75, "
                   "the trajectories give 0.5",
                   f"sweet-agent submission check: error: {submission}: results.json (s1.jsonl): mean_turns is 1.0, "
                   "the trajectories give 2.0"]


def test_a_record_failing_the_strict_validator_is_refused(submission, capsys):
    recs = _lines(submission / "s0.jsonl")
    recs[2]["reward"] = 5.0
    _write(submission / "s0.jsonl", recs)
    status, _, err = _check(submission, capsys)
    assert status == 1 and len(err) == 1
    assert "s0.jsonl:3: 'reward' must be a finite number in [0, 1]" in err[0]


def test_an_unknown_task_source_is_refused(submission, capsys):
    sub = json.loads((submission / "submission.json").read_text())
    (submission / "submission.json").write_text(json.dumps({**sub, "task_source": "collab:tset"}))
    status, _, err = _check(submission, capsys)
    assert status == 1 and len(err) == 1
    assert "submission.json: task source 'collab:tset' is unknown; one of " in err[0] and "collab:test" in err[0]


def test_a_generated_source_needs_its_task_range(submission, capsys):
    sub = json.loads((submission / "submission.json").read_text())
    del sub["task_count"]
    (submission / "submission.json").write_text(json.dumps(sub))
    status, _, err = _check(submission, capsys)
    assert status == 1 and "collab:test is generated (unbounded): say which tasks were played" in err[0]


def test_duplicated_episodes_are_refused(submission, capsys, monkeypatch):
    recs = _lines(submission / "s0.jsonl")
    _write(submission / "s0.jsonl", [*recs, recs[3]])
    evaluate_into(submission, "s0.jsonl", "s1.jsonl", capsys=capsys, monkeypatch=monkeypatch)  # results agree
    status, _, err = _check(submission, capsys)
    assert status == 1
    assert [e.split(f"{submission}: ", 1)[1] for e in err] == [f"s0.jsonl: episode {recs[3]['meta']['episode_id']} "
                                                               "appears 2 times (one record per task and sample)"]


def test_missing_and_extra_episodes_are_refused(submission, capsys, monkeypatch):
    recs = _lines(submission / "s1.jsonl")
    _write(submission / "s1.jsonl", [r for r in recs if r["meta"]["episode_id"] not in ("1:0", "4:0")])
    sub = json.loads((submission / "submission.json").read_text())
    (submission / "submission.json").write_text(json.dumps({**sub, "task_count": 5}))
    evaluate_into(submission, "s0.jsonl", "s1.jsonl", capsys=capsys, monkeypatch=monkeypatch)
    status, _, err = _check(submission, capsys)
    assert status == 1
    assert [e.split(f"{submission}: ", 1)[1] for e in err] == [
        "s0.jsonl: 1 episode(s) outside collab:test tasks 0..4 x 1 sample(s) (5:0)",
        "s1.jsonl: 2 episode(s) of collab:test tasks 0..4 x 1 sample(s) missing (1:0, 4:0): finish the run with --resume",
        "s1.jsonl: 1 episode(s) outside collab:test tasks 0..4 x 1 sample(s) (5:0)"]


def test_a_task_that_is_not_the_sources_is_refused(submission, capsys, monkeypatch):
    recs = _lines(submission / "s0.jsonl")
    other = resolve_task_source("collab:train", "backend")[0].to_record()
    recs[0]["task"]["problem_description"] = other["problem_description"]
    _write(submission / "s0.jsonl", recs)
    evaluate_into(submission, "s0.jsonl", "s1.jsonl", capsys=capsys, monkeypatch=monkeypatch)
    status, _, err = _check(submission, capsys)
    assert status == 1
    index = recs[0]["meta"]["task_index"]
    assert [e.split(f"{submission}: ", 1)[1] for e in err] == [f"s0.jsonl:1: episode {index}:0's task is not task "
                                                               f"{index} of collab:test"]


def test_infrastructure_failures_counted_as_scores_are_refused(submission, capsys):
    recs = _lines(submission / "s0.jsonl")
    recs[1]["meta"].update(end_reason="grading_error", infrastructure_failure=True, failed=True,
                           error="GradingError: the sandbox died")
    _write(submission / "s0.jsonl", recs)  # still scored, and results.json still counts it
    status, _, err = _check(submission, capsys)
    assert status == 1
    tails = [e.split(f"{submission}: ", 1)[1] for e in err]
    assert tails[0] == (f"s0.jsonl:2: episode {recs[1]['meta']['episode_id']} is an infrastructure failure (grading_error) counted as a score "
                        f"(reward {recs[1]['reward']}); it has none: play it again (`sweet-agent rollout --resume`)")
    assert tails[1] == ("results.json (s0.jsonl): counts 1 infrastructure failure(s) as scores (declared "
                        "infrastructure_failures 0, the trajectories hold 1)")


def test_a_bad_submission_json_and_an_unreported_file_are_refused(submission, capsys):
    sub = json.loads((submission / "submission.json").read_text())
    del sub["who"]
    (submission / "submission.json").write_text(json.dumps({**sub, "commit": "main", "colour": "blue"}))
    (submission / "extra.jsonl").write_text((submission / "s0.jsonl").read_text())
    status, _, err = _check(submission, capsys)
    assert status == 1
    assert [e.split(f"{submission}: ", 1)[1] for e in err] == [
        "submission.json: unknown field 'colour' (fields: schema, schema_version, method, model, who, commit, "
        "task_source, date, notes, task_start, task_count, samples)",
        "submission.json: missing field 'who'",
        "extra.jsonl: a trajectory file results.json does not report"]


def test_a_results_file_that_is_not_results_records_is_refused(submission, capsys):
    results = _results(submission)
    del results[0]["end_reasons"]["answer"]
    _write(submission / "results.json", results)
    status, _, err = _check(submission, capsys)
    assert status == 1
    assert [e.split(f"{submission}: ", 1)[1] for e in err] == ["results.json:1: end_reasons: missing key(s) answer"]


def test_a_missing_folder_is_refused_before_any_work(tmp_path, capsys):
    status, out, err = _check(tmp_path / "nowhere", capsys)
    assert status == 2 and out == ""
    assert err == [f"sweet-agent submission check: error: {tmp_path / 'nowhere'}: no such submission folder (a folder "
                   "with submission.json, results.json and its trajectory files: docs/leaderboard.md)"]
