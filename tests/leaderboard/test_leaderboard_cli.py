"""``sweet-agent leaderboard`` through the CLI: what each kind of input gives in the table, the
paper's reference rows, the three outputs, and the one-line refusal of an input in no schema."""

from __future__ import annotations

import json

from sweet_agent.cli import main
from sweet_agent.evaluation.metrics import Estimate, episode_metrics, hierarchical_bootstrap, seed_values
from sweet_agent.leaderboard.reference import PAPER_RESULTS
from sweet_agent.leaderboard.rows import Row, rows_document
from sweet_agent.trajectories import read_trajectories


def _run(capsys, *args: str) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    status = main(["leaderboard", *args])
    out, err = capsys.readouterr()
    return status, out, [ln for ln in err.splitlines() if ln.strip()]


def _table_rows(markdown: str) -> list[list[str]]:
    """The data rows of every markdown table (header and rule lines left out)."""
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in markdown.splitlines() if ln.startswith("| ")]
    return [r for r in rows if r[0] != "method"]


def test_submission_results_and_reference_rows(submission, capsys):
    status, out, err = _run(capsys, str(submission), str(submission / "results.json"))
    assert status == 0 and err == []
    rows = _table_rows(out)
    # the paper's rows, marked, with exactly the published numbers and nothing else filled in
    backend_refs = [r for r in rows if r[2] == "ColBench backend test (paper)"]
    frontend_refs = [r for r in rows if r[2] == "ColBench frontend test (paper)"]
    assert [r[0] for r in backend_refs] == [f"{m} (reference)" for m in PAPER_RESULTS]
    assert [r[5] for r in backend_refs] == [f"{s:.1f}" for s, _ in PAPER_RESULTS.values()]
    assert [r[6] for r in frontend_refs] == [f"{w:.1f}" for _, w in PAPER_RESULTS.values()]
    assert all(r[3] == r[4] == r[6] == r[7] == "" for r in backend_refs)  # no n, seeds, % tests, turns
    assert "not run here" in out.split("## Backend")[0]
    # the submission: one row over both seeds, its interval the hierarchical bootstrap of its trajectories
    runs = {f: {(e.task_id, e.sample): e for e in (episode_metrics(r, i) for i, r in
                                                    enumerate(read_trajectories(submission / f)))}
            for f in ("s0.jsonl", "s1.jsonl")}
    ci = hierarchical_bootstrap(seed_values(runs, "success"))
    sub = next(r for r in rows if r[0] == "scripted half-oracle")
    assert sub[1:6] == ["scripted-agent", "collab:test", "12", "2",
                        f"{100 * ci.mean:.1f} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"]
    assert ci.mean == 0.5 and ci.low < 0.5 < ci.high
    assert sub[7] == "2.00" and sub[9].startswith(f"submission {submission.name} (the test suite, 0cc3478")
    # the results records: one row each, their own numbers, no interval
    plain = [r for r in rows if r[0] == "openai:scripted-agent"]
    assert [(r[5], r[9]) for r in plain] == [("50.0", "s0.jsonl"), ("50.0", "s1.jsonl")]
    # grouped: the reference rows first, then the task sources
    assert rows.index(backend_refs[-1]) < rows.index(sub) < rows.index(plain[0])


def test_outputs_and_rows_file_round_trip(submission, tmp_path, capsys):
    md, page, rows_file = tmp_path / "t.md", tmp_path / "t.html", tmp_path / "rows.json"
    status, out, _ = _run(capsys, str(submission), "--out", str(md), "--html", str(page), "--json", str(rows_file))
    assert status == 0 and out == ""  # --out: written, not printed
    doc = json.loads(rows_file.read_text())
    assert doc["schema"] == "colbench-leaderboard" and [r["method"] for r in doc["rows"]] == ["scripted half-oracle"]
    assert doc["rows"][0]["success"]["mean"] == 0.5 and doc["rows"][0]["seeds"] == 2
    html = page.read_text()
    assert html.count('<tr class="reference">') == 2 * len(PAPER_RESULTS)
    assert "<td>scripted half-oracle</td>" in html and "answers the even tasks with their reference" in html
    # the rows file is an input: the same table rows (the reference rows added once, not twice)
    status, again, _ = _run(capsys, str(rows_file))
    assert status == 0 and _table_rows(again) == _table_rows(md.read_text())


def test_no_reference_leaves_the_papers_rows_out(submission, capsys):
    _, out, _ = _run(capsys, str(submission / "results.json"), "--no-reference")
    rows = _table_rows(out)
    assert [r[0] for r in rows] == ["openai:scripted-agent"] * 2 and "(reference)" not in out
    assert "## Frontend" not in out  # a kind without rows has no table


def test_rows_are_grouped_by_task_source(tmp_path, capsys):
    def row(method, source, kind="backend"):
        return Row(method, "m", source, kind, episodes=10, seeds=1, success=Estimate(0.1, 0.0, 0.3, 10))

    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows_document([row("a", "collab:test"), row("b", "embedded:test"),
                                              row("c", "collab:test"), row("d", "generated:test", "frontend"),
                                              row("e", "echo:test", "echo")])))
    _, out, _ = _run(capsys, str(path), "--no-reference")
    assert [(r[0], r[2]) for r in _table_rows(out)] == [("a", "collab:test"), ("c", "collab:test"),
                                                        ("b", "embedded:test"), ("d", "generated:test"),
                                                        ("e", "echo:test")]
    assert "## echo runs" in out  # a kind of no section of its own still shows, with every rate
    assert _table_rows(out)[0][5] == "10.0 [0.0, 30.0]"
    assert out.index("## Backend") < out.index("| b |") < out.index("## Frontend") < out.index("| d |")


def _refusal(capsys, tmp_path, *args: str) -> str:
    out_file = tmp_path / "never.md"
    status, out, err = _run(capsys, *args, "--out", str(out_file))
    assert status == 2 and out == "" and len(err) == 1 and not out_file.exists()
    assert err[0].startswith("sweet-agent leaderboard: error: ")
    return err[0].split("error: ", 1)[1]


def test_an_input_in_no_schema_is_refused_naming_file_and_problem(submission, tmp_path, capsys):
    results = submission / "results.json"
    recs = [json.loads(ln) for ln in results.read_text().splitlines()]
    bad = tmp_path / "bad.json"
    bad.write_text("".join(json.dumps(r) + "\n" for r in [recs[0], {**recs[1], "success": "high"}]))
    assert _refusal(capsys, tmp_path, str(results), str(bad)) == \
        f'{bad}:2: success: expected a finite number or null, got "high"'
    bad.write_text(json.dumps({k: v for k, v in recs[0].items() if k != "cost_usd"}))
    assert _refusal(capsys, tmp_path, str(bad)) == f"{bad}: missing key(s) cost_usd"
    bad.write_text(json.dumps({**recs[0], "schema": "something-else"}))
    assert _refusal(capsys, tmp_path, str(bad)).startswith(f"{bad}: 'schema' is 'something-else', not 'colbench-results'")
    bad.write_text('{"schema": "colbench-results"\n')
    assert _refusal(capsys, tmp_path, str(bad)).startswith(f"{bad}:1: not JSON")
    bad.write_text(json.dumps(rows_document([Row("x", "m", "collab:test", "backend",
                                                 success=Estimate(0.9, 0.1, 0.2, 3))])))
    assert _refusal(capsys, tmp_path, str(bad)) == \
        f"{bad}: rows[0].success: the interval [0.1, 0.2] must hold the mean 0.9 (or both bounds be null)"
    assert _refusal(capsys, tmp_path, str(tmp_path / "nope.json")).startswith(f"{tmp_path / 'nope.json'}: no such file")


def test_a_failing_submission_is_refused(submission, tmp_path, capsys):
    recs = (submission / "s0.jsonl").read_text().splitlines()
    (submission / "s0.jsonl").write_text("\n".join(recs[:-1]) + "\n")
    message = _refusal(capsys, tmp_path, str(submission))
    assert message.startswith(f"submission {submission}: s0.jsonl: 1 episode(s) of collab:test tasks 0..5 x 1 "
                              "sample(s) missing")
    assert message.endswith(f"more: `sweet-agent submission check {submission}`)")
