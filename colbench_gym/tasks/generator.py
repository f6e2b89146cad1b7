"""Procedural generator of personalised ColBench backend tasks (unlimited offline RL tasks).

Why: the paper's point is that the person's *personal* details (thresholds, rates, labels,
formats, tie-breaking, edge cases) are not in the vague request, so the agent must ask. A
generator with hidden parameters drawn from a seeded RNG gives an unbounded supply of such tasks
with known-good references, for training without any download.

Each template family renders three things from the same hidden parameters:

- a vague first-person request naming the function and its parameters, with **no digits** and
  none of the hidden labels in it (the hidden details are only in the reference);
- a plain, readable reference function (literal constants, if/elif chains, dict lookups,
  meaningful names; at most 50 lines; standard library only) — the offline simulator reads facts
  from its AST;
- ten test calls that sit on every boundary and branch, so a guess with one detail wrong fails.

Splits are disjoint by construction: every draw has a *structural key* (family, variant and all
hidden parameters, not the wording) and a hash of that key decides which split owns it; a split
only keeps draws it owns. Task ``i`` of a split is a pure function of ``(split, i)``.

A family set may also have *held-out-domain* splits (``collab:val``): drawn by their own family
functions from hidden values the hashed splits can never produce (other rates, units, messages,
formats), so their keys are disjoint from both hashed splits by construction, and adding one
leaves every existing task byte for byte as it was (the hash divides the keys it always divided).

WHY one spine (:class:`FamilySet`): drawing, keying, splitting and recording a task are the same
for every set of backend families; a set only names its families, its task source, its version
and its seeds. This module's set is the general one (``generated:train|test``); the
collaboration-pays set (``collab:train|test``) is :data:`colbench_gym.tasks.collab_generator.COLLAB`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from colbench_gym.tasks.backend_families import FAMILIES
from colbench_gym.tasks.generator_kit import Draft
from colbench_gym.tasks.records import BackendTask

#: Bumped whenever a change alters any generated task; recorded in every generated record so a
#: saved dataset says which generator made it (tests pin a digest of the current output).
GENERATOR_VERSION = 1
SPLITS = ("train", "test")
#: One key in ``TEST_SHARE`` belongs to the test split (the rest to train).
TEST_SHARE = 4
_MAX_ATTEMPTS = 256


@dataclass(frozen=True)
class BackendSpec:
    """What every procedurally generated backend task is made of (``generated``, ``collab-multi``):
    its family and variant, where it sits (split, index), the request, the reference and the
    hidden test calls. :meth:`task` is the one place such a spec becomes a task record."""

    family: str
    variant: str
    split: str
    index: int
    function_name: str
    description: str
    source: str
    tests: tuple[str, ...]

    def task(self, task_source: str, **extra: Any) -> BackendTask:
        """The task record, from ``task_source`` (``generated``, ``collab-multi``, ...), with the
        subclass's ``generator_version`` and any ``extra`` fields."""
        record = {
            "problem_description": self.description,
            "ground_truth": self.source,
            "test_cases": {f"test{i + 1}": call for i, call in enumerate(self.tests)},
            "source": f"{task_source}:{self.split}",
            "index": self.index,
            "family": self.family,
            "generator_version": self.generator_version,  # type: ignore[attr-defined] - every subclass's field
            **extra,
        }
        return BackendTask.from_record(record, where=f"{task_source}:{self.split}[{self.index}]")


@dataclass(frozen=True)
class GeneratedSpec(BackendSpec):
    """A generated task with its provenance and the hidden details (for tests and analysis).

    ``hidden`` holds the personal details the request does not reveal; ``hidden_strings`` the
    hidden words (labels, messages, separators) that must not appear in the request either;
    ``task_source`` and ``generator_version`` say which family set made it.
    """

    hidden: dict[str, Any] = field(default_factory=dict)
    hidden_strings: tuple[str, ...] = ()
    task_source: str = "generated"
    generator_version: int = GENERATOR_VERSION

    @property
    def key(self) -> str:
        return structural_key(self.family, self.variant, self.hidden)

    def to_task(self) -> BackendTask:
        return self.task(self.task_source)


def structural_key(family: str, variant: str, hidden: dict[str, Any]) -> str:
    return json.dumps([family, variant, hidden], sort_keys=True, default=repr)


def split_of_key(key: str, salt: str = "") -> str:
    """The split that owns a structural key (stable across runs, machines and Python versions);
    ``salt`` gives a family set its own division of keys."""
    digest = hashlib.sha256((salt + key).encode()).digest()
    return "test" if digest[0] % TEST_SHARE == 0 else "train"


@dataclass(frozen=True)
class FamilySet:
    """A set of backend task families on the shared spine.

    ``task_source`` names the records' source (``"generated"`` gives ``"generated:train"``),
    ``version`` is recorded in each record, ``seed`` prefixes every draw's RNG seed and
    ``key_salt`` the hashed structural key (so each set divides its keys between the splits in
    its own way).
    """

    task_source: str
    version: int
    families: Mapping[str, Callable[[random.Random], Draft]]
    seed: str
    key_salt: str = ""
    #: Held-out-domain splits: split name -> its own family functions (same names), which draw
    #: hidden values outside everything :attr:`families` can draw; no key hash filters them.
    held_out: Mapping[str, Mapping[str, Callable[[random.Random], Draft]]] = field(default_factory=dict)

    @property
    def splits(self) -> tuple[str, ...]:
        """Every split of the set: the two hashed ones, then the held-out-domain ones."""
        return (*SPLITS, *self.held_out)

    def split_of(self, key: str) -> str:
        """Which hashed split (``train``/``test``) owns a key drawn by :attr:`families`."""
        return split_of_key(key, self.key_salt)

    def spec(self, index: int, split: str = "train") -> GeneratedSpec:
        """Task ``index`` of ``split`` with its hidden details (see :class:`GeneratedSpec`).

        Deterministic: the RNG is seeded from ``(split, index, attempt)`` only. Draws whose
        structural key belongs to the other split are skipped, so the two splits never share a task;
        a held-out-domain split keeps every draw of its own families (see :attr:`held_out`).
        """
        if split not in self.splits:
            raise ValueError(f"split must be one of {self.splits}, got {split!r}")
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"index must be a non-negative int, got {index!r}")
        families = self.held_out.get(split, self.families)
        names = list(families)
        for attempt in range(_MAX_ATTEMPTS):
            rng = random.Random(f"{self.seed}:{split}:{index}:{attempt}")
            family = names[rng.randrange(len(names))]
            draft = families[family](rng)
            if split in SPLITS and self.split_of(structural_key(family, draft.variant, draft.hidden)) != split:
                continue
            source = "\n".join(draft.lines) + "\n"
            return GeneratedSpec(family, draft.variant, split, index, draft.function_name, draft.description, source,
                                 draft.tests.render(source), draft.hidden, tuple(draft.hidden_strings),
                                 self.task_source, self.version)
        raise RuntimeError(f"no {split} task found for index {index} in {_MAX_ATTEMPTS} draws (generator bug)")


#: The general families: ``generated:train`` / ``generated:test``.
GENERAL = FamilySet("generated", GENERATOR_VERSION, FAMILIES, "colbench-backend")


def generate_backend_spec(index: int, split: str = "train") -> GeneratedSpec:
    """Task ``index`` of ``split`` with its hidden details (see :meth:`FamilySet.spec`)."""
    return GENERAL.spec(index, split)


def generate_backend_task(index: int, split: str = "train") -> BackendTask:
    """Generated backend task ``index`` of ``split`` ("train" or "test"), in the official record shape.

    The record also carries ``source``, ``index``, ``family`` and ``generator_version``
    (provenance; no hidden details).
    """
    return generate_backend_spec(index, split).to_task()


def generate_backend_tasks(count: int, split: str = "train", start: int = 0) -> list[BackendTask]:
    """Tasks ``start .. start+count-1`` of ``split``."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    return [generate_backend_task(i, split) for i in range(start, start + count)]
