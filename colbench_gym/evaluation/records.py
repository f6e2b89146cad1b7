"""Reading offline trajectory records (``{"task": {...}, "answer": "...", ...}``) for evaluation:
:func:`load_task_answers` gives each record with its validated task and its answer, the triple every
evaluator scores (``colbench evaluate KIND``; a kind made outside the package, too)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from colbench_gym.tasks import BackendTask, FrontendTask, TaskFormatError
from colbench_gym.tasks.loaders import parse_jsonl_lines
from colbench_gym.tasks.records import check_trajectory_record

T = TypeVar("T", BackendTask, FrontendTask)
#: What reading an input file can raise that is the user's to fix (reported by :func:`input_error`).
INPUT_ERRORS = (TaskFormatError, FileNotFoundError)


class DamagedFileError(TaskFormatError):
    """A line that is not a JSON object (not JSON, not UTF-8, a list): the file itself is damaged,
    which ``--skip-invalid`` (it leaves out invalid *records*) does not pass over."""


def input_error(problem: object) -> int:
    """Report bad input the evaluators' way (one ``error:`` line on stderr) and return exit status 2."""
    print(f"error: {problem}", file=sys.stderr)
    return 2


def no_episodes(path: str | os.PathLike[str], skipped: Sequence[str] | None = None) -> int:
    """Refuse a file with no record to score (:func:`input_error`, status 2): no rate of nothing
    (a success rate of 0.0 % would read as an agent that failed everything)."""
    why = ("every record was invalid and skipped (listed above)" if skipped
           else "pass a trajectory JSONL with one {task, answer} record per line")
    return input_error(f"no episodes in {path}: {why}")


def load_task_answers(path: str | os.PathLike[str], task_cls: type[T], answer_noun: str = "final answer",
                        skipped: list[str] | None = None) -> list[tuple[dict[str, Any], T, str]]:
    """Read and validate every record first, so a bad line fails before any grading/rendering.

    Returns ``(record, task, answer)`` triples in file order; a missing answer (``null``) is ``""``
    and scores 0. Every record is checked by the one validator
    (:func:`colbench_gym.tasks.records.check_trajectory_record`: its shape, and each score, flag and
    count its type and range). With a ``skipped`` list, a record that is invalid (its shape or
    fields, or its task's material: a reference or test call Python cannot parse) is left out and
    its one-line reason (``IN:LINE ...``) appended there instead of stopping the run; a line that is
    not a JSON object still stops it (:class:`DamagedFileError`: the file itself is damaged).
    """
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such file (expected JSONL, one JSON object per line)")
    out = []
    with open(path, "rb") as fh:  # streamed, decoded per line (a non-UTF-8 line is named)
        for lineno, record in parse_jsonl_lines(fh, str(path), error=DamagedFileError):
            where = f"{path}:{lineno}"
            try:
                check_trajectory_record(record, where, ("task", "answer"), null_answer=True,
                                        hints={"answer": f"the agent's {answer_noun}, a string"})
                task = task_cls.from_record(record["task"], where=f"{where} task", check_python=True)
            except TaskFormatError as exc:
                if skipped is None:
                    raise
                skipped.append(str(exc))
                continue
            answer = "" if record["answer"] is None else record["answer"]
            out.append((record, task, answer))
    return out
