"""The hand-written task sets shipped in the package: shape, quality of the hidden tests, leaks."""

from __future__ import annotations

import ast
import re

import pytest

from colbench_gym.tasks.embedded import available_embedded, load_embedded
from colbench_gym.tasks.records import BackendTask, TaskFormatError
from colbench_gym.tasks.sources import resolve_task_source
from tests.tasks.refcheck import audit, function_name, rounding_ties

SPLITS = ("train", "test")


@pytest.fixture(scope="module")
def embedded() -> dict[str, list[BackendTask]]:
    return {split: load_embedded("backend", split) for split in SPLITS}


@pytest.fixture(scope="module")
def audits(embedded):
    return {split: audit([t.to_record() for t in embedded[split]]) for split in SPLITS}


def test_both_splits_ship_about_thirty_valid_tasks(embedded):
    for split in SPLITS:
        tasks = embedded[split]
        assert 25 <= len(tasks) <= 60, (split, len(tasks))
        for task in tasks:
            assert isinstance(task, BackendTask)
            assert BackendTask.from_record(task.to_record()) == task
            assert set(task.to_record()) == {"problem_description", "ground_truth", "test_cases"}
    assert ("backend", "test") in available_embedded() and ("backend", "train") in available_embedded()


@pytest.mark.parametrize("split", SPLITS)
def test_references_run_deterministically_cover_every_line_and_name_the_function(audits, split):
    problems, _ = audits[split]
    assert problems == {}, problems


@pytest.mark.parametrize("split", SPLITS)
def test_tests_catch_a_wrong_guess_of_the_hidden_details(audits, split):
    """A reference with one literal changed (a threshold, rate, label...) must fail some test."""
    _, detection = audits[split]
    assert min(detection) >= 0.6, sorted(detection)[:3]
    assert sum(detection) / len(detection) >= 0.9


@pytest.mark.parametrize("split", SPLITS)
def test_references_are_plain_python_within_fifty_lines(embedded, split):
    for task in embedded[split]:
        tree = ast.parse(task.ground_truth)
        assert len(task.ground_truth.splitlines()) <= 50
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                assert all(n.split(".")[0] in ("math", "re", "string", "datetime") for n in names), names
        assert "random" not in task.ground_truth and "time." not in task.ground_truth


def _numbers(source: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(source)):
        is_number = isinstance(node, ast.Constant) and type(node.value) in (int, float)
        if is_number and node.value not in (0, 1):
            out.add(repr(node.value))
    return out


@pytest.mark.parametrize("split", SPLITS)
def test_descriptions_do_not_give_away_hidden_numbers(embedded, split):
    for task in embedded[split]:
        words = set(re.findall(r"\d+(?:\.\d+)?", task.problem_description))
        leaked = words & _numbers(task.ground_truth)
        assert not leaked, (function_name(task.ground_truth), leaked)


def _returned_words(source: str) -> set[str]:
    tree = ast.parse(source)
    params = {a.arg for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) for a in fn.args.args}
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and node.value is not None:
            for leaf in ast.walk(node.value):
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str) and len(leaf.value) >= 3:
                    words.add(leaf.value)
    return words - params


@pytest.mark.parametrize("split", SPLITS)
def test_descriptions_do_not_give_away_returned_labels(embedded, split):
    """Labels and messages the function returns are personal details (quoted input keys are not)."""
    for task in embedded[split]:
        desc = task.problem_description
        for word in _returned_words(task.ground_truth):
            if f"'{word}'" in desc:
                continue  # the request names an input key, e.g. dicts with 'name' and 'email'
            assert not re.search(rf"(?<!\w){re.escape(word)}(?!\w)", desc, re.IGNORECASE), (word, desc)


def test_no_test_rounds_an_exact_half(embedded):
    """round(14.945, 2) may go either way depending on how a correct answer adds things up."""
    for split in SPLITS:
        assert rounding_ties([t.to_record() for t in embedded[split]]) == []


def test_train_and_test_splits_are_disjoint(embedded):
    train, test = embedded["train"], embedded["test"]
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    assert not {function_name(t.ground_truth) for t in train} & {function_name(t.ground_truth) for t in test}
    assert not {t.problem_description for t in train} & {t.problem_description for t in test}


def test_task_sources_serve_the_embedded_sets():
    source = resolve_task_source("embedded:train", "backend")
    assert len(source) == len(load_embedded("backend", "train"))
    assert source[0] == load_embedded("backend", "train")[0]


def test_unknown_kind_or_split_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown task kind 'sideways'"):
        load_embedded("sideways", "test")
    with pytest.raises(FileNotFoundError, match=r"split 'validation'.*embedded:test"):
        load_embedded("backend", "validation")
    with pytest.raises(ValueError, match="non-empty string"):
        load_embedded("backend", "")


def test_a_broken_shipped_file_names_file_and_line(tmp_path, monkeypatch):
    import colbench_gym.tasks.embedded as embedded_module

    (tmp_path / "backend_broken.jsonl").write_text('{"problem_description": "x"}\n', encoding="utf-8")
    (tmp_path / "backend_bad.jsonl").write_text("\n{not json\n", encoding="utf-8")
    monkeypatch.setattr(embedded_module, "_data_dir", lambda: tmp_path)
    with pytest.raises(TaskFormatError, match=r"data/backend_broken.jsonl:1: missing key 'ground_truth'"):
        load_embedded("backend", "broken")
    with pytest.raises(TaskFormatError, match=r"data/backend_bad.jsonl:2: not valid JSON"):
        load_embedded("backend", "bad")
