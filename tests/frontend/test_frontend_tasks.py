"""Frontend task sets: the generator's determinism and disjoint splits, the embedded files."""

from __future__ import annotations

import json

import pytest

from colbench_gym.tasks import FrontendTask, load_tasks
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.frontend_generator import _generate, generate_frontend_task, structural_key
from colbench_gym.tasks.sources import resolve_task_source
from tests.html_pages import V2, V3


def test_generator_is_a_pure_function_of_split_and_index():
    a, b = generate_frontend_task(17, "train"), generate_frontend_task(17, "train")
    assert a == b and a.task_id == b.task_id
    assert generate_frontend_task(17, "test") != a
    with pytest.raises(ValueError, match="split"):
        generate_frontend_task(0, "valid")
    with pytest.raises(ValueError, match="non-negative"):
        generate_frontend_task(-1, "train")


def test_splits_and_embedded_test_are_disjoint():
    train = {structural_key(generate_frontend_task(i, "train")) for i in range(300)}
    test = {structural_key(generate_frontend_task(i, "test")) for i in range(150)}
    emb_test = {structural_key(_generate(i, "embedded-test")) for i in range(30)}
    assert len(train) > 250 and not train & test and not (train | test) & emb_test


def test_pages_are_varied_websight_style_tailwind():
    tasks = [generate_frontend_task(i, "train") for i in range(80)]
    html = [t.ground_truth for t in tasks]
    assert sum(V2 in h for h in html) > 15 and sum(V3 in h for h in html) > 15
    assert len({t.problem_description.split(",")[0] for t in tasks}) > 10
    assert any("bg-gray-900" in h for h in html) and any("grid-cols-3" in h for h in html)
    assert any("picsum.photos" in h for h in html)
    for t in tasks:
        assert t.ground_truth.startswith("<html>") and t.ground_truth.rstrip().endswith("</html>")
        assert "<" not in t.problem_description


def test_embedded_files_load_in_the_official_shape(tmp_path):
    test, train = load_embedded("frontend", "test"), load_embedded("frontend", "train")
    assert len(test) == 30 and len(train) == 90
    assert not {t.task_id for t in test} & {t.task_id for t in train}
    assert all(isinstance(t, FrontendTask) for t in test + train)
    # the same records through the official-file loader
    path = tmp_path / "frontend.jsonl"
    path.write_text("".join(json.dumps({"problem_description": t.problem_description, "ground_truth": t.ground_truth}) + "\n"
                            for t in test[:3]))
    loaded = load_tasks(path, "frontend")
    assert [t.task_id for t in loaded] == [t.task_id for t in test[:3]]
    assert len(resolve_task_source("generated:train", "frontend")[5].ground_truth) > 500
