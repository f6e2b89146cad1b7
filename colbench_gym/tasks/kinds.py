"""The environment kinds of ColBench, in one table: everything that differs between backend and frontend.

Every module that does something per kind asks this table instead of choosing between two names:
which task class a record becomes, how a task record shows its kind, how long a simulated
person's reply may be, which generators, simulators, evaluator and tool environment a kind has.
A third environment is one more :class:`EnvKind` in :data:`KINDS` plus its own modules (its
record class, environment, simulators, evaluator, tool environment; its id registered in
``colbench_gym/__init__.py``). A name, env id or record that matches no kind is an error naming
what is wrong, never a silent default.

Why here (``tasks/``): the table holds the task classes, so it cannot sit lower; the parts that
live in higher layers (simulators, evaluators, tool environments) are named as ``"module:attr"``
strings and imported only by the module that uses them (:func:`load`), so this table imports
nothing above ``tasks``. The generators live in ``tasks`` too, yet stay strings for import cost:
importing the four generator modules takes ~0.2 s, which every ``import colbench_gym`` (it reads
this table) would pay for a source it rarely uses. What go-to-definition cannot follow,
``tests/tasks/test_kinds.py`` checks: every string of every kind imports and is what it should be.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from colbench_gym.protocol import BACKEND_REPLY_CHARS, FRONTEND_REPLY_CHARS
from colbench_gym.tasks.records import BackendTask, FrontendTask, TaskFormatError


@dataclass(frozen=True, eq=False)
class EnvKind:
    """One environment kind: its names, its task shape and where its parts live (one instance
    per kind, compared and hashed by identity)."""

    #: The kind's word: ``tasks=`` files (``backend_test.jsonl``), ``colbench evaluate NAME``, the
    #: ``colbench serve`` prefix ``/NAME``, ``HumanSimulator.kind``.
    name: str
    #: The Gymnasium id (registered in ``colbench_gym/__init__.py`` for the shipped kinds; by
    #: :func:`register_kind` for a kind added later).
    env_id: str
    #: ``"module:Class"`` of the Gymnasium environment (a :class:`~colbench_gym.envs.base.ColBenchEnv`).
    env: str
    #: The record class: ``task_cls.from_record(record)`` validates an official task record.
    task_cls: type
    #: Whether a task record (a dict) has this kind's shape; :func:`kind_of_task` asks every kind.
    is_record: Callable[[Mapping[str, Any]], bool]
    #: What :attr:`is_record` looks for, in words (error messages).
    record_shape: str
    #: Simulator replies are cut to this many characters (the paper's cap).
    reply_chars: int
    #: Procedural task sources: spec prefix (``generated`` in ``tasks="generated:train"``) ->
    #: ``"module:function"`` called as ``function(index, split=split)``.
    generators: Mapping[str, str]
    #: Simulator name (``gym.make(..., simulator=NAME)``) -> ``"module:Class"``.
    simulators: Mapping[str, str]
    #: Module of ``colbench evaluate NAME`` (``add_arguments`` and ``run``), and its one-line help.
    evaluator: str
    evaluator_help: str
    #: ``"module:function"`` scoring a final answer: ``function(answer, task, **parts) -> Verdict``
    #: (:mod:`colbench_gym.verdicts`, the one scoring entry every consumer calls). A string, like
    #: the other parts above ``tasks``: this table imports nothing from the layers that use it.
    score: str
    #: ``"module:Class"`` of the TRL tool environment wrapping this kind's env.
    tool_env: str
    #: The paper's HF dataset file of a split (``{split}`` filled in), None when it has none.
    hf_data_files: str | None = None
    #: Fields of a task record besides the request and the reference that the task needs
    #: (backend: the hidden test calls); a harness carries them beside a sample to rebuild it.
    record_fields: tuple[str, ...] = ()
    #: ``gym.make`` options that set how this kind's reward is computed (backend: ``reward_mode``,
    #: success or fraction of tests; frontend: ``scorer``, CLIP or the fallback). A command with
    #: such a setting passes it only to the kinds that take it.
    reward_options: tuple[str, ...] = ()


def _has_tests(task: Mapping[str, Any]) -> bool:
    return "test_cases" in task


def _is_page(task: Mapping[str, Any]) -> bool:
    gt = task.get("ground_truth")
    return "test_cases" not in task and isinstance(gt, str) and "<" in gt


BACKEND = EnvKind(
    name="backend",
    env_id="ColBench-Backend-v0",
    env="colbench_gym.envs.backend:ColBenchBackendEnv",
    task_cls=BackendTask,
    is_record=_has_tests,
    record_shape="backend: hidden 'test_cases'",
    reply_chars=BACKEND_REPLY_CHARS,
    generators={"generated": "colbench_gym.tasks.generator:generate_backend_task",
                "collab": "colbench_gym.tasks.collab_generator:generate_collab_task",
                "collab-multi": "colbench_gym.tasks.collab_multi:generate_collab_multi_task"},
    simulators={"offline": "colbench_gym.simulators.offline_backend:OfflineBackendSimulator",
                "openai": "colbench_gym.simulators.openai_backend:OpenAIBackendSimulator",
                "transformers": "colbench_gym.simulators.transformers_simulator:TransformersBackendSimulator"},
    evaluator="colbench_gym.evaluation.backend",
    evaluator_help="grade backend answers in a trajectory JSONL",
    score="colbench_gym.verdicts.backend:score",
    tool_env="colbench_gym.online.tool_env:ColBenchToolEnv",
    hf_data_files="backend_tasks/{split}.jsonl",
    record_fields=("test_cases",),
    reward_options=("reward_mode",),
)

FRONTEND = EnvKind(
    name="frontend",
    env_id="ColBench-Frontend-v0",
    env="colbench_gym.envs.frontend:ColBenchFrontendEnv",
    task_cls=FrontendTask,
    is_record=_is_page,
    record_shape="frontend: an HTML 'ground_truth' and no 'test_cases'",
    reply_chars=FRONTEND_REPLY_CHARS,
    generators={"generated": "colbench_gym.tasks.frontend_generator:generate_frontend_task"},
    simulators={"offline": "colbench_gym.simulators.offline_frontend:OfflineFrontendSimulator",
                "openai": "colbench_gym.simulators.openai_frontend:OpenAIFrontendSimulator"},
    evaluator="colbench_gym.evaluation.frontend",
    evaluator_help="score frontend answers in a trajectory JSONL",
    score="colbench_gym.verdicts.frontend:score",
    tool_env="colbench_gym.online.tool_env:ColBenchFrontendToolEnv",
    reward_options=("scorer",),
)

#: Every environment kind, by name.
KINDS: dict[str, EnvKind] = {kind.name: kind for kind in (BACKEND, FRONTEND)}


def register_kind(kind: EnvKind) -> EnvKind:
    """Add ``kind`` to the table and register its Gymnasium id (entry point :attr:`EnvKind.env`):
    from then on ``gym.make(kind.env_id)``, ``colbench evaluate NAME``, task sources, simulators,
    :func:`colbench_gym.verdicts.score_answer` and every other reader of the table know it. A name or
    env id already taken is a ValueError."""
    from gymnasium.envs.registration import register, registry  # noqa: PLC0415 - only when a kind is added

    if kind.name in KINDS or any(k.env_id == kind.env_id for k in KINDS.values()):
        raise ValueError(f"an environment kind named {kind.name!r} or with id {kind.env_id!r} exists already")
    KINDS[kind.name] = kind
    if kind.env_id not in registry:
        register(id=kind.env_id, entry_point=kind.env)
    return kind


def env_kind(name: str) -> EnvKind:
    """The kind called ``name``; ValueError naming the known kinds otherwise."""
    try:
        return KINDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown environment kind {name!r}; expected one of {', '.join(KINDS)}") from None


def kind_of_env_id(env_id: str) -> EnvKind:
    """The kind of a ColBench environment id (``ColBench-Backend-v0``, also in gym's
    ``colbench_gym:ColBench-Backend-v0`` form -> backend)."""
    bare = env_id.rpartition(":")[2] if isinstance(env_id, str) else env_id
    for kind in KINDS.values():
        if kind.env_id == bare:
            return kind
    raise ValueError(f"{env_id!r} is not a ColBench environment id; expected one of "
                     f"{', '.join(k.env_id for k in KINDS.values())}")


def kind_of_task(task: Any, where: str = "task", error: type[ValueError] = TaskFormatError) -> EnvKind:
    """The kind of a task object or task record (a dict, e.g. a trajectory record's ``task``).

    Exactly one kind's :attr:`EnvKind.is_record` must match; otherwise ``error`` says which shapes
    were expected (a record is never taken for one kind by default).
    """
    for kind in KINDS.values():
        if isinstance(task, kind.task_cls):
            return kind
    if not isinstance(task, Mapping):
        raise error(f"{where}: expected a task record (a dict), got {type(task).__name__}")
    matches = [kind for kind in KINDS.values() if kind.is_record(task)]
    if len(matches) != 1:
        shapes = "; ".join(kind.record_shape for kind in KINDS.values())
        what = "matches no environment kind" if not matches else f"matches several kinds ({', '.join(k.name for k in matches)})"
        raise error(f"{where}: the task record {what}; expected {shapes}")
    return matches[0]


def load(target: str) -> Any:
    """Import a table entry's ``"module:attr"`` (e.g. :attr:`EnvKind.tool_env`)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


__all__ = ["BACKEND", "FRONTEND", "KINDS", "EnvKind", "env_kind", "kind_of_env_id", "kind_of_task", "load",
           "register_kind"]
