"""The GPU smoke path's CPU counterpart: scripts/gpu_smoke.py with --device cpu runs every training
and evaluation command (tiny random model) and checks that every model each one loaded stayed on
the forced device; without a GPU, --device cuda says so and exits 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: make gpu-smoke runs the real thing")
def test_without_a_gpu_the_smoke_path_says_so_and_exits_0():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_smoke.py")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no CUDA GPU on this machine" in proc.stdout and "--device cpu" in proc.stdout


@pytest.mark.slow
def test_every_command_runs_on_the_forced_cpu(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_smoke.py"), "--device", "cpu", "--workdir",
                           str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    stages = [line for line in proc.stdout.splitlines() if line.startswith("gpu-smoke: ") and line.endswith(" s)")]
    names = [line.split(": ")[1] for line in stages]
    assert names == ["train-critic", "train-critic (no privileged info)", "train-actor (step pairs + DPO)",
                     "train-actor --pairs_in", "train-rft", "train-mtdpo", "train-grpo", "train-grpo --critic",
                     "rollout", "rollout --best-of 2", "evaluate --best-of 2", "view --critic", "mc-values",
                     "critic-report", "train-actor --pair_labels monte-carlo"]
    assert all(": OK (" in line and "models on cpu," in line for line in stages), stages
    assert "gpu-smoke: all 15 stages ran on cpu" in proc.stdout
    # the step-pair stage loaded its policy, critic and critic reference (then DPO's model): all on the CPU
    actor = next(line for line in stages if line.startswith("gpu-smoke: train-actor (step pairs"))
    assert "(3 models on cpu" in actor or "(4 models on cpu" in actor
    # critic-report loaded two critics' models (critic + reference each) from the scripted values file
    report = __import__("json").loads((tmp_path / "critic-report.json").read_text())
    assert [c["by_agent_turn"]["all"]["pairs"] for c in report["scorers"]] == [12, 12]
