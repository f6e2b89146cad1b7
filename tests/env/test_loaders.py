"""Loaders for task files in the official shape (JSONL, HF datasets layout) and their errors."""

from __future__ import annotations

import json
import shutil

import pytest

from colbench_gym.tasks import BackendTask, FrontendTask, TaskFormatError, load_hf_tasks, load_tasks


def test_load_official_backend_jsonl(fixtures_dir, backend_records):
    tasks = load_tasks(fixtures_dir / "backend_tasks.jsonl", "backend")
    assert [t.to_record() for t in tasks] == backend_records
    assert len({t.task_id for t in tasks}) == len(tasks)


def test_trajectory_records_give_their_task(tmp_path, backend_records):
    path = tmp_path / "offline.jsonl"
    rows = [{"task": r, "dialogue_history": [], "answer": "", "reward": 0.0} for r in backend_records]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert [t.to_record() for t in load_tasks(path)] == backend_records


def test_extra_keys_and_string_test_cases_round_trip(backend_records):
    rec = dict(backend_records[0], test_cases=json.dumps(backend_records[0]["test_cases"]), source="mine")
    task = BackendTask.from_record(rec)
    assert task.test_cases == backend_records[0]["test_cases"] and task.to_record()["source"] == "mine"


def test_frontend_records():
    page = {"problem_description": "A page for my bakery.", "ground_truth": "<html><body>hi</body></html>"}
    assert FrontendTask.from_record(page).to_record() == page
    with pytest.raises(TaskFormatError, match="HTML"):
        FrontendTask.from_record({"problem_description": "x", "ground_truth": "plain text"})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"bad\.jsonl:2: not valid JSON"),
        ("[1, 2]", r"bad\.jsonl:2: expected a JSON object"),
        ('{"problem_description": "x", "test_cases": {"t": "f()"}}', r"bad\.jsonl:2: missing key 'ground_truth'"),
        ('{"problem_description": "x", "ground_truth": "def f(): 1", "test_cases": {}}', "non-empty dict"),
        ('{"problem_description": "x", "ground_truth": "def f(): 1", "test_cases": {"t": 3}}', "call expression"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, backend_records, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(backend_records[0]) + "\n" + line + "\n")
    with pytest.raises(TaskFormatError, match=message):
        load_tasks(path)


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_tasks(tmp_path / "nope.jsonl")


def test_hf_loader_reads_a_local_copy_of_the_dataset_repo(tmp_path, fixtures_dir, backend_records):
    pytest.importorskip("datasets", reason="the HF loader is part of the [agent] extra")
    (tmp_path / "backend_tasks").mkdir()
    shutil.copy(fixtures_dir / "backend_tasks.jsonl", tmp_path / "backend_tasks" / "test.jsonl")
    tasks = load_hf_tasks("backend", split="test", repo_id=str(tmp_path))
    assert [t.problem_description for t in tasks] == [r["problem_description"] for r in backend_records]
    assert tasks[0].test_cases == backend_records[0]["test_cases"]


def test_hf_loader_offline_miss_is_a_clear_error(monkeypatch):
    pytest.importorskip("datasets", reason="the HF loader is part of the [agent] extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="load_tasks"):
        load_hf_tasks("backend", repo_id="nobody-here/not-a-dataset")
