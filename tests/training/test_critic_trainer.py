"""The critic trainer: BT loss by hand, pair building, one step, accuracy improving, ablations."""

from __future__ import annotations

import math

import pytest
import torch

from sweet_agent.critic.config import CriticConfig
from sweet_agent.critic.trainer import CriticCollator, CriticTrainer
from sweet_agent.sweet_rl.algorithm import bradley_terry_loss
from sweet_agent.training_data.pairs import build_trajectory_pairs, pairs_to_rows, split_by_task
from tests.training.conftest import make_task, make_traj


def test_bradley_terry_loss_by_hand():
    c = torch.tensor([1.0, -2.0])
    r = torch.tensor([0.5, 3.0])
    beta = 0.1
    want = (-math.log(1 / (1 + math.exp(-beta * 0.5))) - math.log(1 / (1 + math.exp(-beta * -5.0)))) / 2
    assert bradley_terry_loss(c, r, beta).item() == pytest.approx(want, rel=1e-6)


def test_pairs_success_against_each_strictly_worse():
    t0, t1 = make_task(0), make_task(1)
    recs = [make_traj(t0, True), make_traj(t0, False, 0.0), make_traj(t0, False, 0.5, 1),
            make_traj(t0, True),  # a second success: paired with both failures, not with the other success
            make_traj(t1, False, 0.3), make_traj(t1, False, 0.0)]  # no success: no pairs
    pairs = build_trajectory_pairs(recs)
    assert len(pairs) == 4
    assert all(p["chosen"]["success"] and p["rejected"]["reward"] < 1.0 for p in pairs)
    train, held = split_by_task(pairs + build_trajectory_pairs([make_traj(t1, True), make_traj(t1, False)]), 0.5)
    assert train and held and not ({p["task_key"] for p in train} & {p["task_key"] for p in held})


def _trainer(model, tok, rows, tmp_path, eval_rows=None, **cfg):
    args = CriticConfig(output_dir=str(tmp_path / "critic"), use_cpu=True, report_to="none",
                        save_strategy="no", logging_steps=1, **cfg)
    return CriticTrainer(model=model, args=args, train_dataset=rows, eval_dataset=eval_rows, processing_class=tok)


def test_loss_equals_bt_of_turn_advantage_sums(tiny_model, tiny_tokenizer, toy_records, tmp_path):
    from sweet_agent.critic.advantages import turn_advantages

    rows = pairs_to_rows(build_trajectory_pairs(toy_records))[:3]
    trainer = _trainer(tiny_model, tiny_tokenizer, rows, tmp_path, per_device_train_batch_size=3)
    # Perturb the critic so it differs from its (copied) reference.
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    batch = CriticCollator(tiny_tokenizer.pad_token_id)(trainer.train_dataset.to_list())
    loss = trainer.compute_loss(trainer.model, batch).item()
    s = []
    for row in rows:
        c = sum(turn_advantages(trainer.model, trainer.ref_model, tiny_tokenizer, row["chosen"], row["privileged_info"]))
        r = sum(turn_advantages(trainer.model, trainer.ref_model, tiny_tokenizer, row["rejected"], row["privileged_info"]))
        s.append(-math.log(1 / (1 + math.exp(-0.1 * (c - r)))))
    assert loss == pytest.approx(sum(s) / len(s), rel=1e-4)


@pytest.mark.parametrize("cfg", [
    {}, {"normalize": "none"}, {"normalize": "trajectory"}, {"use_privileged_info": False},
    {"critic_type": "regression"}, {"nll_coef": 0.1, "per_device_train_batch_size": 3},
])
def test_one_training_step_each_variant(cfg, tiny_model, tiny_tokenizer, toy_records, tmp_path):
    rows = pairs_to_rows(build_trajectory_pairs(toy_records))
    trainer = _trainer(tiny_model, tiny_tokenizer, rows, tmp_path, max_steps=1, learning_rate=1e-3, **cfg)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    out = trainer.train()
    assert math.isfinite(out.training_loss)
    changed = any(not torch.equal(before[n], p) for n, p in trainer.model.named_parameters() if n in before)
    assert changed
    trainer.save_model(str(tmp_path / "saved"))
    assert any((tmp_path / "saved").iterdir())


@pytest.mark.parametrize("critic_type", ["logratio", "regression"])
def test_seed_decides_the_adapter_s_and_the_head_s_initial_weights(critic_type, tiny_tokenizer, toy_records,
                                                                     tmp_path):
    """--seed decides the LoRA adapter's (and the regression head's) random start, whatever the
    process's torch state was before: two critics of one seed start equal, of two seeds not."""
    from peft import LoraConfig
    from tiny_model import build_tiny_model

    rows = pairs_to_rows(build_trajectory_pairs(toy_records))

    def start(seed: int, noise: int) -> dict[str, torch.Tensor]:
        torch.manual_seed(noise)  # whatever ran in this process before
        model = build_tiny_model(tiny_tokenizer, seed=0)
        args = CriticConfig(output_dir=str(tmp_path / f"c{seed}-{noise}"), use_cpu=True, report_to="none",
                            save_strategy="no", seed=seed, critic_type=critic_type)
        trainer = CriticTrainer(model=model, args=args, train_dataset=rows, processing_class=tiny_tokenizer,
                                peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}

    a, b, c = start(7, noise=1), start(7, noise=2), start(8, noise=1)
    assert a.keys() == b.keys() and any("lora_A" in n for n in a)
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert any(not torch.equal(a[n], c[n]) for n in a)
    if critic_type == "regression":
        assert any("value_head" in n for n in a)


def test_critic_accuracy_improves_on_separable_toy_set(tiny_model, tiny_tokenizer, toy_records, tmp_path):
    pairs = build_trajectory_pairs(toy_records)
    train, held = split_by_task(pairs, 0.34, seed=0)
    # Swap: the held-out tasks need the same separable structure; they have it by construction.
    trainer = _trainer(tiny_model, tiny_tokenizer, pairs_to_rows(train), tmp_path,
                       eval_rows=pairs_to_rows(held), num_train_epochs=6, learning_rate=3e-3,
                       per_device_train_batch_size=4, beta=1.0)
    # A fresh critic equals its reference: every score is 0, accuracy 0 (ties are not wins).
    assert trainer.pairwise_accuracy() == 0.0
    trainer.train()
    assert trainer.pairwise_accuracy() == 1.0
    metrics = trainer.evaluate()
    assert metrics["eval_accuracy"] == 1.0 and metrics["eval_margin"] > 0


def test_best_rule_when_no_trajectory_succeeds():
    t0, t1 = make_task(0), make_task(1)
    recs = [make_traj(t0, False, 0.4), make_traj(t0, False, 0.1), make_traj(t0, False, 0.4, 1),
            make_traj(t1, False, 0.0), make_traj(t1, False, 0.0, 1)]  # all-zero task: nothing to prefer
    assert build_trajectory_pairs(recs) == []  # the paper's rule needs a success
    pairs = build_trajectory_pairs(recs, rule="best")
    assert len(pairs) == 2 and all(p["chosen"]["reward"] == 0.4 and p["rejected"]["reward"] == 0.1 for p in pairs)
    # A success in the task: "best" is exactly the paper's rule there.
    with_success = [*recs, make_traj(t0, True)]
    assert len(build_trajectory_pairs(with_success, rule="best")) == len(build_trajectory_pairs(with_success)) == 3
    # An explicit threshold counts partial credit as success.
    assert len(build_trajectory_pairs(recs, success_threshold=0.4)) == 2
