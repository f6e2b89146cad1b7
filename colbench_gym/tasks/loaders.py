"""Loaders for task files in the official JSONL shape and for the HF dataset."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from colbench_gym.tasks.kinds import env_kind
from colbench_gym.tasks.records import BackendTask, FrontendTask, TaskFormatError


def parse_jsonl_lines(lines: Iterable[str | bytes], where: str, *, torn_tail: bool = False,
                      error: type[ValueError] = TaskFormatError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line; ``error`` names ``where`` and the line.

    Lines may be ``bytes`` (files opened in binary), so text that is not UTF-8 is reported with
    its line number rather than as a decoding error somewhere in the file.
    With ``torn_tail``, a last line without its newline that is not JSON (an interrupted append)
    ends the file quietly: only the last line can lack its newline.
    """
    for lineno, line in enumerate(lines, 1):
        complete = line[-1:] in ("\n", b"\n")
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                if torn_tail and not complete:
                    return
                column = len(line[:exc.start].decode("utf-8", "replace")) + 1  # in characters, as an editor counts
                raise error(f"{where}:{lineno}: not UTF-8 text (byte 0x{line[exc.start]:02x} at column {column}); "
                            "save the file as UTF-8") from None
        if not line.strip():
            continue
        try:
            # without its line end: an error at the end of the line (a record cut short) is then at
            # this line's column, not at "line 2 column 1" of the one-line text json.loads saw
            record = json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            if torn_tail and not complete:
                return
            raise error(f"{where}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(record, dict):
            raise error(f"{where}:{lineno}: expected a JSON object, got {type(record).__name__}")
        yield lineno, record


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for every non-blank line of a file, streamed."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (expected JSONL, one JSON object per line)")
    with path.open("rb") as fh:  # decoded per line, so a non-UTF-8 line is named
        yield from parse_jsonl_lines(fh, str(path))


def load_tasks(path: str | os.PathLike[str], kind: str = "backend") -> list[BackendTask] | list[FrontendTask]:
    """Load an official ColBench task file (``backend_*.jsonl`` or ``frontend_*.jsonl``).

    Records that are offline trajectories (``{"task": {...}, ...}``) are accepted too; their
    ``task`` is used.
    """
    cls = env_kind(kind).task_cls
    out = []
    for lineno, record in iter_jsonl(path):
        if "task" in record and isinstance(record["task"], dict) and "problem_description" not in record:
            record = record["task"]
        out.append(cls.from_record(record, where=f"{path}:{lineno}", check_python=True))
    return out


HF_REPO_ID = "facebook/collaborative_agent_bench"


def load_hf_tasks(kind: str = "backend", split: str = "test", repo_id: str = HF_REPO_ID,
                  data_files: str | None = None) -> list[BackendTask] | list[FrontendTask]:
    """Load ColBench tasks with HF ``datasets`` from the hub or a local copy of the dataset repo.

    The paper's dataset repo holds ``backend_tasks/{train,test}.jsonl``
    (:attr:`~colbench_gym.tasks.kinds.EnvKind.hf_data_files`); frontend task files must be named
    with ``data_files``. ``repo_id`` may be a local directory (a downloaded copy).
    With ``HF_HUB_OFFLINE=1`` only the local cache is used.
    """
    spec = env_kind(kind)
    try:
        import datasets  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - depends on extras
        raise ImportError("load_hf_tasks needs `datasets`: pip install 'colbench-gym[agent]'") from exc
    if data_files is None:
        if spec.hf_data_files is None:
            raise ValueError(f"the paper's dataset repo has no {kind} task file; pass data_files=")
        data_files = spec.hf_data_files.format(split=split)
    try:
        ds = datasets.load_dataset(repo_id, data_files=data_files, split="train")
    except Exception as exc:  # noqa: BLE001 - surface a clear message for any hub failure
        raise RuntimeError(
            f"could not load {repo_id!r} ({data_files}) with HF datasets: {type(exc).__name__}: {exc}. "
            "Download the JSONL once and use colbench_gym.tasks.load_tasks(path), or allow hub access "
            "(HF_HUB_OFFLINE=0)."
        ) from exc
    return [spec.task_cls.from_record(r, where=f"{repo_id}:{data_files}[{i}]", check_python=True) for i, r in enumerate(ds)]
