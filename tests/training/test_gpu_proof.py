"""The GPU proof's CPU dry run (scripts/gpu_proof.sh --dry-run): every stage invoked in its own
process with tiny shapes, the JSON written with each stage's figures and device; a stage that no
longer fits the budget is recorded as skipped; without a GPU and without --dry-run it says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STAGES = ["critic-scaling-0.5b", "critic-scaling-8b", "train-critic", "train-actor", "train-rft", "step-pairs",
          "gpu-smoke", "sweet-actor-v2"]


def _run(args, tmp_path, timeout=1200):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OUT": ""}
    return subprocess.run(["bash", str(ROOT / "scripts" / "gpu_proof.sh"), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=tmp_path)


@pytest.mark.slow
def test_dry_run_invokes_every_stage_and_writes_the_json(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    proc = _run(["--dry-run", "--out", str(out), "--work", str(work), "--budget", "1500"], tmp_path, timeout=1800)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    data = json.loads((out / "gpu_proof.json").read_text())
    assert data["dry_run"] is True and data["environment"]["torch"]
    assert list(data["stages"]) == STAGES
    for name, stage in data["stages"].items():
        assert stage["status"] == "ok", (name, stage.get("tail"))
        assert stage["result"]["device"].startswith("cpu"), name
    for name in ("critic-scaling-0.5b", "critic-scaling-8b"):
        rows = data["stages"][name]["result"]["rows"]
        assert [r["mode"] for r in rows] == ["prompt once (share_prefix)", "whole sequences"]
        assert all(r["one"] > 0 and r["many"] > 0 and r["ratio"] == pytest.approx(r["many"] / r["one"]) for r in rows)
    for name in ("train-critic", "train-actor", "train-rft"):
        res = data["stages"][name]["result"]
        assert res["model_devices"] == ["cpu"] and res["models"] >= 1, name
        assert data["stages"][name]["train_runtime_s"] > 0  # one optimizer step ran and TRL reported it
    assert data["stages"]["train-actor"]["result"]["models"] == 3  # policy, critic, critic reference
    assert data["stages"]["train-actor"]["result"]["pairs"] >= 1
    assert data["stages"]["step-pairs"]["result"]["candidates"] >= 2
    smoke = data["stages"]["gpu-smoke"]["result"]
    assert smoke["all_ok"] and {s["device"] for s in smoke["stages"]} == {"cpu"}
    sweet = data["stages"]["sweet-actor-v2"]["result"]  # protocol v2's actor argv; here on train-actor's pairs
    assert sweet["optimizer_steps"] == 2 and sweet["samples_seen"] > 0 and sweet["model_devices"] == ["cpu"]
    assert sweet["pairs_file"] == "pairs.jsonl" and sweet["pairs"] >= 1 and data["stages"]["sweet-actor-v2"]["train_runtime_s"] > 0
    assert "| critic-scaling-8b | ok | cpu" in proc.stdout and "8 of 8 stages ok" in proc.stdout
    assert (out / "gpu_proof.log").read_text().count("===== ") == len(STAGES)


def test_a_stage_that_no_longer_fits_the_budget_is_skipped(tmp_path):
    out = tmp_path / "out"
    proc = _run(["--dry-run", "--out", str(out), "--work", str(tmp_path / "w"), "--budget", "0"], tmp_path)
    assert proc.returncode == 1
    data = json.loads((out / "gpu_proof.json").read_text())
    assert [s["status"] for s in data["stages"].values()] == ["skipped (budget)"] * len(STAGES)
    assert "0 of 8 stages ok" in proc.stdout


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_without_a_gpu_the_real_run_says_so(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_proof.py"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0 and "no CUDA GPU here" in proc.stdout and "--dry-run" in proc.stdout
    assert not (tmp_path / "o" / "gpu_proof.json").exists()
