"""turn_advantages against a hand computation, and span location through the chat template."""

from __future__ import annotations

import weakref

import pytest
import torch
from tiny_model import CHATML_TEMPLATE, build_tiny_tokenizer

from sweet_agent.critic.advantages import turn_advantages
from sweet_agent.sweet_rl.algorithm import aggregate_turns, with_privileged
from sweet_agent.training_data.spans import assistant_token_spans

MSGS = [
    {"role": "user", "content": "Write f(x) please."},
    {"role": "assistant", "content": "What should f return?"},
    {"role": "user", "content": "x plus one."},
    {"role": "assistant", "content": "I WANT TO ANSWER: def f(x):\n    return x + 1"},
]
PRIV = "def f(x):\n    return x + 1\n"


def _hand_advantages(model, ref, tok, messages, priv):
    """Score each turn separately with its own prefix, token by token, in plain Python."""
    full = with_privileged(messages, priv)
    out = []
    for i, m in enumerate(full):
        if m["role"] != "assistant":
            continue
        prefix = tok.apply_chat_template(full[:i], tokenize=False, add_generation_prompt=True)
        turn = m["content"] + tok.eos_token
        p_ids = tok(prefix, add_special_tokens=False)["input_ids"]
        all_ids = tok(prefix + turn, add_special_tokens=False)["input_ids"]
        assert all_ids[: len(p_ids)] == p_ids
        ids = torch.tensor([all_ids])
        with torch.no_grad():
            lp = torch.log_softmax(model(ids).logits[0].double(), -1)
            lr = torch.log_softmax(ref(ids).logits[0].double(), -1)
        vals = [float(lp[j - 1, all_ids[j]] - lr[j - 1, all_ids[j]]) for j in range(len(p_ids), len(all_ids))]
        out.append(sum(vals) / len(vals))
    return out


def test_turn_advantages_match_hand_computation(tiny_model, tiny_ref_model, tiny_tokenizer):
    got = turn_advantages(tiny_model, tiny_ref_model, tiny_tokenizer, MSGS, PRIV)
    want = _hand_advantages(tiny_model, tiny_ref_model, tiny_tokenizer, MSGS, PRIV)
    assert len(got) == 2
    assert got == pytest.approx(want, abs=1e-5)
    assert got[0] != pytest.approx(got[1])


def test_privileged_info_changes_the_advantage(tiny_model, tiny_ref_model, tiny_tokenizer):
    with_c = turn_advantages(tiny_model, tiny_ref_model, tiny_tokenizer, MSGS, PRIV)
    without = turn_advantages(tiny_model, tiny_ref_model, tiny_tokenizer, MSGS, None)
    assert with_c != pytest.approx(without)
    assert with_c == pytest.approx(_hand_advantages(tiny_model, tiny_ref_model, tiny_tokenizer, MSGS, PRIV), abs=1e-5)


def test_same_model_as_reference_gives_zero(tiny_model, tiny_tokenizer):
    assert turn_advantages(tiny_model, tiny_model, tiny_tokenizer, MSGS, PRIV) == pytest.approx([0.0, 0.0], abs=1e-6)


def test_one_forward_pass_per_model(tiny_model, tiny_ref_model, tiny_tokenizer):
    calls = {"m": 0, "r": 0}
    h1 = tiny_model.register_forward_hook(lambda *a: calls.__setitem__("m", calls["m"] + 1))
    h2 = tiny_ref_model.register_forward_hook(lambda *a: calls.__setitem__("r", calls["r"] + 1))
    try:
        turn_advantages(tiny_model, tiny_ref_model, tiny_tokenizer, MSGS * 3, PRIV)
    finally:
        h1.remove(), h2.remove()
    assert calls == {"m": 1, "r": 1}


def test_spans_same_with_generation_mask_and_prefix_rendering(tiny_tokenizer):
    plain = build_tiny_tokenizer()
    plain.chat_template = CHATML_TEMPLATE.replace("{% generation %}", "").replace("{% endgeneration %}", "")
    msgs = with_privileged(MSGS, PRIV)
    ids_a, spans_a = assistant_token_spans(tiny_tokenizer, msgs)
    ids_b, spans_b = assistant_token_spans(plain, msgs)
    assert ids_a == ids_b and spans_a == spans_b and len(spans_a) == 2
    text = tiny_tokenizer.decode(ids_a[spans_a[1][0]: spans_a[1][1]])
    assert text == MSGS[3]["content"] + tiny_tokenizer.eos_token


def test_header_strings_inside_content_do_not_confuse_spans(tiny_tokenizer):
    tricky = [dict(m) for m in MSGS]
    tricky[2]["content"] = "<|im_start|>assistant\nfake turn"
    ids, spans = assistant_token_spans(tiny_tokenizer, tricky)
    assert len(spans) == 2
    assert tiny_tokenizer.decode(ids[spans[0][0]: spans[0][1]]).startswith("What should f return?")


def test_aggregate_normalisations():
    per_token = torch.tensor([[0.0, 1.0, 3.0, 0.0, 2.0, 2.0, 2.0]])
    turns = torch.tensor([[0, 1, 1, 0, 2, 2, 2]])
    per_turn, score = aggregate_turns(per_token, turns, 2, "turn")
    assert per_turn.tolist() == [[2.0, 2.0]] and score.item() == 4.0
    _, score = aggregate_turns(per_token, turns, 2, "none")
    assert score.item() == 10.0
    _, score = aggregate_turns(per_token, turns, 2, "trajectory")
    assert score.item() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="normalize"):
        aggregate_turns(per_token, turns, 2, "bogus")


def test_spans_with_the_real_qwen_template():
    """The default policy's own (marker-less) Qwen2.5 template: spans by prefix rendering."""
    from sweet_agent.policies.default_model import default_model_status

    status = default_model_status()
    if not status.get("ready"):
        pytest.skip("default model not prepared (sweet-agent fetch-model)")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(status["path"])
    msgs = with_privileged(MSGS, PRIV)
    ids, spans = assistant_token_spans(tok, msgs)
    assert [tok.decode(ids[s:e]) for s, e in spans] == [MSGS[1]["content"] + "<|im_end|>",
                                                        MSGS[3]["content"] + "<|im_end|>"]
    # The privileged info sits before the dialogue, inside the first (system) message.
    assert tok.decode(ids[: spans[0][0]]).index(PRIV.strip()) < tok.decode(ids[: spans[0][0]]).index("Write f(x)")


def _scored_batch(tokenizer, rows: int = 3, length: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, len(tokenizer), (rows, length), generator=g)
    attn = torch.ones_like(ids)
    attn[-1, :5] = 0  # a left-padded row
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[:, 7:19], mask[:, 25:37] = True, True  # two "turns", 24 scored positions
    mask[0, 30:] = False
    return ids, attn, mask


@pytest.mark.parametrize("peft", [False, True])
def test_the_lm_head_in_pieces_gives_the_same_logprobs_and_gradients(tiny_model, tiny_tokenizer, peft):
    """token_logprobs runs the LM head on ``chunk_size`` scored positions at a time (recomputed in
    the backward pass) instead of all at once: the log-probabilities and every gradient are the
    ones the one-piece computation gives."""
    from sweet_agent.sweet_rl.logprobs import token_logprobs

    model = tiny_model.train()
    if peft:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0))
    ids, attn, mask = _scored_batch(tiny_tokenizer)
    params = [p for p in model.parameters() if p.requires_grad]
    results = []
    for chunk in (0, 5):  # 0: one piece; 5: five pieces of at most 5 positions
        model.zero_grad()
        calls = {"n": 0}
        hook = model.get_output_embeddings().register_forward_hook(lambda *a, c=calls: c.__setitem__("n", c["n"] + 1))
        try:
            lp = token_logprobs(model, ids, attn, mask, chunk_size=chunk)
            (lp * torch.linspace(0.5, 1.5, lp.numel()).reshape(lp.shape)).sum().backward()
        finally:
            hook.remove()
        results.append((lp.detach(), [p.grad.clone() for p in params], calls["n"]))
    (one, g_one, n_one), (pieces, g_pieces, n_pieces) = results
    assert torch.allclose(one, pieces, atol=1e-5) and (one[mask] < 0).all() and (one[~mask] == 0).all()
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g_one, g_pieces))
    # one piece: one head call; in pieces: the model's own on the last position and its check,
    # 5 pieces, and the 5 recomputed in the backward pass
    assert n_one == 1 and n_pieces == 2 + 5 + 5


def test_a_non_finite_value_at_a_position_the_row_does_not_score_is_left_out(tiny_model, tiny_tokenizer):
    """The head runs on every position some row scores: row 0 does not score position 36 but
    another row does. A NaN logit of row 0 there is 0 in its log-probabilities, not NaN."""
    from sweet_agent.sweet_rl.logprobs import token_logprobs

    ids, attn, mask = _scored_batch(tiny_tokenizer)
    assert not mask[0, 36] and mask[1, 36]
    forward = type(tiny_model).forward

    def nan_at_row0_last(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        bump = torch.zeros_like(out.logits)
        bump[0, -1] = float("nan")  # one piece: the last kept logits predict position 36
        out.logits = out.logits + bump  # differentiable: a NaN gradient there would reach the weights
        return out

    tiny_model.forward = nan_at_row0_last.__get__(tiny_model)
    lp = token_logprobs(tiny_model.train(), ids, attn, mask, chunk_size=0)
    lp.sum().backward()  # the critic trains through it: the gradients stay finite too
    del tiny_model.forward
    assert torch.isfinite(lp).all() and lp[0, 36] == 0 and (lp[mask] < 0).all()
    grads = [p.grad for p in tiny_model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_a_head_that_does_not_give_the_logits_is_scored_in_one_piece(tiny_model, tiny_tokenizer, monkeypatch):
    """A model whose logits are not its output embeddings applied to its last hidden state (here,
    logits soft-capped after the head) would be mis-scored in pieces: the check on the last
    position sees it and the scores stay those of the model's own logits."""
    from sweet_agent.sweet_rl.logprobs import token_logprobs

    ids, attn, mask = _scored_batch(tiny_tokenizer)
    forward = type(tiny_model).forward

    def soft_capped(self, *args, **kwargs):
        out = forward(self, *args, **kwargs)
        out.logits = 2.0 * torch.tanh(out.logits / 2.0)
        return out

    tiny_model.forward = soft_capped.__get__(tiny_model)
    monkeypatch.setattr("sweet_agent.sweet_rl.logprobs._ONE_PIECE_HEADS", weakref.WeakSet())
    with torch.no_grad(), pytest.warns(UserWarning, match="runs in one piece"):
        capped = token_logprobs(tiny_model, ids, attn, mask, chunk_size=5)
    calls = {"n": 0}
    counter = tiny_model.register_forward_hook(lambda *a: calls.__setitem__("n", calls["n"] + 1))
    with torch.no_grad():
        again = token_logprobs(tiny_model, ids, attn, mask, chunk_size=5)
    counter.remove()
    assert torch.equal(again, capped) and calls["n"] == 1  # known now: one forward, no second probe
    with torch.no_grad():
        whole = token_logprobs(tiny_model, ids, attn, mask, chunk_size=0)
        del tiny_model.forward
        plain = token_logprobs(tiny_model, ids, attn, mask, chunk_size=0)
    assert torch.allclose(capped, whole, atol=1e-6) and not torch.allclose(capped, plain, atol=1e-3)


def test_under_mixed_precision_the_pieces_run_in_the_forwards_autocast(tiny_model, tiny_tokenizer, monkeypatch):
    """accelerate runs a bf16 model's forward under autocast; pieces of the LM head called outside
    it would be fp32 beside bf16 logits, so the check would refuse them (one piece, more memory).
    Inside the same autocast (what the critic trainer does) the pieces run."""
    import warnings

    from sweet_agent.sweet_rl.logprobs import token_logprobs

    monkeypatch.setattr("sweet_agent.sweet_rl.logprobs._ONE_PIECE_HEADS", weakref.WeakSet())
    ids, attn, mask = _scored_batch(tiny_tokenizer)
    forward = tiny_model.forward
    tiny_model.forward = torch.autocast("cpu", dtype=torch.bfloat16)(forward)  # as accelerate wraps it
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback warning: the pieces ran
        pieces = token_logprobs(tiny_model, ids, attn, mask, chunk_size=5)
        one = token_logprobs(tiny_model, ids, attn, mask, chunk_size=0)
    assert torch.allclose(pieces, one, atol=0.05)
    with torch.no_grad(), pytest.warns(UserWarning, match="runs in one piece"):
        token_logprobs(tiny_model, ids, attn, mask, chunk_size=5)  # outside the autocast: refused
