"""The offline backend human simulator: answers like the person who wants the function, no model.

WHY: RL on ColBench needs millions of simulator replies; a 70B model per reply is out of reach
offline. This simulator reads the hidden reference once (:mod:`.reference`, static analysis
only, worded by :mod:`.speaker`), understands the agent's message (:mod:`.question`), picks the
one or two facts that fit best (:mod:`.matching`) and says them in plain words, at most two
sentences (:mod:`.phrasing`); a draft the agent shows gets feedback (:mod:`.feedback`). When
nothing in the reference answers the question it says it does not know, so an agent cannot
learn to trust invented details. It never shows the reference or the hidden tests, and its
replies depend only on (seed, episode seed, task, dialogue). A reference it cannot read is
reported with an :class:`.reference.UnreadableReferenceWarning`, and the episode goes on.
"""

from __future__ import annotations

import random
import re
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from colbench_gym.simulators.base import Dialogue, HumanSimulator
from colbench_gym.simulators.offline_backend.feedback import code_feedback
from colbench_gym.simulators.offline_backend.matching import MIN_SCORE, STATEMENT_SCORE, rank_facts
from colbench_gym.simulators.offline_backend.phrasing import (
    IDK,
    IDK_REST,
    OPENERS,
    TESTS,
    fit,
    lower_first,
    nudge,
    say_fact,
)
from colbench_gym.simulators.offline_backend.question import Message, Question, analyse, make_question
from colbench_gym.simulators.offline_backend.reference import UnreadableReferenceWarning, extract_facts
from colbench_gym.simulators.offline_backend.sheet import Fact, FactSheet
from colbench_gym.spaces import encodable
from colbench_gym.tasks.records import BackendTask


class OfflineBackendSimulator(HumanSimulator):
    """A model-free person for ColBench backend tasks.

    Parameters
    ----------
    seed:
        Base seed for the (small) variation in phrasing; replies are a pure function of
        ``(seed, episode seed, task, dialogue)``.
    max_chars:
        Soft cap on a reply; the environment cuts at 400 characters anyway.
    nudges:
        When the agent asks nothing (greets, or states a plan), suggest topics it has not asked
        about yet (default) or just acknowledge.
    max_facts:
        Facts per reply: 2 (default, the paper's two sentences) or 1 (a terser person).
    """

    kind = "backend"

    def __init__(self, seed: int | None = 0, max_chars: int = 380, nudges: bool = True, max_facts: int = 2):
        if not isinstance(max_chars, int) or max_chars < 80:
            raise ValueError(f"max_chars must be an int of at least 80, got {max_chars!r}")
        if max_facts not in (1, 2):
            raise ValueError(f"max_facts must be 1 or 2 (a reply is at most two sentences), got {max_facts!r}")
        self.max_facts = max_facts
        self.seed = 0 if seed is None else int(seed)
        self.max_chars = max_chars
        self.nudges = bool(nudges)
        self._episode_seed: int | None = None
        self._cache: OrderedDict[str, FactSheet] = OrderedDict()

    # ------------------------------------------------------------------ interface
    def reset(self, task: Any, *, seed: int | None = None) -> None:
        self._episode_seed = seed
        self.facts_for(task)

    def respond(self, task: Any, dialogue: Dialogue, **context: Any) -> str:
        task = _as_task(task)
        sheet = self.facts_for(task)
        last = next((m.get("content", "") for m in reversed(dialogue or []) if m.get("role") == "assistant"), None)
        history = [encodable(str(m.get("content", "") or "")) for m in (dialogue or []) if m.get("role") == "user"]
        # Any str is a turn: the seed (hashed as UTF-8) and the parser see the message made encodable
        # (a lone surrogate becomes U+FFFD); valid text is unchanged, and so are the replies to it.
        last = None if last is None else encodable(str(last))
        rng = random.Random(f"{self.seed}|{self._episode_seed}|{task.task_id}|{len(dialogue or [])}|{last}")
        if last is None or not last.strip():
            return nudge(sheet, history, rng, enabled=self.nudges)
        try:
            msg = analyse(last)
            reply = self._reply(sheet, msg, history, rng)
        except Exception as exc:  # noqa: BLE001 - a rollout must survive a simulator bug
            warnings.warn(f"offline simulator could not answer ({type(exc).__name__}: {exc}); replying 'I don't know'",
                          RuntimeWarning, stacklevel=2)
            reply = rng.choice(IDK)
        return fit(reply, sheet, self.max_chars)

    def facts_for(self, task: Any) -> FactSheet:
        """The facts this simulator knows about ``task`` (cached per task)."""
        task = _as_task(task)
        key = task.task_id
        sheet = self._cache.get(key)
        if sheet is None:
            sheet = extract_facts(task.ground_truth, task.problem_description, task.test_cases.values())
            _report_unreadable(task, sheet)  # before caching: under an "error" filter every call raises
            self._cache[key] = sheet
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return sheet

    def __repr__(self) -> str:
        return f"OfflineBackendSimulator(seed={self.seed})"

    # ------------------------------------------------------------------ replies
    def _reply(self, sheet: FactSheet, msg: Message, history: list[str], rng: random.Random) -> str:
        if msg.questions:
            answered = self._answer(sheet, msg.questions, history, rng)
            if answered:
                return answered
            if msg.code:
                return code_feedback(sheet, msg.code, rng)
            return rng.choice(IDK)
        if msg.code:
            return code_feedback(sheet, msg.code, rng)
        if not msg.greeting and len(msg.text) <= 300:
            # "Plan prices." from a terse agent: a person answers what is clearly meant
            q = make_question(msg.text)
            ranked = self.rank(sheet, q)
            if q.keywords and ranked and ranked[0][0] >= STATEMENT_SCORE:
                return say_fact(q, ranked[0][1], sheet)
        return nudge(sheet, history, rng, enabled=self.nudges, greeting=bool(re.match(r"\s*(hi|hello|hey|good (morning|afternoon|evening))\b", msg.text, re.IGNORECASE)))

    def _answer(self, sheet: FactSheet, questions: list[Question], history: list[str],
                rng: random.Random) -> str | None:
        picks: list[tuple[float, int, str, Fact | None]] = []  # (score, question index, text, fact)
        unanswered = 0
        for qi, q in enumerate(questions):
            if "tests" in q.intents and not q.keywords - {"test", "expect", "output", "hidden", "unit"}:
                picks.append((5.0, qi, rng.choice(TESTS), None))
                continue
            ranked = self.rank(sheet, q)
            if not ranked or ranked[0][0] < MIN_SCORE:
                if q.keywords:
                    unanswered += 1
                continue
            told = " ".join(history)
            # a repeated question gets the next best fact when the best one was already told
            ranked = sorted(ranked, key=lambda sf: -(sf[0] - (1.2 if sf[1].text in told else 0.0)))
            if ranked[0][0] < MIN_SCORE:
                ranked = self.rank(sheet, q)
            taken = {p[2] for p in picks}
            if len(ranked) > 1 and ranked[0][1].text in taken and ranked[1][0] >= MIN_SCORE:
                ranked = ranked[1:]  # an earlier question already gets that fact
            best_score, best = ranked[0]
            picks.append((best_score, qi, say_fact(q, best, sheet), best))  # only the best gets a verdict
            if len(questions) == 1 and len(ranked) > 1:
                s2, second = ranked[1]
                pair = {best.kind, second.kind}
                if s2 >= max(MIN_SCORE, 0.75 * best_score) and second.text != best.text and \
                        not pair <= {"result", "shape"} and not pair <= {"param", "params"} and \
                        len(best.text) + len(second.text) < self.max_chars - 10:
                    picks.append((s2, qi, second.text, second))
        if not picks:
            return None
        chosen: list[tuple[float, int, str, Fact | None]] = []
        seen: set[str] = set()
        # the agent's own order says what matters most: answer its first answerable questions
        for pick in sorted(picks, key=lambda p: (p[1], -p[0])):
            if pick[2] in seen:
                continue
            if len(chosen) == self.max_facts:
                break
            if chosen and sum(len(c[2]) for c in chosen) + len(pick[2]) + 1 > self.max_chars:
                continue
            chosen.append(pick)
            seen.add(pick[2])
        chosen.sort(key=lambda p: p[1])
        parts = [c[2] for c in chosen]
        if unanswered and len(parts) == 1 and self.max_facts == 2 and len(parts[0]) < self.max_chars - 40:
            parts.append(rng.choice(IDK_REST))
        opener = rng.choice(OPENERS)
        if opener and not parts[0].startswith(("Yes", "No", "I ")) and \
                sum(len(p) + 1 for p in parts) + len(opener) <= self.max_chars:
            parts[0] = opener + lower_first(parts[0], sheet)
        return " ".join(parts)

    def rank(self, sheet: FactSheet, q: Question) -> list[tuple[float, Fact]]:
        """Facts ordered by how well they answer ``q`` (score, fact), best first."""
        return rank_facts(sheet, q)


def _as_task(task: Any) -> BackendTask:
    if isinstance(task, BackendTask):
        return task
    if isinstance(task, Mapping):
        return BackendTask.from_record(task)
    raise TypeError(f"the offline backend simulator needs a BackendTask or a backend record, got {type(task).__name__}")


def _report_unreadable(task: BackendTask, sheet: FactSheet) -> None:
    """Report a reference the simulator could not (fully) read: a warning, so the episode goes
    on (it raises only where the caller's warning filter turns it into an error)."""
    if sheet.parse_error:
        warnings.warn(UnreadableReferenceWarning(
            f"the offline simulator cannot read the hidden reference of task {task.task_id[:12]} "
            f"({sheet.parse_error}); the simulated person will answer \"I don't know\" about it"), stacklevel=3)
    elif sheet.problems:
        more = f"; and {len(sheet.problems) - 3} more" if len(sheet.problems) > 3 else ""
        warnings.warn(UnreadableReferenceWarning(
            f"the offline simulator skipped part of the hidden reference of task {task.task_id[:12]} "
            f"({'; '.join(sheet.problems[:3])}{more}); the simulated person will not know about it"), stacklevel=3)


__all__ = ["OfflineBackendSimulator"]
