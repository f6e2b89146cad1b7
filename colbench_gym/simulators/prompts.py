"""Instructions for LLM-backed human simulators, in our own words.

The simulator must behave like the person who holds the hidden information: answer only from
it, briefly, in plain language, without handing over the solution. The wording here is ours
(the paper's release is CC-BY-NC and its prompts are not reused).
"""

from __future__ import annotations

from typing import Any

from colbench_gym.simulators.base import Dialogue
from colbench_gym.spaces import encodable

BACKEND_SYSTEM_PROMPT = """\
You are role-playing a person who asked an AI assistant to write a Python function for them.
Your opening request to the assistant was:

{problem_description}

What you really want is exactly the function below. Only you can see it; it is the truth about \
every detail you care about (names, numbers, rules, formats, edge cases):

```python
{ground_truth}
```

Rules for every reply:
- Reply to the assistant's latest message as this person, in plain everyday words.
- Use only facts that follow from the hidden function. If it does not settle the question, say \
you don't know.
- At most two sentences. Never write code, never quote or paraphrase the function line by line, \
and never mention tests.
- If the assistant asked nothing, answer briefly and, if useful, point it to a detail it has not \
asked about yet."""


#: The most of one agent message an LLM playing the person reads, in UTF-8 bytes (a longer one,
#: and the env takes turns of up to 200,000 characters, reaches it cut in the middle:
#: :func:`person_reads`). Bytes, not characters: a byte-level tokenizer (Qwen, Llama 3, GPT) makes
#: at most a token of a byte, while one rare character can be four tokens. 32,000 bytes hold any
#: message of up to 8,000 characters, the cap in characters this replaced.
MAX_MESSAGE_BYTES = 32_000

#: How much of the dialogue (both sides, newest first) the person reads, in UTF-8 bytes, tried in
#: this order: first all of it (each agent message within :data:`MAX_MESSAGE_BYTES`), then 24,000
#: bytes, 4,000, and none. A request the endpoint refuses (HTTP 400, 413 or 422: longer than the
#: served context, or text it will not take) is asked again with the next budget; the last holds
#: none of the dialogue's text. So an agent cannot make the person's endpoint fail by what it
#: writes (its episode would end unscored, as ``simulator_error``, the infrastructure's): only a
#: request holding nothing the agent wrote can end an episode that way.
READING_BUDGETS: tuple[int | None, ...] = (None, 24_000, 4_000, 0)


def person_reads(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """A message as an LLM playing the person reads it: whole up to ``limit`` UTF-8 bytes, else its
    first and last ``limit // 2`` bytes (whole characters) with a note of how much was left out
    between; with ``limit`` under 200, only a note that it was not read. Lone surrogates read as
    U+FFFD, as every request sends them."""
    text = encodable(str(text))  # what leaves for the endpoint: lone surrogates as U+FFFD
    data = text.encode("utf-8")
    if len(data) <= limit and limit > 0:
        return text
    if limit < 200:  # 0: not even an empty message (an endpoint may refuse empty content)
        return f"[a message of {len(text):,} characters, not read]"
    half = limit // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[-half:].decode("utf-8", "ignore")
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n[... {left_out:,} characters of this message left out ...]\n{tail}"


def person_reads_dialogue(turns: Dialogue, budget: int | None = None) -> list[str]:
    """Each message of ``turns`` (the dialogue after the opening request) as the person reads it
    within ``budget`` UTF-8 bytes (None: no limit but each agent message's): the newest first, an
    agent message at most :data:`MAX_MESSAGE_BYTES`; what the budget no longer holds is cut
    (:func:`person_reads`)."""
    read: list[str] = []
    left = float("inf") if budget is None else max(0, int(budget))
    for m in reversed(turns):
        agent = m["role"] == "assistant"
        cap = min(MAX_MESSAGE_BYTES, left) if agent else left
        text = person_reads(m["content"], cap)  # type: ignore[arg-type] - inf: whole
        left = max(0, left - len(text.encode("utf-8")))
        read.append(text)
    return read[::-1]


def simulator_messages(system_prompt: str, dialogue: Dialogue, budget: int | None = None) -> list[dict[str, str]]:
    """Chat messages from the simulator's side: roles swapped, opening request in the system prompt.

    In the environment's dialogue ``user`` is the person and ``assistant`` the agent. The LLM
    playing the person must see the agent's messages as ``user`` turns and its own earlier
    replies as ``assistant`` turns. The opening request already sits in the system prompt, so
    the conversation starts with the agent's first message, as chat templates expect. The
    dialogue is read within ``budget`` bytes (:func:`person_reads_dialogue`).
    """
    turns = dialogue[1:]
    messages = [{"role": "system", "content": system_prompt}]
    for m, text in zip(turns, person_reads_dialogue(turns, budget)):
        messages.append({"role": "user" if m["role"] == "assistant" else "assistant", "content": text})
    return messages


def backend_messages(task: Any, dialogue: Dialogue, budget: int | None = None) -> list[dict[str, str]]:
    """The backend person's chat request: :data:`BACKEND_SYSTEM_PROMPT` filled with the task's
    request and hidden reference, then the dialogue from the person's side
    (:func:`simulator_messages`). Every LLM playing the backend person is asked this way."""
    system = BACKEND_SYSTEM_PROMPT.format(problem_description=task.problem_description, ground_truth=task.ground_truth)
    return simulator_messages(system, dialogue, budget)
