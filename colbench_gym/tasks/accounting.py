"""What a published evaluation needs besides a score: why each episode ended, and what it cost.

WHY one module: the environments (``info["end_reason"]``), the rollout collector (every record's
``meta``), ``colbench evaluate`` and ``sweet-agent evaluate`` all attribute episodes and count
tokens; with one table of end reasons and one price rule they cannot disagree about whether an
episode was the agent's failure or the infrastructure's, or about what a run cost.

End reasons (:data:`END_REASONS`): an episode ends because the agent answered (``answer``), used
its last turn (``turn_limit``), could not produce a turn (``agent_error``), or because something
that is not the agent failed for good, after its retries: the agent's model endpoint
(``endpoint_error``), the simulated person (``simulator_error``), the grader
(``grading_error``), the browser (``rendering_error``), the task itself (``task_error``), or
anything else in the environment (``environment_error``).

**The reporting rule** (as τ²-bench separates user-simulator failures from agent failures):

- the agent's rates (success, % tests passed, similarity, win rate) are over the episodes the
  agent is accountable for: ``answer``, ``turn_limit`` and ``agent_error`` (which scores 0);
- infrastructure failures are left out of those rates and reported beside them, by reason; they
  say nothing about the agent (rerun those episodes before publishing a number);
- the reports also give the success over *all* episodes with infrastructure failures counted as
  failures: the lower bound a reader can check the rule against.

Cost: every episode records its agent and simulator tokens (prompt/completion: the OpenAI
``usage`` fields of an endpoint, tokenizer counts of a local model, 0 for the offline
simulator, which runs no model) and its wall time; reports sum them per run, and with a price
table (:func:`load_prices`: ``{model: {"prompt": $ per 1M tokens, "completion": $ per 1M}}``)
price them per model.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EndReason:
    """Why an episode ended, and whom it is attributed to."""

    name: str
    #: True: not the agent's doing; left out of the agent's rates, reported beside them.
    infrastructure: bool
    #: True: the agent's answer was graded (the episode has a score of its own).
    graded: bool
    meaning: str


#: The one table of end reasons, in report order.
END_REASONS: dict[str, EndReason] = {r.name: r for r in (
    EndReason("answer", False, True, "the agent wrote I WANT TO ANSWER:; its answer was graded"),
    EndReason("turn_limit", False, True, "the agent used its last turn; that turn was graded as the answer"),
    EndReason("agent_error", False, False, "the agent produced no usable turn (the policy itself failed, "
              "e.g. a local model raised, or its endpoint takes the dialogue's opening but no longer the "
              "dialogue its turns built); counted as a failure of the agent (score 0)"),
    EndReason("endpoint_error", True, False, "the agent's model endpoint failed for good (HTTP error, timeout, "
              "unreachable, unreadable replies) after its retries"),
    EndReason("simulator_error", True, False, "the simulated person failed for good (its endpoint or model) "
              "after the retries"),
    EndReason("grading_error", True, True, "the grader failed internally (never because of the answer)"),
    EndReason("rendering_error", True, True, "the browser could not render the reference page, or the renderer "
              "itself failed"),
    EndReason("task_error", True, True, "the task is unusable: it could not be loaded, or no hidden test has a "
              "usable reference result"),
    EndReason("environment_error", True, False, "any other failure inside the environment"),
    EndReason("unknown_error", True, False, "a failure recorded without its cause (a file written before end "
              "reasons were recorded)"),
)}

#: The reasons that are infrastructure failures.
INFRASTRUCTURE = frozenset(n for n, r in END_REASONS.items() if r.infrastructure)

#: Exceptions (by class name, anywhere in the class's MRO or the exception's cause chain) and
#: the failure they stand for, where the exception itself carries no ``end_reason`` attribute.
#: Names, not classes: this module sits below the simulators, renderer and policies.
EXCEPTION_REASONS: dict[str, str] = {
    "EndpointError": "endpoint_error",
    "SimulatorError": "simulator_error",
    "RendererError": "rendering_error",
    "WebAssetsMissing": "rendering_error",
    "TaskFormatError": "task_error",
}

#: How the grader's catch-all begins its error text (``GradeResult.error``), for people to read.
#: Never evidence: an answer can make its own error read like this; whether grading failed is
#: the grader's host-side verdict (``GradeResult.end_reason``, read by :func:`grading_failure`).
INTERNAL_GRADING_ERROR = "internal grading error"


def check_end_reason(name: str) -> str:
    if name not in END_REASONS:
        raise ValueError(f"unknown end reason {name!r}; one of {', '.join(END_REASONS)}")
    return name


def is_infrastructure(reason: str | None) -> bool:
    return reason in INFRASTRUCTURE


class InfrastructureFailure(RuntimeError):
    """A failure that is not the agent's, raised where no more specific exception says so (a
    score the infrastructure could not compute, a remote env's failure): ``end_reason`` names it
    and the message is :func:`failure_message`'s ``"<end reason>: <detail>"``."""

    def __init__(self, end_reason: str, detail: str) -> None:
        super().__init__(failure_message(check_end_reason(end_reason), detail))
        self.end_reason, self.detail = end_reason, detail

    def __reduce__(self):  # pickled with its own arguments (a worker process's failure reaches its parent whole)
        return type(self), (self.end_reason, self.detail)


def failure_message(reason: str, detail: str) -> str:
    """How a failure's text leads with its end reason (records' ``error``, messages that cross a
    process or a wire); :func:`reason_in_message` reads it back."""
    return f"{reason}: {detail}"


def parse_failure_message(text: str) -> tuple[str | None, str]:
    """A :func:`failure_message` text split back into (end reason, detail); (None, the whole
    text) when it does not lead with an end reason."""
    name, _, detail = str(text).partition(":")
    if name.strip() not in END_REASONS:
        return None, str(text)
    return name.strip(), detail.strip()


def reason_in_message(text: str) -> str | None:
    """The end reason a :func:`failure_message` text leads with, or None."""
    return parse_failure_message(text)[0]


def named_reason(exc: BaseException) -> str | None:
    """The end reason an exception names: its own ``end_reason``, else its class (or a class it
    derives from) in :data:`EXCEPTION_REASONS`, else the same of an exception it was raised
    from; None when nothing names one (a bug, a caller's mistake: never taken for
    infrastructure by default)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        own = getattr(e, "end_reason", None)
        if isinstance(own, str) and own in END_REASONS:
            return own
        for cls in type(e).__mro__:
            if cls.__name__ in EXCEPTION_REASONS:
                return EXCEPTION_REASONS[cls.__name__]
        e = e.__cause__ or e.__context__
    return None


def end_reason_of(exc: BaseException, default: str) -> str:
    """The end reason of an episode that ``exc`` ended: :func:`named_reason`, else ``default``
    (the caller knows what it was doing: asking the policy, stepping the environment)."""
    return named_reason(exc) or check_end_reason(default)


def grading_failure(result: Any) -> str | None:
    """The infrastructure failure behind a graded answer's score, if any — the one rule every
    consumer applies (the env's ``info["end_reason"]``, ``colbench evaluate``, ``sweet-agent
    evaluate --regrade``, Inspect, verifiers, OpenEnv, GRPO): ``grading_error`` when the grader
    says its trusted process failed (``result.end_reason``, set on the host side only), else
    ``task_error`` when no test of the task has a usable reference result (the score then
    measures nothing); None when the score is the answer's own.

    ``result`` is a :class:`~colbench_gym.grading.GradeResult`. Its ``error`` text is never
    read: the answer's code writes what it likes into the sandbox's output (class names,
    modules, messages, whole records), so text that reads like an infrastructure failure is the
    answer's failure, scored 0.
    """
    if isinstance(result, (str, bytes)) or result is None:
        raise TypeError("grading_failure takes the GradeResult, not its error text")
    verdict = getattr(result, "end_reason", None)
    if verdict is not None:
        if not is_infrastructure(verdict):
            raise ValueError(f"GradeResult.end_reason must be an infrastructure end reason, got {verdict!r}")
        return verdict
    total, unpassable = result.total, len(result.unpassable)
    if total == 0 or unpassable >= total:
        return "task_error"
    return None


def record_end_reason(rec: Mapping[str, Any]) -> str | None:
    """Why a trajectory record's episode ended: ``meta.end_reason``; for records written before
    it existed, a failure is attributed by the exception named at the start of ``error``
    (``unknown_error`` when that says nothing), an episode that ended normally by
    ``meta.ended_by``; None when nothing says (e.g. the release's files: a graded answer)."""
    meta = rec.get("meta") if isinstance(rec.get("meta"), Mapping) else {}
    reason = meta.get("end_reason")
    if isinstance(reason, str) and reason in END_REASONS:
        return reason
    error = rec.get("error") or meta.get("error")
    if error:
        name = str(error).split(":", 1)[0].strip()
        return reason_in_message(name) or EXCEPTION_REASONS.get(name, "unknown_error")
    ended_by = meta.get("ended_by")
    return ended_by if ended_by in ("answer", "turn_limit") else None


def is_infrastructure_failure(rec: Mapping[str, Any]) -> bool:
    """The record's episode failed for infrastructure reasons (no score), by any account of it:
    the rollout's ``meta`` (its flag or end reason), the verdict ``colbench evaluate
    backend|frontend`` writes beside the record (top-level ``end_reason`` /
    ``infrastructure_failure``), or, for records older than end reasons, their ``error``."""
    meta = rec.get("meta")
    if (isinstance(meta, Mapping) and meta.get("infrastructure_failure")) or rec.get("infrastructure_failure"):
        return True
    return is_infrastructure(rec.get("end_reason")) or is_infrastructure(record_end_reason(rec))


def count_end_reasons(reasons: Iterable[str | None]) -> dict[str, int]:
    """``{reason: episodes}`` in the table's order; records that say nothing count as ``"unrecorded"``."""
    counts = Counter("unrecorded" if r is None else r for r in reasons)
    order = [*END_REASONS, "unrecorded"]
    return {name: counts[name] for name in order if counts[name]}


def format_end_reasons(counts: Mapping[str, int]) -> str:
    """One line: the agent's end reasons, then the infrastructure failures apart."""
    agent = [f"{n} {c}" for n, c in counts.items() if n not in INFRASTRUCTURE]
    infra = [f"{n} {c}" for n, c in counts.items() if n in INFRASTRUCTURE]
    text = ", ".join(agent) or "none"
    if infra:
        text += f" | infrastructure: {', '.join(infra)}"
    return text


# ------------------------------------------------------------------------------------- cost
#: Token fields of one model's usage.
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")


def usage(prompt_tokens: int = 0, completion_tokens: int = 0) -> dict[str, int]:
    return {"prompt_tokens": int(prompt_tokens), "completion_tokens": int(completion_tokens)}


def add_usage(total: dict[str, int], more: Mapping[str, Any] | None) -> dict[str, int]:
    """Add ``more``'s token counts into ``total`` (in place; missing or null fields count 0)."""
    for k in TOKEN_FIELDS:
        v = (more or {}).get(k)
        total[k] = total.get(k, 0) + (int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0)
    return total


class PriceTableError(ValueError):
    """A ``--prices`` file is not a price table."""


Prices = dict[str, dict[str, float]]


def load_prices(path: str | os.PathLike[str]) -> Prices:
    """Read a price table: a JSON object ``{model: {"prompt": USD per 1M prompt tokens,
    "completion": USD per 1M completion tokens}}`` (model names as the records name them:
    ``meta.agent_model`` / ``meta.simulator_model``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise PriceTableError(f"{path}: no such price table") from None
    except (OSError, ValueError) as exc:
        raise PriceTableError(f"{path}: not a JSON price table ({exc})") from None
    if not isinstance(data, dict):
        raise PriceTableError(f'{path}: expected {{"MODEL": {{"prompt": USD_PER_1M, "completion": USD_PER_1M}}}}, '
                              f"got {type(data).__name__}")
    prices: Prices = {}
    for model, row in data.items():
        if not isinstance(row, dict) or set(row) - {"prompt", "completion"} or not row:
            raise PriceTableError(f'{path}: {model!r} must map to {{"prompt": USD_PER_1M, "completion": USD_PER_1M}}, '
                                  f"got {row!r:.80}")
        for k, v in row.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise PriceTableError(f"{path}: {model!r} {k!r} must be a price >= 0 in USD per 1M tokens, got {v!r}")
        prices[str(model)] = {"prompt": float(row.get("prompt", 0.0)), "completion": float(row.get("completion", 0.0))}
    return prices


def price_of(model: str, prices: Mapping[str, Mapping[str, float]]) -> Mapping[str, float] | None:
    """The row of ``model`` (also found without an ``openai:`` prefix), or None."""
    if model in prices:
        return prices[model]
    bare = model.split(":", 1)[1] if model.startswith("openai:") else None
    return prices.get(bare) if bare else None


def cost(tokens_by_model: Mapping[str, Mapping[str, int]], prices: Mapping[str, Mapping[str, float]]
         ) -> tuple[float, dict[str, float], list[str]]:
    """``(total USD, USD per model, models with tokens but no price)``; models that used no
    tokens (the offline simulator) need no price."""
    per: dict[str, float] = {}
    unpriced = []
    for model, toks in tokens_by_model.items():
        if not any(toks.get(k) for k in TOKEN_FIELDS):
            continue
        row = price_of(model, prices)
        if row is None:
            unpriced.append(model)
            continue
        per[model] = (toks.get("prompt_tokens", 0) * row.get("prompt", 0.0)
                      + toks.get("completion_tokens", 0) * row.get("completion", 0.0)) / 1e6
    return sum(per.values()), per, unpriced


@dataclass
class RunCost:
    """What a run's records say they cost: tokens of the agent and of the simulated person
    (``prompt_tokens`` / ``completion_tokens``), per model, and the episodes' summed wall time."""

    agent: dict[str, int]
    simulator: dict[str, int]
    by_model: dict[str, dict[str, int]]
    wall_time_s: float | None  # None: no record says
    episodes: int

    def price(self, prices: Mapping[str, Mapping[str, float]]) -> tuple[float, dict[str, float], list[str]]:
        """:func:`cost` of the models' tokens."""
        return cost(self.by_model, prices)

    def lines(self, priced: tuple[float, Mapping[str, float], list[str]] | None = None, *,
              colon: bool = False) -> list[str]:
        """The report's token, time and cost lines (none for records that carry no accounting);
        ``priced``: what :meth:`price` returned, for the cost line. Labels padded to a column
        (``sweet-agent evaluate``) or followed by a colon (``colbench evaluate``)."""
        def label(name: str) -> str:
            return f"{name}: " if colon else f"{name:<16}"

        out = []
        if any(self.agent.values()) or any(self.simulator.values()):
            a, m = self.agent, self.simulator
            out.append(f"{label('tokens')}agent {a['prompt_tokens']} prompt + {a['completion_tokens']} completion; "
                       f"simulator {m['prompt_tokens']} prompt + {m['completion_tokens']} completion")
            out += [f"  {model}: {u['prompt_tokens']} prompt + {u['completion_tokens']} completion"
                    for model, u in self.by_model.items()]
        if self.wall_time_s is not None:
            out.append(f"{label('wall time')}{self.wall_time_s:.1f} s summed over episodes "
                       f"({self.wall_time_s / max(1, self.episodes):.2f} s per episode)")
        if priced is not None:
            total, per, unpriced = priced
            detail = ", ".join(f"{m} ${c:.4f}" for m, c in per.items())
            out.append(f"{label('cost')}${total:.4f}" + (f" ({detail})" if detail else "")
                       + (f"; no price for {', '.join(unpriced)} (not counted)" if unpriced else ""))
        return out


def run_cost(records: Iterable[Mapping[str, Any]]) -> RunCost:
    """Sum the records' ``meta.agent_usage`` / ``meta.simulator_usage`` per model
    (``meta.agent_model`` / ``meta.simulator_model``) and their ``meta.wall_time_s``. Records
    written before usage was recorded count their ``meta.completion_tokens`` as the agent's."""
    agent, sim, by_model = usage(), usage(), {}
    wall: list[float] = []
    n = 0
    for rec in records:
        n += 1
        meta = rec.get("meta") if isinstance(rec.get("meta"), Mapping) else {}
        a = meta.get("agent_usage") or {"completion_tokens": meta.get("completion_tokens")}
        m = meta.get("simulator_usage")
        add_usage(agent, a)
        add_usage(sim, m)
        for model, u in ((meta.get("agent_model") or meta.get("policy") or "agent", a),
                         (meta.get("simulator_model") or meta.get("simulator") or "simulator", m)):
            add_usage(by_model.setdefault(str(model), usage()), u)
        w = meta.get("wall_time_s")
        if isinstance(w, (int, float)) and not isinstance(w, bool):
            wall.append(float(w))
    return RunCost(agent, sim, {k: v for k, v in by_model.items() if any(v.values())},
                   sum(wall) if wall else None, n)


__all__ = [
    "END_REASONS", "EXCEPTION_REASONS", "INFRASTRUCTURE", "INTERNAL_GRADING_ERROR", "TOKEN_FIELDS", "EndReason",
    "PriceTableError", "Prices", "RunCost", "add_usage", "check_end_reason", "cost", "count_end_reasons", "end_reason_of",
    "InfrastructureFailure", "failure_message", "format_end_reasons", "grading_failure", "named_reason",
    "reason_in_message", "parse_failure_message", "is_infrastructure", "load_prices", "price_of", "record_end_reason", "run_cost",
    "usage",
]
