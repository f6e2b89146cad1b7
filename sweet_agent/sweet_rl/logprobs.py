"""How a causal LM's token log-probabilities are computed for SWEET-RL's scores: the machinery
beneath :mod:`sweet_agent.sweet_rl.algorithm` (which reads as the paper; this reads as memory
and speed).

WHY apart: the algorithm needs "log π(x_j | x_<j) at these tokens" and "these candidates as the
next turn, batched"; doing that at scale needs the LM head in pieces (a frontend trajectory's
logits over a 152k vocabulary are gigabytes), one key/value cache of a turn's prompt shared by
its candidates, and padding that keeps attention on its fast path. None of that is the method.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from typing import Any

import torch
import torch.utils.checkpoint

from colbench_gym.protocol import Messages
from sweet_agent.training_data.spans import assistant_token_spans, spans_to_turn_ids

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


def last_turn_batch(tokenizer, conversations: Sequence[Messages], device, share_prefix: bool = False,
                    ) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(prefix_ids, input_ids, attention_mask, turn_ids)`` of ``conversations`` (each ending in
    the assistant turn to score), right-padded; ``turn_ids`` is 1 on that last turn's tokens (its
    span through the end-of-turn token, located by the chat template), 0 elsewhere.

    With ``share_prefix``, the tokens every row starts with (up to the one before the first
    scored token: its logits predict that token) are cut off into ``prefix_ids`` (``[1, P]``),
    which the scorer computes once for all rows (:func:`token_logprobs`); otherwise
    ``prefix_ids`` is None and the rows are whole."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    seqs, turns = [], []
    for msgs in conversations:
        ids, spans = assistant_token_spans(tokenizer, msgs)
        last = spans[-1:]  # only the last turn is scored
        seqs.append(ids)
        turns.append([1 if t == len(spans) else 0 for t in spans_to_turn_ids(len(ids), spans)] if last else [0] * len(ids))
    cut = _shared_length(seqs, turns) if share_prefix else 0
    prefix = torch.tensor([seqs[0][:cut]], dtype=torch.long, device=device) if cut else None
    seqs, turns = [s[cut:] for s in seqs], [t[cut:] for t in turns]
    T = max(map(len, seqs))
    input_ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    attn = torch.zeros_like(input_ids)
    turn_ids = torch.zeros_like(input_ids)
    for i, (s, t) in enumerate(zip(seqs, turns)):
        input_ids[i, :len(s)] = torch.tensor(s)
        attn[i, :len(s)] = 1
        turn_ids[i, :len(t)] = torch.tensor(t)
    return prefix, input_ids.to(device), attn.to(device), turn_ids.to(device)


def _shared_length(seqs: Sequence[Sequence[int]], turns: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every row shares and may be computed once: the common prefix,
    ending before each row's first scored token's predecessor (whose logits score it)."""
    n = min(map(len, seqs))
    first = seqs[0]
    common = next((j for j in range(n) if any(s[j] != first[j] for s in seqs)), n)
    scored = min((t.index(1) if 1 in t else len(t)) for t in turns)
    return max(0, min(common, scored - 1))


@torch.no_grad()
def last_turn_values(model, tokenizer, conversations: Sequence[Messages], batch_size: int, value,
                     share_prefix: bool = True) -> list[float]:
    """``value(prefix_ids, input_ids, attention_mask, turn_ids) -> [B]`` over batches of
    ``batch_size`` conversations (:func:`last_turn_batch`), with ``model`` in eval mode meanwhile."""
    device = next(model.parameters()).device
    out: list[float] = []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(conversations), batch_size):
            batch = last_turn_batch(tokenizer, conversations[start:start + batch_size], device, share_prefix)
            out += [float(v) for v in value(*batch)]
    finally:
        model.train(was_training)
    return out
