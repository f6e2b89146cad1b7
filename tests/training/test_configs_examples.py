"""Shipped accelerate configs parse; the example pipeline runs end to end on a tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_task, make_traj

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "sweet_agent" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_accelerate_configs_parse(path):
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = load_config_from_file(str(path))
    if "zero3" in path.name:
        assert cfg.distributed_type == "DEEPSPEED" and cfg.deepspeed_config["zero_stage"] == 3
        assert cfg.mixed_precision == "bf16"
    else:
        assert cfg.use_cpu


@pytest.mark.slow
def test_example_end_to_end_on_tiny_model(tmp_path, tiny_model_dir):
    data = tmp_path / "offline.jsonl"
    recs = []
    for i in range(6):
        t = make_task(i)
        recs += [make_traj(t, True), make_traj(t, False), make_traj(t, False, 0.5, 1)]
    data.write_text("".join(json.dumps(r) + "\n" for r in recs))
    cmd = [sys.executable, str(ROOT / "examples/sweet_rl/run_all.py"), "--workdir", str(tmp_path / "run"),
           "--offline-data", str(data), "--model", str(tiny_model_dir), "--eval-episodes", "2", "--max-turns", "2",
           "--max-new-tokens", "8", "--candidate-tokens", "8", "--num-candidates", "2", "--max-length", "256",
           "--rollout-dtype", "float32", "--critic-lr", "1e-3", "--actor-lr", "1e-3"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, check=False,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    for method in ("zero-shot", "rft", "mtdpo", "sweet"):
        assert f"| {method:<10} |" in proc.stdout
    rows = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [r["method"] for r in rows] == ["zero-shot", "rft", "mtdpo", "sweet"]
    assert all(r["episodes"] == 2 for r in rows)
