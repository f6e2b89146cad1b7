"""Backend answers: the hidden tests in the sandbox (:mod:`colbench_gym.grading`)."""

from __future__ import annotations

from typing import Any, Literal

from colbench_gym.protocol import extract_code
from colbench_gym.tasks.accounting import grading_failure
from colbench_gym.verdicts.verdict import Verdict

REWARD_MODES = ("success", "fraction")


def score(answer: str, task: Any, *, grader: Any = None,
          reward_mode: Literal["success", "fraction"] = "success") -> Verdict:
    """Grade the answer's code against the reference on every hidden test call.

    Reward: 1.0 when every test passes else 0.0 (``reward_mode="success"``, the paper's success)
    or the fraction passed (``"fraction"``, the paper's % tests). Unscored (``end_reason``) when the
    grader's trusted process failed (``grading_error``) or no test has a usable reference result
    (``task_error``): :func:`~colbench_gym.tasks.accounting.grading_failure`, the grader's own
    verdict. ``grader``: the process's shared sandboxed grader by default."""
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"reward_mode must be 'success' or 'fraction', got {reward_mode!r}")
    if grader is None:
        from colbench_gym.grading import get_default_grader  # noqa: PLC0415 - starts the sandbox pool

        grader = get_default_grader()
    result = grader.grade(extract_code(answer), task)
    failure = grading_failure(result)
    evidence = {
        "tests_passed": result.passed,
        "tests_total": result.total,
        "success": result.success,
        "fraction": float(result.fraction),
        "grade_error": result.error,
        # tests no answer can pass (the reference gave no usable result): counted in tests_total
        "tests_unpassable": len(result.unpassable),
    }
    reward = float(result.fraction) if reward_mode == "fraction" else float(result.success)
    detail = None
    if failure is not None:
        detail = result.error or f"none of the task's {result.total} tests has a usable reference result"
    return Verdict(reward=reward, evidence=evidence, end_reason=failure, detail=detail, artefact=result)
