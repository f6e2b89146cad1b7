"""The prompt dataset of online GRPO: one row per task, the agent's instructions as the system
message. TRL's sampler repeats each row ``num_generations`` times in a batch, so a GRPO group is
the same task (same ``task_index`` and ``seed``) played several times; the tool env's ``reset``
receives the row and its returned task text is appended to the (empty) user message.

Each row names its task itself: ``kind``, ``tasks`` (the source spec) and ``task_index`` (or, for
a source given as a list of records, ``task``: the record as JSON text), so the tool env plays
exactly that task whatever source its factory was made with (see
:meth:`colbench_gym.online.ColBenchToolEnv.reset`).
"""

from __future__ import annotations

import os
from typing import Any

from colbench_gym.instructions import tool_instructions
from colbench_gym.protocol import MAX_TURNS
from colbench_gym.tasks.kinds import env_kind


def tool_system_prompt(kind: str, max_turns: int = MAX_TURNS) -> str:
    """The agent's instructions in tool-calling form for an environment kind
    (:func:`colbench_gym.instructions.tool_instructions`); an unknown kind is an error."""
    return tool_instructions(env_kind(kind).name, max_turns)


def task_count(tasks: Any, kind: str) -> int | None:
    """Number of tasks in a finite source, None for an unbounded (generated) one."""
    from colbench_gym.tasks.sources import resolve_task_source

    source = resolve_task_source(tasks, kind)
    try:
        n = len(source)
    except TypeError:
        return None
    return None if n >= 2**31 - 1 else n


def build_prompt_dataset(kind: str, tasks: Any, num_tasks: int | None = None, task_offset: int = 0,
                         seed: int = 0, max_turns: int = MAX_TURNS):
    """A ``datasets.Dataset`` with columns ``prompt`` (system + empty user message), ``kind``,
    ``tasks`` (the source spec), ``task_index`` and ``seed``: one row per task of the source
    (a source given as records instead of a spec: ``task``, each record as JSON text)."""
    import json

    from datasets import Dataset

    available = task_count(tasks, kind)
    if num_tasks is None:
        if available is None:
            raise ValueError(f"task source {tasks!r} is unbounded; pass --num_tasks N")
        num_tasks = available - task_offset
    if num_tasks < 1:
        raise ValueError(f"num_tasks must be >= 1, got {num_tasks}")
    if available is not None and task_offset + num_tasks > available:
        raise ValueError(f"task source {tasks!r} has {available} tasks; task_offset {task_offset} + num_tasks "
                         f"{num_tasks} is past its end")
    system = tool_system_prompt(kind, max_turns)
    indices = range(task_offset, task_offset + num_tasks)
    columns: dict[str, list[Any]] = {
        "prompt": [[{"role": "system", "content": system}, {"role": "user", "content": ""}] for _ in indices],
        "kind": [kind] * num_tasks,
    }
    if isinstance(tasks, (str, os.PathLike)):
        columns["tasks"] = [os.fspath(tasks)] * num_tasks
        columns["task_index"] = list(indices)
    else:  # records (or a source object): the rows carry the tasks themselves
        from colbench_gym.tasks.sources import resolve_task_source

        source = resolve_task_source(tasks, kind)
        columns["task"] = [json.dumps(source[i].to_record(), ensure_ascii=False) for i in indices]
    columns["seed"] = [seed + i for i in indices]
    return Dataset.from_dict(columns)
