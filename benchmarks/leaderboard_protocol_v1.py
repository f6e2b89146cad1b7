"""The learning benchmark's protocol v1 results as leaderboard rows (``colbench-leaderboard`` v1).

Reads ``benchmarks/results/learning/results.json`` (what ``benchmarks/bench_learning.py`` wrote for
protocol v1: methods × training seeds on collab:test, embedded:test and the frontend arm) and
writes one row per method and task source to ``benchmarks/results/leaderboard/protocol-v1.json``;
``sweet-agent leaderboard`` then builds the table from it (docs/leaderboard.md)::

    python benchmarks/leaderboard_protocol_v1.py
    sweet-agent leaderboard benchmarks/results/leaderboard/protocol-v1.json --out benchmarks/results/leaderboard.md

WHY rows and not results records: the run's trajectories were not kept, and a ``colbench-results``
record holds neither intervals nor training seeds; the benchmark's report has both (each rate the
mean over seeds with the hierarchical bootstrap interval of ``sweet_agent.evaluation.metrics``, computed when
it ran), and the rows keep them as they are. Nothing is recomputed or rounded here.

Usage: python benchmarks/leaderboard_protocol_v1.py [--results FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from colbench_gym.jsonl import write_text_atomic  # noqa: E402
from sweet_agent.evaluation.metrics import Estimate  # noqa: E402
from sweet_agent.leaderboard.rows import Row, rows_document, rows_from_document  # noqa: E402
from sweet_agent.policies.default_model import DEFAULT_HUB_ID  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "learning" / "results.json"
OUT = ROOT / "benchmarks" / "results" / "leaderboard" / "protocol-v1.json"
#: the report's arms: (key in results.json, kind, settings key of its task source, what to say about it)
ARMS = (
    ("test", "backend", "test_tasks", "tasks {test_start}-{test_end}; offline simulator; {max_turns} agent turns"),
    ("embedded", "backend", "embedded_tasks", "the 30 embedded tasks; offline simulator; {max_turns} agent turns"),
    ("frontend", "frontend", "frontend_test_tasks", "offline frontend simulator; weight-free similarity (not CLIP); "
                                                     "{frontend_max_turns} agent turns"),
)


def _estimate(cell: dict[str, Any] | None) -> Estimate | None:
    if cell is None:
        return None
    low, high = cell["ci95"]
    return Estimate(cell["mean"], low, high, cell["tasks"])


def protocol_rows(report: dict[str, Any], commit: str) -> list[Row]:
    """One row per method and arm of a protocol v1 report."""
    s = report["settings"]
    model = DEFAULT_HUB_ID if s["model"] == "default" else s["model"]
    facts = {**s, "test_end": s["test_start"] + s["test_episodes"] - 1}
    rows = []
    for key, kind, source_key, notes in ARMS:
        for r in report.get(key, []):
            rows.append(Row(method=r["label"], model=model, task_source=s[source_key], kind=kind,
                            episodes=r["episodes"], seeds=r["seeds"], success=_estimate(r.get("success")),
                            tests_passed=_estimate(r.get("tests")), similarity=_estimate(r.get("similarity")),
                            turns=r["turns"]["mean"], source=f"protocol v1, benchmarks/results/learning ({commit[:7]}"
                            + ("; later stages: frontend-commit.txt)" if kind == "frontend" else ")"),
                            notes=notes.format(**facts)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=str(RESULTS), help="the benchmark's results.json (default: protocol v1's)")
    ap.add_argument("--out", default=str(OUT), help="the rows file to write (default: %(default)s)")
    args = ap.parse_args(argv)
    results = Path(args.results)
    commit_file = results.with_name("commit.txt")
    commit = commit_file.read_text().strip() if commit_file.is_file() else "unknown"
    doc = rows_document(protocol_rows(json.loads(results.read_text()), commit))
    rows_from_document(doc, args.out)  # the rows file it writes is one the leaderboard reads
    out = write_text_atomic(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"{len(doc['rows'])} rows -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
