"""The trained critic's per-turn advantages of one dialogue, for whoever reads a critic (the
viewer's step-level credit, the GRPO critic reward, the tests).

A(o_t, a_t, c) and how it is computed are step 3 of :mod:`sweet_agent.sweet_rl.algorithm`; this
applies it to one dialogue with either kind of critic (log-ratio or regression head). Where each
turn's tokens sit comes from the chat template (:mod:`sweet_agent.training_data.spans`).
"""

from __future__ import annotations

from typing import Any

import torch

from colbench_gym.protocol import Messages
from sweet_agent.sweet_rl.algorithm import aggregate_turns, token_logratios, with_privileged
from sweet_agent.training_data.spans import assistant_token_spans, spans_to_turn_ids


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
