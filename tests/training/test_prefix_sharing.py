"""The candidates of a turn share their prompt: the critic and its reference compute it once and
score every candidate from its key/value cache (``score_candidates(share_prefix=True)``, the
default; ``train-actor --score_shared_prefix``). Same scores as scoring each whole sequence, to
1e-4 in fp32, on every scoring path; and the models really read the prompt once."""

from __future__ import annotations

import pytest

from sweet_agent.actor import candidates as C
from sweet_agent.sweet_rl import logprobs
from sweet_agent.sweet_rl.algorithm import candidate_logprobs, score_candidates, with_privileged
from sweet_agent.sweet_rl.logprobs import _shared_length

BEFORE = [{"role": "system", "content": "You help a user write a function."},
          {"role": "user", "content": "Write f(x) for my shop, please; it has a rate that I know."},
          {"role": "assistant", "content": "What is the rate?"},
          {"role": "user", "content": "The rate is fifteen percent."}]
CANDS = ["What should it return?", "I WANT TO ANSWER: def f(x): return x * 0.15", "no",
         "maybe maybe yes " * 5, "Is x a price in dollars? And should I round?"]
PRIV = "def f(x):\n    return round(x * 0.15, 2)\n"


def _close(a, b):
    assert len(a) == len(b)
    assert max(abs(x - y) for x, y in zip(a, b)) < 1e-4, (a, b)


@pytest.mark.parametrize("batch_size", [16, 2])
@pytest.mark.parametrize("normalize", ["turn", "none"])
def test_critic_ref_scores_equal_whole_sequences(tiny_model, tiny_ref_model, tiny_tokenizer, batch_size, normalize):
    kw = dict(normalize=normalize, batch_size=batch_size)
    shared = score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=True, **kw)
    whole = score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=False, **kw)
    _close(shared, whole)
    assert len(set(round(v, 6) for v in whole)) > 1  # the candidates are told apart at all


def test_release_score_and_logprobs_equal_whole_sequences(tiny_model, tiny_ref_model, tiny_tokenizer):
    kw = dict(step_score="release", policy=tiny_ref_model)
    _close(score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=True, **kw),
           score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=False, **kw))
    _close(candidate_logprobs(tiny_model, tiny_tokenizer, BEFORE, CANDS, None, share_prefix=True),
           candidate_logprobs(tiny_model, tiny_tokenizer, BEFORE, CANDS, None, share_prefix=False))


def test_peft_critic_with_adapters_off_as_reference(tiny_model, tiny_tokenizer):
    from peft import LoraConfig, get_peft_model

    critic = get_peft_model(tiny_model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0,
                                                   init_lora_weights=False))
    shared = score_candidates(critic, None, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=True)
    whole = score_candidates(critic, None, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=False)
    _close(shared, whole)
    assert any(abs(v) > 1e-3 for v in whole)  # the adapter moves the critic away from its base


def test_lm_head_in_pieces_with_a_prefix(tiny_model, tiny_ref_model, tiny_tokenizer, monkeypatch):
    long = ["word " * 150, "I WANT TO ANSWER: " + "x = 1\n" * 60]  # > 128 scored tokens: the head runs in pieces
    calls = []
    orig = logprobs._piece_logprobs
    monkeypatch.setattr(logprobs, "_piece_logprobs", lambda *a: calls.append(1) or orig(*a))
    shared = score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, long, PRIV, share_prefix=True)
    assert calls  # the piecewise head ran with the cache
    _close(shared, score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, long, PRIV, share_prefix=False))


def _tokens_read(model):
    seen = []
    handle = model.register_forward_pre_hook(lambda m, a, kw: seen.append(int(kw["input_ids"].numel())),
                                             with_kwargs=True)
    return seen, handle


def test_the_prompt_is_read_once_per_model(tiny_model, tiny_ref_model, tiny_tokenizer):
    views = [with_privileged([*BEFORE, {"role": "assistant", "content": c}], PRIV) for c in CANDS]
    ids, _ = logprobs.last_turn_batch(tiny_tokenizer, views, "cpu")[1:3]
    prefix = logprobs.last_turn_batch(tiny_tokenizer, views, "cpu", share_prefix=True)[0]
    assert prefix is not None and prefix.shape[1] > 40  # system + privileged info + dialogue
    counts = {}
    for share in (True, False):
        seen_c, hc = _tokens_read(tiny_model)
        seen_r, hr = _tokens_read(tiny_ref_model)
        try:
            score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=share)
        finally:
            hc.remove()
            hr.remove()
        counts[share] = (seen_c, seen_r)
    shared_c, shared_r = counts[True]
    whole_c, whole_r = counts[False]
    # shared: one forward of the prompt (1 row), then one of the candidates' rest (5 rows)
    assert shared_c[0] == prefix.shape[1] and len(shared_c) == 2 and shared_r[0] == prefix.shape[1]
    # whole: one forward of 5 padded rows, each holding the prompt again
    assert len(whole_c) == 1 and whole_c[0] == ids.numel()
    assert sum(shared_c) < whole_c[0] / 2


def test_a_model_without_a_repeatable_cache_scores_whole_sequences(tiny_model, tiny_ref_model, tiny_tokenizer,
                                                                   monkeypatch):
    monkeypatch.setattr(logprobs, "prefix_cache", lambda *a: None)
    _close(score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=True),
           score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV, share_prefix=False))


def test_shared_length_by_hand():
    # rows share [1, 2, 3]; the first scored token is at index 3 in the shortest-scored row:
    # the prefix ends before its predecessor (index 2), whose logits predict it
    seqs = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [1, 2, 3, 4, 7, 7]]
    turns = [[0, 0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0, 1, 1]]
    assert _shared_length(seqs, turns) == 2
    assert _shared_length([[1, 2], [3, 4]], [[0, 1], [0, 1]]) == 0  # nothing in common
    assert _shared_length([[5, 1, 2, 3]], [[0, 0, 0, 1]]) == 2  # one row: all but the scored token's predecessor


def test_the_flag_reaches_the_stage(tiny_critic, tiny_model, tiny_tokenizer, monkeypatch):
    from sweet_agent.actor.candidates import build_step_pairs
    from sweet_agent.actor.config import StepPairConfig

    seen = []
    orig = C.score_candidates
    monkeypatch.setattr(C, "score_candidates", lambda *a, **kw: seen.append(kw["share_prefix"]) or orig(*a, **kw))
    rec = {"task": {"problem_description": "Write f(x).", "ground_truth": PRIV, "test_cases": {"test1": "f(1)"}},
           "dialogue_history": [*BEFORE[1:], {"role": "assistant", "content": "I WANT TO ANSWER: def f(x): 1"}],
           "answer": "def f(x): 1", "reward": 0.0}
    for share in (True, False):
        build_step_pairs([rec], tiny_model, tiny_tokenizer, tiny_critic,
                         StepPairConfig(num_candidates=2, max_new_tokens=4, score_shared_prefix=share), seed=0)
    assert seen and set(seen[: len(seen) // 2]) == {True} and set(seen[len(seen) // 2:]) == {False}


def test_the_critic_benchmark_reports_the_arithmetic_floor(tiny_critic, tiny_tokenizer, toy_records):
    """``bench_step_pairs.py --critic-scaling`` prints, beside the measured ratio, the ratio of the
    tokens a scorer with the prompt computed once must run (n candidates against one): the floor
    no compute-bound scorer beats. A longer prompt lowers it (the shared part weighs more)."""
    from sweet_agent.actor.config import StepPairConfig
    from tests.benchmark_modules import load_benchmark

    bench = load_benchmark("bench_step_pairs")
    turns = C.stage_turns(toy_records, StepPairConfig(num_candidates=4))[:1]
    floors = {}
    for prompt_tokens in (0, 400):
        rows = bench.critic_scaling(tiny_critic, tiny_tokenizer, turns, toy_records, 4, 12, prompt_tokens, 1)
        shared = rows[0]
        assert shared["ratio_to_floor"] == pytest.approx(shared["ratio"] / shared["floor"])
        assert 1 < shared["floor"] < 4 and "floor" not in rows[1]
        floors[prompt_tokens] = shared["floor"]
    assert floors[400] < floors[0]
