"""The submission format and ``sweet-agent submission check DIR``.

A submission is a folder::

    DIR/submission.json   who made the run and what it is (:data:`SUBMISSION_FIELDS`)
    DIR/results.json      `sweet-agent evaluate FILE... --json` run inside DIR: one colbench-results
                          record per trajectory file (its ``file`` relative to DIR)
    DIR/*.jsonl           the trajectory files the results were computed from (one per training seed)

WHY a check that recomputes: a number on the table is only as good as the episodes behind it.
The check reads every trajectory file with the strict record validator, recomputes each results
record with the one report (:func:`sweet_agent.evaluation.report.summarize`, its numbers measured by
:mod:`sweet_agent.evaluation.metrics`) and compares; it also holds the episodes to the declared task source
(every declared task × sample once, each record's task the source's task of that index) and
to the reporting rule (an infrastructure failure has no score). Each problem is one line; any
problem fails the check (exit status 1), so a table never shows a run it could not reproduce.
``win_rate`` and ``cost_usd`` need a reference run or a price table the folder does not hold: they
are shown as declared, not recomputed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.tasks.accounting import is_infrastructure_failure, record_end_reason
from colbench_gym.tasks.identity import task_identity
from colbench_gym.tasks.sources import available_sources, resolve_task_source
from sweet_agent.evaluation.metrics import Estimate, episode_metrics, hierarchical_bootstrap, seed_values
from sweet_agent.evaluation.report import results_record, summarize
from sweet_agent.leaderboard.results import check_results_record, read_json_documents
from sweet_agent.leaderboard.rows import LeaderboardInputError, Row
from sweet_agent.trajectories import Record, TrajectoryFormatError, read_trajectories, record_episode_id

SUBMISSION_FILE = "submission.json"
RESULTS_FILE = "results.json"
SUBMISSION_SCHEMA = "colbench-submission"
SUBMISSION_SCHEMA_VERSION = 1
#: submission.json's fields: (type, required). ``task_start``/``task_count``: which task indices of
#: the source were played (a bounded source: all of them unless given; an unbounded, generated one:
#: ``task_count`` is required); ``samples``: episodes per task (``sweet-agent rollout --k``).
SUBMISSION_FIELDS: dict[str, tuple[type, bool]] = {
    "schema": (str, True), "schema_version": (int, True), "method": (str, True), "model": (str, True),
    "who": (str, True), "commit": (str, True), "task_source": (str, True), "date": (str, True),
    "notes": (str, False), "task_start": (int, False), "task_count": (int, False), "samples": (int, False),
}
#: Keys of a results record that the trajectories alone decide (compared after recomputing).
RECOMPUTED = ("kind", "episodes", "tasks", "task_sources", "policies", "agent_models", "success", "success_all",
              "tests_passed", "similarity", "mean_turns", "answered", "wall_time_s", "infrastructure_failures",
              "agent_errors", "end_reasons", "agent_tokens", "simulator_tokens", "tokens_by_model")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class Submission:
    method: str
    model: str
    who: str
    commit: str
    task_source: str
    date: str
    notes: str = ""
    task_start: int = 0
    task_count: int | None = None
    samples: int = 1


@dataclass
class Check:
    """What ``submission check`` found: its problems (one line each) and, when there are none,
    the submission's row of the table."""

    folder: Path
    problems: list[str] = field(default_factory=list)
    row: Row | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def read_submission(folder: Path, problems: list[str]) -> Submission | None:
    """submission.json, each field checked; problems appended (None when it is unusable)."""
    path = folder / SUBMISSION_FILE
    try:
        docs = read_json_documents(path)
    except LeaderboardInputError as exc:
        problems.append(f"{_relative(exc, folder)} (every submission has a {SUBMISSION_FILE}: docs/leaderboard.md)")
        return None
    doc = docs[0][1] if len(docs) == 1 else None
    path = Path(SUBMISSION_FILE)  # problems name files relative to the folder
    if not isinstance(doc, Mapping):
        problems.append(f"{path}: expected one JSON object")
        return None
    before = len(problems)
    for key in sorted(set(doc) - set(SUBMISSION_FIELDS)):
        problems.append(f"{path}: unknown field {key!r} (fields: {', '.join(SUBMISSION_FIELDS)})")
    for key, (kind, required) in SUBMISSION_FIELDS.items():
        if key not in doc:
            if required:
                problems.append(f"{path}: missing field {key!r}")
            continue
        v = doc[key]
        if not isinstance(v, kind) or isinstance(v, bool) or (kind is str and required and not v.strip()):
            problems.append(f"{path}: {key!r} must be {'a non-empty string' if kind is str else 'a whole number'}, "
                            f"got {json.dumps(v)[:40]}")
    if len(problems) > before:
        return None
    if doc["schema"] != SUBMISSION_SCHEMA or doc["schema_version"] != SUBMISSION_SCHEMA_VERSION:
        problems.append(f"{path}: schema must be {SUBMISSION_SCHEMA!r} version {SUBMISSION_SCHEMA_VERSION}")
    if not _COMMIT.fullmatch(doc["commit"]):
        problems.append(f"{path}: 'commit' must be the git commit the run used (7-40 hex digits), got {doc['commit']!r:.50}")
    try:
        dt.date.fromisoformat(doc["date"])
    except ValueError:
        problems.append(f"{path}: 'date' must be YYYY-MM-DD, got {doc['date']!r:.40}")
    for key in ("task_start", "task_count", "samples"):
        if key in doc and doc[key] < (0 if key == "task_start" else 1):
            problems.append(f"{path}: {key!r} must be >= {0 if key == 'task_start' else 1}, got {doc[key]}")
    if len(problems) > before:
        return None
    return Submission(**{k: v for k, v in doc.items() if k not in ("schema", "schema_version")})


def expected_episodes(sub: Submission, where: str, problems: list[str]) -> tuple[list[int], str] | None:
    """The task indices the declared task source holds for this submission, and its kind; a
    problem when the source is not one this install knows (``colbench tasks sources``)."""
    known = {s.spec: s for s in available_sources()}
    info = known.get(sub.task_source)
    if info is None:
        problems.append(f"{where}: task source {sub.task_source!r} is unknown; one of {', '.join(sorted(known))} "
                        "(`colbench tasks sources`)")
        return None
    count = sub.task_count
    if count is None:
        if info.size is None:
            problems.append(f"{where}: {sub.task_source} is generated (unbounded): say which tasks were played "
                            "with 'task_start' and 'task_count'")
            return None
        count = info.size - sub.task_start
    if count < 1 or (info.size is not None and sub.task_start + count > info.size):
        problems.append(f"{where}: tasks from {sub.task_start} ({count}) are not in {sub.task_source} "
                        f"({info.size} tasks)")
        return None
    return list(range(sub.task_start, sub.task_start + count)), info.kind


def _relative(exc: Exception, folder: Path) -> str:
    """An error's message with the folder's own path taken out of the file names it gives."""
    return str(exc).replace(f"{folder.resolve()}/", "").replace(f"{folder}/", "")


def _trajectory_file(folder: Path, name: str) -> Path | None:
    path = (folder / name).resolve()
    return path if path.is_relative_to(folder.resolve()) else None


def _check_episodes(sub: Submission, indices: list[int], kind: str, name: str, records: list[Record],
                    problems: list[str]) -> None:
    """Every declared task × sample exactly once, each task the source's own, no scored
    infrastructure failure."""
    source = resolve_task_source(sub.task_source, kind)
    wanted = {f"{i}:{s}" for i in indices for s in range(sub.samples)}
    seen: Counter[str] = Counter()
    for line, rec in enumerate(records, 1):
        meta = rec.get("meta") or {}
        eid = record_episode_id(rec)
        if not isinstance(eid, str):
            problems.append(f"{name}:{line}: no meta.episode_id; submit files `sweet-agent rollout` wrote")
            continue
        seen[eid] += 1
        if meta.get("tasks") != sub.task_source:
            problems.append(f"{name}:{line}: episode {eid} played tasks {meta.get('tasks')!r}, the submission "
                            f"declares {sub.task_source!r}")
        index = meta.get("task_index")
        if eid in wanted and (not isinstance(index, int) or
                              task_identity(rec["task"]) != task_identity(source[index].to_record())):
            problems.append(f"{name}:{line}: episode {eid}'s task is not task {index} of {sub.task_source}")
        if is_infrastructure_failure(rec) and (rec.get("reward") is not None or rec.get("success") is not None):
            problems.append(f"{name}:{line}: episode {eid} is an infrastructure failure ({record_end_reason(rec)}) "
                            f"counted as a score (reward {rec.get('reward')}); it has none: play it again "
                            "(`sweet-agent rollout --resume`)")
    for eid, n in sorted(seen.items()):
        if n > 1:
            problems.append(f"{name}: episode {eid} appears {n} times (one record per task and sample)")
    missing, extra = sorted(wanted - set(seen), key=_order), sorted(set(seen) - wanted, key=_order)
    span = f"tasks {indices[0]}..{indices[-1]} x {sub.samples} sample(s)" if indices else "no tasks"
    if missing:
        problems.append(f"{name}: {len(missing)} episode(s) of {sub.task_source} {span} missing "
                        f"({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}): finish the run with --resume")
    if extra:
        problems.append(f"{name}: {len(extra)} episode(s) outside {sub.task_source} {span} "
                        f"({', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''})")


def _order(eid: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in eid.split(":"))


def _compare(declared: Mapping[str, Any], recomputed: Mapping[str, Any], name: str, problems: list[str]) -> None:
    if declared["regraded"]:  # its rates are the sandbox's, not the records': nothing here recomputes those
        problems.append(f"{RESULTS_FILE} ({name}): made with --regrade; grade the file first (`colbench evaluate "
                        "backend IN --output OUT`), submit the graded file and its `sweet-agent evaluate --json`")
        return
    if declared["infrastructure_failures"] < recomputed["infrastructure_failures"]:
        problems.append(f"{RESULTS_FILE} ({name}): counts {recomputed['infrastructure_failures'] - declared['infrastructure_failures']} "
                        "infrastructure failure(s) as scores (declared infrastructure_failures "
                        f"{declared['infrastructure_failures']}, the trajectories hold {recomputed['infrastructure_failures']})")
    for key in RECOMPUTED:
        a, b = declared[key], recomputed[key]
        same = (a is None) == (b is None) and (a is None or abs(a - b) <= 1e-9) if isinstance(b, float) or (
            b is None and isinstance(a, (int, float))) else a == b
        if not same:
            problems.append(f"{RESULTS_FILE} ({name}): {key} is {json.dumps(a)[:60]}, the trajectories give "
                            f"{json.dumps(b)[:60]}")


def check_submission(folder: str | Path) -> Check:
    """Check a submission folder; on success its :class:`Row` (intervals from the trajectories)."""
    folder = Path(folder)
    check = Check(folder)
    problems = check.problems
    if not folder.is_dir():
        problems.append(f"{folder}: not a folder (a submission is a folder with {SUBMISSION_FILE}, {RESULTS_FILE} "
                        "and its trajectory files)")
        return check
    sub = read_submission(folder, problems)
    try:
        declared = [check_results_record(doc, where) for where, doc in read_json_documents(folder / RESULTS_FILE)]
    except LeaderboardInputError as exc:
        problems.append(_relative(exc, folder))
        declared = []
    plan = expected_episodes(sub, SUBMISSION_FILE, problems) if sub else None
    runs: dict[str, list[Record]] = {}
    for rec in declared:
        name = rec["file"]
        path = _trajectory_file(folder, name)
        if path is None:
            problems.append(f"{RESULTS_FILE}: file {name!r} is outside the submission folder; run "
                            "`sweet-agent evaluate` inside it")
            continue
        if name in runs:
            problems.append(f"{RESULTS_FILE}: {name} is reported twice")
            continue
        try:
            records = read_trajectories(path, require_reward=False)
        except (FileNotFoundError, TrajectoryFormatError) as exc:
            problems.append(_relative(exc, folder))
            continue
        runs[name] = records
        if not records:
            problems.append(f"{name}: no episodes")
            continue
        if plan is not None:
            _check_episodes(sub, *plan, name, records, problems)
        _compare(rec, results_record(summarize(records), name), name, problems)
    reported = {_trajectory_file(folder, r["file"]) for r in declared}
    for path in sorted(folder.rglob("*.jsonl")) if declared else ():  # (an unreadable results.json: said above)
        if path.resolve() not in reported:
            problems.append(f"{path.relative_to(folder)}: a trajectory file {RESULTS_FILE} does not report")
    if declared and not problems and sub is not None:
        check.row = submission_row(sub, declared, runs, folder)
    return check


def submission_row(sub: Submission, declared: list[dict[str, Any]], runs: Mapping[str, list[Record]],
                   folder: Path) -> Row:
    """The table's row of a checked submission: each rate the mean over its trajectory files
    (training seeds) of their means over tasks, with the hierarchical bootstrap interval of
    :mod:`sweet_agent.evaluation.metrics` (seeds, then tasks; one file: the plain bootstrap)."""
    episodes = {name: {(e.task_id, e.sample): e for e in (episode_metrics(r, i) for i, r in enumerate(recs))}
                for name, recs in runs.items()}

    def estimate(metric: str) -> Estimate | None:
        est = hierarchical_bootstrap(seed_values(episodes, metric))
        return est if est.n else None

    turns = estimate("turns")
    costs = [r["cost_usd"] for r in declared]
    wins = [r["win_rate"] for r in declared]
    kinds = {r["kind"] for r in declared}
    return Row(method=sub.method, model=sub.model, task_source=sub.task_source,
               kind=kinds.pop() if len(kinds) == 1 else "mixed", episodes=sum(r["episodes"] for r in declared),
               seeds=len(declared), success=estimate("success"), tests_passed=estimate("tests_passed"),
               similarity=estimate("similarity"),
               win_rate=Estimate(sum(wins) / len(wins), None, None, sum(r["compared_tasks"] for r in declared))
               if None not in wins else None,
               turns=None if turns is None else turns.mean,
               cost_usd=sum(costs) if None not in costs else None, source=f"submission {folder.name} ({sub.who}, "
               f"{sub.commit[:7]}, {sub.date})", notes=sub.notes)


# ---------------------------------------------------------------- `sweet-agent submission check`
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folders", nargs="+", metavar="DIR",
                        help=f"submission folder(s): {SUBMISSION_FILE}, {RESULTS_FILE} and the trajectory files "
                             "(docs/leaderboard.md)")


def run(args: argparse.Namespace) -> int:
    missing = [f for f in args.folders if not Path(f).is_dir()]
    if missing:  # refused before any work
        print(f"error: {', '.join(missing)}: no such submission folder (a folder with {SUBMISSION_FILE}, "
              f"{RESULTS_FILE} and its trajectory files: docs/leaderboard.md)", file=sys.stderr)
        return 2
    status = 0
    for folder in args.folders:
        check = check_submission(folder)
        if check.ok:
            r = check.row
            print(f"{folder}: ok — {r.method} ({r.model}) on {r.task_source}: {r.episodes} episodes, {r.seeds} file(s)")
        else:
            status = 1
            for problem in check.problems:
                print(f"error: {folder}: {problem}", file=sys.stderr)
    return status

