"""``sweet-agent leaderboard RESULTS...``: one results table from results files and submissions.

Each input is one of (docs/leaderboard.md):

- a submission folder (``submission.json``, ``results.json``, trajectories): checked first, as
  ``sweet-agent submission check`` does; one row with intervals recomputed from its trajectories;
- a results file of ``colbench-results`` records (``sweet-agent evaluate FILE... --json``): one
  row per record, without intervals (a record holds none);
- a ``colbench-leaderboard`` rows file (what ``--json`` writes): its rows as they are.

The paper's published numbers are added as marked reference rows (``--no-reference`` leaves them
out). An input that is none of these is refused before anything is written: one line naming the
file and what is wrong, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_text_atomic
from sweet_agent.evaluation.metrics import Estimate
from sweet_agent.leaderboard.reference import reference_rows
from sweet_agent.leaderboard.results import check_results_record, read_json_documents
from sweet_agent.leaderboard.rows import ROWS_SCHEMA, LeaderboardInputError, Row, rows_document, rows_from_document
from sweet_agent.leaderboard.submission import check_submission
from sweet_agent.leaderboard.table import html_page, markdown


def results_row(rec: Mapping[str, Any]) -> Row:
    """A row from one results record: its own numbers, no interval (the record holds none)."""
    scored = rec["episodes"] - rec["infrastructure_failures"]

    def rate(key: str) -> Estimate | None:
        n = rec["compared_tasks"] if key == "win_rate" else scored
        return None if rec[key] is None else Estimate(rec[key], None, None, n)

    return Row(method=", ".join(rec["policies"]) or "(policy not recorded)", model=", ".join(rec["agent_models"]),
               task_source=", ".join(rec["task_sources"]) or "(not recorded)", kind=rec["kind"],
               episodes=rec["episodes"], seeds=1, success=rate("success"), tests_passed=rate("tests_passed"),
               similarity=rate("similarity"), win_rate=rate("win_rate"), turns=rec["mean_turns"],
               cost_usd=rec["cost_usd"], source=rec["file"], notes="results record: no interval (no trajectories)")


def read_input(path: str) -> list[Row]:
    """The rows one input gives (see the module's docstring); :class:`LeaderboardInputError` if
    it is not a valid input."""
    p = Path(path)
    if p.is_dir():
        check = check_submission(p)
        if not check.ok:
            more = f" (and {len(check.problems) - 1} more: `sweet-agent submission check {path}`)" \
                if len(check.problems) > 1 else ""
            raise LeaderboardInputError(f"submission {path}: {check.problems[0]}{more}")
        return [check.row]
    rows = []
    for where, doc in read_json_documents(p):
        if isinstance(doc, Mapping) and doc.get("schema") == ROWS_SCHEMA:
            rows += rows_from_document(doc, where)
        else:
            rows.append(results_row(check_results_record(doc, where)))
    return rows


def _write_atomic(path: str, text: str, flag: str) -> None:
    if Path(path).is_dir():
        raise LeaderboardInputError(f"{flag} {path} is a folder; give a file name")
    write_text_atomic(path, text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="RESULTS",
                        help="results files (sweet-agent evaluate --json), submission folders, or rows files "
                             "(--json of an earlier table)")
    parser.add_argument("--out", metavar="FILE.md", help="write the markdown table here (default: print it)")
    parser.add_argument("--html", metavar="FILE.html", help="also write the table as a static HTML page")
    parser.add_argument("--json", metavar="FILE.json", help="also write the rows (schema colbench-leaderboard v1), "
                                                             "an input of a later table")
    parser.add_argument("--no-reference", action="store_true", help="leave out the paper's reference rows")


def run(args: argparse.Namespace) -> int:
    try:
        rows = [row for path in args.inputs for row in read_input(path)]
        table_rows = rows if args.no_reference else [*reference_rows(), *rows]
        shown = [*args.inputs, *(["--no-reference"] if args.no_reference else [])]
        text = markdown(table_rows, shown)
        if args.out:
            _write_atomic(args.out, text, "--out")
        else:
            sys.stdout.write(text)
        if args.html:
            _write_atomic(args.html, html_page(table_rows, shown), "--html")
        if args.json:
            _write_atomic(args.json, json.dumps(rows_document(rows), indent=2) + "\n", "--json")
    except LeaderboardInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0

