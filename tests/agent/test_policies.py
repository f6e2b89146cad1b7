"""Policies: batched generation, per-conversation seeds, sampling correctness, clear errors."""

from __future__ import annotations

import math

import pytest

from sweet_agent.policies import load_policy
from sweet_agent.policies.base import PolicyError, SamplingParams, apply_stop, derive_seed
from sweet_agent.policies.transformers_policy import SeededSampler, TransformersPolicy

CONV_A = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Write def f(x): return x + 1"}]
CONV_B = [{"role": "user", "content": "What are the plan names and their prices?"}]
CONV_C = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "yes"}, {"role": "user", "content": "no"}]


def test_batch_returns_one_generation_per_conversation_in_order(tiny_policy):
    sp = SamplingParams(max_new_tokens=12)
    gens = tiny_policy.generate([CONV_A, CONV_B, CONV_C], sp, seeds=[1, 2, 3])
    assert len(gens) == 3
    for g in gens:
        assert isinstance(g.text, str)
        assert 1 <= g.completion_tokens <= 12
        assert g.prompt_tokens > 0
        assert g.finish_reason in ("stop", "length")
    # prompt token counts follow the conversations, not the (length-sorted) batch order
    assert gens[0].prompt_tokens == len(tiny_policy.tokenizer(tiny_policy.render(CONV_A), add_special_tokens=False)["input_ids"])


def test_seed_fixes_text_whatever_the_batch(tiny_policy):
    sp = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=1.0)
    together = tiny_policy.generate([CONV_A, CONV_B, CONV_C], sp, seeds=[11, 22, 33])
    alone_b = tiny_policy.generate([CONV_B], sp, seeds=[22])[0]
    reordered = tiny_policy.generate([CONV_C, CONV_B], sp, seeds=[33, 22])
    assert alone_b.text == together[1].text
    assert reordered[1].text == together[1].text and reordered[0].text == together[2].text
    # a small batch size (several chunks) changes nothing either
    chunked = TransformersPolicy(tiny_policy.model, tiny_policy.tokenizer, max_batch_size=1)
    assert [g.text for g in chunked.generate([CONV_A, CONV_B, CONV_C], sp, seeds=[11, 22, 33])] == \
        [g.text for g in together]


def test_different_seeds_differ_and_greedy_is_deterministic(tiny_policy):
    sp = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=1.0)
    texts = {tiny_policy.generate([CONV_B], sp, seeds=[s])[0].text for s in range(6)}
    assert len(texts) >= 4  # a random 400-token model sampled at T=1 hardly ever repeats itself
    greedy = SamplingParams(max_new_tokens=16, temperature=0)
    outs = {tiny_policy.generate([CONV_B], greedy, seeds=[s])[0].text for s in range(3)}
    assert len(outs) == 1


def test_max_new_tokens_and_stop_strings(tiny_policy):
    g = tiny_policy.generate([CONV_A], SamplingParams(max_new_tokens=5, temperature=1.0), seeds=[0])[0]
    assert g.completion_tokens <= 5
    full = tiny_policy.generate([CONV_A], SamplingParams(max_new_tokens=24, temperature=1.0), seeds=[5])[0].text
    assert len(full) > 4
    stop = full[3:5]
    cut = tiny_policy.generate([CONV_A], SamplingParams(max_new_tokens=24, temperature=1.0, stop=(stop,)), seeds=[5])[0]
    assert cut.text == full[: full.find(stop)]
    assert cut.finish_reason == "stop"
    assert apply_stop("abcSTOPdef", ["STOP"]) == ("abc", True)


def test_seeded_sampler_matches_softmax_with_top_k_and_top_p():
    """Gumbel-max with per-row generators is an exact sampler of softmax(logits / T), after the
    top-k / top-p cut: check the empirical frequencies over many seeds."""
    import torch

    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0]])
    n = 4000

    def freqs(sp: SamplingParams) -> list[float]:
        counts = [0] * 5
        for s in range(n):
            out = SeededSampler(sp, [s])(None, logits.clone())
            counts[int(out.argmax())] += 1
        return [c / n for c in counts]

    f = freqs(SamplingParams(temperature=1.0, top_p=1.0))
    p = torch.softmax(logits[0], -1).tolist()
    for got, want in zip(f, p):
        assert abs(got - want) < 0.03, (f, p)
    f = freqs(SamplingParams(temperature=0.5, top_p=1.0, top_k=2))
    p2 = torch.softmax(logits[0, :2] / 0.5, -1).tolist()
    assert f[2:] == [0.0, 0.0, 0.0] and abs(f[0] - p2[0]) < 0.03
    # top_p=0.6 keeps the smallest prefix with mass >= 0.6: tokens 0 and 1 (0.55 + 0.20)
    f = freqs(SamplingParams(temperature=1.0, top_p=0.6))
    assert f[2:] == [0.0, 0.0, 0.0] and 0 < f[1] < f[0]
    assert math.isclose(sum(f), 1.0)


def test_bad_inputs_get_clear_errors(tiny_policy, tiny_model_dir):
    with pytest.raises(PolicyError, match="role"):
        tiny_policy.generate([[{"role": "robot", "content": "x"}]])
    with pytest.raises(PolicyError, match="non-empty list"):
        tiny_policy.generate([[]])
    with pytest.raises(PolicyError, match="seeds"):
        tiny_policy.generate([CONV_A, CONV_B], seeds=[1])
    with pytest.raises(ValueError, match="temperature"):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)
    tok = tiny_policy.tokenizer
    saved, tok.chat_template = tok.chat_template, None
    try:
        with pytest.raises(PolicyError, match="chat template"):
            TransformersPolicy(tiny_policy.model, tok)
    finally:
        tok.chat_template = saved


def test_load_policy_by_path_and_call(tiny_model_dir):
    pol = load_policy(str(tiny_model_dir), dtype="float32", quiet=True)
    assert isinstance(pol, TransformersPolicy)
    assert isinstance(pol(CONV_B, SamplingParams(max_new_tokens=4), seed=3), str)
    assert str(next(pol.model.parameters()).dtype) == "torch.float32"
    bf = load_policy(str(tiny_model_dir), dtype="bfloat16", quiet=True)
    assert str(next(bf.model.parameters()).dtype) == "torch.bfloat16"


def test_derive_seed_is_stable():
    assert derive_seed(0, "policy", 3, 1, 2) == derive_seed(0, "policy", 3, 1, 2)
    assert derive_seed(0, "policy", 3, 1, 2) != derive_seed(0, "policy", 3, 1, 3)
    assert 0 <= derive_seed("x") < 2**63


def test_top_p_fast_path_equals_the_full_sort(monkeypatch):
    """The top-k shortcut for top-p must keep exactly the nucleus a full sort keeps."""
    import torch

    torch.manual_seed(0)
    scores = torch.randn(6, 3000) * torch.tensor([[0.5], [1.0], [2.0], [4.0], [8.0], [0.1]])

    def reference(s, p):
        sv, order = torch.sort(s, descending=True, dim=-1)
        probs = torch.softmax(sv, -1)
        keep = torch.zeros_like(s, dtype=torch.bool).scatter(-1, order, (probs.cumsum(-1) - probs) < p)
        return s.masked_fill(~keep, float("-inf"))

    for p in (0.5, 0.9, 0.99):
        want = reference(scores, p)
        assert torch.equal(SeededSampler._top_p(scores, p), want)  # mixed: some rows need the fallback
        monkeypatch.setattr(SeededSampler, "TOP_P_CANDIDATES", 3)
        assert torch.equal(SeededSampler._top_p(scores, p), want)  # every row takes the full sort
        monkeypatch.setattr(SeededSampler, "TOP_P_CANDIDATES", 512)
