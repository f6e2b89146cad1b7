"""The one small interface every policy implements.

A policy turns chat conversations (lists of ``{"role", "content"}`` messages, the agent's own
turns as ``"assistant"``) into the agent's next raw turn. It works on a *batch* of
conversations at once because that is where the speed is: a local model pads the batch and
decodes it in one pass, an endpoint policy sends the requests concurrently. Rollouts, the
SWEET-RL actor (sampling candidate actions) and the baselines all go through this interface.

Seeds are per conversation, not per call: the same ``(conversation, seed)`` gives the same
text whichever other conversations share the batch, so a rollout is reproducible even when it
is resumed or run with a different concurrency.
"""

from __future__ import annotations

import asyncio
import hashlib
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from colbench_gym.protocol import Messages  # a conversation: [{"role": ..., "content": str}, ...]


class PolicyError(RuntimeError):
    """A policy could not produce an action (model missing, endpoint down, bad output, ...)."""


class EndpointError(PolicyError):
    """The policy's model endpoint failed for good (HTTP error, timeout, unreachable, unreadable
    replies) after its retries: an infrastructure failure, not the agent's
    (:mod:`colbench_gym.tasks.accounting`)."""

    end_reason = "endpoint_error"


class ContextExhausted(PolicyError):
    """The policy's endpoint refuses the dialogue (HTTP 400, 413 or 422: longer than the served
    context, or text it will not take) but takes the dialogue's opening: what the agent's own
    turns (and the replies they drew) built is what no longer fits. The agent's failure, scored
    0 (``agent_error``): as an infrastructure failure, an agent could escape a failing episode's
    0 by writing long turns."""

    end_reason = "agent_error"


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one agent turn.

    ``temperature == 0`` means greedy decoding. ``stop`` strings end a turn early (the text up
    to, not including, the stop string is returned).
    """

    max_new_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 0  # 0 = no top-k cut
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = off), got {self.top_k}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def with_(self, **changes: Any) -> SamplingParams:
        return replace(self, **changes)


@dataclass(frozen=True)
class Generation:
    """One generated agent turn."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: ``"stop"`` (end of turn or stop string) or ``"length"`` (hit ``max_new_tokens``).
    finish_reason: str = "stop"
    #: Text forced at the start of the turn (an exploration opener, see
    #: :mod:`sweet_agent.policies.exploration`); ``text`` begins with it. Empty: none.
    prefix: str = ""
    #: The probability a behaviour policy had of forcing an opener on this turn (0: none could).
    explore_rate: float = 0.0


def derive_seed(*parts: Any) -> int:
    """A stable 63-bit seed from any printable parts (e.g. base seed, task index, sample, turn).

    Python's ``hash`` is salted per process, so we hash the text instead: the same parts give
    the same seed on every run and machine.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") & 0x7FFF_FFFF_FFFF_FFFF


def sample_seeds(seed: int | None, n: int) -> list[int | None]:
    """Per-sample seeds of :meth:`Policy.sample_n`: sample 0 keeps ``seed`` (so one request for
    ``n`` choices and ``n`` requests start alike), sample ``j`` gets ``derive_seed(seed, "sample", j)``."""
    if seed is None:
        return [None] * n
    return [seed if j == 0 else derive_seed(seed, "sample", j) for j in range(n)]


def apply_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the first stop string; returns (text, whether it was cut)."""
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def validate_conversation(messages: Messages, where: str = "conversation") -> None:
    """Raise a clear error for anything a chat template would choke on."""
    if not isinstance(messages, list) or not messages:
        raise PolicyError(f"{where}: expected a non-empty list of {{'role', 'content'}} messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise PolicyError(f"{where}[{i}]: each message needs 'role' and 'content', got {m!r:.80}")
        if m["role"] not in ("system", "user", "assistant"):
            raise PolicyError(f"{where}[{i}]: role must be system, user or assistant, got {m['role']!r}")
        if not isinstance(m["content"], str):
            raise PolicyError(f"{where}[{i}]: content must be a str, got {type(m['content']).__name__}")


class Policy(ABC):  # noqa: B024 - either generate or agenerate is overridden
    """Base class. Subclasses implement :meth:`generate` (local models) or :meth:`agenerate`
    (endpoints); the other one has a working default."""

    #: A short human-readable name recorded in trajectory metadata.
    name: str = "policy"

    def generate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                 seeds: Sequence[int | None] | None = None) -> list[Generation]:
        """Generate the next agent turn for every conversation (same order)."""
        return asyncio.run(self.agenerate(conversations, sampling, seeds))

    async def agenerate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                        seeds: Sequence[int | None] | None = None) -> list[Generation]:
        """Async form; the default runs :meth:`generate` in a worker thread."""
        if type(self).generate is Policy.generate:
            raise NotImplementedError(f"{type(self).__name__} must implement generate() or agenerate()")
        return await asyncio.to_thread(self.generate, conversations, sampling, seeds)

    def __call__(self, messages: Messages, sampling: SamplingParams | None = None, seed: int | None = None) -> str:
        """Convenience: the next turn for one conversation, as text."""
        return self.generate([messages], sampling, [seed])[0].text

    def sample_n(self, conversation: Messages, n: int, sampling: SamplingParams | None = None,
                 seed: int | None = None) -> list[Generation]:
        """``n`` sampled next turns of one conversation (a step-pair turn's candidates). Default:
        :meth:`generate` on ``n`` copies, copy ``j`` seeded with :func:`sample_seeds`; a local
        model decodes them as one batch, an endpoint policy overrides this with one request for
        ``n`` choices."""
        return self.generate([conversation] * n, sampling, sample_seeds(seed, n))

    async def asample_n(self, conversation: Messages, n: int, sampling: SamplingParams | None = None,
                        seed: int | None = None) -> list[Generation]:
        """Async form of :meth:`sample_n`; the default runs it in a worker thread."""
        return await asyncio.to_thread(self.sample_n, conversation, n, sampling, seed)

    #: Largest batch this policy wants per :meth:`generate` call (rollouts chunk by it).
    max_batch_size: int = 8
    #: True when the policy benefits from many concurrent asyncio calls (endpoints).
    prefers_async: bool = False
    #: True when :meth:`generate` accepts ``prefixes=`` (continue a forced start of the turn).
    supports_prefix: bool = False

    @property
    def model_name(self) -> str:
        """The model behind this policy, as a price table names it (a wrapper's: its base's)."""
        base = getattr(self, "base", None)
        return base.model_name if isinstance(base, Policy) else self.name

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release models, clients or connections."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release what is bound to the running event loop (endpoint clients) before it ends."""

    def __enter__(self) -> Policy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def check_batch(conversations: Sequence[Messages], seeds: Sequence[int | None] | None) -> list[int | None]:
    """Validate a batch and return per-conversation seeds (``None`` = unseeded)."""
    for i, conv in enumerate(conversations):
        validate_conversation(conv, f"conversations[{i}]")
    if seeds is None:
        return [None] * len(conversations)
    seeds = list(seeds)
    if len(seeds) != len(conversations):
        raise PolicyError(f"got {len(seeds)} seeds for {len(conversations)} conversations; pass one per conversation")
    return seeds

