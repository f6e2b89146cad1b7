"""Baselines: RFT (SFT on successes, agent tokens only) and trajectory-level DPO, one step each."""

from __future__ import annotations

import math

import torch

from sweet_agent.baselines.mtdpo import AgentTokenPreferenceCollator, make_mtdpo_trainer, mtdpo_rows
from sweet_agent.baselines.rft import RFTConfig, make_rft_trainer, rft_rows


def _changed(model, before):
    return any(not torch.equal(before[n], p) for n, p in model.named_parameters())


def test_rft_rows_keep_only_successes(toy_records):
    rows = rft_rows(toy_records)
    assert len(rows) == 6
    assert all("I WANT TO ANSWER" in r["messages"][-1]["content"] for r in rows)
    assert rft_rows(toy_records, system_prompt="be helpful")[0]["messages"][0]["role"] == "system"


def test_rft_one_step_agent_tokens_only(tiny_model, tiny_tokenizer, toy_records, tmp_path):
    args = RFTConfig(output_dir=str(tmp_path / "rft"), use_cpu=True, bf16=False, max_steps=1,
                      per_device_train_batch_size=2, learning_rate=1e-3, save_strategy="no", max_length=512)
    trainer = make_rft_trainer(tiny_model, tiny_tokenizer, rft_rows(toy_records), args)
    row = trainer.train_dataset[0]
    kept = tiny_tokenizer.decode([t for t in row["labels"] if t != -100])
    assert "What should it return?" in kept and "It adds a number." not in kept
    assert "Write a python function" not in kept
    before = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    assert math.isfinite(trainer.train().training_loss)
    assert _changed(tiny_model, before)


def test_mtdpo_rows_and_agent_only_mask(tiny_tokenizer, toy_records):
    rows = mtdpo_rows(toy_records)
    assert len(rows) == 12  # 6 tasks × (1 success vs 2 worse)
    assert rows[0]["prompt"] == [{"role": "user", "content": toy_records[0]["task"]["problem_description"]}]
    from sweet_agent.baselines.mtdpo import tokenize_trajectory_pair

    ex = tokenize_trajectory_pair(tiny_tokenizer, rows[0])
    batch = AgentTokenPreferenceCollator(pad_token_id=tiny_tokenizer.pad_token_id)([ex])
    chosen = batch["input_ids"][0][batch["completion_mask"][0].bool()].tolist()
    text = tiny_tokenizer.decode(chosen)
    assert "What should it return?" in text and "I WANT TO ANSWER" in text
    assert "It adds a number." not in text  # the simulator's reply is not trained on


def test_mtdpo_one_step(tiny_model, tiny_tokenizer, toy_records, tmp_path):
    from trl import DPOConfig

    args = DPOConfig(output_dir=str(tmp_path / "mtdpo"), use_cpu=True, bf16=False, max_steps=1, beta=0.1,
                     loss_type=["sigmoid", "sft"], loss_weights=[1.0, 0.01], per_device_train_batch_size=2,
                     learning_rate=1e-3, save_strategy="no", report_to="none")
    trainer = make_mtdpo_trainer(tiny_model, tiny_tokenizer, mtdpo_rows(toy_records), args)
    before = {n: p.detach().clone() for n, p in tiny_model.named_parameters()}
    assert math.isfinite(trainer.train().training_loss)
    assert _changed(tiny_model, before)
