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


def simulator_messages(system_prompt: str, dialogue: Dialogue) -> list[dict[str, str]]:
    """Chat messages from the simulator's side: roles swapped, opening request in the system prompt.

    In the environment's dialogue ``user`` is the person and ``assistant`` the agent. The LLM
    playing the person must see the agent's messages as ``user`` turns and its own earlier
    replies as ``assistant`` turns. The opening request already sits in the system prompt, so
    the conversation starts with the agent's first message, as chat templates expect.
    """
    messages = [{"role": "system", "content": system_prompt}]
    for m in dialogue[1:]:
        role = "user" if m["role"] == "assistant" else "assistant"
        messages.append({"role": role, "content": m["content"]})
    return messages


def backend_messages(task: Any, dialogue: Dialogue) -> list[dict[str, str]]:
    """The backend person's chat request: :data:`BACKEND_SYSTEM_PROMPT` filled with the task's
    request and hidden reference, then the dialogue from the person's side
    (:func:`simulator_messages`). Every LLM playing the backend person is asked this way."""
    system = BACKEND_SYSTEM_PROMPT.format(problem_description=task.problem_description, ground_truth=task.ground_truth)
    return simulator_messages(system, dialogue)
