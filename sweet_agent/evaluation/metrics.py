"""Per-episode measurements and their confidence intervals: the one implementation behind every report.

WHY one module: the viewer (:mod:`sweet_agent.viewer`), ``sweet-agent evaluate``
(:mod:`sweet_agent.evaluation.report`) and the learning benchmark (``benchmarks/bench_learning.py``) all
report the same numbers (success, % tests, similarity, turns, questions per episode), the first and
the last with the same bootstrap intervals and paired differences; measured once, a table in one
place and a plot in another can never disagree about what "a question" or "a success" is.

- **Success** is the one rule :func:`colbench_gym.tasks.records.record_success` (the record's
  ``success`` when it carries one, else every hidden test passed); backend only.
- **A question** is an agent turn that does not answer (no ``I WANT TO ANSWER:``) and whose
  visible message (the text after ``OUTPUT:``) contains a question mark; the last turn of an
  episode that hit the turn limit counts like any other. A frontend draft without one is a
  *draft*. (Until this module served the learning benchmark, its tables counted the agent turns
  *before the last* containing ``?``: see docs/results/learning-v1.md, "Note on the questions column".)
- **A failed episode** is an *infrastructure* failure (``meta.end_reason`` one of
  :data:`colbench_gym.tasks.accounting.INFRASTRUCTURE`: the agent's endpoint, the simulator, the
  grader ... gave up; records written before end reasons existed: ``error`` set): it has no score
  and is left out of every metric, by the reporting rule of
  :mod:`colbench_gym.tasks.accounting`. An ``agent_error`` is the agent's failure and scores 0.

Pairs of runs match episodes by a key: ``(task identity, sample index)`` (same task, same seed)
in the viewer, the episode id in the learning benchmark; a pair is won, tied or lost by the one
win rule of :mod:`colbench_gym.evaluation.metrics`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from colbench_gym.evaluation.metrics import TIE_TOLERANCE, win_value
from colbench_gym.protocol import parse_action
from colbench_gym.tasks.accounting import is_infrastructure_failure, record_end_reason
from colbench_gym.tasks.identity import task_identity
from colbench_gym.tasks.kinds import kind_of_task
from colbench_gym.tasks.records import check_record_fields, record_success

K = TypeVar("K", bound=Hashable)

#: Bootstrap resamples for every interval (95 %, percentile method).
BOOTSTRAP_SAMPLES = 2000


def record_kind(rec: Mapping[str, Any]) -> str:
    """The environment kind (``"backend"``, ``"frontend"``) of a trajectory record's task, by the
    one table of kinds (:func:`colbench_gym.tasks.kinds.kind_of_task`): a task of no kind (or none
    at all) is a :class:`~colbench_gym.tasks.records.TaskFormatError`, never taken for a frontend."""
    return kind_of_task(rec.get("task"), where="trajectory record's task").name


def agent_turn_kinds(rec: Mapping[str, Any]) -> list[str]:
    """``"question"``, ``"draft"``, ``"statement"`` or ``"answer"`` for each agent turn of a record.

    A question is a turn that does not answer and whose visible message contains ``?`` (whatever
    its position in the episode); the raw ``output`` is read when the record keeps it.
    """
    kinds = []
    for m in rec.get("dialogue_history") or []:
        if m.get("role") != "assistant":
            continue
        raw = m.get("output") if isinstance(m.get("output"), str) else m.get("content", "")
        act = parse_action(raw if isinstance(raw, str) else "")
        if act.is_answer:
            kinds.append("answer")
        elif "?" in act.message:
            kinds.append("question")
        elif "<html" in act.message.lower() or "<body" in act.message.lower():
            kinds.append("draft")
        else:
            kinds.append("statement")
    return kinds


#: The coarse kinds the step-pair analyses count: a draft and a statement are both ``"other"``.
PAIR_TURN_KINDS = ("question", "answer", "other")


def pair_turn_kind(side: Sequence[Mapping[str, Any]]) -> str:
    """The coarse kind (:data:`PAIR_TURN_KINDS`) of a step pair's side: its messages, of which the
    first assistant message is the turn the pair is about."""
    kind = agent_turn_kinds({"dialogue_history": list(side)})[0]
    return kind if kind in PAIR_TURN_KINDS else "other"


def episode_sample(rec: Mapping[str, Any], position: int) -> int:
    """The sample index of a record (``meta.sample``), else its position in the file."""
    meta = rec.get("meta") or {}
    s = meta.get("sample")
    return int(s) if isinstance(s, int) and not isinstance(s, bool) else position


@dataclass(frozen=True)
class EpisodeMetrics:
    """The numbers one episode contributes to a report (``None`` when they do not apply)."""

    task_id: str
    sample: int
    kind: str
    reward: float | None
    success: float | None  # 1.0 / 0.0 by the one success rule (backend, graded)
    tests_passed: float | None  # fraction of hidden tests passed (backend: the reward)
    similarity: float | None  # frontend: the reward
    turns: int  # agent turns
    questions: int  # agent turns that are questions (see agent_turn_kinds)
    failed: bool  # an infrastructure failure (endpoint, simulator, grader ...), not the agent's: no score
    end_reason: str | None = None  # why it ended (colbench_gym.tasks.accounting); None: the record does not say


def episode_metrics(rec: Mapping[str, Any], position: int = 0) -> EpisodeMetrics:
    """Measure one trajectory record (ours or the release's shape). Its scores and flags are
    checked first (:func:`colbench_gym.tasks.records.check_record_fields`; readers of files have
    done it already, naming file and line): no number here comes from a value coerced."""
    check_record_fields(rec, f"record {position}")
    kind = record_kind(rec)
    reward = rec.get("reward")
    reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
    kinds = agent_turn_kinds(rec)
    end = record_end_reason(rec)
    success = tests = sim = None
    if kind == "backend":
        tests = reward
        ok = record_success(rec)
        success = None if ok is None else float(ok)
    else:
        sim = reward
    return EpisodeMetrics(
        task_id=task_identity(rec.get("task") or {}), sample=episode_sample(rec, position), kind=kind,
        reward=reward, success=success, tests_passed=tests, similarity=sim, turns=len(kinds),
        questions=kinds.count("question"), failed=is_infrastructure_failure(rec), end_reason=end)


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95 % bootstrap interval over ``n`` values."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


#: The per-episode numbers a report can average (fields of :class:`EpisodeMetrics`).
METRICS = ("reward", "success", "tests_passed", "similarity", "turns", "questions")


def mean(values: Iterable[float | None]) -> float | None:
    """The plain mean of the values that are not None (None when there are none)."""
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def metric_values(episodes: Iterable[EpisodeMetrics], metric: str) -> list[float]:
    """One metric's values over the episodes that did not fail and have it (see :data:`METRICS`)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
    return [float(v) for e in episodes if not e.failed and (v := getattr(e, metric)) is not None]


def bootstrap_ci(values: Sequence[float | None], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                 level: float = 0.95) -> Estimate:
    """Mean of ``values`` (:func:`mean`, Nones left out) with a percentile-bootstrap interval
    (seeded: the same input gives the same interval).

    Vectorised with numpy in chunks of resamples, so 15k values x 2,000 resamples stays within a
    few tens of MB and well under a second.
    """
    import numpy as np

    xs = np.asarray([float(v) for v in values if v is not None], dtype=np.float64)
    if xs.size == 0:
        return Estimate(None, None, None, 0)
    n = xs.size
    rng = np.random.default_rng(seed)
    chunk = max(1, min(samples, (4 << 20) // n))
    means = np.concatenate([xs[rng.integers(0, n, size=(min(chunk, samples - start), n))].mean(axis=1)
                            for start in range(0, samples, chunk)])
    alpha = (1.0 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Estimate(mean(xs.tolist()), float(low), float(high), int(n))


def summarize_episodes(episodes: Sequence[EpisodeMetrics], *, seed: int = 0) -> dict[str, Estimate]:
    """Every report metric of a run with its interval (metrics that do not apply have ``n = 0``)."""
    return {m: bootstrap_ci(metric_values(episodes, m), seed=seed)
            for m in ("success", "tests_passed", "similarity", "turns", "questions")}


def paired_difference(a: Mapping[K, EpisodeMetrics], b: Mapping[K, EpisodeMetrics], metric: str, *,
                      seed: int = 0) -> Estimate:
    """Mean of (B − A) for one metric over the keys both runs hold (episodes that did not fail and
    have the metric on both sides, in key order), with its paired bootstrap interval (``n`` pairs)."""
    va = {k: v[0] for k, e in a.items() if (v := metric_values([e], metric))}
    vb = {k: v[0] for k, e in b.items() if (v := metric_values([e], metric))}
    return bootstrap_ci([vb[k] - va[k] for k in sorted(set(va) & set(vb))], seed=seed)


@dataclass(frozen=True)
class PairedComparison:
    """Run B against run A on the episodes both hold (same task, same sample)."""

    pairs: int
    wins: int
    losses: int
    ties: int
    difference: Estimate  # mean of (B − A) reward with a paired bootstrap interval
    per_task: dict[str, dict[str, float]]  # task id -> {"a": mean reward, "b": mean reward, "pairs": n}

    def to_dict(self) -> dict[str, Any]:
        return {"pairs": self.pairs, "wins": self.wins, "losses": self.losses, "ties": self.ties,
                "difference": self.difference.to_dict(), "per_task": self.per_task}


def paired_comparison(a: Sequence[EpisodeMetrics], b: Sequence[EpisodeMetrics], *, seed: int = 0,
                      tolerance: float = TIE_TOLERANCE) -> PairedComparison:
    """Pair the episodes of two runs by ``(task, sample)``; count B's wins, losses and ties over A."""
    def index(eps: Sequence[EpisodeMetrics]) -> dict[tuple[str, int], EpisodeMetrics]:
        return {(e.task_id, e.sample): e for e in eps if e.reward is not None and not e.failed}

    ea, eb = index(a), index(b)
    ia, ib = {k: e.reward for k, e in ea.items()}, {k: e.reward for k, e in eb.items()}
    keys = sorted(set(ia) & set(ib))
    scores = [win_value(ib[k], ia[k], tolerance) for k in keys]
    per_task: dict[str, dict[str, float]] = {}
    for k in keys:
        row = per_task.setdefault(k[0], {"a": 0.0, "b": 0.0, "pairs": 0})
        row["a"] += ia[k]
        row["b"] += ib[k]
        row["pairs"] += 1
    for row in per_task.values():
        row["a"] /= row["pairs"]
        row["b"] /= row["pairs"]
    return PairedComparison(pairs=len(keys), wins=scores.count(1.0), losses=scores.count(0.0),
                            ties=scores.count(0.5), difference=paired_difference(ea, eb, "reward", seed=seed),
                            per_task=per_task)


# ------------------------------------------------------------------ several training seeds
def seed_values(runs: Mapping[Hashable, Mapping[K, EpisodeMetrics]], metric: str) -> dict[Hashable, dict[K, float]]:
    """One metric per (training seed, episode key): ``{seed: {key: value}}``, failed episodes and
    episodes without the metric left out (as :func:`metric_values`)."""
    return {s: {k: v[0] for k, e in eps.items() if (v := metric_values([e], metric))} for s, eps in runs.items()}


def _common_keys(arms: Sequence[Mapping[Hashable, Mapping[K, float]]]) -> list[K]:
    keys: set | None = None
    for runs in arms:
        for vals in runs.values():
            keys = set(vals) if keys is None else keys & set(vals)
    return sorted(keys or ())


def _hierarchical(arms: Sequence[tuple[float, Mapping[Hashable, Mapping[K, float]]]], samples: int, seed: int,
                  level: float) -> Estimate:
    """``sum(sign * arm mean)`` with a two-level percentile bootstrap (see :func:`hierarchical_bootstrap`)."""
    import numpy as np

    if any(not runs for _, runs in arms):
        return Estimate(None, None, None, 0)
    keys = _common_keys([runs for _, runs in arms])
    if not keys:
        return Estimate(None, None, None, 0)
    mats = [(sign, np.asarray([[vals[k] for k in keys] for vals in runs.values()], dtype=np.float64))
            for sign, runs in arms]
    # the point estimate: each seed's plain mean over the tasks, then the mean over seeds
    point = sum(sign * mean([mean(row.tolist()) for row in m]) for sign, m in mats)
    n, widest = len(keys), max(m.shape[0] for _, m in mats)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(samples, (4 << 20) // (n * widest)))
    reps = []
    for start in range(0, samples, chunk):
        c = min(chunk, samples - start)
        tasks = rng.integers(0, n, size=(c, n))  # tasks: drawn once per replicate, for every seed of every arm
        total = np.zeros(c)
        for sign, m in mats:
            per_seed = m[:, tasks].mean(axis=2).T  # (c, seeds): each seed's mean over the drawn tasks
            if m.shape[0] > 1:  # seeds: drawn with replacement, per arm
                per_seed = np.take_along_axis(per_seed, rng.integers(0, m.shape[0], size=(c, m.shape[0])), axis=1)
            total += sign * per_seed.mean(axis=1)
        reps.append(total)
    alpha = (1.0 - level) / 2
    low, high = np.quantile(np.concatenate(reps), [alpha, 1 - alpha])
    return Estimate(point, float(low), float(high), n)


def hierarchical_bootstrap(runs: Mapping[Hashable, Mapping[K, float]], *, samples: int = BOOTSTRAP_SAMPLES,
                           seed: int = 0, level: float = 0.95) -> Estimate:
    """Mean over training seeds of each seed's mean over tasks, with a hierarchical bootstrap
    interval that includes the variance between training seeds.

    ``runs`` maps a training seed to ``{episode key: value}`` (:func:`seed_values`). Every
    replicate resamples the seeds (with replacement), then the tasks within them; the tasks are
    drawn once per replicate and used for every seed, because every seed plays the same tasks (a
    crossed design: drawing them per seed would average the task variance away). Only the keys
    every seed holds are used (``n`` of them). With one seed this is :func:`bootstrap_ci` of its
    values, resample for resample.
    """
    return _hierarchical([(1.0, runs)], samples, seed, level)


def hierarchical_difference(a: Mapping[Hashable, Mapping[K, float]], b: Mapping[Hashable, Mapping[K, float]], *,
                            samples: int = BOOTSTRAP_SAMPLES, seed: int = 0, level: float = 0.95) -> Estimate:
    """B − A over the same tasks, each side a mean over its own training seeds (as
    :func:`hierarchical_bootstrap`), with an interval from resampling each side's seeds
    independently (two methods' seeds are separate training runs: seed 1 of one has nothing to do
    with seed 1 of the other) and the tasks jointly (paired by episode key: same task, same
    episode seed). A side with one run (zero-shot) contributes only its task variance."""
    return _hierarchical([(-1.0, a), (1.0, b)], samples, seed, level)
