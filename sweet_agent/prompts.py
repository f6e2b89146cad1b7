"""The agent's instructions, in our own words, one per environment.

The protocol is the paper's (ask clarifying questions, at most 10 rounds, end with
``I WANT TO ANSWER:``; frontend turns are a private thought then ``OUTPUT:``); the wording is
ours (the paper's release is CC-BY-NC and its prompts are not reused). The texts live in
:mod:`colbench_gym.instructions`, so the Inspect AI and verifiers integrations tell an agent the
same thing. The instructions go in a
system message so that any chat template can carry them, and the person's problem description
stays the first user message exactly as the environment gives it — the same messages the
environment puts in ``info["messages"]``, so a trajectory can be replayed into any template.
"""

from __future__ import annotations

from colbench_gym.instructions import instructions
from colbench_gym.protocol import MAX_TURNS, Messages
from colbench_gym.tasks.kinds import KINDS, kind_of_env_id


def env_kind(env_id: str) -> str:
    """The kind (``"backend"``, ``"frontend"``) of a ColBench environment id, from the one table
    of kinds (:mod:`colbench_gym.tasks.kinds`); any other id is a ValueError naming the ids."""
    return kind_of_env_id(env_id).name


def system_prompt(kind_or_env_id: str, max_turns: int = MAX_TURNS) -> str:
    """The agent's system prompt for an environment kind (``backend``/``frontend``) or env id."""
    kind = kind_or_env_id if kind_or_env_id in KINDS else env_kind(kind_or_env_id)
    return instructions(kind, max_turns)


def agent_messages(dialogue: Messages, system: str) -> Messages:
    """The chat the agent's model sees: our system prompt, then the environment's messages
    (``user`` = the person, ``assistant`` = the agent's own raw turns)."""
    return [{"role": "system", "content": system}, *({"role": m["role"], "content": m["content"]} for m in dialogue)]
