"""The committed table is what the documented commands make now: the rows file from protocol v1's
report (benchmarks/leaderboard_protocol_v1.py) and benchmarks/results/leaderboard.md from it
(``sweet-agent leaderboard``), byte for byte; its numbers are the report's."""

from __future__ import annotations

import json
from pathlib import Path

from sweet_agent.cli import main
from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
ROWS = "benchmarks/results/leaderboard/protocol-v1.json"
TABLE = ROOT / "benchmarks" / "results" / "leaderboard.md"
REPORT = ROOT / "benchmarks" / "results" / "learning" / "results.json"


def convert(argv: list[str]) -> int:
    """benchmarks/leaderboard_protocol_v1.py's main (a script, not a package module)."""
    return load_benchmark("leaderboard_protocol_v1").main(argv)


def test_the_rows_file_is_the_reports_rows(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert convert(["--out", str(out)]) == 0
    assert out.read_text() == (ROOT / ROWS).read_text()
    rows = {(r["task_source"], r["method"]): r for r in json.loads(out.read_text())["rows"]}
    report = json.loads(REPORT.read_text())
    sweet = next(r for r in report["test"] if r["label"] == "SWEET-RL")
    row = rows[("collab:test", "SWEET-RL")]
    assert (row["success"]["mean"], [row["success"]["low"], row["success"]["high"]]) == \
        (sweet["success"]["mean"], sweet["success"]["ci95"])
    assert (row["episodes"], row["seeds"], row["turns"]) == (300, 3, sweet["turns"]["mean"])
    assert len(rows) == sum(len(report[k]) for k in ("test", "embedded", "frontend"))


def test_the_committed_table_is_the_commands_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "leaderboard.md"
    assert main(["leaderboard", ROWS, "--out", str(out)]) == 0
    assert out.read_text() == TABLE.read_text()
    assert "| SWEET-RL (reference) | Llama-3.1-8B-Instruct | ColBench backend test (paper) |  |  | 40.4 |" in out.read_text()
