"""The task sets shipped inside the package (``colbench_gym/tasks/data/{kind}_{split}.jsonl``).

Why embedded tasks: the environments must work offline, straight after ``pip install``, with no
download of the official data. The files are read through :mod:`importlib.resources`, so they
are found in a source checkout, an installed wheel and a zipped install alike.

Backend files hold hand-written tasks in the ColBench style: a vague request naming the function,
a hidden reference function with personal details (thresholds, rates, labels, formats, edge
cases) and ten hidden test calls. Frontend files follow the same naming with frontend records.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from colbench_gym.tasks.kinds import KINDS
from colbench_gym.tasks.loaders import parse_jsonl_lines
from colbench_gym.tasks.records import BackendTask, FrontendTask, TaskFormatError

if TYPE_CHECKING:  # importlib.resources.abc is 3.11+; the package supports 3.10
    from importlib.abc import Traversable

DATA_PACKAGE = "colbench_gym.tasks"
DATA_DIR = "data"


def _data_dir() -> Traversable:
    return resources.files(DATA_PACKAGE).joinpath(DATA_DIR)


def available_embedded() -> list[tuple[str, str]]:
    """``(kind, split)`` pairs that have a shipped file, sorted (for listings and error messages)."""
    found = []
    try:
        entries = list(_data_dir().iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    for entry in entries:
        name = entry.name
        if not name.endswith(".jsonl") or "_" not in name:
            continue
        kind, _, split = name[: -len(".jsonl")].partition("_")
        if kind in KINDS and split:
            found.append((kind, split))
    return sorted(found)


def load_embedded(kind: str, split: str) -> list[BackendTask | FrontendTask]:
    """Load the embedded ``kind`` tasks of ``split`` (e.g. ``load_embedded("backend", "test")``).

    Every record is validated with the kind's ``task_cls.from_record`` (:mod:`colbench_gym.tasks.kinds`);
    a bad line is reported with its file and line number. A fresh list is returned on every call.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown task kind {kind!r}: expected one of {', '.join(KINDS)}")
    if not isinstance(split, str) or not split:
        raise ValueError(f"split must be a non-empty string such as 'train' or 'test', got {split!r}")
    filename = f"{kind}_{split}.jsonl"
    path = _data_dir().joinpath(filename)
    if not path.is_file():
        have = [f"embedded:{s}" for k, s in available_embedded() if k == kind]
        hint = f"available for {kind}: {', '.join(have)}" if have else f"no embedded {kind} tasks are installed"
        raise FileNotFoundError(f"no embedded {kind} task set for split {split!r} ({DATA_PACKAGE}/{DATA_DIR}/{filename}); {hint}")
    cls = KINDS[kind].task_cls
    where_file = f"{DATA_DIR}/{filename}"
    lines = path.read_text(encoding="utf-8").splitlines()
    tasks = [cls.from_record(record, where=f"{where_file}:{lineno}")
             for lineno, record in parse_jsonl_lines(lines, where_file)]
    if not tasks:
        raise TaskFormatError(f"{where_file}: the embedded task file is empty")
    return tasks
