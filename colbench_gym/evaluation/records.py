"""Reading offline trajectory records (``{"task": {...}, "answer": "...", ...}``) for evaluation."""

from __future__ import annotations

import os
import sys
from typing import Any, TypeVar

from colbench_gym.tasks import BackendTask, FrontendTask, TaskFormatError, iter_jsonl
from colbench_gym.tasks.records import check_trajectory_record

T = TypeVar("T", BackendTask, FrontendTask)
#: What reading an input file can raise that is the user's to fix (reported by :func:`input_error`).
INPUT_ERRORS = (TaskFormatError, FileNotFoundError)


def input_error(problem: object) -> int:
    """Report bad input the evaluators' way (one ``error:`` line on stderr) and return exit status 2."""
    print(f"error: {problem}", file=sys.stderr)
    return 2


def load_answer_records(path: str | os.PathLike[str], task_cls: type[T], answer_noun: str = "final answer",
                        skipped: list[str] | None = None) -> list[tuple[dict[str, Any], T, str]]:
    """Read and validate every record first, so a bad line fails before any grading/rendering.

    Returns ``(record, task, answer)`` triples in file order; a missing answer (``null``) is ``""``
    and scores 0. With a ``skipped`` list, a record that is invalid (its shape, or its task's
    material: a reference or test call Python cannot parse) is left out and its one-line reason
    (``IN:LINE ...``) appended there instead of stopping the run; a line that is not JSON still
    stops it (the file itself is damaged).
    """
    out = []
    for lineno, record in iter_jsonl(path):
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
