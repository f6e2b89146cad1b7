"""The results table as markdown and as a static HTML page.

One table per kind, because the kinds are measured differently (backend: success and % tests
passed; frontend: similarity and win rate; a mixed run: all four); rows grouped by task source,
the paper's reference rows first and marked, each cell empty where its number is not known.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from sweet_agent.evaluation.metrics import Estimate
from sweet_agent.leaderboard.reference import CITATION
from sweet_agent.leaderboard.rows import Row

#: (kind, title, rates shown) in table order.
SECTIONS = (
    ("backend", "Backend (Python functions, hidden tests)", ("success", "tests_passed")),
    ("frontend", "Frontend (HTML pages, screenshot similarity)", ("similarity", "win_rate")),
    ("mixed", "Mixed runs", ("success", "tests_passed", "similarity", "win_rate")),
)
_HEAD = {"success": "success % [95 % CI]", "tests_passed": "tests passed % [95 % CI]",
         "similarity": "similarity [95 % CI]", "win_rate": "win rate % [95 % CI]"}
COLUMNS_BEFORE = ("method", "model", "task source", "episodes", "seeds")
COLUMNS_AFTER = ("turns", "cost (USD)", "source", "notes")


def _estimate(e: Estimate | None, percent: bool) -> str:
    if e is None:
        return ""
    scale, fmt = (100.0, "{:.1f}") if percent else (1.0, "{:.3f}")
    text = fmt.format(scale * e.mean)
    if e.low is not None and e.high is not None:
        text += f" [{fmt.format(scale * e.low)}, {fmt.format(scale * e.high)}]"
    return text


def cells(row: Row, rates: Sequence[str]) -> list[str]:
    """One row's cells, in column order (the method marked when it is a reference row)."""
    method = f"{row.method} (reference)" if row.reference else row.method
    out = [method, row.model, row.task_source, "" if row.episodes is None else str(row.episodes),
           "" if row.seeds is None else str(row.seeds)]
    out += [_estimate(getattr(row, r), percent=r != "similarity") for r in rates]
    out += ["" if row.turns is None else f"{row.turns:.2f}", "" if row.cost_usd is None else f"{row.cost_usd:.2f}",
            row.source, row.notes]
    return out


def sections(rows: Sequence[Row]) -> list[tuple[str, tuple[str, ...], list[Row]]]:
    """(title, rates, rows) per kind that has rows: reference rows first, then by task source, in
    input order within a source."""
    out = []
    named = {kind for kind, _, _ in SECTIONS}
    others = [(k, f"{k} runs", SECTIONS[-1][2]) for k in dict.fromkeys(r.kind for r in rows) if k not in named]
    for kind, title, rates in (*SECTIONS, *others):  # a kind without a section of its own: every rate
        mine = [r for r in rows if r.kind == kind]
        if mine:
            sources = list(dict.fromkeys(r.task_source for r in mine))
            mine.sort(key=lambda r: (not r.reference, sources.index(r.task_source)))
            out.append((title, rates, mine))
    return out


def _md_cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def markdown(rows: Sequence[Row], inputs: Sequence[str] = ()) -> str:
    lines = ["# ColBench results table", ""]
    if inputs:
        lines += [f"Built by `sweet-agent leaderboard {' '.join(inputs)}` (docs/leaderboard.md).", ""]
    if any(r.reference for r in rows):
        lines += [f"Rows marked *(reference)* are published numbers ({CITATION}), not run here: the paper's own "
                  "test tasks and LLM-simulated human, so they place a run beside the paper, not on the same tasks. "
                  "Empty cells: not published or not measured (never 0).", ""]
    for title, rates, mine in sections(rows):
        head = [*COLUMNS_BEFORE, *(_HEAD[r] for r in rates), *COLUMNS_AFTER]
        lines += [f"## {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(_md_cell(c) for c in cells(r, rates)) + " |" for r in mine]
        lines.append("")
    lines += ["Rates are means over training seeds of each seed's mean over tasks; intervals are 95 % bootstrap "
              "intervals (seeds, then tasks) from `sweet_agent.evaluation.metrics`; infrastructure failures are "
              "left out of the rates (docs/grading.md)."]
    return "\n".join(lines) + "\n"


def html_page(rows: Sequence[Row], inputs: Sequence[str] = ()) -> str:
    """A self-contained static page (no script, no external asset)."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8"><title>ColBench results table</title>',
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:2em}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}tr.reference{background:#f4f4f4;"
             "font-style:italic}</style></head><body>", "<h1>ColBench results table</h1>"]
    if inputs:
        parts.append(f"<p>Built by <code>sweet-agent leaderboard {e(' '.join(inputs))}</code>.</p>")
    if any(r.reference for r in rows):
        parts.append(f"<p>Rows marked (reference), in italics, are published numbers ({e(CITATION)}), not run "
                     "here. Empty cells: not published or not measured.</p>")
    for title, rates, mine in sections(rows):
        head = [*COLUMNS_BEFORE, *(_HEAD[r] for r in rates), *COLUMNS_AFTER]
        parts += [f"<h2>{e(title)}</h2>", "<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head)
                  + "</tr></thead><tbody>"]
        parts += [("<tr class=\"reference\">" if r.reference else "<tr>")
                  + "".join(f"<td>{e(c)}</td>" for c in cells(r, rates)) + "</tr>" for r in mine]
        parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
