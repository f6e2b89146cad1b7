"""``colbench tasks audit FILE``: which tests of a task file no answer can pass, and why.

Why a command: a test whose reference gives no usable result under grading — an exception the
sandbox caused (ModuleNotFoundError for numpy, MemoryError, FileNotFoundError, ...: see
:mod:`colbench_gym.grading.environmental`), a timeout, a crash, a result that is not plain data,
a test call that is not an expression — counts as failed for every answer. Grading reports them
per submission; a task author or an evaluator needs the list *before* running anything, per
task, with a summary. The references run in the same sandbox as grading (once per task).

    colbench tasks audit backend_test.jsonl            # one line per task with such tests, then a summary
    colbench tasks audit backend_test.jsonl --json     # one JSON object per task, then the summary
    colbench tasks audit runs/graded.jsonl --strict    # exit 1 when any test is unpassable

FILE holds task records (official backend shape) or trajectory records (``{"task": {...}, ...}``);
each distinct task is audited once, named by the first line it appears on. A record that is
not a valid task (e.g. a reference Python cannot parse) is listed as invalid; the audit goes on.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from colbench_gym.tasks import BackendTask, TaskFormatError, iter_jsonl


@dataclass
class TaskAudit:
    """What the audit found for one task (``invalid`` set: the record is not a usable task)."""

    where: str
    task_id: str | None = None
    function: str = "?"
    tests: int = 0
    #: test name -> why no answer can pass it
    unpassable: dict[str, str] = field(default_factory=dict)
    invalid: str | None = None

    @property
    def environmental(self) -> int:
        """How many of the unpassable tests come from an exception the sandbox caused."""
        return sum("error of the grading environment" in why for why in self.unpassable.values())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="task JSONL (official backend records) or trajectory JSONL ({task, ...})")
    parser.add_argument("--json", action="store_true", help="one JSON object per task (all tasks), then the summary")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any test is unpassable or any task invalid")
    parser.add_argument("--workers", type=int, default=1, help="sandboxed workers running references in parallel")
    parser.add_argument("--call-timeout", type=float, default=2.0, help="seconds per test call (as in grading)")
    parser.add_argument("--isolation", choices=("auto", "namespaces", "rlimits-only"), default="auto")
    parser.add_argument("--cache-dir", default=None, help="reference-output cache shared with grading")


def read_tasks(path: str) -> list[tuple[str, BackendTask | None, str | None]]:
    """``(where, task, why invalid)`` per distinct task of the file, in file order."""
    out: list[tuple[str, BackendTask | None, str | None]] = []
    seen: set[str] = set()
    for lineno, record in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if isinstance(record, dict) and isinstance(record.get("task"), dict) and "problem_description" not in record:
            record = record["task"]
        try:
            task = BackendTask.from_record(record, where=where, check_python=True)
        except TaskFormatError as exc:
            out.append((where, None, str(exc)))
            continue
        if task.task_id not in seen:
            seen.add(task.task_id)
            out.append((where, task, None))
    return out


def _function(task: BackendTask) -> str:
    try:
        names = [n.name for n in ast.parse(task.ground_truth).body if isinstance(n, ast.FunctionDef)]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "?"
    return names[-1] if names else "?"


def audit_tasks(entries: list[tuple[str, BackendTask | None, str | None]], grader: Any,
                workers: int = 1) -> list[TaskAudit]:
    """Audit each entry of :func:`read_tasks` with ``grader`` (its references run in its sandbox)."""

    def one(entry: tuple[str, BackendTask | None, str | None]) -> TaskAudit:
        where, task, invalid = entry
        if task is None:
            return TaskAudit(where, invalid=invalid)
        return TaskAudit(where, task.task_id, _function(task), len(task.test_cases), grader.unpassable_tests(task))

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, entries))


def summary(audits: list[TaskAudit]) -> str:
    valid = [a for a in audits if a.invalid is None]
    hit = [a for a in valid if a.unpassable]
    n_bad = sum(len(a.unpassable) for a in hit)
    env = sum(a.environmental for a in hit)
    invalid = len(audits) - len(valid)
    return (f"audited {len(valid)} tasks ({sum(a.tests for a in valid)} tests): {n_bad} tests in {len(hit)} tasks "
            f"have no usable reference result ({env} an exception of the sandbox, {n_bad - env} a timeout, crash, "
            f"non-plain result or broken test call); {invalid} invalid task record{'s' * (invalid != 1)}")


def _line(a: TaskAudit) -> str:
    if a.invalid is not None:
        return f"{a.where}  invalid: {' '.join(a.invalid.split())[:200]}"
    reasons = "; ".join(f"{name}: {' '.join(why.split())[:120]}" for name, why in list(a.unpassable.items())[:3])
    more = f"; ... ({len(a.unpassable) - 3} more)" if len(a.unpassable) > 3 else ""
    return (f"{a.where}  task {(a.task_id or '')[:12]}  {a.function}  {len(a.unpassable)} of {a.tests} tests "
            f"unpassable: {reasons}{more}")


def run(args: argparse.Namespace) -> int:
    if args.workers < 1:
        print("error: --workers must be >= 1", file=sys.stderr)
        return 2
    try:
        entries = read_tasks(args.file)
    except (TaskFormatError, FileNotFoundError) as exc:  # a line that is not JSON: the file is damaged
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from colbench_gym.grading.grader import BackendGrader  # noqa: PLC0415 - starts sandboxes

    with BackendGrader(workers=args.workers, call_timeout=args.call_timeout, isolation=args.isolation,
                       cache_dir=args.cache_dir) as grader:
        audits = audit_tasks(entries, grader, args.workers)
    for a in audits:
        if args.json:
            print(json.dumps({**asdict(a), "environmental": a.environmental}, ensure_ascii=False))
        elif a.invalid is not None or a.unpassable:
            print(_line(a))
    print(summary(audits))
    bad = any(a.invalid is not None or a.unpassable for a in audits)
    return 1 if args.strict and bad else 0
