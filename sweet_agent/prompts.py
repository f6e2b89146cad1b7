"""The agent's instructions, in our own words, one per environment.

The protocol is the paper's (ask clarifying questions, at most 10 rounds, end with
``I WANT TO ANSWER:``; frontend turns are a private thought then ``OUTPUT:``); the wording is
ours (the paper's release is CC-BY-NC and its prompts are not reused). The instructions go in a
system message so that any chat template can carry them, and the person's problem description
stays the first user message exactly as the environment gives it — the same messages the
environment puts in ``info["messages"]``, so a trajectory can be replayed into any template.
"""

from __future__ import annotations

from colbench_gym.protocol import ANSWER_MARKER, MAX_TURNS, OUTPUT_MARKER, Messages

BACKEND_INSTRUCTIONS = f"""\
You are a software engineer helping a person who needs a Python function. They will describe \
what they want, but their description leaves out details that only they know: exact names, \
numbers, thresholds, rules, return formats and edge cases. Guessing those details gets the \
function wrong.

How the conversation works:
- You have at most {{max_turns}} turns in total, and your final answer uses one of them.
- On a turn, either ask the person one short, concrete question about a detail you still need, \
or give your final answer.
- The person can only describe what they want in everyday words; they cannot read or run code.
- To give your final answer, write `{ANSWER_MARKER}` followed by the complete Python function \
(with any imports it needs) in a ```python code block. The conversation ends there.
- Keep the function name and parameters the person asked for. Do not print; return the result."""

FRONTEND_INSTRUCTIONS = f"""\
You are a web designer building a single web page for a person. They will describe the page \
they have in mind, but details only they know — layout, colours, wording, sections, sizes — \
decide whether the page looks the way they want.

How the conversation works:
- You have at most {{max_turns}} turns in total, and your final answer uses one of them.
- Each turn, first think privately about what you still need, then write `{OUTPUT_MARKER}` and \
the message the person will see. Only the text after `{OUTPUT_MARKER}` is shown to them.
- Your message may contain one draft page as `<html>...</html>`; the person will look at it \
rendered next to the page they imagine and tell you what differs. Ask short, concrete questions.
- Use Tailwind CSS utility classes for styling; images may use https://picsum.photos/id/48/W/H.
- To give your final answer, write `{OUTPUT_MARKER}` then `{ANSWER_MARKER}` followed by the \
complete HTML page from `<html>` to `</html>`. The conversation ends there."""

_BY_KIND = {"backend": BACKEND_INSTRUCTIONS, "frontend": FRONTEND_INSTRUCTIONS}


def env_kind(env_id: str) -> str:
    """``"backend"`` or ``"frontend"`` for a ColBench environment id."""
    low = env_id.lower()
    for kind in _BY_KIND:
        if kind in low:
            return kind
    raise ValueError(f"no agent instructions for environment {env_id!r}; expected a ColBench backend or frontend env")


def system_prompt(kind_or_env_id: str, max_turns: int = MAX_TURNS) -> str:
    """The agent's system prompt for an environment kind (``backend``/``frontend``) or env id."""
    kind = kind_or_env_id if kind_or_env_id in _BY_KIND else env_kind(kind_or_env_id)
    return _BY_KIND[kind].format(max_turns=max_turns)


def agent_messages(dialogue: Messages, system: str) -> Messages:
    """The chat the agent's model sees: our system prompt, then the environment's messages
    (``user`` = the person, ``assistant`` = the agent's own raw turns)."""
    return [{"role": "system", "content": system}, *({"role": m["role"], "content": m["content"]} for m in dialogue)]
