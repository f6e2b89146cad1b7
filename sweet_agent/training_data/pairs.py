"""Trajectory preference pairs for the critic and multi-turn DPO (and what RFT keeps), built per task.

Rules (``rule=``, see :data:`PAIR_RULES`): ``success`` pairs every successful trajectory (as
chosen) with each trajectory of the same task whose reward is strictly lower — the paper's;
``reward`` pairs every trajectory with every strictly lower-reward one of its task;
``top-bottom`` pairs a task's highest-reward samples with its lowest (for continuous rewards such
as the frontend's CLIP similarity, where nothing reaches "success"); ``best`` uses the successes,
else each task's best samples when their reward is > 0. Tasks, not pairs, are split into train /
held-out so the held-out accuracy measures generalisation to unseen tasks.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from sweet_agent.training_data import records as R

#: How trajectory pairs (critic, multi-turn DPO) and RFT's kept trajectories are chosen per task:
#:   success    — successful trajectories against strictly worse ones (the paper's rule)
#:   reward     — every trajectory against every strictly lower-reward one of its task
#:   top-bottom — the task's highest-reward samples against its lowest (continuous rewards such
#:                as the frontend's CLIP similarity, where nothing counts as "success")
#:   best       — the successes, else the task's best samples when their reward is > 0
#:   release    — the paper release's backend rule: tasks whose best reward is >= 1, the *first*
#:                best sample (file order) against each strictly lower one (docs/interop.md)
#:   release-frontend — the release's frontend rule: every two samples of a task whose rewards
#:                differ by at least 0.1, the higher one chosen
PAIR_RULES = ("success", "reward", "top-bottom", "best", "release", "release-frontend")
#: The least reward difference of a ``release-frontend`` pair.
RELEASE_FRONTEND_MIN_GAP = 0.1


def chosen_candidates(group: list[dict[str, Any]], success_threshold: float | None = None,
                      rule: str = "success") -> list[dict[str, Any]]:
    """The trajectories of one task that may serve as chosen (RFT keeps exactly these)."""
    if rule not in PAIR_RULES:
        raise ValueError(f"pair rule must be one of {PAIR_RULES}, got {rule!r}")
    if rule == "success":
        return [r for r in group if R.is_success(r, success_threshold)]
    rewards = [R.reward(r) for r in group]
    best, worst = max(rewards), min(rewards)
    if rule == "release":  # the release: argmax (the first best sample), only when it scores 1
        return [group[rewards.index(best)]] if best >= 1 else []
    if rule == "release-frontend":
        return [r for r, x in zip(group, rewards) if x - worst >= RELEASE_FRONTEND_MIN_GAP]
    if rule == "reward":
        return [r for r, x in zip(group, rewards) if x > worst]
    if rule == "top-bottom":
        return [r for r, x in zip(group, rewards) if x == best and best > worst]
    succ = [r for r in group if R.is_success(r, success_threshold)]
    return succ or [r for r, x in zip(group, rewards) if x == best and best > 0]


def _rejected(group: list[dict[str, Any]], good: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    if rule == "top-bottom":
        worst = min(R.reward(r) for r in group)
        return [r for r in group if R.reward(r) == worst and R.reward(r) < R.reward(good)]
    if rule == "release-frontend":
        return [r for r in group if R.reward(good) - R.reward(r) >= RELEASE_FRONTEND_MIN_GAP]
    return [r for r in group if r is not good and R.reward(r) < R.reward(good)]


def build_trajectory_pairs(trajs: list[dict[str, Any]], success_threshold: float | None = None,
                           max_pairs_per_task: int | None = None, seed: int = 0,
                           rule: str = "success") -> list[dict[str, Any]]:
    """Pairs ``{"task_key", "chosen", "rejected"}`` (records) from scored rollouts."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in trajs:
        R.check_record(rec)
        groups[R.task_key(rec)].append(rec)
    rng = random.Random(seed)
    pairs = []
    for key, group in groups.items():
        task_pairs = []
        for good in chosen_candidates(group, success_threshold, rule):
            for bad in _rejected(group, good, rule):
                task_pairs.append({"task_key": key, "chosen": good, "rejected": bad})
        if max_pairs_per_task is not None and len(task_pairs) > max_pairs_per_task:
            task_pairs = rng.sample(task_pairs, max_pairs_per_task)
        pairs.extend(task_pairs)
    return pairs


def split_by_task(pairs: list[dict[str, Any]], eval_fraction: float, seed: int = 0
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Hold out whole tasks (``eval_fraction`` of them, at least one when > 0)."""
    keys = sorted({p["task_key"] for p in pairs})
    if eval_fraction <= 0 or len(keys) < 2:
        return pairs, []
    rng = random.Random(seed)
    rng.shuffle(keys)
    n_eval = max(1, round(len(keys) * eval_fraction))
    held = set(keys[:n_eval])
    return [p for p in pairs if p["task_key"] not in held], [p for p in pairs if p["task_key"] in held]


def pairs_to_rows(pairs: list[dict[str, Any]], use_privileged_info: bool = True,
                  system_prompt: str | None = None) -> list[dict[str, Any]]:
    """Flatten pairs into dataset rows: both trajectories as the policy saw them (its system
    prompt included, see :func:`records.policy_dialogue`) and the privileged text."""
    rows = []
    for p in pairs:
        rows.append({
            "chosen": R.policy_dialogue(p["chosen"], system_prompt),
            "rejected": R.policy_dialogue(p["rejected"], system_prompt),
            "privileged_info": R.privileged_info(p["chosen"]) if use_privileged_info else None,
            "task_key": p["task_key"],
        })
    return rows
