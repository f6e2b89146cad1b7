"""The outcome of scoring one final answer (:func:`colbench_gym.verdicts.score_answer`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from colbench_gym.tasks.accounting import check_end_reason, is_infrastructure


@dataclass(frozen=True)
class Verdict:
    """How an answer scored, or why it has no score of its own.

    ``reward`` is the env's final reward under the kind's reward options (backend: success or
    fraction of tests, ``reward_mode``; frontend: screenshot similarity). ``evidence`` is what the
    env's final ``info`` reports for the kind (tests passed, grading error text; similarity, scorer,
    render error ...). ``end_reason`` is set only when the score is not the answer's own — an
    infrastructure failure decided on the host side (``grading_error``, ``task_error``,
    ``rendering_error``), never from text the answer produced — and ``detail`` then says what
    failed, for people. ``artefact`` is what the kind's scoring produced besides (backend: the
    grader's ``GradeResult``, per-test verdicts included; frontend: the rendered final page, which
    the env's ``render()`` shows); it is not part of the evidence an env reports.
    """

    reward: float
    evidence: dict[str, Any] = field(default_factory=dict)
    end_reason: str | None = None
    detail: str | None = None
    artefact: Any = None

    def __post_init__(self) -> None:
        if self.end_reason is not None and not is_infrastructure(check_end_reason(self.end_reason)):
            raise ValueError(f"Verdict.end_reason is for infrastructure failures only, got {self.end_reason!r}")

    @property
    def scored(self) -> bool:
        """Whether the score is the answer's own (no infrastructure failure)."""
        return self.end_reason is None

    def info(self) -> dict[str, Any]:
        """The env's final-``info`` view: the evidence plus ``end_reason`` (None when scored)."""
        return {**self.evidence, "end_reason": self.end_reason}
