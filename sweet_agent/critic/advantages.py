"""SWEET-RL's step-level advantage: the critic's per-turn token-mean log-ratio.

A(o_t, a_t, c) = (1/L_t) Σ_l [log π_θ(a_t^l | o_t, c, a_t^{<l}) − log π_ref(a_t^l | o_t, c, a_t^{<l})]

WHY one forward pass: every agent turn of a trajectory is a span of the same token sequence
(privileged info + dialogue), so a single causal forward per model scores every turn at once.
Scoring each turn with its own prefix (what a naive port does) costs one pass per turn and
re-reads the shared prefix T times. Where each turn's tokens sit comes from the chat template
(:mod:`sweet_agent.training_data.spans`, shared with multi-turn DPO).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from typing import Any

import torch
import torch.utils.checkpoint

from colbench_gym.protocol import Messages
from sweet_agent.training_data.spans import assistant_token_spans, spans_to_turn_ids

#: How per-token log-ratios become a trajectory score (paper: "turn").
#:   turn       — mean over each turn's tokens, summed over turns (the paper's Eq.)
#:   none       — sum over all agent tokens (ablation: no per-turn normalisation)
#:   trajectory — mean over all agent tokens of the trajectory (what the public release computes)
NORMALIZATIONS = ("turn", "none", "trajectory")

PRIVILEGED_HEADER = (
    "Training-time information (hidden from the agent): the reference solution of this task.\n"
)


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


#: Scored positions per piece of the LM head (see :func:`token_logprobs`).
LM_HEAD_CHUNK = 128
#: Heads whose model's logits were not head(last hidden state): scored in one piece from then on
#: (warned about once, when found).
_ONE_PIECE_HEADS: weakref.WeakSet = weakref.WeakSet()


def _output_head(model):
    """The LM head module of ``model`` (through DDP/DeepSpeed ``.module`` and PEFT wrappers), or None."""
    while hasattr(model, "module") and not hasattr(model, "get_output_embeddings"):
        model = model.module
    getter = getattr(model, "get_output_embeddings", None)
    head = getter() if callable(getter) else None
    return head if isinstance(head, torch.nn.Module) else None


def _scored_only(logits: torch.Tensor, scored: torch.Tensor) -> torch.Tensor:
    """``logits`` with a row's unscored positions set to 0. The head runs on every position some
    row scores; a non-finite logit at a position this row does not score would otherwise turn the
    log-softmax's value and gradient into NaN (0 × NaN is NaN)."""
    return logits.masked_fill(~scored.unsqueeze(-1), 0.0)


def _piece_logprobs(head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor,
                    scored: torch.Tensor) -> torch.Tensor:
    logits = _scored_only(head(hidden).float(), scored)
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(dim=-1)


def _cache_name() -> str:
    """What this transformers calls a forward's key/value cache (argument and output field):
    ``cache`` from 5.2x, ``past_key_values`` before (still accepted, with a deprecation warning)."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    return "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"


def prefix_cache(model, prefix_ids: torch.Tensor, rows: int):
    """The key/value cache of ``prefix_ids`` (``[1, P]``) under ``model``, repeated for ``rows``
    rows, or None when the model gives no cache that can be repeated (then the caller scores the
    whole sequences). WHY: the candidates of one turn share their prompt (privileged information +
    dialogue, often 1,000+ tokens against a candidate's ~100); computing it once and reusing it for
    every candidate makes 16 candidates cost little more than one."""
    with torch.no_grad():
        out = model(input_ids=prefix_ids, attention_mask=torch.ones_like(prefix_ids), use_cache=True,
                    logits_to_keep=1)
    cache = getattr(out, _cache_name(), None)
    if cache is None or not callable(getattr(cache, "batch_repeat_interleave", None)):
        return None
    if rows > 1:
        cache.batch_repeat_interleave(rows)
    return cache


def _needs_mask(attention_mask: torch.Tensor) -> bool:
    """False when every row is ones then zeros (right padding, what the critic's batches use): a
    causal model's token never attends to a later position, so the pads change nothing a scored
    token sees, and without a mask the attention kernels take their causal fast path (with a padding
    mask over a cached prefix they materialise it: 2.5x the suffix's time in a CPU probe)."""
    m = attention_mask.bool()
    return bool((m[:, 1:] & ~m[:, :-1]).any())


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   target_mask: torch.Tensor, chunk_size: int = LM_HEAD_CHUNK,
                   prefix_ids: torch.Tensor | None = None) -> torch.Tensor:
    """log π(x_j | x_<j) at every position where ``target_mask`` is set (0 elsewhere).

    ``prefix_ids`` (``[1, P]``, optional): tokens every row continues, not part of ``input_ids``:
    each row is ``prefix_ids + input_ids[row]``. The prefix runs once (:func:`prefix_cache`) and
    the rows read its cache; values are those of the whole sequences (a scored token still cannot
    be a row's first: its prediction is read at the previous position of the row).

    One forward pass; the LM head runs only on the positions some row needs. WHY in pieces: the
    logits of every scored position at once are rows × positions × vocabulary floats, kept for
    the backward pass (a frontend trajectory scores ~1,000 HTML tokens: 4 rows × 1,000 × 152k
    floats is 2.4 GB, and log-softmax and its gradient each add as much; the critic took 18 GB
    of a 23 GB machine and was killed). With more than ``chunk_size`` positions the model returns
    its final hidden states and the head runs on ``chunk_size`` positions at a time, recomputed
    in the backward pass (``torch.utils.checkpoint``), so the peak holds one piece's logits. A
    model whose hidden states do not give its logits through its output embeddings (e.g. logit
    soft-capping) is detected on the last position and scored in one piece.
    """
    positions = target_mask.any(dim=0).nonzero(as_tuple=True)[0]
    if positions.numel() == 0:
        return torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
    if int(positions[0]) == 0:
        raise ValueError("a scored token cannot be the first token of the sequence (nothing predicts it)")
    targets, scored = input_ids[:, positions], target_mask[:, positions].bool()
    cached: dict[str, Any] = {}
    if prefix_ids is not None and prefix_ids.shape[-1] > 0:
        cache = prefix_cache(model, prefix_ids, input_ids.shape[0])
        if cache is None:  # no repeatable cache: the whole sequences, scored as without a prefix
            rows = prefix_ids.expand(input_ids.shape[0], -1)
            full = token_logprobs(model, torch.cat([rows, input_ids], dim=1),
                                  torch.cat([torch.ones_like(rows), attention_mask], dim=1),
                                  torch.cat([torch.zeros_like(rows, dtype=target_mask.dtype), target_mask], dim=1),
                                  chunk_size)
            return full[:, prefix_ids.shape[-1]:]
        attention_mask = torch.cat([torch.ones(input_ids.shape[0], prefix_ids.shape[-1], dtype=attention_mask.dtype,
                                               device=attention_mask.device), attention_mask], dim=1)
        cached = {_cache_name(): cache, "use_cache": True}
    if not _needs_mask(attention_mask):
        attention_mask = None  # causal attention already keeps every scored token from the pads after it
    head = _output_head(model) if chunk_size and positions.numel() > chunk_size else None
    logps = None
    if head is not None and head not in _ONE_PIECE_HEADS:
        out = model(input_ids=input_ids, attention_mask=attention_mask, **({"use_cache": False} | cached),
                    output_hidden_states=True, logits_to_keep=1)
        hidden = out.hidden_states[-1] if getattr(out, "hidden_states", None) else None
        with torch.no_grad():
            same = hidden is not None and out.logits.shape[1] == 1 and torch.allclose(
                head(hidden[:, -1:]).float(), out.logits.float(), rtol=1e-3, atol=1e-3)
        if same:
            hidden = hidden[:, positions - 1]
            del out  # every layer's hidden states: only the last one's scored positions are needed
            pieces = []
            for start in range(0, positions.numel(), chunk_size):
                cut = slice(start, start + chunk_size)
                h, t, m = hidden[:, cut], targets[:, cut], scored[:, cut]
                if torch.is_grad_enabled():
                    pieces.append(torch.utils.checkpoint.checkpoint(_piece_logprobs, head, h, t, m, use_reentrant=False))
                else:
                    pieces.append(_piece_logprobs(head, h, t, m))
            logps = torch.cat(pieces, dim=1)
        else:
            del out, hidden  # not held beside the one-piece forward below
            _ONE_PIECE_HEADS.add(head)
            warnings.warn(f"{type(head).__name__}: the model's logits are not its output embeddings applied to "
                          "its last hidden state; the critic's LM head runs in one piece (more memory). Under "
                          "mixed precision, call it inside the model's autocast (accelerator.autocast())",
                          stacklevel=2)
    if logps is None:
        out = model(input_ids=input_ids, attention_mask=attention_mask, **({"use_cache": False} | cached),
                    logits_to_keep=positions - 1)
        logits = out.logits.float()
        if logits.shape[1] != positions.numel():  # model ignored logits_to_keep: slice ourselves
            logits = logits[:, positions - 1]
        logps = torch.log_softmax(_scored_only(logits, scored), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    full = torch.zeros(input_ids.shape, dtype=logps.dtype, device=input_ids.device)
    full[:, positions] = logps.masked_fill(~scored, 0.0)
    return full


def token_logratios(model, ref_model, input_ids, attention_mask, target_mask,
                    prefix_ids: torch.Tensor | None = None) -> torch.Tensor:
    """Per-token log π_θ − log π_ref on ``target_mask`` (the reference runs without grad);
    ``prefix_ids`` as in :func:`token_logprobs` (each model computes the shared prefix once)."""
    policy = token_logprobs(model, input_ids, attention_mask, target_mask, prefix_ids=prefix_ids)
    with torch.no_grad(), _reference(model, ref_model) as ref:
        reference = token_logprobs(ref, input_ids, attention_mask, target_mask, prefix_ids=prefix_ids)
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
