"""Loaders for task files in the official JSONL shape and for the HF dataset."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from colbench_gym.tasks.records import BackendTask, FrontendTask, TaskFormatError

Kind = Literal["backend", "frontend"]


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line; a bad line names file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (expected JSONL, one JSON object per line)")
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFormatError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(record, dict):
                raise TaskFormatError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            yield lineno, record


def load_tasks(path: str | os.PathLike[str], kind: Kind = "backend") -> list[BackendTask] | list[FrontendTask]:
    """Load an official ColBench task file (``backend_*.jsonl`` or ``frontend_*.jsonl``).

    Records that are offline trajectories (``{"task": {...}, ...}``) are accepted too; their
    ``task`` is used.
    """
    cls = BackendTask if kind == "backend" else FrontendTask
    out = []
    for lineno, record in iter_jsonl(path):
        if "task" in record and isinstance(record["task"], dict) and "problem_description" not in record:
            record = record["task"]
        out.append(cls.from_record(record, where=f"{path}:{lineno}"))
    return out


def load_hf_tasks(kind: Kind = "backend", split: str = "train", repo_id: str = "facebook/collaborative_agent_bench",
                  data_files: str | None = None) -> list[BackendTask] | list[FrontendTask]:
    """Load ColBench tasks from the Hugging Face hub (needs ``datasets`` and network or a cache).

    Offline machines should download the JSONL files once and use :func:`load_tasks`.
    """
    try:
        import datasets  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ImportError("load_hf_tasks needs `datasets`: pip install 'colbench-gym[agent]'") from exc
    files = data_files or {"backend": "backend_tasks/test.jsonl", "frontend": "frontend_tasks/test.jsonl"}[kind]
    try:
        ds = datasets.load_dataset(repo_id, data_files=files, split=split)
    except Exception as exc:  # noqa: BLE001 - surface a clear message for any hub failure
        raise RuntimeError(
            f"could not load {repo_id!r} ({files}) from the HF hub: {exc}. Download the JSONL once "
            "and pass it to colbench_gym.tasks.load_tasks(path), or set HF_HUB_OFFLINE=0."
        ) from exc
    cls = BackendTask if kind == "backend" else FrontendTask
    return [cls.from_record(r, where=f"{repo_id}[{i}]") for i, r in enumerate(ds)]
