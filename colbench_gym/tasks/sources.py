"""Where an environment draws its tasks from: embedded sets, the procedural generator, files.

A task source is indexable; ``reset(options={"task_index": i})`` takes task ``i`` and a plain
``reset(seed=s)`` draws an index with the environment's seeded generator. Specs accepted by the
environments' ``tasks=`` argument:

- ``"embedded:test"`` (default) / ``"embedded:train"``: hand-written tasks shipped in the package;
- ``"generated:train"`` / ``"generated:test"``: the procedural generator (unbounded, seeded,
  disjoint splits) — unlimited offline training tasks;
- ``"collab:train"`` / ``"collab:val"`` / ``"collab:test"`` (backend only): simple tasks where one
  hidden detail decides the answer, so asking pays (:mod:`colbench_gym.tasks.collab_generator`;
  ``val`` is the learning benchmark's selection split, disjoint from both others);
- ``"collab-multi:train"`` / ``"collab-multi:val"`` / ``"collab-multi:test"`` (backend only): two
  to four hidden details per task, each deciding its own share of the tests, some stated in the
  request (:mod:`colbench_gym.tasks.collab_multi`; meant for ``max_turns=6``);
- a path to an official JSONL task file; a list of records or task objects.

Which generators a kind has is its entry's ``generators`` in :mod:`colbench_gym.tasks.kinds`; which
splits a generator has is its module's ``SPLITS`` (``train`` and ``test`` when it names none).
:func:`available_sources` lists every source from those two places and the shipped files (what
``colbench tasks sources`` prints), so a generator added to the table is listed with no other change.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from colbench_gym.tasks.kinds import KINDS, env_kind, load
from colbench_gym.tasks.records import BackendTask, FrontendTask, TaskFormatError

#: Size reported by the unbounded generated sources (indices wrap at this many tasks).
GENERATED_SPACE = 2**31 - 1


class TaskSource:
    """An indexable collection of tasks of one kind."""

    kind: str
    name: str

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, index: int) -> BackendTask | FrontendTask:
        raise NotImplementedError

    def sample(self, rng: np.random.Generator) -> tuple[int, BackendTask | FrontendTask]:
        index = int(rng.integers(0, len(self)))
        return index, self[index]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self)} tasks)"


class ListTaskSource(TaskSource):
    def __init__(self, tasks: Sequence[BackendTask | FrontendTask], kind: str, name: str = "list"):
        if not tasks:
            raise ValueError(f"task source {name!r} holds no tasks")
        self.tasks, self.kind, self.name = list(tasks), kind, name

    def __len__(self) -> int:
        return len(self.tasks)

    def __getitem__(self, index: int) -> BackendTask | FrontendTask:
        if not 0 <= index < len(self.tasks):
            raise IndexError(f"task_index {index} out of range for {self.name!r} ({len(self.tasks)} tasks)")
        return self.tasks[index]


class GeneratedTaskSource(TaskSource):
    """Procedurally generated tasks: task ``i`` of a split is a pure function of ``(split, i)``.

    ``generator`` names one of the kind's generators (``generated``, ``collab`` for backend).
    """

    def __init__(self, kind: str, split: str, generator: str = "generated"):
        if generator not in env_kind(kind).generators:
            having = [k.name for k in KINDS.values() if generator in k.generators]
            raise ValueError(f"{generator}:train / {generator}:test hold {' and '.join(having)} tasks only")
        splits = generator_splits(kind, generator)
        if split not in splits:
            raise ValueError(f"{generator} split must be one of {', '.join(map(repr, splits))}, got {split!r}")
        self.kind, self.split, self.generator, self.name = kind, split, generator, f"{generator}:{split}"

    def __len__(self) -> int:
        return GENERATED_SPACE

    def __getitem__(self, index: int) -> BackendTask | FrontendTask:
        if not 0 <= index < GENERATED_SPACE:
            raise IndexError(f"task_index {index} out of range for {self.name!r}")
        return _generate(self.kind, self.generator, self.split, index)


@lru_cache(maxsize=8192)
def _generate(kind: str, generator: str, split: str, index: int) -> BackendTask | FrontendTask:
    return load(env_kind(kind).generators[generator])(index, split=split)


def generator_splits(kind: str, generator: str) -> tuple[str, ...]:
    """The splits of one of a kind's generators: its module's ``SPLITS`` (``collab``: train, test,
    val), ``("train", "test")`` when the module names none."""
    module = env_kind(kind).generators[generator].partition(":")[0]
    try:
        return tuple(load(f"{module}:SPLITS"))
    except AttributeError:
        return ("train", "test")


@dataclass(frozen=True)
class SourceInfo:
    """One task source this install can resolve: its spec, kind, size and what it is."""

    spec: str  # what tasks= takes, e.g. "collab:val"
    kind: str
    size: int | None  # None: unbounded (generated)
    description: str


def generator_description(target: str) -> str:
    """What a generator makes, in one line: the first line of its module's docstring."""
    module = importlib.import_module(target.partition(":")[0])
    first = (module.__doc__ or "").strip().splitlines()[:1]
    return first[0].replace("*", "").rstrip(".") if first else target


def available_sources() -> list[SourceInfo]:
    """Every task source: the embedded sets shipped in the package, then each generator of the
    kinds table (:data:`colbench_gym.tasks.kinds.KINDS`) with each of its splits."""
    from colbench_gym.tasks.embedded import available_embedded, load_embedded  # noqa: PLC0415

    out = [SourceInfo(f"embedded:{split}", kind, len(load_embedded(kind, split)), "hand-written tasks shipped in the package")
           for kind, split in available_embedded()]
    for generator in _generator_names():
        for kind in KINDS.values():
            if generator in kind.generators:
                description = generator_description(kind.generators[generator])
                out += [SourceInfo(f"{generator}:{split}", kind.name, None, description)
                        for split in generator_splits(kind.name, generator)]
    return out


def _generator_names() -> list[str]:
    """Every kind's generator spec prefixes, in table order (``generated``, ``collab``, ``collab-multi``)."""
    return list(dict.fromkeys(name for kind in KINDS.values() for name in kind.generators))


def _kind_with(generator: str, preferred: str) -> str:
    """``preferred`` when it has the generator, else the first kind that does."""
    if generator in env_kind(preferred).generators:
        return preferred
    return next(k.name for k in KINDS.values() if generator in k.generators)


@lru_cache(maxsize=8)
def _embedded(kind: str, split: str) -> ListTaskSource:
    from colbench_gym.tasks.embedded import load_embedded  # noqa: PLC0415
    return ListTaskSource(load_embedded(kind, split), kind, f"embedded:{split}")


def resolve_task_source(spec: Any, kind: str) -> TaskSource:
    """Turn the ``tasks=`` argument of an environment into a :class:`TaskSource`."""
    task_cls = env_kind(kind).task_cls
    if spec is None:
        spec = "embedded:test"
    if isinstance(spec, TaskSource):
        if spec.kind != kind:
            raise ValueError(f"task source {spec.name!r} holds {spec.kind} tasks, not {kind} tasks")
        return spec
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        source, _, split = text.partition(":")
        if source == "embedded" and not os.path.exists(text):
            return _embedded(kind, split or "test")
        if source in _generator_names() and not os.path.exists(text):
            return GeneratedTaskSource(kind, split or "train", source)
        if os.path.exists(text):
            from colbench_gym.tasks.loaders import load_tasks  # noqa: PLC0415
            return ListTaskSource(load_tasks(text, kind), kind, text)
        specs = ["'embedded:test'", "'embedded:train'", *(f"'{g}:{s}'" for g in _generator_names()
                                                          for s in generator_splits(_kind_with(g, kind), g))]
        raise ValueError(f"tasks={text!r} is neither a file nor one of {', '.join(specs)}")
    if isinstance(spec, Sequence):
        return ListTaskSource([task_cls.from_record(r, where=f"tasks[{i}]", check_python=True) for i, r in enumerate(spec)], kind)
    raise TaskFormatError(f"tasks must be a spec string, a path or a list of records, got {type(spec).__name__}")
