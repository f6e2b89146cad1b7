"""turn_advantages against a hand computation, and span location through the chat template."""

from __future__ import annotations

import pytest
import torch
from tiny_model import CHATML_TEMPLATE, build_tiny_tokenizer

from sweet_agent.critic.advantages import aggregate_turns, turn_advantages, with_privileged
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
