"""Instructions for LLM-backed human simulators, in our own words.

The simulator must behave like the person who holds the hidden information: answer only from
it, briefly, in plain language, without handing over the solution. The wording here is ours
(the paper's release is CC-BY-NC and its prompts are not reused).
"""

from __future__ import annotations

from typing import Any

from colbench_gym.simulators.base import Dialogue

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


#: The longest agent message an LLM playing the person reads whole (characters). A longer one (the
#: env takes turns of up to 200,000 characters) reaches it cut in the middle by
#: :func:`person_reads`: sent whole it would overflow a served model's context, the endpoint would
#: refuse the request, and the agent's own turn would end its episode as an infrastructure failure
#: (``simulator_error``, unscored) instead of being answered.
MAX_MESSAGE_CHARS = 8_000


def person_reads(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """An agent message as an LLM playing the person reads it: whole up to ``limit`` characters,
    else its first and last ``limit // 2`` characters with a note of how much was left out between."""
    text = str(text)
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters of this message left out ...]\n{text[-half:]}"


def simulator_messages(system_prompt: str, dialogue: Dialogue) -> list[dict[str, str]]:
    """Chat messages from the simulator's side: roles swapped, opening request in the system prompt.

    In the environment's dialogue ``user`` is the person and ``assistant`` the agent. The LLM
    playing the person must see the agent's messages as ``user`` turns and its own earlier
    replies as ``assistant`` turns. The opening request already sits in the system prompt, so
    the conversation starts with the agent's first message, as chat templates expect. An agent
    message longer than :data:`MAX_MESSAGE_CHARS` is cut in the middle (:func:`person_reads`).
    """
    messages = [{"role": "system", "content": system_prompt}]
    for m in dialogue[1:]:
        agent = m["role"] == "assistant"
        messages.append({"role": "user" if agent else "assistant",
                         "content": person_reads(m["content"]) if agent else m["content"]})
    return messages


def backend_messages(task: Any, dialogue: Dialogue) -> list[dict[str, str]]:
    """The backend person's chat request: :data:`BACKEND_SYSTEM_PROMPT` filled with the task's
    request and hidden reference, then the dialogue from the person's side
    (:func:`simulator_messages`). Every LLM playing the backend person is asked this way."""
    system = BACKEND_SYSTEM_PROMPT.format(problem_description=task.problem_description, ground_truth=task.ground_truth)
    return simulator_messages(system, dialogue)
