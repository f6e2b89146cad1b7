"""`colbench evaluate backend|frontend` read their input through the one record validator and say
plainly when there is nothing to rate (issue 37, item 6).

- a record whose flags or scores have the wrong type or range (``meta.infrastructure_failure:
  "no"``, ``"success": "yes"``, a reward of 5) is one ``IN:LINE`` error naming the field
  (``--skip-invalid`` lists it and grades the rest);
- a line that is not a JSON object is a damaged file, which ``--skip-invalid`` does not pass
  over: the error no longer suggests it;
- an empty file reports "no episodes", and a file whose every record failed for infrastructure
  reasons "n/a", never a success rate of 0.0 %.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colbench_gym.cli import main

TASK = {"problem_description": "double it", "ground_truth": "def dbl(x):\n    return 2 * x\n",
        "test_cases": {"t1": "dbl(1)", "t2": "dbl(2)"}}
FRONT = {"problem_description": "a page", "ground_truth": "<html><body><h1>Hi</h1></body></html>"}


def _rec(**fields) -> dict:
    return {"task": TASK, "answer": "def dbl(x):\n    return x + x\n", **fields}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize("bad,field", [
    (_rec(meta={"infrastructure_failure": "no"}), "'meta.infrastructure_failure'"),
    (_rec(meta={"end_reason": ["endpoint_error"]}), "'meta.end_reason'"),
    (_rec(success="yes"), "'success'"),
    (_rec(reward=5.0), "'reward'"),
    (_rec(infrastructure_failure=1), "'infrastructure_failure'"),
])
def test_a_bad_field_refuses_the_file_in_one_line_and_skip_invalid_skips_it(tmp_path, capsys, bad, field):
    src, out = _write(tmp_path / "in.jsonl", [json.dumps(_rec()), json.dumps(bad), json.dumps(_rec())]), tmp_path / "o.jsonl"
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{src}:2:" in err and field in err, err
    assert "--skip-invalid" in err and not out.exists()
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress", "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    assert f"{src}:2:" in captured.err and field in captured.err and "skipped 1 invalid record" in captured.out
    assert [json.loads(line)["reward"] for line in out.read_text().splitlines()] == [1.0, 1.0]


@pytest.mark.parametrize("damage", ["{not json", '["a list"]'])
@pytest.mark.parametrize("skip", [False, True])
def test_a_damaged_line_does_not_suggest_skip_invalid(tmp_path, capsys, damage, skip):
    src, out = _write(tmp_path / "in.jsonl", [json.dumps(_rec()), damage, json.dumps(_rec())]), tmp_path / "o.jsonl"
    args = ["evaluate", "backend", str(src), "-o", str(out), "--no-progress", *(["--skip-invalid"] if skip else [])]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{src}:2:" in err, err
    assert "pass --skip-invalid" not in err and "damaged" in err, err
    assert not out.exists()


def test_an_empty_file_reports_no_episodes(tmp_path, capsys):
    """No records is bad input, not a report: one error line naming the file, status 2, nothing
    written and no rate (a 0.0 % would read as an agent that failed everything)."""
    src, out = _write(tmp_path / "in.jsonl", []), tmp_path / "o.jsonl"
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "%" not in captured.err
    assert captured.err.strip() == (f"colbench evaluate backend: error: no episodes in {src}: pass a trajectory "
                                    "JSONL with one {task, answer} record per line")
    assert not out.exists()


def test_a_file_of_skipped_records_only_reports_no_episodes(tmp_path, capsys):
    src, out = _write(tmp_path / "in.jsonl", [json.dumps(_rec(success="yes"))]), tmp_path / "o.jsonl"
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress", "--skip-invalid"]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines()[-1] == (f"colbench evaluate backend: error: no episodes in {src}: every record "
                                             "was invalid and skipped (listed above)")
    assert "0.0%" not in captured.out and not out.exists()


@pytest.mark.parametrize("line,where", [
    ('{"task": {"problem_description": "x"}, "answer":', "Expecting value at column 49"),  # cut short at its end
    ('{"task": {"problem_description": "é"}, "answer": x}', "Expecting value at column 50"),  # é: one character
    ('{"task": 1,, "answer": "x"}', "Expecting property name enclosed in double quotes at column 12"),
])
def test_a_malformed_line_names_its_line_and_column(tmp_path, capsys, line, where):
    """The column is where the line goes wrong, counted in characters from 1 (before, a line cut
    short at its end was reported at column 1: json saw the line's newline as line 2)."""
    out = tmp_path / "o.jsonl"
    for kind, good in (("backend", _rec()), ("frontend", {"task": FRONT, "answer": "<html></html>"})):
        src = _write(tmp_path / "in.jsonl", [json.dumps(good), line])
        assert main(["evaluate", kind, str(src), "-o", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"{src}:2: not valid JSON ({where})" in err, err


def test_a_line_that_is_not_utf8_names_its_column_in_characters(tmp_path, capsys):
    src, out = tmp_path / "in.jsonl", tmp_path / "o.jsonl"
    src.write_bytes(b'{"task": "\xc3\xa9\xff"}\n')
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{src}:1: not UTF-8 text (byte 0xff at column 12)" in err, err  # é is one character, two bytes


def test_only_infrastructure_failures_is_no_rate(tmp_path, capsys):
    failed = _rec(answer=None, meta={"end_reason": "endpoint_error", "infrastructure_failure": True})
    src, out = _write(tmp_path / "in.jsonl", [json.dumps(failed)] * 2), tmp_path / "o.jsonl"
    assert main(["evaluate", "backend", str(src), "-o", str(out), "--no-progress"]) == 0
    stdout = capsys.readouterr().out
    assert "success rate: n/a" in stdout and "no scored episodes" in stdout
    assert "success rate: 0.0%   tests passed" not in stdout


def test_frontend_empty_file_reports_no_episodes(tmp_path, capsys):
    src, out = _write(tmp_path / "in.jsonl", []), tmp_path / "o.jsonl"
    assert main(["evaluate", "frontend", str(src), "-o", str(out), "--no-progress", "--scorer", "fallback"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    assert captured.err.strip() == (f"colbench evaluate frontend: error: no episodes in {src}: pass a trajectory "
                                    "JSONL with one {task, answer} record per line")


def test_frontend_reads_through_the_same_validator(tmp_path, capsys):
    bad = {"task": FRONT, "answer": "<html></html>", "reward": 1.7}
    src, out = _write(tmp_path / "in.jsonl", [json.dumps(bad)]), tmp_path / "o.jsonl"
    assert main(["evaluate", "frontend", str(src), "-o", str(out), "--no-progress", "--scorer", "fallback"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{src}:1:" in err and "'reward'" in err
