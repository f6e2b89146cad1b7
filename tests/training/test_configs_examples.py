"""Shipped accelerate configs parse; the example pipeline runs end to end on a tiny model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "sweet_agent" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_accelerate_configs_parse(path):
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = load_config_from_file(str(path))
    if "zero3" in path.name:
        assert cfg.distributed_type == "DEEPSPEED" and cfg.deepspeed_config["zero_stage"] == 3
        assert cfg.deepspeed_config["zero3_save_16bit_model"]  # save_model gathers the partitioned weights
        # GPUs train in bf16; the CPU variant (run by test_zero3_cpu.py) in full precision
        assert cfg.mixed_precision == ("no" if path.name == "zero3_cpu.yaml" else "bf16")
    else:
        assert cfg.use_cpu


@pytest.mark.slow
def test_example_end_to_end_on_tiny_model(tmp_path, tiny_model_dir, toy_records):
    data = tmp_path / "offline.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
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


@pytest.mark.slow
def test_a_critic_ablation_runs_end_to_end(tmp_path, tiny_model_dir, toy_records):
    """An ablation of run_all.py / run_sweet.py --ablations gets its own critic (with that setting),
    step pairs, actor and evaluation row. One ablation here (the regression head: the critic type
    the actor must load differently); each ablation's loss is checked by hand in
    test_training_semantics.py."""
    data = tmp_path / "offline.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:12]))  # 4 tasks
    driver = ("import sys, argparse; sys.path.insert(0, sys.argv[1]); "
              "from pipeline import add_arguments, run_methods, settings; ap = argparse.ArgumentParser(); "
              "add_arguments(ap); run_methods(settings(ap.parse_args(sys.argv[2:])), [], ['regression-head'])")
    cmd = [sys.executable, "-c", driver, str(ROOT / "examples/sweet_rl"), "--workdir", str(tmp_path / "run"),
           "--offline-data", str(data), "--model", str(tiny_model_dir), "--eval-episodes", "1", "--max-turns", "1",
           "--max-new-tokens", "8", "--candidate-tokens", "8", "--num-candidates", "2", "--turn-fraction", "0.25",
           "--max-length", "256", "--rollout-dtype", "float32", "--critic-lr", "1e-3", "--actor-lr", "1e-3"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, check=False,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [r["method"] for r in rows] == ["zero-shot", "sweet-regression-head"]
    assert all(r["episodes"] == 1 for r in rows)
    meta = json.loads((tmp_path / "run" / "critic-regression-head" / "sweet_critic.json").read_text())
    assert meta["critic_type"] == "regression"
    assert (tmp_path / "run" / "step_pairs-regression-head.jsonl").exists()
    assert (tmp_path / "run" / "sweet-regression-head" / "config.json").exists()
    assert "--critic_type regression" in proc.stdout  # the ablation's flag reached train-critic


@pytest.mark.slow
def test_two_process_launch_saves_one_merged_model(tmp_path, tiny_model_dir, toy_records):
    """`accelerate launch` with 2 CPU processes: the LoRA critic is saved through the trainer's own
    saving path and merged once; held-out accuracy covers every held-out pair, not one shard."""
    data = tmp_path / "offline.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    out = tmp_path / "critic"
    cmd = [str(Path(sys.executable).parent / "accelerate"), "launch", "--cpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "sweet_agent.cli",
           "train-critic", "--data", str(data), "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(out),
           "--max_steps", "2", "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2",
           "--learning_rate", "1e-3", "--max_length", "256", "--eval_fraction", "0.34", "--save_strategy", "no",
           "--use_peft", "--lora_r", "2"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, check=False,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    meta = json.loads((out / "sweet_critic.json").read_text())
    assert meta["heldout_pairs"] == meta["heldout_pairs_scored"] == 4
    import torch
    from safetensors.torch import load_file

    merged = load_file(str(out / "model.safetensors"))
    base = load_file(str(tiny_model_dir / "model.safetensors"))
    assert not any("lora" in k for k in merged) and set(merged) == set(base)
    assert any(not torch.equal(merged[k], base[k]) for k in base)  # the adapter was merged in
