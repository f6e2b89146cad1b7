"""`sweet-agent train-grpo` end to end with the real default model (one tiny step on CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("trl")

pytestmark = pytest.mark.slow


def test_parse_presets_and_flags() -> None:
    from sweet_agent.grpo.cli import parse_args

    args = parse_args(["--config", "cpu", "--max-steps", "1", "--critic", "/c", "--critic-weight", "0.3"])
    assert args.script.tasks == "collab:train" and args.script.reward_mode == "fraction"
    assert args.training.max_steps == 1 and args.training.num_generations == 4
    assert args.training.critic == "/c" and args.training.critic_weight == 0.3
    assert args.model.use_peft and args.model.lora_r == 16
    assert args.script.merge_adapter and not parse_args(["--config", "cpu", "--merge_adapter", "false"]).script.merge_adapter
    with pytest.raises(SystemExit, match="no shipped preset"):
        parse_args(["--config", "nonexistent-preset"])


@pytest.mark.timeout(2400)  # one real 0.5B step: ~10 min of wall time on the shared, loaded 2-core machine
def test_train_grpo_one_step_with_the_default_model(tmp_path) -> None:
    from sweet_agent.policies.default_model import default_model_status

    if not default_model_status().get("ready"):
        pytest.skip("default model not prepared (sweet-agent fetch-model)")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "sweet_agent.cli", "train-grpo", "--config", "cpu", "--max-steps", "1",
           "--num_tasks", "1", "--num_generations", "2", "--per_device_train_batch_size", "2",
           "--max_completion_length", "8", "--max_tool_calling_iterations", "1", "--output_dir", str(out),
           "--merge_adapter", "false"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = [json.loads(line) for line in (out / "grpo_steps.jsonl").read_text().splitlines()]
    assert len(steps) == 1 and steps[0]["step"] == 1
    for key in ("reward", "rewards/ColBenchToolEnv/mean", "colbench/turns", "colbench/submitted", "step_time"):
        assert key in steps[0], key
    assert "[train-grpo] step 1: reward" in proc.stdout
    # save_final, as every training command: the cpu preset's LoRA adapter alone (--merge_adapter false; the
    # merged default is every command's same save_final, tested there), which the next stage loads as a model
    assert (out / "adapter" / "adapter_config.json").is_file() and not (out / "config.json").exists()
    from sweet_agent.policies.checkpoint_layout import adapter_dir

    assert adapter_dir(out) == out / "adapter"
    assert "[train-grpo] saved to" in proc.stdout
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 1
