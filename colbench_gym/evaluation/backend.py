"""``colbench evaluate backend IN.jsonl --output OUT.jsonl [--k K] [--workers N]``.

Grades the ``answer`` of every offline trajectory record (``{"task": {...}, "answer": str,
...}``, the paper's release format) in the sandbox and writes the same records, in the same
order, with ``reward`` (fraction of hidden tests passed), ``success`` (all passed),
``tests_passed``, ``tests_total``, ``grade_error``, ``tests_unpassable`` and ``unpassable_tests``
(tests no answer can pass: their reference gave no usable result, e.g. an exception of the
sandbox; counted as failed, and summed per task in the report) set; every other field is kept.
OUT is written atomically (temporary file + rename). With ``--k K`` the summary also reports
best-of-k like the paper's release: records are grouped by task (in file order), the first K
of each task count, and a task scores its best record.

Each output record also gets ``end_reason`` and ``infrastructure_failure``
(:mod:`colbench_gym.tasks.accounting`): the record's own (``meta.end_reason``, e.g. a rollout
episode whose simulator endpoint failed), else ``grading_error`` / ``task_error`` when the grade
is not the answer's own, else how the episode ended. The rates are over the records the agent is
accountable for; infrastructure failures are counted apart, by reason, with the success rate
that counts them as failures beside. The tokens and wall time the records carry are summed, and
priced with ``--prices FILE``. A record whose task is invalid (a
reference Python cannot parse) refuses the whole file with one ``IN:LINE`` error line;
``--skip-invalid`` leaves such records out instead, lists each on stderr and counts them in the
summary.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from colbench_gym.evaluation.records import INPUT_ERRORS, DamagedFileError, input_error, load_task_answers, no_episodes
from colbench_gym.evaluation.report import cost_lines, end_reason_lines
from colbench_gym.jsonl import check_output_writable, write_jsonl_atomic
from colbench_gym.tasks import BackendTask, TaskFormatError
from colbench_gym.tasks.accounting import PriceTableError, is_infrastructure, load_prices, record_end_reason
from colbench_gym.verdicts import score_answer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="offline trajectory JSONL, one {task, answer, ...} record per line")
    parser.add_argument("--output", "-o", required=True, help="where to write the graded records (JSONL)")
    parser.add_argument("--k", type=int, default=1,
                        help="best-of-k: group records by task and also report the best of the first K")
    parser.add_argument("--workers", type=int, default=1, help="sandboxed workers grading in parallel")
    parser.add_argument("--call-timeout", type=float, default=2.0, help="seconds per test call")
    parser.add_argument("--isolation", choices=("auto", "namespaces", "rlimits-only"), default="auto")
    parser.add_argument("--cache-dir", default=None, help="cache reference outputs on disk here")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="leave out records whose task is invalid (e.g. a reference Python cannot parse) "
                             "instead of refusing the file; each is listed on stderr and counted in the summary")
    parser.add_argument("--semantics", choices=("ours", "release"), default="ours",
                        help="release: the paper release's grader (its answer checks, fences, scope, plain ==; "
                             "see docs/interop.md); rewards are the release's, ours are printed beside them")
    parser.add_argument("--prices", metavar="FILE", default=None,
                        help='price table for the cost line: JSON {"MODEL": {"prompt": USD_PER_1M_TOKENS, '
                             '"completion": USD_PER_1M_TOKENS}}')


def best_of_k(records: Iterable[tuple[str, float, bool]], k: int) -> tuple[float, float, int, int]:
    """(success@k, tests@k, tasks, tasks with fewer than k records) over ``(task_id, reward, success)``."""
    groups: dict[str, list[tuple[float, bool]]] = {}
    for task_id, reward, success in records:
        group = groups.setdefault(task_id, [])
        if len(group) < k:
            group.append((reward, success))
    if not groups:
        return 0.0, 0.0, 0, 0
    succ = sum(any(s for _, s in g) for g in groups.values()) / len(groups)
    tests = sum(max(r for r, _ in g) for g in groups.values()) / len(groups)
    short = sum(len(g) < k for g in groups.values())
    return succ, tests, len(groups), short


#: Tasks named one by one in the unpassable report (the output file has every record's list).
REPORT_TASKS = 10


def unpassable_report(items: list[tuple[dict[str, Any], BackendTask, str]], results: list[Any]) -> list[str]:
    """Lines on the tests no answer can pass (their reference gave no usable result), per task.

    Such tests count as failed in every rate; a reader must see how many there are, and why
    (an exception of the sandbox such as ModuleNotFoundError, a reference timeout, ...).
    """
    tasks: dict[str, tuple[int, int, dict[str, str]]] = {}  # task_id -> (first record, tests, unpassable)
    for i, ((_, task, _), res) in enumerate(zip(items, results), 1):
        if task.task_id not in tasks:
            tasks[task.task_id] = (i, res.total, dict(res.unpassable))
    hit = {k: v for k, v in tasks.items() if v[2]}
    if not hit:
        return []
    n_tests = sum(v[1] for v in tasks.values())
    n_bad = sum(len(v[2]) for v in hit.values())
    lines = [f"unpassable: {n_bad} of {n_tests} tests in {len(hit)} of {len(tasks)} tasks (the reference gives no "
             "usable result; counted as failed above; see tests_unpassable / unpassable_tests in the output)"]
    for task_id, (first, total, bad) in list(hit.items())[:REPORT_TASKS]:
        name, why = next(iter(bad.items()))
        lines.append(f"  task {task_id[:12]} (record {first}): {len(bad)} of {total} tests, e.g. {name}: "
                     f"{' '.join(why.split())[:160]}")
    if len(hit) > REPORT_TASKS:
        lines.append(f"  ... and {len(hit) - REPORT_TASKS} more tasks")
    return lines


def run(args: argparse.Namespace) -> int:
    if args.k < 1 or args.workers < 1:
        return input_error("--k and --workers must be >= 1")
    skipped: list[str] | None = [] if args.skip_invalid else None
    try:
        prices = load_prices(args.prices) if args.prices else None
        # every record read and validated first, so a bad line fails before any work
        items = load_task_answers(args.input, BackendTask, "final answer", skipped)
    except PriceTableError as exc:
        return input_error(exc)
    except INPUT_ERRORS as exc:
        hint = ""
        if isinstance(exc, DamagedFileError):  # not a record at all: --skip-invalid cannot pass over it
            hint = "; the file is damaged there (--skip-invalid leaves out invalid records, not lines that are not one)"
        elif isinstance(exc, TaskFormatError) and not args.skip_invalid:
            hint = "; pass --skip-invalid to grade the other records"
        return input_error(f"{exc}{hint}")
    for why in skipped or ():
        print(f"skipped: {why}", file=sys.stderr)
    if skipped:
        print(f"skipped {len(skipped)} invalid record{'s' * (len(skipped) != 1)} (--skip-invalid); "
              f"grading the other {len(items)}", file=sys.stderr)
    if not items:
        return no_episodes(args.input, skipped)
    check_output_writable(args.output)  # before any grading: a bad --output must not cost the run
    from tqdm.auto import tqdm  # noqa: PLC0415 - only when grading

    from colbench_gym.grading import BackendGrader  # noqa: PLC0415 - starts sandboxes
    from colbench_gym.grading.release import ReleaseGrader  # noqa: PLC0415

    results, ours = [], []
    release = args.semantics == "release"
    opts = dict(workers=args.workers, isolation=args.isolation)
    with BackendGrader(**opts, call_timeout=args.call_timeout, cache_dir=args.cache_dir) as grader, \
            (ReleaseGrader(**opts) if release else nullcontext()) as rgrader, \
            ThreadPoolExecutor(max_workers=args.workers) as pool, \
            tqdm(total=len(items), desc="grading", unit="answer", disable=args.no_progress,
                 file=sys.stderr) as bar:
        def grade(item: tuple[dict[str, Any], BackendTask, str]):
            verdict = score_answer(item[2], item[1], grader=grader, reward_mode="fraction")
            theirs = rgrader.grade(item[2], item[1]) if release else None  # the raw answer: its own fence rules
            bar.update(1)
            return verdict, theirs

        verdicts = []
        for verdict, theirs in pool.map(grade, items):
            verdicts.append(verdict)
            ours.append(verdict.artefact)
            results.append(theirs or verdict.artefact)
    out = []
    for (record, _, _), res, own, verdict in zip(items, results, ours, verdicts):
        rec = dict(record)
        rec.update(reward=res.fraction, success=res.success, tests_passed=res.passed,
                   tests_total=res.total, grade_error=res.error, tests_unpassable=len(res.unpassable),
                   unpassable_tests=dict(res.unpassable))
        if release:
            rec.update(semantics="release", reward_ours=own.fraction, success_ours=own.success)
        reason = record_end_reason(record)
        if not is_infrastructure(reason):
            reason = verdict.end_reason or reason
        rec.update(end_reason=reason, infrastructure_failure=is_infrastructure(reason))
        if rec["infrastructure_failure"]:  # no score (the rule of colbench_gym.tasks.accounting); the counts stay
            rec.update(reward=None, success=None)
            if release:
                rec.update(reward_ours=None, success_ours=None)
        out.append(rec)
    write_jsonl_atomic(args.output, out)
    # the agent's rates are over the records it is accountable for (colbench_gym.tasks.accounting)
    kept = [i for i, r in enumerate(out) if not r["infrastructure_failure"]]
    n = len(kept)
    succ = sum(out[i]["success"] for i in kept) / n if n else 0.0
    tests = sum(out[i]["reward"] for i in kept) / n if n else 0.0
    print(f"graded {len(out)} answers -> {args.output}")
    if skipped:
        print(f"skipped {len(skipped)} invalid record{'s' * (len(skipped) != 1)} (listed on stderr; not in the output "
              "or the rates below)")
    if not n:  # no rate of nothing: 0 % would read as an agent that failed everything
        print(f"success rate: n/a   tests passed: n/a (no scored episodes: all {len(out)} failed for infrastructure "
              "reasons)")
    elif release:
        own_s = sum(ours[i].success for i in kept) / n if n else 0.0
        own_t = sum(ours[i].fraction for i in kept) / n if n else 0.0
        print("semantics: release (the paper release's grader; our default semantics in brackets)")
        print(f"success rate: {100 * succ:.1f}% [ours {100 * own_s:.1f}%]   "
              f"tests passed: {100 * tests:.1f}% [ours {100 * own_t:.1f}%]")
    else:
        print(f"success rate: {100 * succ:.1f}%   tests passed: {100 * tests:.1f}%")
    reasons, why = end_reason_lines(out)
    print(reasons)
    infra = len(out) - n
    if infra:
        print(f"infrastructure failures: {infra} of {len(out)} records ({why}), not the agent's: left out of the "
              f"rates above; counted as failures, success rate: {100 * succ * n / len(out):.1f}%")
    for line in cost_lines(items, prices):
        print(line)
    for line in unpassable_report(items, results):
        print(line)
    if args.k > 1:
        s_k, t_k, n_tasks, short = best_of_k(((t.task_id, r.fraction, r.success) for i, ((_, t, _), r)
                                              in enumerate(zip(items, results)) if not out[i]["infrastructure_failure"]),
                                             args.k)
        note = f" ({short} tasks have fewer than {args.k} answers)" if short else ""
        print(f"best-of-{args.k} over {n_tasks} tasks: success rate: {100 * s_k:.1f}%   "
              f"tests passed: {100 * t_k:.1f}%{note}")
    return 0
