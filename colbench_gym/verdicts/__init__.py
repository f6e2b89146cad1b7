"""How a final answer is scored: one entry per environment kind.

The consumers that score an answer — the envs, ``colbench evaluate backend``, ``sweet-agent
evaluate --regrade``, the viewer, Inspect, verifiers, the OpenEnv server and GRPO (through the
envs) — ask :func:`score_answer`, which calls the ``score`` entry of the task's kind in the kinds table
(:attr:`colbench_gym.tasks.kinds.EnvKind.score`): :func:`colbench_gym.verdicts.backend.score`
(the sandboxed grader) and :func:`colbench_gym.verdicts.frontend.score` (render, then screenshot
similarity). Each returns a :class:`Verdict`: the reward, the kind's evidence, and — decided on
the host side only — the infrastructure failure that leaves the answer unscored. A new reward
rule is one change here; a new kind is its own ``score`` module named in its table entry.
``colbench evaluate frontend`` scores a whole file through the frontend's batched entry,
:func:`colbench_gym.verdicts.frontend.score_many` (pages rendered and embedded in batches), which
decides each verdict with the same rule as its ``score``.

Why a folder of its own: answer scoring sits above what it combines (grading, rendering,
screenshot similarity in ``scoring/``) and below every consumer (envs, evaluation, integrations).
"""

from __future__ import annotations

from typing import Any

from colbench_gym.tasks.kinds import kind_of_task, load
from colbench_gym.verdicts.verdict import Verdict


def score_answer(answer: str, task: Any, **parts: Any) -> Verdict:
    """Score ``answer`` (the text after ``I WANT TO ANSWER:``) on ``task`` (a task object or an
    official record) with the score entry of the task's kind. ``parts`` are that entry's own
    keywords (backend: ``grader``, ``reward_mode``; frontend: ``scorer``, ``renderer``,
    ``reference``); a part another kind would take is passed only to that kind by the caller."""
    kind = kind_of_task(task)
    if isinstance(task, dict):
        task = kind.task_cls.from_record(task)
    return load(kind.score)(answer or "", task, **parts)


__all__ = ["Verdict", "score_answer"]
