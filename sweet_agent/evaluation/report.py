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
failed) is measured by :func:`sweet_agent.evaluation.metrics.episode_metrics`, the one implementation the
viewer and the learning benchmark use too; this module only adds the file-level report.

The report also says why the episodes ended and what they cost
(:mod:`colbench_gym.tasks.accounting`): the count per end reason; infrastructure failures
(the agent's endpoint, the simulator, the grader, the renderer, the task: not the agent's
doing) apart, left out of the rates and with the success counting them as failures beside it;
the agent's and the simulator's prompt/completion tokens per model, the episodes' wall time, and
with ``--prices FILE`` (``{model: {"prompt": $ per 1M, "completion": $ per 1M}}``) the cost.

``--json`` prints one **results record** per file (:func:`results_record`): the versioned,
documented schema of docs/trajectory-format.md ("results.json"), the same keys with the same
types for every run (every end reason present, counted 0 when none; per-model tokens and costs as
lists of rows), so results of several runs load together with ``datasets.load_dataset("json",
...)`` (``features=results_features()`` for any mix, e.g. a run with no scores beside a scored one).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from colbench_gym.evaluation.metrics import win_rate as _win_rate
from colbench_gym.tasks.accounting import (
    END_REASONS,
    Prices,
    PriceTableError,
    RunCost,
    count_end_reasons,
    format_end_reasons,
    is_infrastructure,
    is_infrastructure_failure,
    load_prices,
    run_cost,
    usage,
)
from colbench_gym.tasks.identity import task_identity
from sweet_agent.evaluation.metrics import episode_metrics, mean, metric_values
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
    policies: list[str] = field(default_factory=list)  # who played (``meta.policy``), in file order
    agent_models: list[str] = field(default_factory=list)  # the agent's models (``meta.agent_model``), in file order
    task_sources: list[str] = field(default_factory=list)  # where the tasks came from (``meta.tasks``), in file order
    #: episodes per end reason (colbench_gym.tasks.accounting.END_REASONS; "unrecorded": the record does not say)
    end_reasons: dict[str, int] = field(default_factory=dict)
    #: failures that are not the agent's (endpoint, simulator, grader, renderer, task): not in the rates above
    infrastructure_failures: int = 0
    #: with --regrade: answers the regrade could not score, per end reason (grading_error, task_error);
    #: counted in infrastructure_failures
    regrade_failures: dict[str, int] = field(default_factory=dict)
    agent_errors: int = 0  # the policy produced no usable turn: in the rates above, as failures
    #: success over every episode, infrastructure failures counted as failures (a lower bound)
    success_all: float | None = None
    #: cost: prompt/completion tokens of the agent and of the simulated person, per model; wall time
    agent_tokens: dict[str, int] = field(default_factory=dict)
    simulator_tokens: dict[str, int] = field(default_factory=dict)
    tokens_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    wall_time_s: float | None = None  # summed over the episodes that recorded it
    cost_usd: float | None = None  # with --prices: the total
    cost_by_model: dict[str, float] = field(default_factory=dict)
    unpriced_models: list[str] = field(default_factory=list)  # used tokens, not in the price table

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def regrade_backend(records: list[Record]) -> list[tuple[float, bool] | str]:
    """Grade every backend answer again in the sandbox: ``(fraction passed, success)`` per record,
    or the end reason (``grading_error``, ``task_error``) where the regrade measured nothing (the
    grader failed; no test of the task has a usable reference result): never a score."""
    from colbench_gym.tasks.records import BackendTask
    from colbench_gym.verdicts import score_answer

    out: list[tuple[float, bool] | str] = []
    for i, rec in enumerate(records):
        task = BackendTask.from_record(rec["task"], where=f"record {i} task")
        verdict = score_answer(rec["answer"], task, reward_mode="fraction")
        out.append(verdict.end_reason or (verdict.reward, bool(verdict.evidence["success"])))
    return out


def win_rate(ours: Iterable[Record], reference: Iterable[Record]) -> tuple[float | None, int]:
    """Per-task win rate of ``ours`` over ``reference`` on the tasks both hold (ties = 1/2);
    episodes of either side that failed for infrastructure reasons have no score and count for
    neither (whatever number a record of them holds)."""
    def by_task(recs: Iterable[Record]) -> dict[str, float]:
        acc: dict[str, list[float]] = defaultdict(list)
        for r in recs:
            if r.get("reward") is not None and not is_infrastructure_failure(r):
                acc[task_key(r["task"])].append(float(r["reward"]))
        return {k: sum(v) / len(v) for k, v in acc.items()}

    a, b = by_task(ours), by_task(reference)
    common = sorted(set(a) & set(b))
    return _win_rate((a[k], b[k]) for k in common), len(common)


def add_costs(s: Summary, records: list[Record], prices: Prices | None = None) -> RunCost:
    """Sum the records' tokens per model and wall time into ``s`` (the one sum,
    :func:`colbench_gym.tasks.accounting.run_cost`); price them with ``prices``."""
    rc = run_cost(records)
    s.agent_tokens, s.simulator_tokens, s.tokens_by_model, s.wall_time_s = rc.agent, rc.simulator, rc.by_model, rc.wall_time_s
    if prices is not None:
        s.cost_usd, s.cost_by_model, s.unpriced_models = rc.price(prices)
    return rc


def summarize(records: list[Record], *, reference: list[Record] | None = None, regrade: bool = False,
              prices: Prices | None = None) -> Summary:
    """The paper's metrics for one file's records, with why the episodes ended and what they cost."""
    s = Summary(episodes=len(records))
    episodes = [episode_metrics(r, i) for i, r in enumerate(records)]
    s.end_reasons = count_end_reasons(e.end_reason for e in episodes)
    s.infrastructure_failures = sum(e.failed for e in episodes)
    s.agent_errors = s.end_reasons.get("agent_error", 0)
    s.policies = _distinct(records, "policy")
    s.agent_models = _distinct(records, "agent_model")
    s.task_sources = _distinct(records, "tasks")
    add_costs(s, records, prices)
    # infrastructure failures have no score: counted apart (the rule of colbench_gym.tasks.accounting)
    lines = [i + 1 for i, e in enumerate(episodes) if not e.failed]  # each kept record's line in the file
    records = [r for r, e in zip(records, episodes) if not e.failed]
    episodes = [e for e in episodes if not e.failed]
    if not records:
        return s
    s.tasks = len({e.task_id for e in episodes})
    kinds = {e.kind for e in episodes}
    s.kind = kinds.pop() if len(kinds) == 1 else "mixed"
    if s.kind == "backend":
        if regrade:
            regrades = regrade_backend(records)
            # a regrade that measured nothing: no score, counted with the infrastructure failures
            s.regrade_failures = dict(Counter(g for g in regrades if isinstance(g, str)))
            s.infrastructure_failures += sum(s.regrade_failures.values())
            graded = [row for row in zip(records, episodes, lines, regrades) if not isinstance(row[3], str)]
            if not graded:
                return s
            records, episodes, lines, grades = (list(col) for col in zip(*graded))
            s.tasks = len({e.task_id for e in episodes})
            s.regraded = len(grades)
            for rec, line, (frac, ok) in zip(records, lines, grades):
                stored = rec.get("reward")
                if stored is None:  # ungraded (e.g. the release's backend rollouts): nothing to differ from
                    s.ungraded += 1
                    continue
                if abs(float(stored) - frac) > 1e-9 or (rec.get("success") not in (None, ok)):
                    eid = (rec.get("meta") or {}).get("episode_id", f"line {line}")
                    s.mismatches.append(f"{eid}: stored reward {stored} success {rec.get('success')}, "
                                        f"regraded {frac:.4f} success {ok}")
            s.tests_passed = mean(f for f, _ in grades)
            s.success = mean(float(ok) for _, ok in grades)
        else:
            s.tests_passed = mean(metric_values(episodes, "tests_passed"))
            s.success = mean(metric_values(episodes, "success"))
        if s.success is not None and s.infrastructure_failures:
            scored = len(metric_values(episodes, "success")) if not regrade else len(records)
            s.success_all = s.success * scored / (scored + s.infrastructure_failures)
    elif s.kind == "frontend":
        s.similarity = mean(metric_values(episodes, "similarity"))
    if reference is not None:
        s.win_rate, s.compared_tasks = win_rate(records, reference)
    s.mean_turns = mean(metric_values(episodes, "turns"))
    ended = [(r.get("meta") or {}).get("ended_by") for r in records]
    if any(e is not None for e in ended):
        s.answered = mean(float(e == "answer") for e in ended if e is not None)
    return s


def _distinct(records: list[Record], key: str) -> list[str]:
    """The distinct non-empty values of ``meta[key]`` over ``records``, in file order."""
    return list(dict.fromkeys(str(v) for r in records if (v := (r.get("meta") or {}).get(key))))


# ---------------------------------------------------------------- the results schema (--json)
#: Name and version of the results record (docs/trajectory-format.md, "results.json"). Bump the
#: version when a key, a type or the set of end reasons changes.
RESULTS_SCHEMA = "colbench-results"
RESULTS_SCHEMA_VERSION = 1
#: The end-reason keys every results record has (colbench_gym.tasks.accounting.END_REASONS).
RESULT_END_REASONS = (*END_REASONS, "unrecorded")
_RATES = ("success", "success_all", "tests_passed", "similarity", "win_rate", "mean_turns", "answered",
          "wall_time_s", "cost_usd")


def _float(x: float | None) -> float | None:
    return None if x is None else float(x)


def results_record(s: Summary, file: str) -> dict[str, Any]:
    """One file's report in the results schema (:data:`RESULTS_SCHEMA` v:data:`RESULTS_SCHEMA_VERSION`):
    every key always present with one type. Rates and times are floats or null (n/a: nothing to
    measure, never 0); counts are ints; ``end_reasons`` and ``regrade_failures`` have a key per end
    reason (0 when none); per-model tokens and costs are lists of ``{"model", ...}`` rows sorted by
    model. docs/trajectory-format.md documents each field."""
    d = s.to_dict()
    out: dict[str, Any] = {"schema": RESULTS_SCHEMA, "schema_version": RESULTS_SCHEMA_VERSION, "file": str(file)}
    for key in ("kind", "episodes", "tasks", "task_sources", "policies", "agent_models"):
        out[key] = d[key]
    for key in _RATES:
        out[key] = _float(d[key])
    out.update(compared_tasks=s.compared_tasks, infrastructure_failures=s.infrastructure_failures,
               agent_errors=s.agent_errors,
               end_reasons={r: int(s.end_reasons.get(r, 0)) for r in RESULT_END_REASONS},
               regraded=s.regraded, ungraded=s.ungraded, mismatches=list(s.mismatches),
               regrade_failures={r: int(s.regrade_failures.get(r, 0)) for r in RESULT_END_REASONS},
               agent_tokens=usage(**s.agent_tokens), simulator_tokens=usage(**s.simulator_tokens),
               tokens_by_model=[{"model": m, **usage(**t)} for m, t in sorted(s.tokens_by_model.items())],
               cost_by_model=[{"model": m, "usd": float(c)} for m, c in sorted(s.cost_by_model.items())],
               unpriced_models=sorted(s.unpriced_models))
    return out


def results_features():
    """The results schema as ``datasets.Features``: ``datasets.load_dataset("json", data_files=[...],
    features=results_features())`` loads any results files together (the loader otherwise takes
    each column's type from the first file, so a column that file holds only nulls or empty lists
    for cannot take another file's values)."""
    import datasets  # noqa: PLC0415 - the agent extra; the report itself needs no datasets

    v, tokens = datasets.Value, {"prompt_tokens": datasets.Value("int64"), "completion_tokens": datasets.Value("int64")}
    strings = datasets.List(v("string"))
    return datasets.Features({
        "schema": v("string"), "schema_version": v("int64"), "file": v("string"), "kind": v("string"),
        "episodes": v("int64"), "tasks": v("int64"), "task_sources": strings, "policies": strings,
        "agent_models": strings, **{k: v("float64") for k in _RATES},
        "compared_tasks": v("int64"), "infrastructure_failures": v("int64"), "agent_errors": v("int64"),
        "end_reasons": {r: v("int64") for r in RESULT_END_REASONS}, "regraded": v("int64"), "ungraded": v("int64"),
        "mismatches": strings, "regrade_failures": {r: v("int64") for r in RESULT_END_REASONS},
        "agent_tokens": tokens, "simulator_tokens": tokens,
        "tokens_by_model": datasets.List({"model": v("string"), **tokens}),
        "cost_by_model": datasets.List({"model": v("string"), "usd": v("float64")}), "unpriced_models": strings,
    })


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def format_summary(s: Summary, title: str = "") -> str:
    if not s.episodes:  # no rate of nothing (a 0 % would read as an agent that failed everything)
        return "\n".join([f"== {title}" if title else "==", "episodes        0: no episodes in this file"])
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
        lines.append(f"                ({unscored_advice(s)})")
    if s.mean_turns is not None:
        lines.append(f"agent turns     {s.mean_turns:.2f} per episode")
    if s.answered is not None:
        lines.append(f"answered        {_pct(s.answered)} (rest hit the turn limit)")
    if s.end_reasons:
        lines.append(f"end reasons     {format_end_reasons(s.end_reasons)}")
    if s.infrastructure_failures:
        counts = {n: c for n, c in s.end_reasons.items() if is_infrastructure(n)}
        for n, c in s.regrade_failures.items():
            counts[n] = counts.get(n, 0) + c
        infra = ", ".join(f"{n} {c}" for n, c in counts.items())
        lines.append(f"infrastructure  {s.infrastructure_failures} episodes failed, not by the agent ({infra}): left "
                     "out of the rates above (each record's 'error' says why; rerun them)"
                     + (f"; counted as failures, success {_pct(s.success_all)}" if s.success_all is not None else ""))
    lines += format_costs(s)
    if s.regraded:
        lines.append(f"regraded        {s.regraded} answers, {len(s.mismatches)} differ from the stored scores"
                     + (f" ({s.ungraded} had none)" if s.ungraded else ""))
        lines += [f"  ! {m}" for m in s.mismatches[:10]]
    return "\n".join(lines)


def unscored_advice(s: Summary) -> str:
    """What to do about a backend report without a score. ``--regrade`` grades again only the
    answers the agent is accountable for (every infrastructure failure, ``grading_error`` included,
    is left out before it grades: the end-reason table), so it helps a file of ungraded answers
    (the release's rollouts), never one whose every episode failed for infrastructure reasons:
    those episodes are played again by ``sweet-agent rollout --resume``."""
    if s.episodes and s.infrastructure_failures >= s.episodes:
        return (f"no score: all {s.episodes} episodes failed for infrastructure reasons, and regrading cannot "
                "score them; play them again with `sweet-agent rollout --resume` and the run's settings")
    return "no stored rewards: pass --regrade, or grade with `colbench evaluate backend`"


def format_costs(s: Summary) -> list[str]:
    """The report's token, time and cost lines (:meth:`RunCost.lines`)."""
    rc = RunCost(s.agent_tokens or usage(), s.simulator_tokens or usage(), s.tokens_by_model, s.wall_time_s, s.episodes)
    return rc.lines(None if s.cost_usd is None else (s.cost_usd, s.cost_by_model, s.unpriced_models))


# ---------------------------------------------------------------- `sweet-agent evaluate`
def add_arguments(parser: argparse.ArgumentParser, files_required: bool = True) -> None:
    """The report's options (``files_required=False``: the command that can play episodes first,
    :mod:`sweet_agent.rollout.evaluate`)."""
    parser.add_argument("files", nargs="+" if files_required else "*", metavar="FILE", help="trajectory JSONL file(s)")
    parser.add_argument("--reference", metavar="FILE", help="reference run for the win rate (e.g. a stronger model)")
    parser.add_argument("--regrade", action="store_true",
                        help="grade backend answers again in the sandbox instead of trusting stored rewards")
    parser.add_argument("--json", action="store_true",
                        help="print one results record per file (JSON lines; schema colbench-results v1, "
                             "docs/trajectory-format.md)")
    parser.add_argument("--prices", metavar="FILE", default=None,
                        help='price table for the cost line: JSON {"MODEL": {"prompt": USD_PER_1M_TOKENS, '
                             '"completion": USD_PER_1M_TOKENS}} (models as meta.agent_model / meta.simulator_model name them)')


def run(args: argparse.Namespace) -> int:
    from sweet_agent.trajectories import TrajectoryFormatError

    try:
        prices = load_prices(args.prices) if getattr(args, "prices", None) else None
        reference = read_trajectories(args.reference, require_reward=False) if args.reference else None
        status = 0
        empty = []
        for path in args.files:
            # Ungraded files (the release's backend rollouts carry no reward) load too: --regrade
            # grades them; without it their success / tests passed read n/a.
            records = read_trajectories(path, require_reward=False)
            if not records:  # no report of nothing (a 0 % would read as an agent that failed everything)
                empty.append(str(path))
                continue
            s = summarize(records, reference=reference, regrade=args.regrade, prices=prices)
            if s.mismatches:
                status = 1
            print(json.dumps(results_record(s, path)) if args.json else format_summary(s, path))
    except (FileNotFoundError, TrajectoryFormatError, PriceTableError) as exc:
        return _refuse(str(exc))
    if empty:  # after the other files' reports: they are still worth reading
        return _refuse(f"no episodes in {', '.join(empty)}: pass a trajectory file that `sweet-agent rollout` "
                       "wrote into (an interrupted run continues with --resume)")
    return status


def _refuse(problem: str) -> int:
    """Bad input: one ``error:`` line on stderr (the CLI's boundary puts the command's name in
    front, colbench_gym.cli.dispatch) and exit status 2."""
    print(f"error: {problem}", file=sys.stderr)
    return 2

