"""Reading official trajectory records for training (the stable dict contract).

A record is ``{"task": {"problem_description", "ground_truth", "test_cases"?}, "dialogue_history":
[{"role", "content", "output"?}], "answer", "reward", "success"?}``. These helpers turn one into
chat messages and pick out what the trainers need (the critic, the actor, RFT, multi-turn DPO),
so nothing else in the training code touches the raw layout.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from colbench_gym.protocol import Messages
from colbench_gym.tasks.identity import task_identity
from colbench_gym.tasks.records import check_trajectory_record, record_success


class RecordError(ValueError):
    """A trajectory record is missing what training needs."""


def load_records(paths: str | Path | Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read trajectory records from one or more JSONL files (the rollout package's reader,
    which validates each line and names the file and line of a bad one)."""
    from sweet_agent.trajectories import (
        TrajectoryFormatError,
        is_infrastructure_failure,
        missing_reward_hint,
        read_trajectories,
    )

    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[dict[str, Any]] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"trajectory file {path} does not exist; collect rollouts first "
                                    "(`sweet-agent rollout ...` or examples/sweet_rl/collect.py)")
        skipped = 0
        for i, rec in enumerate(read_trajectories(path, require_reward=False)):
            if is_infrastructure_failure(rec):  # no score (the simulator, grader, ... failed): nothing to learn from
                skipped += 1
                continue
            if rec.get("reward") is None and not rec.get("error"):  # ungraded: the reader's own hint, no second validation
                raise TrajectoryFormatError(f"{path}:{i + 1}: {missing_reward_hint(rec, f'{path}:{i + 1}')}")
            check_record(rec, f"{path}: record {i}")
            out.append(rec)
        if skipped:
            print(f"[data] {path}: skipped {skipped} episode(s) that failed for infrastructure reasons (no score; "
                  "`sweet-agent rollout --resume` plays them again)", file=sys.stderr)
    return out


def check_record(rec: Any, where: str = "record") -> None:
    """The official validator (:func:`colbench_gym.tasks.records.check_trajectory_record`), needing
    what training reads: the task and the dialogue."""
    check_trajectory_record(rec, where, ("task", "dialogue_history"), error=RecordError)


def turn_text(turn: dict[str, Any]) -> str:
    """The text of a turn; for agent turns the raw ``output`` (thought included) when present."""
    if turn.get("role") == "assistant" and isinstance(turn.get("output"), str):
        return turn["output"]
    return str(turn.get("content", ""))


def dialogue_messages(rec: dict[str, Any]) -> Messages:
    """The dialogue as chat messages (user / assistant), in order."""
    msgs = []
    for i, turn in enumerate(rec["dialogue_history"]):
        role = turn.get("role")
        if role not in ("user", "assistant", "system"):
            raise RecordError(f"dialogue_history[{i}]: role must be user or assistant, got {role!r}")
        msgs.append({"role": role, "content": turn_text(turn)})
    return msgs


def privileged_info(rec: dict[str, Any]) -> str:
    """The training-time information c: the task's reference solution (code or HTML)."""
    gt = rec["task"].get("ground_truth")
    if not isinstance(gt, str) or not gt.strip():
        raise RecordError("task has no 'ground_truth'; the privileged critic needs the reference solution "
                          "(or train with --no-privileged-info)")
    return gt


_UNGRADED = "record has no 'reward'; grade trajectories before training (`colbench evaluate backend ...`)"


def reward(rec: dict[str, Any]) -> float:
    r = rec.get("reward")
    if r is None:
        raise RecordError(_UNGRADED)
    return float(r)


def is_success(rec: dict[str, Any], threshold: float | None = None) -> bool:
    """The one success rule (:func:`colbench_gym.tasks.records.record_success`: the record's
    ``success`` when it carries one, else reward >= 1; with a ``threshold``, the
    ``--success_threshold`` of partial-credit training sets, reward >= threshold), except that an
    ungraded record is an error here (training cannot use it) rather than ``None``."""
    success = record_success(rec, threshold)
    if success is None:
        raise RecordError(_UNGRADED)
    return success


def task_key(rec: dict[str, Any]) -> str:
    """A stable id for the task a trajectory solves (groups the samples of one task)."""
    return task_identity(rec["task"])


def agent_prompts(rec: dict[str, Any], system_prompt: str | None = None) -> list[tuple[Messages, str]]:
    """``(prompt_messages, output)`` per agent turn: what the policy saw (its system prompt from
    the record's ``meta`` or ``system_prompt``) and what it wrote."""
    from sweet_agent.trajectories import agent_turns

    return list(agent_turns(rec, system_prompt))


def policy_dialogue(rec: dict[str, Any], system_prompt: str | None = None) -> Messages:
    """The trajectory as the policy saw it through its last turn: the last agent prompt (system
    prompt included) followed by that turn's output. The critic scores this view, so the context it
    learns from is the context the policy acted in. A record without agent turns: its dialogue."""
    turns = agent_prompts(rec, system_prompt)
    if not turns:
        return dialogue_messages(rec)
    prompt, output = turns[-1]
    return [*prompt, {"role": "assistant", "content": output}]


def iter_agent_turns(rec: dict[str, Any], system_prompt: str | None = None
                     ) -> Iterator[tuple[int, Messages, str, Messages]]:
    """Yield ``(index, messages_before, action, agent_prompt)`` for each agent turn:
    the dialogue before the turn (for the critic), the raw action, and the policy's prompt."""
    msgs = dialogue_messages(rec)
    prompts = agent_prompts(rec, system_prompt)
    k = 0
    for i, m in enumerate(msgs):
        if m["role"] == "assistant":
            yield i, msgs[:i], m["content"], prompts[k][0]
            k += 1
