"""SWEET-RL end to end gives the same numbers as when the fixture was recorded.

WHY: the algorithm's code is reorganised (issue #35: one module read top to bottom, the stage
machinery beside it); a reorganisation must not change what it computes. This runs the real
commands (``train-critic`` two steps -> ``train-actor --only_pairs`` sampling candidates and
scoring them with that critic -> ``train-actor --pairs_in`` two DPO + NLL steps) on the tiny
random model with a fixed seed and hand-made trajectories, and compares every training step's
loss, every step pair's chosen/rejected text (exactly) and scores with
``tests/fixtures/sweet_golden.json``, recorded from the code before the reorganisation.
Re-record (only for an intended change of behaviour, said in the commit):
``SWEET_GOLDEN_RECORD=1 .venv/bin/python -m pytest tests/training/test_sweet_golden.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import transformers

from sweet_agent.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sweet_golden.json"
TOL = 1e-5
COMMON = ["--max-steps", "2", "--batch-size", "2", "--learning-rate", "1e-3", "--max-length", "256",
          "--seed", "7", "--logging_steps", "1"]


@pytest.fixture
def step_losses(monkeypatch):
    """Every optimisation step's loss as the trainer computed it (unrounded; the logs round to
    4 digits), read where every trainer of the run (CriticTrainer, TRL's DPOTrainer) passes."""
    losses: list[float] = []
    original = transformers.Trainer.training_step

    def recording(self, *args, **kwargs):
        loss = original(self, *args, **kwargs)
        losses.append(float(loss))
        return loss

    monkeypatch.setattr(transformers.Trainer, "training_step", recording)
    return losses


def _run(tmp_path, toy_records, tiny_model_dir, step_losses) -> dict:
    data = tmp_path / "trajs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    critic = tmp_path / "critic"
    assert main(["train-critic", "--data", str(data), "--model", str(tiny_model_dir), "--output-dir", str(critic),
                 "--eval-fraction", "0.34", *COMMON]) == 0
    critic_losses = list(step_losses)
    pairs = tmp_path / "pairs.jsonl"
    assert main(["train-actor", "--data", str(data), "--critic", str(critic), "--model", str(tiny_model_dir),
                 "--output-dir", str(tmp_path / "scratch"), "--num-candidates", "4", "--pairs_per_turn", "2",
                 "--turn-fraction", "0.25", "--max-new-tokens", "8", "--pairs-out", str(pairs), "--only-pairs",
                 *COMMON]) == 0
    rows = [json.loads(x) for x in pairs.read_text().splitlines()]
    del step_losses[:]
    assert main(["train-actor", "--pairs-in", str(pairs), "--model", str(tiny_model_dir),
                 "--output-dir", str(tmp_path / "actor"), *COMMON]) == 0
    meta = json.loads((critic / "sweet_critic.json").read_text())
    return {
        "critic_losses": critic_losses,
        "critic_heldout_accuracy": meta["heldout_accuracy"],
        "pairs": [{"task_key": r["task_key"], "agent_turn": r["agent_turn"], "turn": r["turn"],
                   "chosen": r["chosen"][0]["content"], "rejected": r["rejected"][0]["content"],
                   "chosen_score": r["chosen_score"], "rejected_score": r["rejected_score"]} for r in rows],
        "actor_losses": list(step_losses),
    }


def test_sweet_rl_gives_the_recorded_pairs_and_losses(tmp_path, toy_records, tiny_model_dir, step_losses):
    got = _run(tmp_path, toy_records, tiny_model_dir, step_losses)
    if os.environ.get("SWEET_GOLDEN_RECORD") == "1":
        tmp = FIXTURE.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(got, indent=1) + "\n")
        tmp.replace(FIXTURE)
    want = json.loads(FIXTURE.read_text())
    # the run trained and paired something (a fixture of nothing would compare nothing)
    assert len(want["critic_losses"]) == 2 and len(want["actor_losses"]) == 2 and len(want["pairs"]) >= 4
    assert got["critic_losses"] == pytest.approx(want["critic_losses"], abs=TOL, rel=0)
    assert got["critic_heldout_accuracy"] == pytest.approx(want["critic_heldout_accuracy"], abs=TOL, rel=0)
    assert [{k: v for k, v in p.items() if not k.endswith("_score")} for p in got["pairs"]] == \
        [{k: v for k, v in p.items() if not k.endswith("_score")} for p in want["pairs"]]
    for g, w in zip(got["pairs"], want["pairs"], strict=True):
        assert (g["chosen_score"], g["rejected_score"]) == pytest.approx(
            (w["chosen_score"], w["rejected_score"]), abs=TOL, rel=0), g
    assert got["actor_losses"] == pytest.approx(want["actor_losses"], abs=TOL, rel=0)
