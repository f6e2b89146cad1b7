"""Writing JSONL files so that nothing is lost: whole-file writes are atomic.

A reader never sees half a file: records go to a temporary file in the same directory, which
is fsync'd and then renamed over the target. Readers live beside the record shapes
(:func:`colbench_gym.tasks.iter_jsonl`, :func:`sweet_agent.trajectories.iter_trajectories`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def write_jsonl_atomic(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``records`` as JSONL to ``path`` atomically (temp file, fsync, ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for record in records:
                line = json.dumps(record, ensure_ascii=False)
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:  # lone surrogates: keep them as \uXXXX escapes (round-trips)
                    line = json.dumps(record)
                fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
