"""``sweet-agent critic-report``: how often a step score orders two candidates as their Monte-Carlo values do.

The step pairs that train SWEET-RL's actor are only as good as the critic's preferences between
candidate turns. A values file of ``sweet-agent mc-values`` (:mod:`sweet_agent.actor.mc_values`)
holds, per agent turn, candidates with a Monte-Carlo estimate of their value under the behaviour
policy. Every two candidates of one turn whose estimates differ (and whose texts differ) are a
*pair*; a step score *agrees* on a pair when it ranks the pair's candidates in the same order.
Pairs whose estimates are equal (to 1e-9) are *MC ties*: they carry no preference, are left
out and counted; a score that gives both candidates of a pair the same value (to 1e-6) does not
agree (a *score tie*, counted too). Chance agreement is 0.5.

Step scores (each a column of the report):

- ``--critic DIR``: the critic's step score ``critic-ref`` (its log-ratio against its reference
  on the candidate turn, :func:`~sweet_agent.sweet_rl.algorithm.score_candidates`), reading the
  privileged reference solution when the critic was trained with it (SWEET's critic) and not when
  it was trained with ``--no_use_privileged_info`` (the critic without the reference).
- ``--release DIR``: the paper release's step score with that critic: its token-mean
  log-probability with the reference solution minus the sampling policy's without it
  (``--policy``, default the critic's reference model: the base policy the candidates came from).
- ``--scores NAME=FILE``: scores computed elsewhere (JSON lines ``{"turn": k, "scores": [...]}``,
  one score per candidate of the values file's turn ``k``).

Held-out pairs: a critic trained by ``train-critic`` records the tasks it trained on
(``train_task_keys`` in ``sweet_critic.json``); by default (``--tasks heldout``) each critic's
columns leave out the pairs of those tasks (counted as ``trained_on``). ``--tasks all`` keeps
them (in-sample). A critic that records no tasks is scored on every pair, and the report says so.

Each column is also split by pair kind (``by_pair_kind``: ``ask-answer``, a candidate that goes
on against one that answers; ``answer-answer``; ``ask-ask``; Wilson intervals): whether a critic
that prefers asking is right to is the ``ask-answer`` agreement.

Resumable: ``--scores-journal FILE`` appends every turn a critic scores to FILE; a rerun with the
same FILE reuses the scores of the same critic checkpoint (its fingerprint), step score, policy,
dtype and candidate texts, and scores only the rest.

Label noise: a one-completion Monte-Carlo label is itself a noisy ordering. When the values file
holds two or more completions per going-on candidate (``mc-values --extend`` adds them to the very
candidates already scored), the report adds ``label_reliability``: on the pairs with a going-on
candidate, how often the first completion's ordering and the second's agree (``a``; pairs either
one ties are left out). Under symmetric, independent noise a one-completion label is right with
probability ``c = (1 + sqrt(2a - 1)) / 2`` (0.5 when ``a <= 0.5``): a scorer that knew every true
ordering would agree with one-completion labels on about ``c`` of the pairs, not all. Each column
then also gives its agreement with the first completion's labels alone (what a k = 1 report
measured) and that agreement corrected for the noise: pairs of two answers (exact labels) as
observed, the others through ``(obs - (1 - c)) / (2c - 1)`` on the pairs the score orders (its
ties never agree), held to [0, 1]; the interval resamples turns (``turn-bootstrap``) or maps the
Wilson one; the uncertainty of ``c`` itself is not in it. ``c`` errs high (it is measured on pairs
both completions order, and averages pairs of unequal difficulty), so the correction errs small.
It rescales how far from chance a score is; it cannot move an interval that holds chance off it.

Intervals: ``--ci wilson`` (default) is the Wilson score interval of the agreement, 95 %, treating
pairs as independent; the pairs of one turn share candidates, so ``--ci turn-bootstrap`` resamples
whole turns instead (2,000 draws, percentile interval, seeded), the more honest width when turns
hold many pairs.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import Journal, JournalDamaged, read_journal
from sweet_agent.actor.mc_values import MC_TIE, MCValuesError, completion_rewards, read_values_file

PROG = "sweet-agent critic-report"
#: Two step scores closer than this are a tie (as the critic's held-out accuracy counts ties).
SCORE_TIE = 1e-6
CI_METHODS = ("wilson", "turn-bootstrap")
REPORT_FORMAT = "sweet-agent critic report v1"


# ----------------------------------------------------------------------------- counting
@dataclass
class Agreement:
    """Counts of one step score on one set of pairs."""

    pairs: int = 0  # pairs with different MC values, scored
    agree: int = 0
    score_ties: int = 0  # of ``pairs``: the score could not order them (not agreeing)
    mc_ties: int = 0  # pairs left out: equal MC values
    unmeasured: int = 0  # pairs left out: a candidate without an MC value
    trained_on: int = 0  # pairs left out: the critic trained on their task
    turns: list[tuple[int, int]] = field(default_factory=list)  # per turn with pairs: (agree, pairs)
    #: per pair kind (:func:`pair_kind`): [agree, pairs]
    kinds: dict[str, list[int]] = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        return self.agree / self.pairs if self.pairs else None

    def add(self, other: Agreement) -> None:
        for name in ("pairs", "agree", "score_ties", "mc_ties", "unmeasured", "trained_on"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.turns += other.turns
        for kind, (a, n) in other.kinds.items():
            mine = self.kinds.setdefault(kind, [0, 0])
            mine[0] += a
            mine[1] += n


def pair_kind(a: dict[str, Any], b: dict[str, Any]) -> str:
    """``answer-answer``, ``ask-answer`` or ``ask-ask``: whether each candidate ends the dialogue
    with an answer (``I WANT TO ANSWER:``) or goes on (a question, or anything else)."""
    answers = sum(bool(c.get("answer")) for c in (a, b))
    return ("ask-ask", "ask-answer", "answer-answer")[answers]


def distinct(candidates: Sequence[dict[str, Any]]) -> list[int]:
    """Indices of a turn's distinct candidate texts, each at its first place (a repeated text is
    one candidate: its Monte-Carlo estimates are of the same Q)."""
    seen: set[str] = set()
    return [i for i, c in enumerate(candidates) if not (c["text"] in seen or seen.add(c["text"]))]


def turn_agreement(candidates: Sequence[dict[str, Any]], scores: Sequence[float],
                   only: Callable[[dict[str, Any], dict[str, Any]], bool] | None = None) -> Agreement:
    """Every two distinct candidate texts of one turn (a repeated text counts once, at its first
    place): a pair when their MC values differ (agreeing when the scores order them alike),
    else an MC tie or unmeasured. ``only(a, b)`` false: the two are not looked at."""
    if len(candidates) != len(scores):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    out = Agreement()
    unique = distinct(candidates)
    for n, i in enumerate(unique):
        for j in unique[n + 1:]:
            a, b = candidates[i], candidates[j]
            if only is not None and not only(a, b):
                continue
            if a.get("mc_value") is None or b.get("mc_value") is None:
                out.unmeasured += 1
                continue
            dv = float(a["mc_value"]) - float(b["mc_value"])
            if abs(dv) <= MC_TIE:
                out.mc_ties += 1
                continue
            out.pairs += 1
            kind = out.kinds.setdefault(pair_kind(a, b), [0, 0])
            kind[1] += 1
            ds = float(scores[i]) - float(scores[j])
            if abs(ds) <= SCORE_TIE:
                out.score_ties += 1
            elif (ds > 0) == (dv > 0):
                out.agree += 1
                kind[0] += 1
    if out.pairs:
        out.turns.append((out.agree, out.pairs))
    return out


def mc_preferences(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the Monte-Carlo values themselves prefer, no step score involved: per agent turn (and
    all), over the turns' distinct candidate texts with a value, the ``ask-answer`` pairs (one
    candidate goes on, one answers: :func:`pair_kind`) the going-on one is worth more in, less in,
    or the same, and each kind's mean value. WHY: a critic's ``ask-answer`` agreement says whether it
    orders asking and answering as the values do; this says which way the values point."""
    by: dict[str, dict[str, Any]] = {}

    def add(key: str, on: list[float], ans: list[float]) -> None:
        t = by.setdefault(key, {"turns": 0, "goes_on_higher": 0, "answer_higher": 0, "ties": 0,
                                "goes_on": [], "answers": []})
        t["turns"] += 1
        t["goes_on"] += on
        t["answers"] += ans
        for x in on:
            for y in ans:
                t["ties" if abs(x - y) <= MC_TIE else "goes_on_higher" if x > y else "answer_higher"] += 1

    for row in rows:
        if row.get("error") is not None or "candidates" not in row:
            continue
        valued = [c for c in (row["candidates"][i] for i in distinct(row["candidates"])) if c.get("mc_value") is not None]
        on = [float(c["mc_value"]) for c in valued if not c.get("answer")]
        ans = [float(c["mc_value"]) for c in valued if c.get("answer")]
        for key in (str(int(row["agent_turn"])), "all"):
            add(key, on, ans)
    out = {}
    for key in sorted((k for k in by if k != "all"), key=int) + (["all"] if "all" in by else []):
        t = by[key]
        out[key] = {"turns": t["turns"], "ask_answer_pairs": t["goes_on_higher"] + t["answer_higher"] + t["ties"],
                    "goes_on_higher": t["goes_on_higher"], "answer_higher": t["answer_higher"], "ties": t["ties"],
                    "candidates": {"goes_on": len(t["goes_on"]), "answers": len(t["answers"])},
                    "mean_value": {k: (sum(v) / len(v) if v else None)
                                   for k, v in (("goes_on", t["goes_on"]), ("answers", t["answers"]))}}
    return out


def agreement_by_turn(rows: Sequence[dict[str, Any]], scores: dict[int, Sequence[float]],
                      skip_tasks: set[str] | None = None) -> dict[str, Agreement]:
    """``{"1": ..., "2": ..., "all": ...}``: agreement per agent turn (1-based) and over all
    turns. ``scores[turn]`` holds the scores of the values row with that ``turn``; rows of the
    tasks in ``skip_tasks`` count their pairs as ``trained_on`` only."""
    by: dict[str, Agreement] = {}
    total = Agreement()
    for row in rows:
        if row.get("error") is not None or "candidates" not in row:
            continue
        key = str(int(row["agent_turn"]))
        agg = by.setdefault(key, Agreement())
        if skip_tasks and row.get("task_key") in skip_tasks:
            dummy = turn_agreement(row["candidates"], [0.0] * len(row["candidates"]))
            part = Agreement(trained_on=dummy.pairs + dummy.mc_ties + dummy.unmeasured)
        else:
            if int(row["turn"]) not in scores:
                raise ValueError(f"no scores for turn {row['turn']} of the values file")
            part = turn_agreement(row["candidates"], scores[int(row["turn"])])
        agg.add(part)
        total.add(part)
    out = {k: by[k] for k in sorted(by, key=int)}
    out["all"] = total
    return out


def draw_value(c: dict[str, Any], draw: int) -> float | None:
    """A candidate's value from its completion number ``draw`` alone: an answer's (graded, exact)
    whatever the draw; a going-on candidate's reward of that completion, None when it has none
    (fewer completions, or that one failed)."""
    if c.get("terminal"):
        return None if c.get("mc_value") is None else float(c["mc_value"])
    draws = completion_rewards(c)
    value = draws[draw] if draw < len(draws) else None
    return None if value is None else float(value)


def draw_rows(rows: Sequence[dict[str, Any]], draw: int) -> list[dict[str, Any]]:
    """The rows with every candidate valued by completion ``draw`` alone (:func:`draw_value`)."""
    return [{**r, "candidates": [{**c, "mc_value": draw_value(c, draw)} for c in r["candidates"]]}
            if "candidates" in r else r for r in rows]


def completions_per_candidate(rows: Sequence[dict[str, Any]]) -> int:
    """The most completions a measured going-on candidate has (0 when there is none): 2 or more
    and the label noise can be measured (a candidate short of a draw is left out of it)."""
    ks = [len(completion_rewards(c)) for r in rows if r.get("error") is None
          for c in r.get("candidates", []) if not c.get("terminal") and c.get("mc_value") is not None]
    return max(ks) if ks else 0


def both_exact(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Both candidates end the episode: their values are graded, not estimated."""
    return bool(a.get("terminal")) and bool(b.get("terminal"))


def label_reliability(rows: Sequence[dict[str, Any]]) -> dict[str, Agreement]:
    """Per agent turn and ``all``: on the pairs of distinct candidates with at least one going on,
    whether completion 0's and completion 1's values order them alike (``agree`` of ``pairs``);
    a pair either draw ties is an ``mc_ties`` count, a candidate lacking a draw ``unmeasured``."""
    by: dict[str, Agreement] = {}
    total = Agreement()
    for row in rows:
        if row.get("error") is not None or "candidates" not in row:
            continue
        part = Agreement()
        cands = row["candidates"]
        unique = distinct(cands)
        for n, i in enumerate(unique):
            for j in unique[n + 1:]:
                a, b = cands[i], cands[j]
                if both_exact(a, b):
                    continue  # no noise to measure
                v = [draw_value(x, d) for d in (0, 1) for x in (a, b)]
                if None in v:
                    part.unmeasured += 1
                    continue
                d0, d1 = v[0] - v[1], v[2] - v[3]
                if abs(d0) <= MC_TIE or abs(d1) <= MC_TIE:
                    part.mc_ties += 1
                    continue
                part.pairs += 1
                part.agree += (d0 > 0) == (d1 > 0)
        if part.pairs:
            part.turns.append((part.agree, part.pairs))
        by.setdefault(str(int(row["agent_turn"])), Agreement()).add(part)
        total.add(part)
    out = {k: by[k] for k in sorted(by, key=int)}
    out["all"] = total
    return out


def label_accuracy(a: float | None) -> float | None:
    """``c``: how often a one-completion label is right, from the agreement ``a`` of two
    independent ones (``a = c^2 + (1 - c)^2``); 0.5 when they agree no more than chance."""
    if a is None:
        return None
    return (1 + math.sqrt(max(0.0, 2 * a - 1))) / 2


def corrected(obs: float | None, c: float | None) -> float | None:
    """A scorer's agreement with the true orderings, from ``obs`` against one-completion labels
    right with probability ``c`` (``obs = p c + (1 - p)(1 - c)``), held to [0, 1]; None when
    ``c`` is 0.5 (labels that carry no ordering cannot be corrected for)."""
    if obs is None or c is None or c - 0.5 < 1e-9:
        return None
    return min(1.0, max(0.0, (obs - (1 - c)) / (2 * c - 1)))


def _corrected_rate(exact_agree: int, exact_pairs: int, noisy_agree: int, noisy_pairs: int, noisy_ties: int,
                    c: float | None) -> float | None:
    """The agreement with the true orderings over all pairs: exact-label pairs as observed, the
    others corrected (:func:`corrected`) on the pairs the score orders, its ties never agreeing."""
    noisy = 0.0
    if noisy_pairs:
        ordered = noisy_pairs - noisy_ties
        if ordered:
            fixed = corrected(noisy_agree / ordered, c)
            if fixed is None:
                return None
            noisy = noisy_pairs * (ordered / noisy_pairs) * fixed
    n = exact_pairs + noisy_pairs
    return (exact_agree + noisy) / n if n else None


def noise_corrected(rows: Sequence[dict[str, Any]], scores: dict[int, Sequence[float]], c: float | None,
                    skip_tasks: set[str] | None = None, ci: str = "wilson", seed: int = 0) -> dict[str, Any]:
    """A step score against one-completion labels (``rows`` from :func:`draw_rows`) corrected for
    their noise ``c``: pairs of two answers (exact labels) count as observed, the rest through
    :func:`corrected`, ties of the score as not agreeing. The interval: whole turns resampled
    (``turn-bootstrap``), or the Wilson interval of the corrected part mapped (``wilson``)."""
    units = []
    for row in rows:
        if row.get("error") is not None or "candidates" not in row:
            continue
        if skip_tasks and row.get("task_key") in skip_tasks:
            continue
        sc = scores[int(row["turn"])]
        e = turn_agreement(row["candidates"], sc, only=both_exact)
        n = turn_agreement(row["candidates"], sc, only=lambda a, b: not both_exact(a, b))
        if e.pairs or n.pairs:
            units.append((e.agree, e.pairs, n.agree, n.pairs, n.score_ties))
    totals = [sum(u[i] for u in units) for i in range(5)]
    point = _corrected_rate(*totals, c)
    iv = None
    if point is not None and ci == "turn-bootstrap":
        iv = _bootstrap(units, lambda sample: _corrected_rate(*(sum(u[i] for u in sample) for i in range(5)), c), seed=seed)
    elif point is not None:
        ea, en, na, nn, nt = totals
        w = wilson(na, nn - nt)
        if w is not None:
            iv = tuple((ea + (nn - nt) * corrected(x, c)) / (en + nn) for x in w)
    return {"exact_pairs": totals[1], "noisy_pairs": totals[3], "score_ties": totals[4], "corrected": point,
            "corrected_ci": list(iv) if iv else None}


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """The Wilson score interval of ``k`` successes in ``n`` trials (95 % by default)."""
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def turn_bootstrap(turns: Sequence[tuple[int, int]], draws: int = 2000, seed: int = 0,
                   level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of the pooled agreement when whole turns (``(agree, pairs)``) are
    resampled with replacement: the pairs of one turn are not independent."""
    return _bootstrap(turns, lambda sample: sum(a for a, _ in sample) / sum(p for _, p in sample), draws, seed, level)


def _bootstrap(units: Sequence[Any], stat: Callable[[list[Any]], float | None], draws: int = 2000, seed: int = 0,
               level: float = 0.95) -> tuple[float, float] | None:
    """Percentile interval of ``stat`` over ``units`` resampled with replacement (seeded);
    resamples where ``stat`` is None are left out."""
    if not units:
        return None
    rng = random.Random(seed)
    stats = []
    for _ in range(draws):
        value = stat([units[rng.randrange(len(units))] for _ in units])
        if value is not None:
            stats.append(value)
    if not stats:
        return None
    stats.sort()
    lo = stats[int((1 - level) / 2 * (len(stats) - 1))]
    hi = stats[int(math.ceil((1 + level) / 2 * (len(stats) - 1)))]
    return lo, hi


def interval(agg: Agreement, method: str, seed: int = 0) -> tuple[float, float] | None:
    if method == "wilson":
        return wilson(agg.agree, agg.pairs)
    if method == "turn-bootstrap":
        return turn_bootstrap(agg.turns, seed=seed)
    raise ValueError(f"--ci must be one of {', '.join(CI_METHODS)}, got {method!r}")


# ----------------------------------------------------------------------------- step scores
@dataclass
class Scorer:
    """One column: a name, what it is, and its scores per values-file turn."""

    name: str
    kind: str  # critic-ref | release | file
    scores: dict[int, list[float]]
    source: str = ""
    privileged: bool | None = None
    trained_tasks: set[str] | None = None  # None: unknown (the critic recorded none)
    notes: list[str] = field(default_factory=list)
    fingerprint: str | None = None  # the critic checkpoint's fingerprint (None: scores from a file)


def critic_scores(rows: Sequence[dict[str, Any]], critic, step_score: str = "critic-ref", policy=None,
                  policy_tokenizer=None, batch_size: int = 16,
                  progress: Callable[[int], None] | None = None,
                  scored: Callable[[dict[str, Any], list[float]], None] | None = None,
                  done: dict[int, list[float]] | None = None) -> dict[int, list[float]]:
    """Each values row's candidates scored as the next agent turn by ``critic`` (a
    :class:`~sweet_agent.critic.loading.LoadedCritic`) with ``step_score`` — exactly as
    ``train-actor`` scores its candidates (:func:`~sweet_agent.sweet_rl.algorithm.score_candidates`),
    the reference solution read only when the critic was trained with it. ``done`` holds turns
    already scored (a journal read back: not scored again); ``scored(row, scores)`` is called after
    each turn this call scores (to journal it)."""
    from sweet_agent.sweet_rl.algorithm import score_candidates
    from sweet_agent.training_data import records as R

    out: dict[int, list[float]] = {}
    for row in rows:
        if row.get("error") is not None or "candidates" not in row:
            continue
        k = int(row["turn"])
        if done is not None and k in done:
            out[k] = done[k]
        else:
            texts = [c["text"] for c in row["candidates"]]
            priv = R.privileged_info(row) if critic.use_privileged_info else None
            out[k] = score_candidates(critic.model, critic.ref, critic.tokenizer, row["prompt"], texts, priv,
                                      critic.normalize, batch_size=batch_size, step_score=step_score, policy=policy,
                                      policy_tokenizer=policy_tokenizer)
            if scored is not None:
                scored(row, out[k])
        if progress is not None:
            progress(1)
    return out


# ----------------------------------------------------------------------------- the scores journal
class ScoresJournal:
    """``--scores-journal FILE``: every turn a critic scores is appended (flushed, fsync'd) as one
    JSON line, so a rerun with the same FILE scores only what it lacks (a critic report over five
    critics takes hours on a CPU, and a killed one would otherwise start over). A line is reused
    only for the same step score of the same critic checkpoint (its fingerprint), policy, dtype
    and candidate texts; a torn last line is ignored."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lines: list[dict[str, Any]] = [x for x in read_journal(self.path) if isinstance(x, dict)]
        self._journal = Journal(self.path)

    @staticmethod
    def texts_digest(row: dict[str, Any]) -> str:
        from sweet_agent.actor.pair_files import digest

        return digest([c["text"] for c in row["candidates"]])

    def done(self, key: dict[str, Any], rows: Sequence[dict[str, Any]]) -> dict[int, list[float]]:
        """The turns of ``rows`` this journal holds for ``key`` (their candidate texts unchanged)."""
        digests = {int(r["turn"]): self.texts_digest(r) for r in rows if "candidates" in r}
        out = {}
        for line in self.lines:
            k = line.get("turn")
            if line.get("key") == key and k in digests and line.get("texts_sha256") == digests[k]:
                out[int(k)] = [float(x) for x in line["scores"]]
        return out

    def append(self, key: dict[str, Any], row: dict[str, Any], scores: list[float]) -> None:
        self._journal.append({"key": key, "turn": int(row["turn"]), "texts_sha256": self.texts_digest(row),
                              "scores": [float(x) for x in scores]})

    def close(self) -> None:
        self._journal.close()


def read_scores_file(path: str | Path) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out[int(row["turn"])] = [float(x) for x in row["scores"]]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                raise MCValuesError(f"{path}:{i + 1}: a scores line is {{\"turn\": K, \"scores\": [numbers]}}") from None
    return out


def _named(spec: str) -> tuple[str | None, str]:
    """``NAME=PATH`` or ``PATH``."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        return name.strip() or None, path.strip()
    return None, spec


def _trained_tasks(meta: dict[str, Any]) -> set[str] | None:
    keys = meta.get("train_task_keys")
    return set(keys) if isinstance(keys, list) else None


# ----------------------------------------------------------------------------- the report
def build_report(rows: Sequence[dict[str, Any]], scorers: Sequence[Scorer], *, tasks: str = "heldout",
                 ci: str = "wilson", seed: int = 0, values_meta: dict[str, Any] | None = None,
                 source: str = "") -> dict[str, Any]:
    """The report as JSON: per scorer, per agent turn and over all turns, the agreement, its
    interval and the counts."""
    if tasks not in ("heldout", "all"):
        raise ValueError(f"--tasks must be heldout or all, got {tasks!r}")
    if ci not in CI_METHODS:
        raise ValueError(f"--ci must be one of {', '.join(CI_METHODS)}, got {ci!r}")
    used = [r for r in rows if r.get("error") is None and "candidates" in r]
    reliability = None
    if completions_per_candidate(used) >= 2:
        rel = label_reliability(used)
        reliability = {k: {"pairs": a.pairs, "agree": a.agree, "agreement": a.rate,
                           "ci": list(iv) if (iv := interval(a, ci, seed)) else None,
                           "label_accuracy": label_accuracy(a.rate), "ties": a.mc_ties, "unmeasured": a.unmeasured}
                       for k, a in rel.items()}
        first = draw_rows(rows, 0)
    columns = []
    for s in scorers:
        skip = s.trained_tasks if tasks == "heldout" else None
        table = agreement_by_turn(rows, s.scores, skip)
        one_draw = None
        if reliability is not None:
            a = agreement_by_turn(first, s.scores, skip)["all"]
            iv = interval(a, ci, seed)
            one_draw = {"pairs": a.pairs, "agree": a.agree, "agreement": a.rate, "ci": list(iv) if iv else None,
                        **noise_corrected(first, s.scores, reliability["all"]["label_accuracy"], skip, ci, seed)}
        columns.append({
            "name": s.name, "kind": s.kind, "source": s.source, "fingerprint": s.fingerprint,
            "privileged_info": s.privileged,
            "pairs_held_out": (skip is not None) if tasks == "heldout" else False, "notes": s.notes,
            "by_agent_turn": {k: {"pairs": a.pairs, "agree": a.agree, "agreement": a.rate,
                                  "ci": list(iv) if (iv := interval(a, ci, seed)) else None,
                                  "score_ties": a.score_ties, "mc_ties": a.mc_ties, "unmeasured": a.unmeasured,
                                  "trained_on": a.trained_on, "turns_with_pairs": len(a.turns),
                                  "by_pair_kind": {kind: {"pairs": n, "agree": g, "agreement": g / n if n else None,
                                                          "ci": list(wilson(g, n) or []) or None}
                                                   for kind, (g, n) in sorted(a.kinds.items())}}
                              for k, a in table.items()},
            "first_completion": one_draw,
        })
    settings = (values_meta or {}).get("settings", {})
    mc = settings.get("mc", {})
    plain = agreement_by_turn(used, {int(r["turn"]): [0.0] * len(r["candidates"]) for r in used})
    return {"format": REPORT_FORMAT, "values": source, "turns": len(used),
            "values_by_agent_turn": {k: {"turns": sum(1 for r in used if str(r["agent_turn"]) == k) if k != "all"
                                         else len(used), "pairs": a.pairs, "mc_ties": a.mc_ties,
                                         "unmeasured": a.unmeasured} for k, a in plain.items()},
            "candidates": sum(len(r["candidates"]) for r in used),
            "rollouts_per_candidate": mc.get("rollouts_per_candidate"), "reward_mode": mc.get("reward_mode"),
            "policy": settings.get("policy"), "tasks": tasks,
            "ci": {"method": ci, "level": 0.95,
                   "about": "Wilson score interval, pairs treated as independent" if ci == "wilson" else
                            "percentile interval, whole turns resampled with replacement (2,000 draws)"},
            "chance": 0.5, "scorers": columns, "mc_prefers": mc_preferences(used),
            "completions_per_candidate": completions_per_candidate(used), "label_reliability": reliability}


def format_report(report: dict[str, Any]) -> str:
    """The report as a table: one row per agent turn (and all), one column per step score."""
    cols = report["scorers"]
    keys: list[str] = list(report["values_by_agent_turn"])
    for c in cols:
        keys += [k for k in c["by_agent_turn"] if k not in keys]
    keys = sorted((k for k in keys if k != "all"), key=int) + ["all"]
    head = (f"Critic agreement with the Monte-Carlo step value ({report['values']}: {report['turns']} agent turns, "
            f"{report['candidates']} candidates, k={report['rollouts_per_candidate']} completions per candidate, "
            f"reward {report['reward_mode']}; {'held-out tasks' if report['tasks'] == 'heldout' else 'all tasks'}; "
            f"{report['ci']['method']} 95% CI; chance 0.5)")

    def cell(c, k):
        a = c["by_agent_turn"].get(k)
        if not a or not a["pairs"]:
            return "n/a (0 pairs)"
        lo, hi = a["ci"]
        return f"{a['agreement']:.3f} [{lo:.3f}, {hi:.3f}] n={a['pairs']}"

    def counts(k):
        v = report["values_by_agent_turn"].get(k, {})
        return [str(v.get("turns", 0)), str(v.get("pairs", 0)), str(v.get("mc_ties", 0))]

    rows = [["agent turn", "turns", "pairs", "MC ties", *(c["name"] for c in cols)]]
    rows += [[k, *counts(k), *(cell(c, k) for c in cols)] for k in keys]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head, ""]
    for n, r in enumerate(rows):
        lines.append("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    for c in cols:
        a = c["by_agent_turn"]["all"]
        extra = [f"{kind} {v['agreement']:.3f} (n={v['pairs']})" for kind, v in a["by_pair_kind"].items()]
        extra += [f"{a['score_ties']} score ties (not agreeing)"] if a["score_ties"] else []
        if a["trained_on"]:
            extra.append(f"{a['trained_on']} pairs of tasks it trained on left out")
        if a["unmeasured"]:
            extra.append(f"{a['unmeasured']} pairs without an MC value left out")
        extra += c["notes"]
        if extra:
            lines.append(f"  {c['name']}: {'; '.join(extra)}")
    rel = report.get("label_reliability")
    if rel and rel.get("all", {}).get("pairs"):
        lines += ["", "Label noise: two independent completions of the same going-on candidates order a pair alike "
                      "(a; pairs with an answer on both sides left out) -> a one-completion label is right with "
                      "probability c = (1 + sqrt(2a - 1)) / 2"]
        for k, v in rel.items():
            if v["pairs"]:
                lo, hi = v["ci"]
                lines.append(f"  {k}: a = {v['agreement']:.3f} [{lo:.3f}, {hi:.3f}] n={v['pairs']} -> "
                             f"c = {v['label_accuracy']:.3f}")
        lines.append("Against the first completion's labels alone (a k = 1 report), and corrected for that noise "
                     "(pairs of two answers as observed, the others (obs - (1 - c)) / (2c - 1) with c of all turns):")
        for c in cols:
            f = c.get("first_completion")
            if f and f["pairs"]:
                fixed = ("n/a" if f["corrected"] is None else
                         f"{f['corrected']:.3f} [{f['corrected_ci'][0]:.3f}, {f['corrected_ci'][1]:.3f}]")
                lines.append(f"  {c['name']}: {f['agreement']:.3f} [{f['ci'][0]:.3f}, {f['ci'][1]:.3f}] n={f['pairs']}"
                             f" -> corrected {fixed}")
    prefers = report.get("mc_prefers") or {}
    if any(v["ask_answer_pairs"] for v in prefers.values()):
        lines += ["", "What the Monte-Carlo values prefer (no step score): per agent turn, ask-answer pairs where "
                      "going on is worth more / less / the same; mean value going on vs answering"]
        lines += [f"  {k}: {v['goes_on_higher']} / {v['answer_higher']} / {v['ties']} of {v['ask_answer_pairs']}; "
                  f"{_mean(v['mean_value']['goes_on'])} vs {_mean(v['mean_value']['answers'])}"
                  for k, v in prefers.items() if v["ask_answer_pairs"]]
    return "\n".join(lines)


def _mean(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


# ----------------------------------------------------------------------------- the command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--values", required=True, help="values file of `sweet-agent mc-values`")
    parser.add_argument("--critic", action="append", default=[], metavar="[NAME=]DIR",
                        help="a train-critic output, scored with its critic-ref step score (with the reference "
                             "solution if it was trained with it); repeat for several critics")
    parser.add_argument("--release", action="append", default=[], metavar="[NAME=]DIR",
                        help="a train-critic output scored with the paper release's step score (critic with the "
                             "reference minus --policy without it); repeatable")
    parser.add_argument("--policy", default=None,
                        help="the sampling policy of --release (default: each critic's reference model)")
    parser.add_argument("--scores", action="append", default=[], metavar="NAME=FILE",
                        help="precomputed scores: JSON lines {\"turn\": K, \"scores\": [...]} (one per candidate)")
    parser.add_argument("--tasks", default="heldout", choices=["heldout", "all"],
                        help="heldout: leave out each critic's training tasks (default); all: every pair")
    parser.add_argument("--ci", default="wilson", choices=list(CI_METHODS),
                        help="wilson: Wilson score interval over pairs (default); turn-bootstrap: whole turns resampled")
    parser.add_argument("--seed", type=int, default=0, help="seed of --ci turn-bootstrap")
    parser.add_argument("--dtype", default="float32", help="critic dtype (default: %(default)s)")
    parser.add_argument("--device", default="auto", help="where critics run (default: %(default)s)")
    parser.add_argument("--batch-size", "--batch_size", dest="batch_size", type=int, default=16,
                        help="candidates per critic forward (default: %(default)s)")
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON here")
    parser.add_argument("--scores-journal", "--scores_journal", dest="scores_journal", default=None, metavar="FILE",
                        help="append every scored turn here and reuse what an interrupted run with the same FILE "
                             "scored (same critic checkpoint, step score, policy, dtype and candidates)")
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar per step score")


def run(args: argparse.Namespace) -> int:
    try:  # the command line and its input, refused before any work: exit 2 (CONTRIBUTING, "Errors and exit statuses")
        if not (args.critic or args.release or args.scores):
            raise ValueError("name at least one step score: --critic DIR, --release DIR or --scores NAME=FILE")
        rows, meta = read_values_file(args.values)
        scorers: list[Scorer] = []
        for spec in args.scores:
            name, path = _named(spec)
            scorers.append(Scorer(name or Path(path).stem, "file", read_scores_file(path), source=path,
                                  notes=["precomputed scores: every pair used"]))
    except (ValueError, OSError) as exc:
        raise SystemExit(str(exc)) from None
    try:
        journal = ScoresJournal(args.scores_journal) if getattr(args, "scores_journal", None) else None
    except JournalDamaged as exc:
        raise SystemExit(f"--scores-journal: {exc}") from None
    try:
        for kind, specs in (("critic-ref", args.critic), ("release", args.release)):
            for spec in specs:
                scorers.append(_critic_scorer(rows, spec, kind, args, journal))
    finally:
        if journal is not None:
            journal.close()
    report = build_report(rows, scorers, tasks=args.tasks, ci=args.ci, seed=args.seed, values_meta=meta,
                          source=str(args.values))
    print(format_report(report))
    if args.json:
        from colbench_gym.jsonl import check_output_writable, write_text_atomic

        check_output_writable(args.json, "--json")
        write_text_atomic(args.json, json.dumps(report, indent=2) + "\n")
    return 0


def _critic_scorer(rows, spec: str, kind: str, args, journal: ScoresJournal | None = None) -> Scorer:
    from sweet_agent.critic.loading import CriticLoadError, load_critic, read_critic_meta

    name, path = _named(spec)
    try:
        meta = read_critic_meta(path)
        if kind == "release" and meta.get("critic_type") == "regression":
            raise ValueError(f"--release {path}: a regression critic has no token log-probabilities")
        critic = load_critic(path, args.dtype, with_reference=kind != "release", device=args.device)
    except CriticLoadError as exc:
        raise ValueError(str(exc)) from None
    policy = tok = policy_name = None
    notes = []
    if kind == "release":
        from sweet_agent.training.models import load_model

        policy_name = args.policy or meta.get("reference_model")
        if not policy_name:
            raise ValueError(f"--release {path}: its meta names no reference model; pass --policy")
        policy, tok = load_model(policy_name, args.dtype, device=args.device)
        policy.eval()
        notes.append(f"sampling policy {policy_name}")
    trained = _trained_tasks(meta)
    if trained is None:
        notes.append("its sweet_critic.json records no training tasks: every pair used (not known to be held out)")
    label = name or f"{Path(path).name} ({kind}, {'with' if critic.use_privileged_info else 'without'} reference)"
    key = {"kind": kind, "critic": critic.fingerprint, "policy": policy_name, "dtype": args.dtype}
    done = journal.done(key, rows) if journal is not None and critic.fingerprint else {}
    if done:
        notes.append(f"{len(done)} turns' scores read back from {journal.path}")
    todo = sum(1 for r in rows if r.get("error") is None and "candidates" in r)
    bar = None
    if getattr(args, "progress", True):
        from tqdm.auto import tqdm

        bar = tqdm(total=todo, initial=0, desc=label, unit="turn", dynamic_ncols=True)
    try:
        scores = critic_scores(rows, critic, kind, policy, tok, args.batch_size,
                               progress=bar.update if bar is not None else None,
                               scored=(lambda row, sc: journal.append(key, row, sc)) if journal is not None
                               and critic.fingerprint else None, done=done)
    finally:
        if bar is not None:
            bar.close()
    return Scorer(label, kind, scores, source=path, privileged=critic.use_privileged_info, trained_tasks=trained,
                  notes=notes, fingerprint=critic.fingerprint)
