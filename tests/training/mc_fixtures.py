"""Shared pieces of the Monte-Carlo value tests: a scripted behaviour policy whose turns are
known, answers whose graded reward is known, and an offline trajectory played through the
rollout collector (so its ``meta.env_seed`` is the one the environment was reset with)."""

from __future__ import annotations

import itertools
import threading

from sweet_agent.policies.base import Generation, Policy

#: The task of ``make_task(1)``: f1(x) = x + 1, tests f1(1) and f1(2).
FULL = "I WANT TO ANSWER: def f1(x):\n    return x + 1"  # passes both tests: 1.0
HALF = "I WANT TO ANSWER: def f1(x):\n    return 2"  # passes f1(1) only: 0.5
ZERO = "I WANT TO ANSWER: def f1(x):\n    return 0"  # passes none: 0.0
GRADE = {FULL: 1.0, HALF: 0.5, ZERO: 0.0}
QUESTION = "What should f1 return for 1?"
SYSTEM = "Ask, then reply I WANT TO ANSWER: and the code."


class ScriptedPolicy(Policy):
    """A behaviour policy with known turns: ``candidates`` are what :meth:`sample_n` returns (a
    turn's candidates), and every completion turn is the next text of ``turns`` (cycled, in call
    order). ``asked`` logs each completion turn's conversation and text."""

    name = "scripted"

    def __init__(self, candidates=(), turns=(FULL,), fail_on_sample: int | None = None):
        self.candidates, self.fail_on_sample = list(candidates), fail_on_sample
        self._turns = itertools.cycle(turns)
        self._lock = threading.Lock()
        self.asked: list[tuple[list, str]] = []
        self.sampled = 0

    def generate(self, conversations, sampling=None, seeds=None):
        out = []
        with self._lock:
            for conv in conversations:
                text = next(self._turns)
                self.asked.append((conv, text))
                out.append(Generation(text=text, completion_tokens=3))
        return out

    def sample_n(self, conversation, n, sampling=None, seed=None):
        self.sampled += 1
        if self.fail_on_sample is not None and self.sampled == self.fail_on_sample:
            raise KeyboardInterrupt  # an interrupted stage
        return [Generation(text=t) for t in self.candidates[:n]]


def offline_record(task: dict, turns: list[str], max_turns: int = 3, seed: int = 3) -> dict:
    """One trajectory of ``turns`` (the agent's outputs in order) against the offline person,
    played by the rollout collector."""
    from sweet_agent.rollout.collector import RolloutConfig, collect

    cfg = RolloutConfig(tasks=[task], simulator="offline", num_tasks=1, max_turns=max_turns, seed=seed,
                        system_prompt=SYSTEM, concurrency=1)
    result = collect(ScriptedPolicy(turns=turns), cfg, None, progress=False)
    (rec,) = result.records
    assert not rec["error"], rec["error"]
    return rec
