"""``sweet-agent evaluate FILE``: the paper's metrics for trajectory files (the command itself,
which can also play critic-guided best-of-N episodes first, is :mod:`sweet_agent.rollout.evaluate`).

- backend: **success** (every hidden test passes) and **% tests passed** (mean fraction);
- frontend: **similarity** (mean CLIP cosine similarity to the reference page) and **win rate**
  against a reference run (``--reference FILE``: per task, our mean reward beats the reference's;
  ties count one half, by the one rule of :mod:`colbench_gym.evaluation.metrics`), as the paper
  compares against GPT-4o.

By default the stored ``reward``/``success`` are summarised; ``--regrade`` grades backend answers
again in the sandbox (:mod:`colbench_gym.grading`) and reports any record whose stored score
differs, so a file can be checked independently of the run that wrote it.

Every per-episode number (success, tests passed, similarity, agent turns, whether the episode
failed) is measured by :func:`sweet_agent.metrics.episode_metrics`, the one implementation the
viewer and the learning benchmark use too; this module only adds the file-level report.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from colbench_gym.evaluation.metrics import win_rate as _win_rate
from colbench_gym.tasks.identity import task_identity
from sweet_agent.metrics import episode_metrics, mean, metric_values
from sweet_agent.trajectories import Record, read_trajectories

#: Identity of a task across files: the one rule of :mod:`colbench_gym.tasks.identity`.
task_key = task_identity


@dataclass
class Summary:
    episodes: int = 0
    tasks: int = 0
    kind: str = "backend"
    success: float | None = None  # fraction of episodes with every test passing
    tests_passed: float | None = None  # mean fraction of tests passed
    similarity: float | None = None  # mean frontend similarity
    win_rate: float | None = None  # vs --reference, per task
    compared_tasks: int = 0
    mean_turns: float | None = None
    answered: float | None = None  # episodes ended by I WANT TO ANSWER: (not the turn limit)
    regraded: int = 0
    mismatches: list[str] = field(default_factory=list)
    ungraded: int = 0  # records without a stored reward (graded only with --regrade)
    failed: int = 0  # episodes recorded as failed (``error`` set: endpoint gave up); not in the metrics above
    policies: list[str] = field(default_factory=list)  # who played (``meta.policy``), in file order

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def regrade_backend(records: list[Record]) -> list[tuple[float, bool]]:
    """Grade every backend answer again in the sandbox: ``(fraction passed, success)`` per record."""
    from colbench_gym.grading import get_default_grader
    from colbench_gym.protocol import extract_code
    from colbench_gym.tasks.records import BackendTask

    grader = get_default_grader()
    out = []
    for i, rec in enumerate(records):
        task = BackendTask.from_record(rec["task"], where=f"record {i} task")
        res = grader.grade(extract_code(rec["answer"]), task)
        out.append((res.passed / res.total if res.total else 0.0, bool(res.success)))
    return out


def win_rate(ours: Iterable[Record], reference: Iterable[Record]) -> tuple[float | None, int]:
    """Per-task win rate of ``ours`` over ``reference`` on the tasks both hold (ties = 1/2)."""
    def by_task(recs: Iterable[Record]) -> dict[str, float]:
        acc: dict[str, list[float]] = defaultdict(list)
        for r in recs:
            if r.get("reward") is not None:
                acc[task_key(r["task"])].append(float(r["reward"]))
        return {k: sum(v) / len(v) for k, v in acc.items()}

    a, b = by_task(ours), by_task(reference)
    common = sorted(set(a) & set(b))
    return _win_rate((a[k], b[k]) for k in common), len(common)


def summarize(records: list[Record], *, reference: list[Record] | None = None, regrade: bool = False) -> Summary:
    """The paper's metrics for one file's records."""
    s = Summary(episodes=len(records))
    episodes = [episode_metrics(r, i) for i, r in enumerate(records)]
    s.failed = sum(e.failed for e in episodes)
    s.policies = list(dict.fromkeys(str(p) for r in records if (p := (r.get("meta") or {}).get("policy"))))
    # failed episodes have no score: counted apart
    records = [r for r, e in zip(records, episodes) if not e.failed]
    episodes = [e for e in episodes if not e.failed]
    if not records:
        return s
    s.tasks = len({e.task_id for e in episodes})
    kinds = {e.kind for e in episodes}
    s.kind = kinds.pop() if len(kinds) == 1 else "mixed"
    if s.kind == "backend":
        if regrade:
            grades = regrade_backend(records)
            s.regraded = len(grades)
            for i, (rec, (frac, ok)) in enumerate(zip(records, grades)):
                stored = rec.get("reward")
                if stored is None:  # ungraded (e.g. the release's backend rollouts): nothing to differ from
                    s.ungraded += 1
                    continue
                if abs(float(stored) - frac) > 1e-9 or (rec.get("success") not in (None, ok)):
                    eid = (rec.get("meta") or {}).get("episode_id", f"line {i + 1}")
                    s.mismatches.append(f"{eid}: stored reward {stored} success {rec.get('success')}, "
                                        f"regraded {frac:.4f} success {ok}")
            s.tests_passed = mean(f for f, _ in grades)
            s.success = mean(float(ok) for _, ok in grades)
        else:
            s.tests_passed = mean(metric_values(episodes, "tests_passed"))
            s.success = mean(metric_values(episodes, "success"))
    elif s.kind == "frontend":
        s.similarity = mean(metric_values(episodes, "similarity"))
    if reference is not None:
        s.win_rate, s.compared_tasks = win_rate(records, reference)
    s.mean_turns = mean(metric_values(episodes, "turns"))
    ended = [(r.get("meta") or {}).get("ended_by") for r in records]
    if any(e is not None for e in ended):
        s.answered = mean(float(e == "answer") for e in ended if e is not None)
    return s


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def format_summary(s: Summary, title: str = "") -> str:
    lines = [f"== {title}" if title else "==", f"episodes        {s.episodes} ({s.tasks} tasks, {s.kind})"]
    if s.policies:
        lines.append(f"policy          {', '.join(s.policies)}")
    if s.kind in ("backend", "mixed"):
        lines += [f"success         {_pct(s.success)}", f"tests passed    {_pct(s.tests_passed)}"]
    if s.kind in ("frontend", "mixed"):
        lines.append(f"similarity      {'n/a' if s.similarity is None else f'{s.similarity:.4f}'}")
    if s.win_rate is not None or s.kind == "frontend":
        lines.append(f"win rate        {_pct(s.win_rate)}" + (f" over {s.compared_tasks} shared tasks"
                                                              if s.compared_tasks else " (pass --reference FILE)"))
    if s.kind == "backend" and s.tests_passed is None:
        lines.append("                (no stored rewards: pass --regrade, or grade with `colbench evaluate backend`)")
    if s.mean_turns is not None:
        lines.append(f"agent turns     {s.mean_turns:.2f} per episode")
    if s.answered is not None:
        lines.append(f"answered        {_pct(s.answered)} (rest hit the turn limit)")
    if s.failed:
        lines.append(f"failed          {s.failed} episodes not scored (each record's 'error' says why; "
                     "the metrics above leave them out)")
    if s.regraded:
        lines.append(f"regraded        {s.regraded} answers, {len(s.mismatches)} differ from the stored scores"
                     + (f" ({s.ungraded} had none)" if s.ungraded else ""))
        lines += [f"  ! {m}" for m in s.mismatches[:10]]
    return "\n".join(lines)


# ---------------------------------------------------------------- `sweet-agent evaluate`
def add_arguments(parser: argparse.ArgumentParser, files_required: bool = True) -> None:
    """The report's options (``files_required=False``: the command that can play episodes first,
    :mod:`sweet_agent.rollout.evaluate`)."""
    parser.add_argument("files", nargs="+" if files_required else "*", metavar="FILE", help="trajectory JSONL file(s)")
    parser.add_argument("--reference", metavar="FILE", help="reference run for the win rate (e.g. a stronger model)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade backend answers again in the sandbox instead of trusting stored rewards")
    parser.add_argument("--json", action="store_true", help="print one JSON object per file")


def run(args: argparse.Namespace) -> int:
    from sweet_agent.trajectories import TrajectoryFormatError

    try:
        reference = read_trajectories(args.reference, require_reward=False) if args.reference else None
        status = 0
        for path in args.files:
            # Ungraded files (the release's backend rollouts carry no reward) load too: --regrade
            # grades them; without it their success / tests passed read n/a.
            s = summarize(read_trajectories(path, require_reward=False), reference=reference, regrade=args.regrade)
            if s.mismatches:
                status = 1
            print(json.dumps({"file": path, **s.to_dict()}) if args.json else format_summary(s, path))
        return status
    except (FileNotFoundError, TrajectoryFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    p = argparse.ArgumentParser(prog="sweet-agent evaluate")
    add_arguments(p)
    sys.exit(run(p.parse_args()))
