"""Where each agent turn sits in a tokenized conversation: ``[start, end)`` token spans found
through the chat template.

Every trainer that scores agent tokens reads these spans: the critic (one span per turn of a
trajectory, scored in one forward pass), multi-turn DPO (only the agent's tokens count in its
completion mask) and the actor's candidate scoring. Spans come from the chat template itself —
the ``{% generation %}`` assistant mask when the template has one, otherwise by rendering message
prefixes — never from searching the text for role headers, which breaks on any template change or
on a dialogue that happens to contain a header string.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from colbench_gym.protocol import Messages

_GENERATION_RE = re.compile(r"{%-?\s*generation\s*-?%}")


class SpanError(ValueError):
    """The chat template does not let us locate assistant turns in the token sequence."""


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
