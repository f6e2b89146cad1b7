"""One row of the results table, and the ``colbench-leaderboard`` rows file that carries rows.

WHY a rows file besides the results record: a ``colbench-results`` record reports one trajectory
file and holds no interval; a row is one method × model × task source, possibly over several
training seeds, with its 95 % intervals (:class:`sweet_agent.evaluation.metrics.Estimate`). The rows file is
what ``sweet-agent leaderboard --json`` writes and what it reads back, so a table built from
submissions (or from a benchmark's report, ``benchmarks/leaderboard_protocol_v1.py``) can be
published and merged with others without its trajectories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sweet_agent.evaluation.metrics import Estimate

ROWS_SCHEMA = "colbench-leaderboard"
ROWS_SCHEMA_VERSION = 1
#: The rates a row can hold, each a mean with an optional interval (fractions in [0, 1], or a
#: similarity), and the order the table shows them in.
RATES = ("success", "tests_passed", "similarity", "win_rate")


class LeaderboardInputError(ValueError):
    """A leaderboard input that is not in a documented schema: the message names the file and
    what is wrong."""


@dataclass(frozen=True)
class Row:
    """One line of the table. A rate is None where it does not apply or is not known (a cell left
    empty, never 0); an interval's bounds are None where the source gives none."""

    method: str
    model: str
    task_source: str
    kind: str  # backend | frontend | mixed
    episodes: int | None = None  # scored and unscored episodes, all seeds
    seeds: int | None = None  # training seeds (trajectory files) behind the row
    success: Estimate | None = None
    tests_passed: Estimate | None = None
    similarity: Estimate | None = None
    win_rate: Estimate | None = None
    turns: float | None = None  # agent turns per scored episode
    cost_usd: float | None = None
    reference: bool = False  # published elsewhere, not run here (the paper's rows)
    source: str = ""  # where the numbers come from: a citation, a file, a submission
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in ("method", "model", "task_source", "kind", "episodes",
                                                              "seeds")}
        out.update({k: None if getattr(self, k) is None else getattr(self, k).to_dict() for k in RATES})
        out.update(turns=self.turns, cost_usd=self.cost_usd, reference=self.reference, source=self.source,
                   notes=self.notes)
        return out


def rows_document(rows: list[Row]) -> dict[str, Any]:
    """The rows file: ``{"schema": "colbench-leaderboard", "schema_version": 1, "rows": [...]}``."""
    return {"schema": ROWS_SCHEMA, "schema_version": ROWS_SCHEMA_VERSION, "rows": [r.to_dict() for r in rows]}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _estimate(value: Any, where: str) -> Estimate | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) != {"mean", "low", "high", "n"}:
        raise LeaderboardInputError(f"{where}: expected null or an object with mean, low, high, n")
    for key in ("mean", "low", "high"):
        if value[key] is not None and not _number(value[key]):
            raise LeaderboardInputError(f"{where}.{key}: expected a number or null, got {value[key]!r:.40}")
    if value["mean"] is None:
        raise LeaderboardInputError(f"{where}.mean: null; give the rate as null instead of an empty estimate")
    if not isinstance(value["n"], int) or isinstance(value["n"], bool) or value["n"] < 0:
        raise LeaderboardInputError(f"{where}.n: expected a whole number >= 0, got {value['n']!r:.40}")
    if (value["low"] is None) != (value["high"] is None) or (
            value["low"] is not None and not value["low"] <= value["mean"] <= value["high"]):
        raise LeaderboardInputError(f"{where}: the interval [{value['low']}, {value['high']}] must hold the mean "
                                    f"{value['mean']} (or both bounds be null)")
    return Estimate(float(value["mean"]), None if value["low"] is None else float(value["low"]),
                    None if value["high"] is None else float(value["high"]), value["n"])


_TEXT = ("method", "model", "task_source", "kind", "source", "notes")
_COUNTS = ("episodes", "seeds")


def row_from_dict(d: Any, where: str) -> Row:
    """A row of a rows file, checked field by field (the first wrong field named)."""
    if not isinstance(d, Mapping):
        raise LeaderboardInputError(f"{where}: expected an object, got {type(d).__name__}")
    expected = set(_TEXT) | set(_COUNTS) | set(RATES) | {"turns", "cost_usd", "reference"}
    if set(d) != expected:
        missing, extra = sorted(expected - set(d)), sorted(set(d) - expected)
        raise LeaderboardInputError(f"{where}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(extra)}"] if extra else [])))
    for key in _TEXT:
        if not isinstance(d[key], str):
            raise LeaderboardInputError(f"{where}.{key}: expected a string, got {d[key]!r:.40}")
    for key in ("method", "task_source", "kind"):
        if not d[key].strip():
            raise LeaderboardInputError(f"{where}.{key}: empty; every row names its {key.replace('_', ' ')}")
    for key in _COUNTS:
        if d[key] is not None and (not isinstance(d[key], int) or isinstance(d[key], bool) or d[key] < 0):
            raise LeaderboardInputError(f"{where}.{key}: expected a whole number >= 0 or null, got {d[key]!r:.40}")
    for key in ("turns", "cost_usd"):
        if d[key] is not None and not (_number(d[key]) and d[key] >= 0):
            raise LeaderboardInputError(f"{where}.{key}: expected a number >= 0 or null, got {d[key]!r:.40}")
    if not isinstance(d["reference"], bool):
        raise LeaderboardInputError(f"{where}.reference: expected true or false, got {d['reference']!r:.40}")
    return Row(**{k: d[k] for k in (*_TEXT, *_COUNTS, "turns", "cost_usd", "reference")},
               **{k: _estimate(d[k], f"{where}.{k}") for k in RATES})


def rows_from_document(doc: Mapping[str, Any], where: str) -> list[Row]:
    """The rows of a ``colbench-leaderboard`` document (its version checked)."""
    if doc.get("schema_version") != ROWS_SCHEMA_VERSION:
        raise LeaderboardInputError(f"{where}: {ROWS_SCHEMA} schema_version {doc.get('schema_version')!r} is not "
                                    f"one this version reads ({ROWS_SCHEMA_VERSION})")
    if not isinstance(doc.get("rows"), list):
        raise LeaderboardInputError(f"{where}: 'rows' must be a list of rows")
    return [row_from_dict(r, f"{where}: rows[{i}]") for i, r in enumerate(doc["rows"])]
