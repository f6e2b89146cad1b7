"""Reading ``colbench-results`` records (what ``sweet-agent evaluate --json`` prints) strictly.

The schema's one description is :func:`sweet_agent.evaluation.report.results_features` (every key with
its type, docs/trajectory-format.md "Results records"); this module checks a record against it
key for key, so a leaderboard never shows a number from a record that is not one: a missing or
unknown key, a rate that is a string, a count that is a float is refused, naming the file and
the key. A results file is JSON lines (one record per evaluated trajectory file), a JSON list of
records, or one record; a ``colbench-leaderboard`` rows file is recognised by its ``schema``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sweet_agent.evaluation.report import RESULTS_SCHEMA, RESULTS_SCHEMA_VERSION, results_features
from sweet_agent.leaderboard.rows import ROWS_SCHEMA, LeaderboardInputError


def _check(value: Any, feature: Any, where: str, key: str = "") -> None:
    """Raise naming ``where`` and the key path (``end_reasons.answer``, ``tokens_by_model[0].model``)."""
    import datasets  # noqa: PLC0415 - the agent extra, as results_features itself

    if isinstance(feature, dict):
        if not isinstance(value, Mapping):
            raise LeaderboardInputError(f"{where}: {key or 'the record'}: expected an object, got {type(value).__name__}")
        missing, extra = sorted(set(feature) - set(value)), sorted(set(value) - set(feature))
        if missing or extra:
            raise LeaderboardInputError(f"{where}: {key + ': ' if key else ''}" + "; ".join(
                ([f"missing key(s) {', '.join(missing)}"] if missing else [])
                + ([f"unknown key(s) {', '.join(extra)}"] if extra else [])))
        for name, sub in feature.items():
            _check(value[name], sub, where, f"{key}.{name}" if key else name)
        return
    if isinstance(feature, datasets.List):
        if not isinstance(value, list):
            raise LeaderboardInputError(f"{where}: {key}: expected a list, got {type(value).__name__}")
        for i, item in enumerate(value):
            _check(item, feature.feature, where, f"{key}[{i}]")
        return
    dtype = feature.dtype
    if dtype == "string":
        ok, expected = isinstance(value, str), "a string"
    elif dtype == "int64":
        ok, expected = isinstance(value, int) and not isinstance(value, bool) and value >= 0, "a whole number >= 0"
    elif dtype == "float64":
        ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))
        expected = "a finite number or null"
    else:  # pragma: no cover - a type results_features does not use
        raise LeaderboardInputError(f"{where}: {key}: the schema's type {dtype} is not one this reader knows")
    if not ok:
        raise LeaderboardInputError(f"{where}: {key}: expected {expected}, got {json.dumps(value)[:40]}")


def check_results_record(rec: Any, where: str) -> dict[str, Any]:
    """``rec`` if it is a ``colbench-results`` record of a version this reader knows, every key
    with its type; else :class:`LeaderboardInputError` naming ``where`` and the first problem."""
    if not isinstance(rec, Mapping):
        raise LeaderboardInputError(f"{where}: expected a {RESULTS_SCHEMA} record (a JSON object), "
                                    f"got {type(rec).__name__}")
    if rec.get("schema") != RESULTS_SCHEMA:
        raise LeaderboardInputError(f"{where}: 'schema' is {rec.get('schema')!r}, not {RESULTS_SCHEMA!r}: "
                                    "pass what `sweet-agent evaluate FILE --json` prints")
    if rec.get("schema_version") != RESULTS_SCHEMA_VERSION:
        raise LeaderboardInputError(f"{where}: {RESULTS_SCHEMA} schema_version {rec.get('schema_version')!r} is "
                                    f"not one this version reads ({RESULTS_SCHEMA_VERSION})")
    _check(rec, dict(results_features()), where)
    return dict(rec)


def read_json_documents(path: str | os.PathLike[str]) -> list[tuple[str, Any]]:
    """The JSON values of a file, each with where it is (``FILE`` or ``FILE:LINE``): one JSON
    document (an object or a list of objects), or JSON lines."""
    path = Path(path)
    if not path.is_file():
        raise LeaderboardInputError(f"{path}: no such file (a results file: `sweet-agent evaluate FILE --json > "
                                    "results.json`; a submission: a folder with submission.json)")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise LeaderboardInputError(f"{path}: empty; a results file holds at least one record")
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, list):
        return [(f"{path}[{i}]", d) for i, d in enumerate(doc)]
    if doc is not None:
        return [(str(path), doc)]
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"{path}:{lineno}", json.loads(line)))
        except ValueError as exc:
            raise LeaderboardInputError(f"{path}:{lineno}: not JSON ({exc.msg}); a results file is JSON lines, "
                                        "one record per line") from None
    return out


def read_results(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every ``colbench-results`` record of a results file, each checked (a rows file, or any
    other JSON, is refused naming the file)."""
    out = []
    for where, doc in read_json_documents(path):
        if isinstance(doc, Mapping) and doc.get("schema") == ROWS_SCHEMA:
            raise LeaderboardInputError(f"{where}: a {ROWS_SCHEMA} rows file, not results records")
        out.append(check_results_record(doc, where))
    return out
