"""The actor stage: top/bottom-half pair rule, batched sampling, critic scoring, one DPO step."""

from __future__ import annotations

import math
import random

import pytest
import torch

from sweet_agent.actor.candidates import build_step_pairs, sample_candidates
from sweet_agent.actor.config import ActorConfig, StepPairConfig
from sweet_agent.actor.trainer import make_dpo_trainer
from sweet_agent.critic.advantages import turn_advantages
from sweet_agent.sweet_rl.algorithm import score_candidates, select_pairs


def test_pairs_chosen_from_top_half_rejected_from_bottom_half():
    cands = [f"c{i}" for i in range(16)]
    scores = [float(i) for i in range(16)]
    random.Random(1).shuffle(scores)
    top = {i for i in range(16) if scores[i] >= 8}
    seen_c, seen_r = set(), set()
    for seed in range(50):
        for c, r in select_pairs(cands, scores, pairs_per_turn=3, rng=random.Random(seed)):
            assert c in top and r not in top
            seen_c.add(c), seen_r.add(r)
    assert seen_c == top and seen_r == set(range(16)) - top  # chosen at random across the half
    pairs = select_pairs(cands, scores, pairs_per_turn=200)
    assert len(pairs) == 64 and len(set(pairs)) == 64  # distinct, capped at 8 × 8


def test_pairs_skip_identical_texts_and_odd_counts():
    assert select_pairs(["a", "a", "a", "a"], [1, 2, 3, 4], 2) == []
    pairs = select_pairs(["a", "b", "c"], [3.0, 2.0, 1.0], 10)
    assert set(pairs) == {(0, 1), (0, 2)}  # top half = 1 of 3


def test_sampling_is_one_generate_call(tiny_model, tiny_tokenizer):
    calls = []
    orig = tiny_model.generate
    tiny_model.generate = lambda *a, **k: calls.append(k["num_return_sequences"]) or orig(*a, **k)
    conv = [{"role": "user", "content": "Write f(x)."}]
    out = sample_candidates(tiny_model, tiny_tokenizer, conv, n=6, max_new_tokens=5, seed=0)
    assert calls == [6] and len(out) == 6 and all(isinstance(t, str) for t in out)
    assert len(set(out)) > 1  # sampled, not greedy copies


def test_candidate_scores_equal_turn_advantages(tiny_model, tiny_ref_model, tiny_tokenizer):
    before = [{"role": "user", "content": "Write f(x)."}]
    cands = ["What should it return?", "I WANT TO ANSWER: def f(x): return 1", "no"]
    got = score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, before, cands, "def f(x): return 1")
    want = [turn_advantages(tiny_model, tiny_ref_model, tiny_tokenizer,
                            [*before, {"role": "assistant", "content": c}], "def f(x): return 1")[0] for c in cands]
    assert got == pytest.approx(want, abs=1e-5)


def test_step_pairs_and_one_dpo_step(tiny_critic, tiny_tokenizer, toy_records, tmp_path):
    from tiny_model import build_tiny_model

    policy = build_tiny_model(tiny_tokenizer, seed=2)
    rows = build_step_pairs(toy_records[:3], policy, tiny_tokenizer, tiny_critic,
                            StepPairConfig(num_candidates=4, pairs_per_turn=1, turn_fraction=0.5, max_new_tokens=6))
    assert 1 <= len(rows) <= 3
    for row in rows:
        assert row["chosen_score"] >= row["rejected_score"]
        assert row["prompt"][-1]["role"] == "user" and row["chosen"][0]["role"] == "assistant"
    args = ActorConfig(output_dir=str(tmp_path / "actor"), use_cpu=True, bf16=False, max_steps=1,
                       per_device_train_batch_size=2, learning_rate=1e-3, save_strategy="no", logging_steps=1)
    assert args.loss_type == ["sigmoid", "sft"] and args.loss_weights == [1.0, 0.01] and args.beta == 0.1
    trainer = make_dpo_trainer(policy, tiny_tokenizer, rows, args)
    before = {n: p.detach().clone() for n, p in policy.named_parameters()}
    out = trainer.train()
    assert math.isfinite(out.training_loss)
    assert any(not torch.equal(before[n], p) for n, p in policy.named_parameters())


def test_actor_config_validates():
    with pytest.raises(ValueError, match="num_candidates"):
        ActorConfig(output_dir="/tmp/x", num_candidates=1, bf16=False)
