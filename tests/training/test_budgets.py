"""Budgets in epochs, the same for every method (issue 36, item 2): train-rft, train-mtdpo,
train-actor and train-critic take ``--num_train_epochs`` (their presets set it), and each prints
and writes ``training_budget.json`` beside the model: rows, optimizer steps, samples seen and
epochs, computed the same way for every method. Tiny model, toy data; the expected numbers are
counted by hand from the fixture."""

from __future__ import annotations

import json
import math

import pytest

from sweet_agent.cli import main
from sweet_agent.training.budget import BUDGET_FILE, TRAINING_LOG_FILE
from sweet_agent.training.parser import parse_command


@pytest.fixture
def traj_file(tmp_path, toy_records):
    path = tmp_path / "trajs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    return path


COMMON = ["--per_device_train_batch_size", "2", "--learning_rate", "1e-3", "--max_length", "256",
          "--report_to", "none", "--save_strategy", "no", "--lora-r", "2", "--merge_adapter", "false"]


def _budget(out):
    return json.loads((out / BUDGET_FILE).read_text())


def test_every_trainer_records_its_epochs_samples_and_steps(tmp_path, traj_file, tiny_model_dir, toy_records, capsys):
    """6 tasks x (1 success + 2 failures). RFT (rule success) keeps the 6 successes; multi-turn DPO
    and the critic (rule success) pair each success with its 2 failures: 12 pairs (the critic holds
    out 2 of 6 tasks: 8 train pairs). 2 epochs at batch 2: rows/2 steps per epoch, rows x 2 samples."""
    model = ["--model_name_or_path", str(tiny_model_dir)]
    expected = {"train-rft": (6, "trajectories"), "train-mtdpo": (12, "trajectory pairs"),
                "train-critic": (8, "trajectory pairs")}
    for cmd, extra in (("train-rft", []), ("train-mtdpo", []), ("train-critic", ["--eval_fraction", "0.34"])):
        out = tmp_path / cmd
        assert main([cmd, "--data", str(traj_file), *model, "--output_dir", str(out), "--num_train_epochs", "2",
                     *COMMON, *extra]) == 0, cmd
        rows, unit = expected[cmd]
        b = _budget(out)
        assert (b["command"], b["unit"], b["train_rows"]) == (cmd, unit, rows), b
        assert b["optimizer_steps"] == 2 * math.ceil(rows / 2) and b["samples_seen"] == 2 * rows
        assert b["epochs"] == 2.0 and b["trainer_epoch"] == pytest.approx(2.0) and b["max_steps"] == -1
        printed = capsys.readouterr().out
        assert f"[{cmd}] budget: {2 * rows} {unit} seen = 2.00 epochs of {rows}, in {b['optimizer_steps']} " \
               "optimizer steps" in printed
    assert json.loads((tmp_path / "train-critic" / "sweet_critic.json").read_text())["budget"]["epochs"] == 2.0
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({
        "prompt": [{"role": "user", "content": f"Write f{i}(x)."}],
        "chosen": [{"role": "assistant", "content": "What should f return?"}],
        "rejected": [{"role": "assistant", "content": "I WANT TO ANSWER: def f(x): return x"}]}) + "\n" for i in range(5)))
    out = tmp_path / "actor"
    assert main(["train-actor", "--pairs_in", str(pairs), *model, "--output_dir", str(out), "--num_train_epochs", "1.5",
                 "--logging_steps", "1", *COMMON]) == 0
    b = _budget(out)  # 3 steps per epoch (2 + 2 + 1): 1.5 epochs -> 5 steps; 5 + 2 steps x 2 = 9 samples
    assert (b["train_rows"], b["steps_per_epoch"], b["optimizer_steps"], b["samples_seen"]) == (5, 3, 5, 9)
    assert b["epochs"] == pytest.approx(9 / 5) and b["unit"] == "step pairs" and b["learning_rate"] == 1e-3
    # beside the budget, the trainer's own log: every step's DPO metrics, which the checkpoints alone would keep
    log = json.loads((out / TRAINING_LOG_FILE).read_text())
    steps = [h for h in log["log_history"] if "rewards/chosen" in h]
    assert log["command"] == "train-actor" and [h["step"] for h in steps] == [1, 2, 3, 4, 5]
    assert steps[0]["rewards/chosen"] == 0 and steps[0]["rewards/rejected"] == 0  # before any update: pi == pi_ref
    assert any(h["rewards/chosen"] != 0 for h in steps[1:])


def test_a_step_budget_is_counted_in_samples_too(tmp_path, traj_file, tiny_model_dir):
    """--max_steps (what the protocol's first run used) stops mid-epoch: samples seen are the steps'
    draws, and epochs say what fraction of the data that was."""
    out = tmp_path / "rft"
    assert main(["train-rft", "--data", str(traj_file), "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(out), "--max_steps", "2", *COMMON]) == 0
    b = _budget(out)
    assert (b["train_rows"], b["optimizer_steps"], b["samples_seen"], b["max_steps"]) == (6, 2, 4, 2)
    assert b["epochs"] == pytest.approx(4 / 6)


@pytest.mark.parametrize("preset", ["cpu", "paper"])
def test_every_preset_sets_its_budget_in_epochs(preset):
    from sweet_agent.actor.cli import dataclass_types as actor
    from sweet_agent.baselines.mtdpo import dataclass_types as mtdpo
    from sweet_agent.baselines.rft import dataclass_types as rft
    from sweet_agent.critic.cli import dataclass_types as critic

    for name, types in (("actor", actor), ("rft", rft), ("mtdpo", mtdpo), ("critic", critic)):
        _, cfg, _ = parse_command("t", name, types(), ["--config", preset, "--output_dir", "o"])
        assert cfg.max_steps == -1 and cfg.num_train_epochs >= 1, (preset, name)
    _, actor_cfg, _ = parse_command("t", "actor", actor(), ["--config", preset, "--output_dir", "o"])
    _, rft_cfg, _ = parse_command("t", "rft", rft(), ["--config", preset, "--output_dir", "o"])
    _, mtdpo_cfg, _ = parse_command("t", "mtdpo", mtdpo(), ["--config", preset, "--output_dir", "o"])
    # the policy trainers: one budget and one learning rate per preset
    assert actor_cfg.num_train_epochs == rft_cfg.num_train_epochs == mtdpo_cfg.num_train_epochs
    assert actor_cfg.learning_rate == rft_cfg.learning_rate == mtdpo_cfg.learning_rate


def test_bf16_mixed_precision_trains_the_same_adapter_to_rounding_and_is_recorded(tmp_path, traj_file, tiny_model_dir):
    """``--bf16 true`` on a CPU: the steps run under bf16 autocast (the adapter differs from the fp32 run's, by
    rounding only: same seed, same data) and the budget says which arithmetic ran."""
    import torch
    from safetensors.torch import load_file

    adapters = {}
    for bf16 in ("false", "true"):
        out = tmp_path / f"critic-{bf16}"
        assert main(["train-critic", "--data", str(traj_file), "--model_name_or_path", str(tiny_model_dir),
                     "--output_dir", str(out), "--num_train_epochs", "1", "--seed", "3", "--bf16", bf16, "--use_cpu", "true",
                     "--eval_fraction", "0.34", *COMMON]) == 0
        assert _budget(out)["precision"] == ("bf16" if bf16 == "true" else "fp32")
        adapters[bf16] = load_file(str(next(out.rglob("adapter_model.safetensors"))))
    assert adapters["false"].keys() == adapters["true"].keys()
    diffs = [(adapters["true"][k] - adapters["false"][k]).abs().max().item() for k in adapters["false"]]
    scale = max(adapters["false"][k].abs().max().item() for k in adapters["false"])
    assert max(diffs) > 0  # autocast changed the arithmetic
    assert max(diffs) < 0.05 * scale  # ... by rounding, not by training something else
    assert all(t.dtype == torch.float32 for t in adapters["true"].values())  # the weights stay fp32


@pytest.mark.parametrize("bf16", ["true", "false"])
def test_the_critic_scores_its_held_out_pairs_in_its_training_arithmetic_before_and_after(
        tmp_path, traj_file, tiny_model_dir, monkeypatch, bf16):
    """train-critic's held-out accuracy before and after training compares like with like: both under the
    run's autocast (accelerate wraps the forward only once training starts)."""
    import torch

    from sweet_agent.critic.trainer import CriticTrainer

    seen = []
    real = CriticTrainer.pairwise_stats

    def spy(self, *a, **k):
        orig = self.trajectory_scores

        def scores(model, batch):
            seen.append(torch.is_autocast_enabled("cpu"))
            return orig(model, batch)
        self.trajectory_scores = scores
        try:
            return real(self, *a, **k)
        finally:
            del self.trajectory_scores

    monkeypatch.setattr(CriticTrainer, "pairwise_stats", spy)
    out = tmp_path / "critic"
    assert main(["train-critic", "--data", str(traj_file), "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(out), "--num_train_epochs", "1", "--bf16", bf16, "--use_cpu", "true",
                 "--eval_fraction", "0.34", *COMMON]) == 0
    assert len(seen) >= 2 and set(seen) == {bf16 == "true"}, seen
