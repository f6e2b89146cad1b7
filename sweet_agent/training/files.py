"""JSON and JSONL files of a training run (metadata, budgets, step pairs).

WHY a module of its own: every stage writes its outputs atomically (a killed run never leaves a
half-written file the next stage would read) and reads the earlier stages' the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_text_atomic


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON atomically (:func:`colbench_gym.jsonl.write_text_atomic`)."""
    write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False))


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every JSON line of ``path`` (blank lines skipped)."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
