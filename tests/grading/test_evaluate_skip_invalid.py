"""`colbench evaluate backend` with one task whose Python does not parse: refused as a whole (one
line naming file:line) by default; ``--skip-invalid`` grades the rest and reports what it skipped."""

from __future__ import annotations

import json

from colbench_gym.cli import main

GOOD = {"problem_description": "double it", "ground_truth": "def dbl(x):\n    return 2 * x\n",
        "test_cases": {"t1": "dbl(1)", "t2": "dbl(2)"}}
BAD = {"problem_description": "broken", "ground_truth": "def broken(x:\n    return x\n", "test_cases": {"t1": "broken(1)"}}


def _write(path):
    recs = [{"task": GOOD, "answer": "def dbl(x):\n    return x + x\n"},
            {"task": BAD, "answer": "def broken(x):\n    return x\n"},
            {"task": GOOD, "answer": "def dbl(x):\n    return x\n"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_an_unparsable_task_refuses_the_file_in_one_line(tmp_path, capsys):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write(src)
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "in.jsonl:2" in err and "not valid Python" in err
    assert "--skip-invalid" in err  # the error says how to go on with the rest
    assert not out.exists()


def test_skip_invalid_grades_the_rest_and_reports_what_it_skipped(tmp_path, capsys):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write(src)
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress", "--skip-invalid"]) == 0
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["reward"] for g in graded] == [1.0, 0.0]  # lines 1 and 3, in order
    captured = capsys.readouterr()
    assert "skipped 1 invalid record" in captured.err and "in.jsonl:2" in captured.err
    assert "skipped 1 invalid record" in captured.out  # the summary says it too
