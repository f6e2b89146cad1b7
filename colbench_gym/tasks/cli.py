"""``colbench tasks``: list, show and export the embedded and generated task sets.

Why a command: to look at what an environment will play (``--tasks`` takes the same specs as
``gym.make(..., tasks=...)``) and to write generated tasks to an official-shape JSONL file that any
ColBench tool (or ``tasks=path``) can read.

    colbench tasks sources [--json]
    colbench tasks list --tasks embedded:test
    colbench tasks show 3 --tasks generated:train --reveal
    colbench tasks export --tasks generated:train --count 5000 -o train_tasks.jsonl
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from dataclasses import asdict
from typing import Any, TextIO

from colbench_gym.jsonl import write_jsonl_atomic
from colbench_gym.tasks.kinds import KINDS
from colbench_gym.tasks.records import BackendTask, FrontendTask
from colbench_gym.tasks.sources import GENERATED_SPACE, TaskSource, available_sources, resolve_task_source

DEFAULT_LIST = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--tasks", default="embedded:test",
                       help="a task source (`colbench tasks sources` lists them: embedded:test, generated:train, "
                            "collab:train, ...) or a JSONL file (default: %(default)s)")
        p.add_argument("--kind", choices=tuple(KINDS), default="backend", help="task kind (default: %(default)s)")

    p_sources = sub.add_parser("sources", help="list every task source this install ships and generates")
    p_sources.add_argument("--json", action="store_true",
                           help="one JSON object per source: spec, kind, size (null: unbounded), description")
    p_list = sub.add_parser("list", help="one line per task: index, id, function, request")
    common(p_list)
    p_list.add_argument("--start", type=int, default=0, help="first index (default: 0)")
    p_list.add_argument("--limit", type=int, default=None,
                        help=f"how many tasks (default: all of a finite set, {DEFAULT_LIST} of a generated one)")
    p_list.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    p_show = sub.add_parser("show", help="print one task's request (and with --reveal its hidden reference and tests)")
    common(p_show)
    p_show.add_argument("index", type=int, help="task index in the set")
    p_show.add_argument("--reveal", action="store_true", help="also print the hidden reference and test calls")
    p_export = sub.add_parser("export", help="write tasks to a JSONL file in the official record shape")
    common(p_export)
    p_export.add_argument("-o", "--output", required=True, help="output JSONL path, or - for stdout")
    p_export.add_argument("--start", type=int, default=0, help="first index (default: 0)")
    p_export.add_argument("--count", type=int, default=None, help="how many tasks (required for generated sets)")
    p_export.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p_export.add_argument("--release-compatible", action="store_true",
                          help="backend: drop (and report) tests the paper release's grader can never pass "
                               "(its reference raises or returns None there; runs the references in the sandbox)")
    # `colbench tasks audit` is its own command (colbench_gym.evaluation.task_audit: it grades, a
    # layer above tasks); the CLI dispatches it before this parser sees it. Listed here so that
    # `colbench tasks --help` names every action.
    sub.add_parser("audit", help="a verdict per backend task: can it be solved (`colbench tasks audit --help`)")


def _function_name(task: BackendTask | FrontendTask) -> str:
    if not isinstance(task, BackendTask):
        return "-"
    try:
        names = [n.name for n in ast.parse(task.ground_truth).body if isinstance(n, ast.FunctionDef)]
    except SyntaxError:
        return "?"
    return names[-1] if names else "?"


def _range(source: TaskSource, start: int, count: int | None, what: str) -> range:
    if start < 0:
        raise ValueError(f"--start must be >= 0, got {start}")
    if count is not None and count < 0:
        raise ValueError(f"{what} must be >= 0, got {count}")
    size = len(source)
    if count is None:
        if size >= GENERATED_SPACE:
            if what == "--count":
                raise ValueError(f"{source.name} is unbounded: give --count N (how many tasks to write)")
            count = DEFAULT_LIST
        else:
            count = size - start
    if start > size or (size < GENERATED_SPACE and start + count > size):
        raise ValueError(f"{source.name} holds {size} tasks; --start {start} with {count} tasks runs past the end")
    return range(start, start + count)


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _sources(out: TextIO, as_json: bool = False) -> int:
    """Every source of :func:`colbench_gym.tasks.sources.available_sources` (the kinds table and
    the shipped files: a new generator is listed with no change here)."""
    for src in available_sources():
        if as_json:
            print(json.dumps(asdict(src), ensure_ascii=False), file=out)
            continue
        size = "unbounded" if src.size is None else f"{src.size} tasks"
        print(f"{src.spec:<20} {src.kind:<9} {size:>10}  {src.description}", file=out)
    return 0


def _write_jsonl(records: list[dict[str, Any]], output: str, force: bool) -> None:
    if output == "-":
        for record in records:
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        return
    if os.path.exists(output) and not force:
        raise FileExistsError(f"{output} exists: pass --force to overwrite it or choose another -o path")
    write_jsonl_atomic(output, records)


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "sources":
            return _sources(sys.stdout, args.json)
        source = resolve_task_source(args.tasks, args.kind)
        if args.action == "list":
            for i in _range(source, args.start, args.limit, "--limit"):
                task = source[i]
                if args.json:
                    print(json.dumps({"index": i, "task_id": task.task_id, "function": _function_name(task),
                                      "problem_description": task.problem_description}, ensure_ascii=False))
                else:
                    print(f"{i:>6}  {task.task_id}  {_function_name(task):<22} {_one_line(task.problem_description, 90)}")
            return 0
        if args.action == "show":
            if not 0 <= args.index < len(source):
                raise ValueError(f"index {args.index} is out of range for {source.name} ({len(source)} tasks)")
            task = source[args.index]
            print(f"# {source.name}[{args.index}]  id {task.task_id}  function {_function_name(task)}")
            print(task.problem_description)
            if args.reveal:
                print("\n# hidden reference\n" + task.ground_truth.rstrip())
                if isinstance(task, BackendTask):
                    print("\n# hidden tests")
                    for name, call in task.test_cases.items():
                        print(f"{name}: {call}")
            return 0
        if args.action == "export":
            records = [source[i].to_record() for i in _range(source, args.start, args.count, "--count")]
            if args.release_compatible and args.kind == "backend":
                from colbench_gym.grading.release import release_compatible  # noqa: PLC0415 - starts a sandbox

                records, report = release_compatible(records)
                print(report, file=sys.stderr)
            _write_jsonl(records, args.output, args.force)
            if args.output != "-":
                print(f"wrote {len(records)} {args.kind} tasks from {source.name} to {args.output}", file=sys.stderr)
            return 0
    except (ValueError, FileNotFoundError, FileExistsError, IndexError) as exc:
        print(f"error: {args.action}: {exc}", file=sys.stderr)  # the CLI's boundary names the command
        return 2
    raise AssertionError(f"unhandled action {args.action!r}")  # pragma: no cover - argparse restricts choices
