"""Per-episode measurements and their confidence intervals, shared by every report.

WHY one module: the viewer, ``sweet-agent evaluate`` and the learning benchmark all report the
same numbers (success, % tests, similarity, turns, questions per episode) with the same
bootstrap intervals and the same pairing of two runs; written once, a table in one place and
a plot in another can never disagree about what "a question" or "a win" is.

A *question* is an agent turn that does not end the episode and whose visible message (the
text after ``OUTPUT:``) contains a question mark; a frontend draft without one is a *draft*.
Pairs of runs match episodes by ``(task identity, sample index)`` (same task, same seed), and
a pair is won, tied or lost by the one win rule of :mod:`colbench_gym.evaluation.metrics`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colbench_gym.evaluation.metrics import TIE_TOLERANCE, win_value
from colbench_gym.protocol import parse_action
from colbench_gym.tasks.identity import task_identity

#: Bootstrap resamples for every interval (95 %, percentile method).
BOOTSTRAP_SAMPLES = 2000


def record_kind(rec: Mapping[str, Any]) -> str:
    """``"backend"`` when the task has hidden tests, else ``"frontend"``."""
    return "backend" if "test_cases" in (rec.get("task") or {}) else "frontend"


def agent_turn_kinds(rec: Mapping[str, Any]) -> list[str]:
    """``"question"``, ``"draft"``, ``"statement"`` or ``"answer"`` for each agent turn of a record."""
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
    success: float | None
    tests_passed: float | None
    similarity: float | None
    turns: int
    questions: int
    failed: bool  # the episode itself failed (endpoint error, ...) rather than scored low


def episode_metrics(rec: Mapping[str, Any], position: int = 0) -> EpisodeMetrics:
    """Measure one trajectory record (ours or the release's shape)."""
    kind = record_kind(rec)
    meta = rec.get("meta") or {}
    reward = rec.get("reward")
    reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
    kinds = agent_turn_kinds(rec)
    success = tests = sim = None
    if kind == "backend":
        tests = reward
        if isinstance(rec.get("success"), bool):
            success = float(rec["success"])
        elif reward is not None:
            success = float(reward >= 1.0)
    else:
        sim = reward
    return EpisodeMetrics(
        task_id=task_identity(rec.get("task") or {}), sample=episode_sample(rec, position), kind=kind,
        reward=reward, success=success, tests_passed=tests, similarity=sim, turns=len(kinds),
        questions=kinds.count("question"), failed=bool(rec.get("error") or meta.get("error")))


@dataclass(frozen=True)
class Estimate:
    """A mean with its 95 % bootstrap interval over ``n`` values."""

    mean: float | None
    low: float | None
    high: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def bootstrap_ci(values: Sequence[float], *, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                 level: float = 0.95) -> Estimate:
    """Mean of ``values`` with a percentile-bootstrap interval (seeded: the same input gives the same interval).

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
    return Estimate(float(xs.mean()), float(low), float(high), int(n))


def summarize_episodes(episodes: Sequence[EpisodeMetrics], *, seed: int = 0) -> dict[str, Estimate]:
    """Every report metric of a run with its interval (metrics that do not apply have ``n = 0``)."""
    ok = [e for e in episodes if not e.failed]
    return {
        "success": bootstrap_ci([e.success for e in ok if e.success is not None], seed=seed),
        "tests_passed": bootstrap_ci([e.tests_passed for e in ok if e.tests_passed is not None], seed=seed),
        "similarity": bootstrap_ci([e.similarity for e in ok if e.similarity is not None], seed=seed),
        "turns": bootstrap_ci([e.turns for e in ok], seed=seed),
        "questions": bootstrap_ci([e.questions for e in ok], seed=seed),
    }


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
    def index(eps: Sequence[EpisodeMetrics]) -> dict[tuple[str, int], float]:
        return {(e.task_id, e.sample): e.reward for e in eps if e.reward is not None and not e.failed}

    ia, ib = index(a), index(b)
    keys = sorted(set(ia) & set(ib))
    diffs = [ib[k] - ia[k] for k in keys]
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
                            ties=scores.count(0.5), difference=bootstrap_ci(diffs, seed=seed), per_task=per_task)
