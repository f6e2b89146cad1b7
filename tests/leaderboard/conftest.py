"""A real submission, made once: two runs (training seeds 0 and 1) of 6 collab:test tasks played by
the real rollout collector with the offline simulator against a scripted agent on a local
OpenAI-compatible endpoint (it answers tasks 0, 2 and 4 with their reference code, the others with a
wrong function: success 1/2), reported by the real ``sweet-agent evaluate --json`` run inside the
folder; each test gets its own copy to break."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from colbench_gym.tasks.sources import resolve_task_source
from sweet_agent.cli import main
from sweet_agent.policies.base import SamplingParams
from sweet_agent.policies.openai_policy import OpenAIPolicy
from sweet_agent.rollout.collector import RolloutConfig, collect
from tests.local_openai_server import LocalOpenAIServer

SOURCE = "collab:test"
TASKS = 6
SUBMISSION = {"schema": "colbench-submission", "schema_version": 1, "method": "scripted half-oracle",
              "model": "scripted-agent", "who": "the test suite", "commit": "0cc3478", "task_source": SOURCE,
              "task_count": TASKS, "date": "2026-11-26", "notes": "answers the even tasks with their reference"}


def _agent(tasks):
    def respond(body):
        msgs = body["messages"]
        if len(msgs) == 2:
            return "OUTPUT: What should it return for an empty input?"
        for i, t in enumerate(tasks):
            if t.problem_description in msgs[1]["content"] and i % 2 == 0:
                return "I WANT TO ANSWER:\n```python\n" + t.ground_truth + "\n```"
        return "I WANT TO ANSWER:\n```python\ndef f(*args, **kwargs):\n    return 0\n```"
    return respond


def evaluate_into(folder: Path, *files: str, capsys, monkeypatch) -> None:
    """``sweet-agent evaluate FILES --json > results.json``, run inside ``folder``."""
    monkeypatch.chdir(folder)
    capsys.readouterr()
    assert main(["evaluate", *files, "--json"]) == 0
    (folder / "results.json").write_text(capsys.readouterr().out)


@pytest.fixture(scope="session")
def built_submission(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("submission") / "scripted"
    folder.mkdir()
    source = resolve_task_source(SOURCE, "backend")
    with LocalOpenAIServer(_agent([source[i] for i in range(TASKS)])) as server:
        for seed in (0, 1):
            policy = OpenAIPolicy("scripted-agent", base_url=server.base_url, max_retries=0)
            cfg = RolloutConfig(tasks=SOURCE, simulator="offline", num_tasks=TASKS, max_turns=3, seed=seed,
                                sampling=SamplingParams(max_new_tokens=64, temperature=0.0), concurrency=2)
            collect(policy, cfg, folder / f"s{seed}.jsonl", progress=False)
    (folder / "submission.json").write_text(json.dumps(SUBMISSION))
    return folder


@pytest.fixture
def submission(built_submission, tmp_path, capsys, monkeypatch) -> Path:
    """A fresh copy of the submission, with its results.json."""
    folder = tmp_path / "scripted"
    shutil.copytree(built_submission, folder)
    evaluate_into(folder, "s0.jsonl", "s1.jsonl", capsys=capsys, monkeypatch=monkeypatch)
    return folder
