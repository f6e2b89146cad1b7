"""The procedural generator: valid, deterministic, disjoint splits, no leaks, discriminating tests."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys

import pytest

from colbench_gym.tasks.generator import (
    FAMILIES,
    generate_backend_spec,
    generate_backend_task,
    generate_backend_tasks,
    split_of_key,
)
from colbench_gym.tasks.records import BackendTask
from colbench_gym.tasks.sources import GeneratedTaskSource, resolve_task_source
from tests.tasks.refcheck import audit, function_name, rounding_ties

PER_SPLIT = 150  # 300 generated tasks run through the full audit (about two seconds)


@pytest.fixture(scope="module")
def specs():
    return {split: [generate_backend_spec(i, split) for i in range(PER_SPLIT)] for split in ("train", "test")}


@pytest.fixture(scope="module")
def audited(specs):
    flat = specs["train"] + specs["test"]
    problems, detection = audit([s.to_task().to_record() for s in flat])
    return flat, problems, detection


def test_generated_tasks_are_valid_official_records(specs):
    for split, items in specs.items():
        for spec in items:
            task = spec.to_task()
            record = task.to_record()
            assert BackendTask.from_record(json.loads(json.dumps(record))) == task
            assert list(task.test_cases) == [f"test{k}" for k in range(1, 11)]
            assert record["source"] == f"generated:{split}" and record["index"] == spec.index
            assert record["generator_version"] >= 1 and record["family"] == spec.family
            assert function_name(task.ground_truth) == spec.function_name
            compile(task.ground_truth, "<reference>", "exec")


def test_every_family_is_drawn_in_both_splits(specs):
    for items in specs.values():
        counts = collections.Counter(s.family for s in items)
        assert set(counts) == set(FAMILIES), counts


def test_references_run_deterministically_and_tests_cover_every_line(audited):
    flat, problems, _ = audited
    assert problems == {}, {f"{flat[i].split}[{flat[i].index}] {flat[i].family}": p for i, p in problems.items()}


def test_tests_discriminate_a_naive_guess(audited):
    """Changing one literal of the reference (a threshold, a rate, a label...) fails some test."""
    flat, _, detection = audited
    worst = sorted(zip(detection, (f"{s.split}[{s.index}] {s.family}" for s in flat)))[:3]
    assert min(detection) >= 0.6, worst
    assert sum(detection) / len(detection) >= 0.9
    by_family = collections.defaultdict(list)
    for spec, rate in zip(flat, detection):
        by_family[spec.family].append(rate)
    for family, rates in by_family.items():
        assert sum(rates) / len(rates) >= 0.75, family


def test_descriptions_hide_the_personal_details(specs):
    for items in specs.values():
        for spec in items:
            desc = spec.description
            assert not re.search(r"\d", desc), desc
            assert f"{spec.function_name}(" in desc
            for word in spec.hidden_strings:
                assert not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", desc, re.IGNORECASE), (word, desc)


def test_generated_tests_avoid_rounding_ties(specs):
    records = [s.to_task().to_record() for items in specs.values() for s in items]
    records += [generate_backend_task(i, split).to_record() for split in ("train", "test") for i in range(150, 1000)]
    assert rounding_ties(records) == []


def test_task_is_a_pure_function_of_split_and_index():
    again = [generate_backend_task(i, "test").to_record() for i in range(40)]
    assert again == [generate_backend_task(i, "test").to_record() for i in range(40)]
    code = ("import json; from colbench_gym.tasks.generator import generate_backend_task as g; "
            "print(json.dumps([g(i, s).task_id for s in ('train', 'test') for i in range(40)]))")
    ids = []
    for seed in ("1", "987"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"})
        ids.append(json.loads(out.stdout))
    assert ids[0] == ids[1] == [generate_backend_task(i, s).task_id for s in ("train", "test") for i in range(40)]


def test_train_and_test_never_share_a_task_or_a_hidden_parameter_set():
    n = 600
    train = [generate_backend_spec(i, "train") for i in range(n)]
    test = [generate_backend_spec(i, "test") for i in range(n)]
    assert all(split_of_key(s.key) == "train" for s in train)
    assert all(split_of_key(s.key) == "test" for s in test)
    assert not {s.key for s in train} & {s.key for s in test}
    assert not {s.source for s in train} & {s.source for s in test}
    assert not {s.to_task().task_id for s in train} & {s.to_task().task_id for s in test}
    # Plenty of variety inside a split: nearly every index is a different task.
    assert len({s.source for s in train}) >= 0.98 * n and len({s.source for s in test}) >= 0.98 * n


def test_generated_source_and_batch_helpers_match():
    source = resolve_task_source("generated:test", "backend")
    assert isinstance(source, GeneratedTaskSource)
    assert source[7] == generate_backend_task(7, "test")
    assert generate_backend_tasks(3, "train", start=5) == [generate_backend_task(i, "train") for i in (5, 6, 7)]


@pytest.mark.parametrize("args, message", [
    ((0, "validation"), "split must be one of"),
    ((-1, "train"), "non-negative int"),
    (("3", "train"), "non-negative int"),
    ((True, "train"), "non-negative int"),
])
def test_bad_arguments_are_clear_errors(args, message):
    with pytest.raises(ValueError, match=message):
        generate_backend_task(*args)


#: Tasks per split beyond PER_SPLIT for the wider audit: 250 in `make test`; `make soak-tasks`
#: runs the same test over 1000 more per split (COLBENCH_TASK_SOAK=1000), a soak of rare combinations.
MORE_PER_SPLIT = int(os.environ.get("COLBENCH_TASK_SOAK") or 250)


@pytest.mark.slow
def test_more_tasks_per_split_pass_the_full_audit():
    """Rare parameter combinations: the audit over indices beyond the fast test's range."""
    flat = [generate_backend_spec(i, split) for split in ("train", "test")
            for i in range(PER_SPLIT, PER_SPLIT + MORE_PER_SPLIT)]
    problems, detection = audit([s.to_task().to_record() for s in flat])
    assert problems == {}, {f"{flat[i].split}[{flat[i].index}] {flat[i].family}": p for i, p in list(problems.items())[:5]}
    assert min(detection) >= 0.6
    assert sum(detection) / len(detection) >= 0.9
    for spec in flat:
        assert not re.search(r"\d", spec.description)
        for word in spec.hidden_strings:
            assert not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", spec.description, re.IGNORECASE), (word, spec.description)


#: sha256 of the first 100 records of each split for GENERATOR_VERSION 1. A change that alters
#: generated tasks silently changes everyone's training and test sets: bump GENERATOR_VERSION and
#: update these digests in the same commit (and say so in the changelog).
PINNED = {
    1: {"train": "dd5e03b27840c4ab059563e3ae6091607a6cbee60d530563e432fa2be2ba5757",
        "test": "835dbe835e275832144386716cd0894e0af6af5cb648731f366b5920af4c075f"},
}


def test_generated_sets_are_pinned_to_the_generator_version():
    import hashlib

    from colbench_gym.tasks.generator import GENERATOR_VERSION

    assert GENERATOR_VERSION in PINNED, "new GENERATOR_VERSION: add its digests to PINNED"
    for split, digest in PINNED[GENERATOR_VERSION].items():
        blob = json.dumps([generate_backend_task(i, split).to_record() for i in range(100)], sort_keys=True)
        assert hashlib.sha256(blob.encode()).hexdigest() == digest, (
            f"generated:{split} changed without a GENERATOR_VERSION bump")
