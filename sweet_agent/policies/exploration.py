"""Question-asking exploration: a behaviour policy that sometimes starts the agent's turn with a
question opener and lets the model finish the question.

Why: a small instruct model never asks a clarifying question unprompted (measured here: 0 of 32
episodes at temperature 1.0), so an offline dataset of its own rollouts holds nothing for RFT,
multi-turn DPO or SWEET-RL to reinforce. Temperature alone does not help; forcing the first
words of a question does — with the first agent turn prefilled with "Before I write the
function, one question: " the same 0.5B model passed 28 % of the hidden tests instead of 5 %
(measured when this module was written; the learning benchmark's behaviour data in
docs/results/learning-v1.md agrees: explored episodes succeeded in 28.6 % of ``collab:test`` tasks, the
model's own first turns in 0 %). The model writes the question itself; only the opener is forced.

Honesty about what the data is: the exploring policy is a *behaviour* policy, not the model.
Every prefilled turn keeps its opener in :attr:`Generation.prefix` and every turn the
probability it had of one in :attr:`Generation.explore_rate`; the rollout collector records both
per agent turn (``meta.exploration.openers`` and ``.rates``: :func:`prefilled_agent_turns`
reads which turns were prefilled) and names the policy
``"<model>+explore(...)"``, so a trajectory never passes for the target policy's own
behaviour. Training on such data (RFT, DPO) teaches the target policy to produce the whole
turn — opener included — on its own, which is the point.

Decisions are a pure function of the turn's seed (which the collector derives from the run seed,
task, sample and turn), so an exploring rollout is as reproducible and resumable as any other.
A prefilled turn stops at the first ``?`` (plus a small token cap): it is a question, not an
answer, and it costs few tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sweet_agent.policies.base import Generation, Messages, Policy, PolicyError, SamplingParams, derive_seed

#: Openers in our own words; the model completes each into a concrete question.
#: Probed on the 0.5B model: looser openers ("Quick question before I start: ") were completed
#: with non-questions ("2021 is the year.") far more often than these.
DEFAULT_OPENERS: tuple[str, ...] = (
    "Before I write the function, one question: ",
    "Before I write the function, one question: what is the exact ",
    "Before I write the function, one question: what ",
)
#: The openers of a later agent turn (the person has answered something already): the same
#: forced starts, saying it is another question.
DEFAULT_LATER_OPENERS: tuple[str, ...] = (
    "Before I write the function, one more question: ",
    "Before I write the function, one more question: what is the exact ",
    "Before I write the function, one more question: what ",
)


def _rates(text: str | Sequence[float] | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    if isinstance(text, str):
        try:
            return tuple(float(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise ValueError(f"exploration rates must be comma-separated numbers in [0, 1], got {text!r}") from None
    return tuple(float(x) for x in text)


@dataclass(frozen=True)
class ExplorationConfig:
    """How often to force a question.

    rate:
        Probability that an eligible agent turn is prefilled with an opener (0 = never: the
        behaviour policy is the model itself).
    turns:
        Only the first ``turns`` agent turns are eligible (0 = every agent turn).
    rates:
        Per agent turn, its own probability (``rates[0]`` for the first agent turn, ``rates[1]``
        for the second, ...; later turns 0): replaces ``rate`` and ``turns``. Each turn draws
        from its own seed, so data collected with ``(0.5, 0.3)`` holds episodes that answer at
        once, ask once then answer, and ask twice.
    question_tokens:
        Token cap of a prefilled turn (a question is short).
    openers:
        The forced starts of the first agent turn, one picked per prefilled turn (seeded).
    later_openers:
        The forced starts of a later agent turn ("one more question").
    """

    rate: float = 0.5
    turns: int = 1
    question_tokens: int = 48
    openers: tuple[str, ...] = DEFAULT_OPENERS
    rates: tuple[float, ...] | None = None
    later_openers: tuple[str, ...] = DEFAULT_LATER_OPENERS

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"exploration rate must be in [0, 1], got {self.rate}")
        if self.turns < 0:
            raise ValueError(f"exploration turns must be >= 0 (0 = every agent turn), got {self.turns}")
        if self.rates is not None:
            object.__setattr__(self, "rates", _rates(self.rates))
            if not self.rates or not all(0.0 <= r <= 1.0 for r in self.rates):
                raise ValueError(f"exploration rates must be one or more numbers in [0, 1] (one per agent turn, "
                                 f"from the first), got {self.rates}")
        if self.question_tokens < 4:
            raise ValueError(f"question_tokens must be >= 4, got {self.question_tokens}")
        for name in ("openers", "later_openers"):
            value = getattr(self, name)
            if not value or not all(isinstance(o, str) and o.strip() for o in value):
                raise ValueError(f"{name} must be a non-empty tuple of non-empty strings")

    def describe(self) -> str:
        if self.rates is not None:
            return f"explore(rates={'/'.join(f'{r:g}' for r in self.rates)})"
        return f"explore(rate={self.rate:g},turns={self.turns or 'all'})"

    def rate_at(self, agent_turn: int) -> float:
        """The probability of an opener at agent turn ``agent_turn`` (1-based)."""
        if agent_turn < 1:
            raise ValueError(f"agent turns count from 1, got {agent_turn}")
        if self.rates is not None:
            return self.rates[agent_turn - 1] if agent_turn <= len(self.rates) else 0.0
        return self.rate if not self.turns or agent_turn <= self.turns else 0.0

    def opener_for(self, messages: Messages, seed: int | None) -> str | None:
        """The opener forced on this turn, or None. ``seed`` is the turn's sampling seed."""
        if seed is None:
            return None
        turn = next_agent_turn(messages)
        rate = self.rate_at(turn)
        if rate <= 0:
            return None
        u = derive_seed(seed, "explore") / float(2**63)
        if u >= rate:
            return None
        openers = self.openers if turn == 1 else self.later_openers
        return openers[derive_seed(seed, "opener") % len(openers)]


def next_agent_turn(messages: Messages) -> int:
    """The agent turn (1-based) that follows ``messages``: one more than the assistant messages in it."""
    return 1 + sum(1 for m in messages if m.get("role") == "assistant")


def prefilled_agent_turns(rec: dict) -> list[int]:
    """The agent turns (1-based) of a rollout record that a behaviour policy started with an
    opener (``meta.exploration.openers``: one per agent turn, ``""`` where none was forced)."""
    exp = (rec.get("meta") or {}).get("exploration") or {}
    openers = exp.get("openers") if isinstance(exp, dict) else None
    if isinstance(openers, list):
        return [i + 1 for i, o in enumerate(openers) if o]
    old = exp.get("prefilled_turns") if isinstance(exp, dict) else None  # the first schema: [{"turn": 0-based}]
    return sorted(int(e["turn"]) + 1 for e in old or [] if isinstance(e, dict) and "turn" in e)


class ExploringPolicy(Policy):
    """Wraps a policy that supports assistant prefixes; prefills some turns with question openers.

    The wrapped policy does all the generation. Turns without an opener are generated exactly
    as the wrapped policy would (same seeds, same sampling), so with ``rate=0`` this is the
    wrapped policy.
    """

    def __init__(self, base: Policy, config: ExplorationConfig):
        if not getattr(base, "supports_prefix", False):
            raise PolicyError(f"{base!r} cannot continue a forced start of a turn; question exploration needs a "
                              "local transformers policy")
        self.base, self.config = base, config
        self.name = f"{base.name}+{config.describe()}"
        self.max_batch_size = base.max_batch_size

    def generate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                 seeds: Sequence[int | None] | None = None) -> list[Generation]:
        sampling = sampling or getattr(self.base, "default_sampling", None) or SamplingParams()
        seeds = list(seeds) if seeds is not None else [None] * len(conversations)
        openers = [self.config.opener_for(c, s) for c, s in zip(conversations, seeds)]
        out: list[Generation | None] = [None] * len(conversations)
        plain = [i for i, o in enumerate(openers) if o is None]
        asked = [i for i, o in enumerate(openers) if o is not None]
        rates = [self.config.rate_at(next_agent_turn(c)) for c in conversations]
        if plain:
            for i, g in zip(plain, self.base.generate([conversations[i] for i in plain], sampling,
                                                      [seeds[i] for i in plain])):
                out[i] = replace(g, explore_rate=rates[i])
        if asked:
            q_sampling = sampling.with_(max_new_tokens=min(sampling.max_new_tokens, self.config.question_tokens),
                                        stop=("?",))
            gens = self.base.generate([conversations[i] for i in asked], q_sampling, [seeds[i] for i in asked],
                                      prefixes=[openers[i] for i in asked])  # type: ignore[call-arg]
            for i, g in zip(asked, gens):
                text = g.text.rstrip()
                if not text.endswith("?"):
                    text += "?"  # the stop string is cut off; a question keeps its mark
                out[i] = replace(g, text=text, explore_rate=rates[i])
        return out  # type: ignore[return-value]

    def close(self) -> None:
        self.base.close()
