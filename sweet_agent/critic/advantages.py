"""SWEET-RL's step-level advantage: the critic's per-turn token-mean log-ratio.

A(o_t, a_t, c) = (1/L_t) Σ_l [log π_θ(a_t^l | o_t, c, a_t^{<l}) − log π_ref(a_t^l | o_t, c, a_t^{<l})]

WHY one forward pass: every agent turn of a trajectory is a span of the same token sequence
(privileged info + dialogue), so a single causal forward per model scores every turn at once.
Scoring each turn with its own prefix (what a naive port does) costs one pass per turn and
re-reads the shared prefix T times. Spans come from the chat template itself — the
``{% generation %}`` assistant mask when the template has one, otherwise by rendering message
prefixes — never from searching the text for role headers, which breaks on any template change
or on a dialogue that happens to contain a header string.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any

import torch

from colbench_gym.protocol import Messages

#: How per-token log-ratios become a trajectory score (paper: "turn").
#:   turn       — mean over each turn's tokens, summed over turns (the paper's Eq.)
#:   none       — sum over all agent tokens (ablation: no per-turn normalisation)
#:   trajectory — mean over all agent tokens of the trajectory (what the public release computes)
NORMALIZATIONS = ("turn", "none", "trajectory")

PRIVILEGED_HEADER = (
    "Training-time information (hidden from the agent): the reference solution of this task.\n"
)

_GENERATION_RE = re.compile(r"{%-?\s*generation\s*-?%}")


class SpanError(ValueError):
    """The chat template does not let us locate assistant turns in the token sequence."""


def with_privileged(messages: Messages, privileged_info: str | None,
                    header: str = PRIVILEGED_HEADER) -> Messages:
    """Place the privileged information before the dialogue, as (part of) the system message."""
    messages = [dict(m) for m in messages]
    if privileged_info is None:
        return messages
    block = f"{header}{privileged_info}"
    if messages and messages[0]["role"] == "system":
        messages[0]["content"] = f"{block}\n\n{messages[0]['content']}"
        return messages
    return [{"role": "system", "content": block}, *messages]


def _runs(mask: Sequence[int]) -> list[tuple[int, int]]:
    runs, start = [], None
    for i, m in enumerate(list(mask) + [0]):
        if m and start is None:
            start = i
        elif not m and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _render(tokenizer, messages: Messages, add_generation_prompt: bool = False, **kw) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False,
                                         add_generation_prompt=add_generation_prompt, **kw)


def assistant_token_spans(tokenizer, messages: Messages,
                          chat_template_kwargs: dict[str, Any] | None = None,
                          ) -> tuple[list[int], list[tuple[int, int]]]:
    """Tokenize a conversation and return ``(input_ids, spans)``, one ``[start, end)`` per
    assistant message, located through the chat template.

    With a template that marks assistant content with ``{% generation %}`` the tokenizer's own
    assistant mask is used. Otherwise each span is found by rendering the conversation up to the
    turn (with the generation prompt) and through the turn; the rendered prefixes must be
    prefixes of the full rendering, which holds for ordinary templates (ChatML/Qwen, Llama 3,
    Mistral...). The end-of-turn token is part of the span (the model emits it).
    """
    kw = dict(chat_template_kwargs or {})
    n_assistant = sum(m["role"] == "assistant" for m in messages)
    template = tokenizer.chat_template or ""
    if isinstance(template, str) and _GENERATION_RE.search(template):
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                            return_assistant_tokens_mask=True, **kw)
        runs = _runs(out["assistant_masks"])
        if len(runs) == n_assistant:
            return list(out["input_ids"]), runs
        # Two adjacent assistant messages merge into one run: fall through to prefix rendering.

    full = _render(tokenizer, messages, **kw)
    enc = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    eos = tokenizer.eos_token
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        before = _render(tokenizer, messages[:i], add_generation_prompt=True, **kw) if i else ""
        through = _render(tokenizer, messages[: i + 1], **kw)
        if not (full.startswith(before) and full.startswith(through)):
            raise SpanError(
                f"the chat template renders assistant message {i} differently inside the whole "
                "conversation than on its own (e.g. it drops earlier reasoning), so its tokens cannot "
                "be located; use a template with {% generation %} markers or one that renders prefixes "
                "consistently")
        start_c, end_c = len(before), len(through)
        if eos and (k := full.rfind(eos, start_c, end_c)) >= 0:
            end_c = k + len(eos)  # stop after the end-of-turn token, not the separator after it
        toks = [j for j, (a, b) in enumerate(offsets) if b > a and start_c <= a < end_c]
        if not toks:
            raise SpanError(f"assistant message {i} has no tokens in the rendered conversation")
        spans.append((toks[0], toks[-1] + 1))
    return list(enc["input_ids"]), spans


def spans_to_turn_ids(length: int, spans: Sequence[tuple[int, int]]) -> list[int]:
    """Label each token with its assistant turn number (1-based), 0 elsewhere."""
    ids = [0] * length
    for k, (s, e) in enumerate(spans, 1):
        for j in range(s, min(e, length)):
            ids[j] = k
    return ids


@contextlib.contextmanager
def _reference(model, ref_model):
    """Yield the reference model; for a PEFT model without one, the model with adapters off."""
    if ref_model is not None:
        yield ref_model
        return
    if hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield model
        return
    raise ValueError("turn_advantages needs a ref_model (the frozen initial critic) unless the critic is a "
                     "PEFT model, whose base (adapters disabled) is then the reference")


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   target_mask: torch.Tensor) -> torch.Tensor:
    """log π(x_j | x_<j) at every position where ``target_mask`` is set (0 elsewhere).

    One forward pass; the LM head runs only on the positions some row needs
    (``logits_to_keep`` with indices), so memory does not scale with vocab × full length.
    """
    positions = target_mask.any(dim=0).nonzero(as_tuple=True)[0]
    if positions.numel() == 0:
        return torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    if int(positions[0]) == 0:
        raise ValueError("a scored token cannot be the first token of the sequence (nothing predicts it)")
    out = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                logits_to_keep=positions - 1)
    logits = out.logits.float()
    if logits.shape[1] != positions.numel():  # model ignored logits_to_keep: slice ourselves
        logits = logits[:, positions - 1]
    logps = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, positions].unsqueeze(-1)).squeeze(-1)
    full = torch.zeros(input_ids.shape, dtype=logps.dtype, device=input_ids.device)
    full[:, positions] = logps
    return full * target_mask.to(full.dtype)


def token_logratios(model, ref_model, input_ids, attention_mask, target_mask) -> torch.Tensor:
    """Per-token log π_θ − log π_ref on ``target_mask`` (the reference runs without grad)."""
    policy = token_logprobs(model, input_ids, attention_mask, target_mask)
    with torch.no_grad(), _reference(model, ref_model) as ref:
        reference = token_logprobs(ref, input_ids, attention_mask, target_mask)
    return policy - reference


def aggregate_turns(per_token: torch.Tensor, turn_ids: torch.Tensor, num_turns: int,
                    normalize: str = "turn") -> tuple[torch.Tensor, torch.Tensor]:
    """Per-turn values ``[B, K]`` and trajectory scores ``[B]`` from per-token log-ratios.

    ``turn``: per-turn token means, summed. ``none``: per-turn sums, summed. ``trajectory``: the
    token mean over all agent tokens (per-turn values are then each turn's share of it).
    """
    if normalize not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {normalize!r}")
    B = per_token.shape[0]
    K = max(int(num_turns), 1)
    onehot = torch.nn.functional.one_hot(turn_ids.long().clamp(min=0), K + 1)[..., 1:].to(per_token.dtype)
    sums = torch.einsum("bt,btk->bk", per_token, onehot)
    counts = onehot.sum(dim=1)
    if normalize == "turn":
        per_turn = sums / counts.clamp(min=1)
    elif normalize == "none":
        per_turn = sums
    else:
        total = counts.sum(dim=1, keepdim=True).clamp(min=1)
        per_turn = sums / total
    per_turn = per_turn * (counts > 0).to(per_turn.dtype)
    return per_turn, per_turn.sum(dim=1).reshape(B)


def turn_advantages(model, ref_model, tokenizer, messages: Messages, privileged_info: str | None = None,
                    normalize: str = "turn", chat_template_kwargs: dict[str, Any] | None = None,
                    ) -> list[float]:
    """One advantage per assistant message of ``messages``, scored in one pass per model.

    ``model`` is the trained critic, ``ref_model`` the frozen reference (``None`` for a PEFT
    critic: the base model with adapters off). ``privileged_info`` (the reference solution) is
    placed before the dialogue for both models. A :class:`RegressionCritic` is accepted too (its
    head gives the values; ``ref_model`` is ignored).
    """
    from sweet_agent.critic.regression import RegressionCritic

    msgs = with_privileged(messages, privileged_info)
    ids, spans = assistant_token_spans(tokenizer, msgs, chat_template_kwargs)
    if not spans:
        return []
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)
    attention = torch.ones_like(input_ids)
    turn_ids = torch.tensor([spans_to_turn_ids(len(ids), spans)], device=device)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            if isinstance(model, RegressionCritic):
                values = model(input_ids=input_ids, attention_mask=attention, turn_ids=turn_ids,
                               num_turns=len(spans))
                return [float(v) for v in values[0]]
            lr = token_logratios(model, ref_model, input_ids, attention, turn_ids > 0)
            per_turn, _ = aggregate_turns(lr, turn_ids, len(spans), normalize)
    finally:
        model.train(was_training)
    return [float(v) for v in per_turn[0]]
