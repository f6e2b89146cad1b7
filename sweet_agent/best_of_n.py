"""Critic-guided best-of-N decoding: at every agent turn sample N candidates and keep the one
the SWEET critic scores highest.

Why: it tests a trained critic without training an actor — if the critic's per-turn advantage
ranks good actions above bad ones, picking by it should raise the reward.

The honest constraint: SWEET's critic is trained with the *privileged* reference solution in
its context (the paper's ``c``). That is legitimate at training time (the actor never sees
``c``; it only learns from pairs the critic ranked), but at test time the reference is exactly
what the agent must find out, and a critic that reads it would choose candidates *with* the
answer in view — an oracle, not a decoder. So this policy only accepts a critic trained
**without** privileged information (``train-critic --no_use_privileged_info``, the paper's
ablation); it never receives the task, so it could not pass a reference even by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sweet_agent.policies.base import Generation, Messages, Policy, PolicyError, SamplingParams, derive_seed


class BestOfNPolicy(Policy):
    """Wraps a policy: N seeded samples per turn, the critic's best one is the turn.

    ``critic`` is a :class:`sweet_agent.critic.loading.LoadedCritic` (or anything with
    ``model``, ``ref``, ``tokenizer``, ``normalize`` and ``use_privileged_info``).
    """

    def __init__(self, base: Policy, critic: Any, n: int, critic_name: str = "critic"):
        if n < 2:
            raise PolicyError(f"best-of-N needs N >= 2 candidates, got {n}")
        if getattr(critic, "use_privileged_info", True):
            raise PolicyError(
                f"{critic_name} was trained with the privileged reference solution; at test time the agent has no "
                "reference, and choosing with it would leak the answer. Use a critic trained with "
                "--no_use_privileged_info for best-of-N decoding")
        self.base, self.critic, self.n = base, critic, int(n)
        self.name = f"{base.name}+best-of-{self.n}({critic_name})"
        self.max_batch_size = base.max_batch_size
        #: Per call: the critic's scores of every candidate (for inspection and tests).
        self.last_scores: list[list[float]] = []

    @classmethod
    def from_dir(cls, base: Policy, critic_dir: str | Path, n: int, dtype: str = "float32",
                 device: str | None = "auto") -> BestOfNPolicy:
        """The critic at ``critic_dir`` (and its reference) loaded on ``device``
        (:func:`sweet_agent.devices.resolve_device`) around ``base``."""
        from sweet_agent.critic.loading import load_critic

        cls.check_dir(critic_dir)  # refuse a privileged critic before loading two models
        return cls(base, load_critic(critic_dir, dtype, device=device), n, critic_name=Path(critic_dir).name)

    @classmethod
    def check_dir(cls, critic_dir: str | Path) -> None:
        """Raise :class:`PolicyError` unless ``critic_dir`` holds a critic trained without privileged
        information (reads only its ``sweet_critic.json``: callers check before loading any model)."""
        from sweet_agent.critic.loading import read_critic_meta

        if read_critic_meta(critic_dir).get("use_privileged_info", True):
            cls._refuse(critic_dir)

    @staticmethod
    def _refuse(critic_dir: str | Path) -> None:
        raise PolicyError(
            f"{critic_dir} was trained with the privileged reference solution; at test time the agent has no "
            "reference, and choosing with it would leak the answer. Use a critic trained with "
            "--no_use_privileged_info for best-of-N decoding")

    def generate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                 seeds: Sequence[int | None] | None = None) -> list[Generation]:
        from sweet_agent.sweet_rl.algorithm import score_candidates

        sampling = sampling or getattr(self.base, "default_sampling", None) or SamplingParams()
        if sampling.greedy:
            raise PolicyError("best-of-N with greedy decoding gives N identical candidates; use a temperature > 0")
        seeds = list(seeds) if seeds is not None else [None] * len(conversations)
        flat_convs = [c for c in conversations for _ in range(self.n)]
        flat_seeds = [None if s is None else derive_seed(s, "best-of-n", j) for s in seeds for j in range(self.n)]
        gens = self.base.generate(flat_convs, sampling, flat_seeds)
        out: list[Generation] = []
        self.last_scores = []
        for i, conv in enumerate(conversations):
            cands = gens[i * self.n:(i + 1) * self.n]
            scores = score_candidates(self.critic.model, self.critic.ref, self.critic.tokenizer, list(conv),
                                      [g.text for g in cands], privileged_info=None,
                                      normalize=self.critic.normalize)
            self.last_scores.append(scores)
            best = max(range(self.n), key=lambda j: (scores[j], -j))
            tokens = sum(g.completion_tokens for g in cands)
            out.append(replace(cands[best], completion_tokens=tokens))
        return out

    def close(self) -> None:
        self.base.close()
        self.critic = None
