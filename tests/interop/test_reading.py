"""Reading the release's files: reward-less backend rollouts, PNG frontend answers, HF round trips."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweet_agent.trajectories import TrajectoryFormatError, from_hf_row, read_trajectories, to_hf_dataset
from tests.interop.conftest import read_jsonl


def test_reward_less_file_loads_where_no_reward_is_needed(release_backend):
    recs = read_trajectories(release_backend, require_reward=False)
    assert len(recs) == 4 and all("reward" not in r for r in recs)
    with pytest.raises(TrajectoryFormatError, match=r"grade first: colbench evaluate backend IN --output OUT"):
        read_trajectories(release_backend)  # the training readers' default


@pytest.mark.slow  # one CLI start that imports torch/TRL (~15 s idle)
def test_training_stops_with_the_command_that_adds_rewards(release_backend, tmp_path):
    """train-critic, train-rft, train-mtdpo and train-actor read data with one reader
    (sweet_agent.training_data.records.load_records): it refuses the ungraded file, naming the command."""
    from sweet_agent.training_data.records import load_records

    with pytest.raises(TrajectoryFormatError, match=r"release_backend.jsonl:1: no 'reward'.*grade first"):
        load_records(release_backend)
    r = subprocess.run([sys.executable, "-m", "sweet_agent.cli", "train-critic", "--data", str(release_backend),
                        "--output_dir", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert "Traceback" not in r.stderr
    assert "grade first: colbench evaluate backend IN --output OUT" in lines[-1], r.stderr[-800:]


def test_sweet_agent_evaluate_and_view_accept_an_ungraded_file(release_backend, tmp_path):
    r = subprocess.run([sys.executable, "-m", "sweet_agent.cli", "evaluate", str(release_backend)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "tests passed    n/a" in r.stdout and "no stored rewards: pass --regrade" in r.stdout
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "sweet_agent.cli", "view", str(release_backend), "--output", str(site)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert any(site.rglob("*.html"))


def test_frontend_png_answers_are_scored_and_stored_rewards_kept(release_frontend, tmp_path, renderer):
    out = tmp_path / "scored.jsonl"
    r = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "evaluate", "frontend", str(release_frontend),
                        "--output", str(out), "--scorer", "fallback", "--no-progress"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert ("answers scored from their screenshot: 2, from the last HTML in the dialogue: 1; "
            "nothing to score, stored reward kept: 1") in r.stdout
    recs = read_jsonl(out)
    assert [x["answer_source"] for x in recs] == ["image", "image", "dialogue", None]
    # record 0's screenshot and record 2's dialogue HTML are the same page: the same score either way
    assert recs[0]["reward"] > 0.3 and recs[0]["reward"] == pytest.approx(recs[2]["reward"], abs=0.02)
    assert recs[3]["reward"] == 0.25 and recs[3]["similarity"] is None  # stored reward never replaced by 0
    assert recs[0]["reward"] != 0.875  # the image was scored, not copied
    # each PNG was scored against its own task's reference: the reward is the scorer's similarity of
    # that file and that reference, computed here directly, and the right PNG beats the other task's
    from PIL import Image

    from colbench_gym.scoring import make_scorer

    originals = read_jsonl(release_frontend)
    pngs = [Image.open(release_frontend.parent / originals[i]["answer"]).convert("RGB") for i in (0, 1)]
    refs = [shot.image() for shot in renderer.render_many([originals[i]["task"]["ground_truth"] for i in (0, 1)],
                                                          cache=True)]
    scorer = make_scorer("fallback")
    right = scorer.similarities(pngs, refs)
    swapped = scorer.similarities(pngs[::-1], refs)
    assert [recs[0]["reward"], recs[1]["reward"]] == pytest.approx(right, abs=1e-6)
    assert [recs[0]["similarity"], recs[1]["similarity"]] == [recs[0]["reward"], recs[1]["reward"]]
    assert right[0] > swapped[0] and right[1] > swapped[1]


def test_hf_round_trip_keeps_every_field(tmp_path, release_backend, release_frontend):
    graded = {"task": {"problem_description": "p", "ground_truth": "def f():\n    return 1\n",
                       "test_cases": {"t": "f()"}},
              "dialogue_history": [{"role": "user", "content": "hi"},
                                   {"role": "assistant", "content": "c", "output": "o", "input": "i", "extra_k": 1}],
              "answer": "a", "reward": 0.5, "success": False, "tests_passed": 1, "tests_total": 2,
              "grade_error": None, "similarity": None, "meta": {"episode_id": "0:0"}}
    path = tmp_path / "ours.jsonl"
    path.write_text(json.dumps(graded) + "\n")
    for source in (path, release_backend, release_frontend):
        recs = read_jsonl(source)
        ds = to_hf_dataset(source)
        assert [from_hf_row(row) for row in ds] == recs
        ds.to_json(tmp_path / "ds.jsonl")  # and through a file written by datasets
        import datasets

        again = datasets.load_dataset("json", data_files=str(tmp_path / "ds.jsonl"), split="train")
        assert [from_hf_row(row) for row in again] == recs


def test_release_file_loads_in_the_paper_reader(release_backend):
    from sweet_agent.trajectories import load_paper_offline

    recs = load_paper_offline(release_backend)
    assert [r["meta"]["sample"] for r in recs] == [0, 0, 1, 1]
    assert all("reward" not in r and "success" not in r for r in recs)
    assert recs[0]["dialogue_history"][1]["prompt_messages"][0]["role"] == "system"
    assert Path(release_backend).exists()
