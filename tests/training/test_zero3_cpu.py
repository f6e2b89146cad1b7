"""DeepSpeed ZeRO-3 as a real 2-process launch on CPU (``sweet_agent/configs/zero3_cpu.yaml``).

The critic is trained with full fine-tuning (the paper's setting, and the case where ZeRO-3 needs
a separately loaded reference model), its weights partitioned across the two processes, and saved
through the trainer's own ``save_model``. The saved checkpoint must be the whole model, and the
same model one unpartitioned process trains from the same data with the same global batch: any
shard-only, stale or half-gathered save fails that comparison.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "sweet_agent" / "configs" / "zero3_cpu.yaml"


def _train_critic(launcher: list[str], data: Path, model: Path, out: Path, batch: int,
                  extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    cmd = launcher + ["-m", "sweet_agent.cli", "train-critic", "--data", str(data), "--model_name_or_path", str(model),
                      "--output_dir", str(out), "--max_steps", "2", "--per_device_train_batch_size", str(batch),
                      "--per_device_eval_batch_size", str(batch), "--gradient_accumulation_steps", "1",
                      "--learning_rate", "1e-3", "--max_length", "256", "--eval_fraction", "0.34",
                      "--save_strategy", "no", "--seed", "0", *extra]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, check=False, env=env)


@pytest.mark.slow
def test_zero3_two_process_critic_saves_the_gathered_model(tmp_path, tiny_model_dir, toy_records):
    assert importlib.util.find_spec("deepspeed"), "deepspeed missing: `make setup` installs the zero3 extra"
    data = tmp_path / "offline.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))

    # 2 processes x batch 1 under ZeRO-3, and 1 plain process x batch 2: the same global batches
    accelerate = str(Path(sys.executable).parent / "accelerate")
    z3 = _train_critic([accelerate, "launch", "--config_file", str(CONFIG)], data, tiny_model_dir, tmp_path / "z3", 1)
    assert z3.returncode == 0, z3.stdout[-2000:] + z3.stderr[-3000:]
    single = _train_critic([sys.executable], data, tiny_model_dir, tmp_path / "single", 2)
    assert single.returncode == 0, single.stderr[-3000:]

    # two processes ran, each under ZeRO stage 3 holding only its share of the weights
    shares = re.findall(r"\[save\] process (\d) of (\d) \(DeepSpeed ZeRO stage (\d); "
                        r"this process holds ([\d,]+) of ([\d,]+) parameter values\)", z3.stdout)
    assert sorted(s[0] for s in shares) == ["0", "1"], z3.stdout[-2000:]
    for _, world, stage, held, total in shares:
        held, total = int(held.replace(",", "")), int(total.replace(",", ""))
        assert world == "2" and stage == "3" and 0 < held < total and held <= total // 2 + 64

    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    saved = load_file(str(tmp_path / "z3" / "model.safetensors"))
    reference = load_file(str(tmp_path / "single" / "model.safetensors"))
    base = load_file(str(tiny_model_dir / "model.safetensors"))
    assert set(saved) == set(base) and all(saved[k].shape == base[k].shape for k in base)  # whole, not shards
    changed = max((saved[k] - base[k]).abs().max().item() for k in base)
    assert changed > 1e-4  # training moved the weights (lr 1e-3, 2 Adam steps)
    assert all(torch.allclose(saved[k], reference[k], atol=1e-5, rtol=0) for k in base)

    # the LM head in pieces of 4 scored positions (recomputed in the backward pass, the head
    # called outside the model's forward while ZeRO-3 partitions it): the same trained model
    pieces = _train_critic([accelerate, "launch", "--config_file", str(CONFIG)], data, tiny_model_dir,
                           tmp_path / "z3-pieces", 1, ("--logprob_chunk_size", "4"))
    assert pieces.returncode == 0, pieces.stdout[-2000:] + pieces.stderr[-3000:]
    assert "runs in one piece" not in pieces.stderr  # the pieces path ran, not its fallback
    in_pieces = load_file(str(tmp_path / "z3-pieces" / "model.safetensors"))
    assert all(torch.allclose(in_pieces[k], reference[k], atol=1e-5, rtol=0) for k in base)

    model = AutoModelForCausalLM.from_pretrained(str(tmp_path / "z3"))
    logits = model(input_ids=torch.tensor([[1, 2, 3, 4]])).logits
    assert logits.shape[-1] == model.config.vocab_size and torch.isfinite(logits).all()

    # held-out accuracy covers every held-out pair (gathered from both processes), as one process does
    meta, meta1 = (json.loads((tmp_path / d / "sweet_critic.json").read_text()) for d in ("z3", "single"))
    assert meta["heldout_pairs"] == meta["heldout_pairs_scored"] == 4
    assert meta["heldout_mean_margin"] == pytest.approx(meta1["heldout_mean_margin"], abs=1e-4)
