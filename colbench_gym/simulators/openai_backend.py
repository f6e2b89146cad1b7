"""The backend person served by an OpenAI-compatible chat endpoint: an LLM reading the hidden
reference function answers the agent (the client and its resilience: :mod:`~colbench_gym.simulators.openai_chat`)."""

from __future__ import annotations

from typing import Any

from colbench_gym.simulators.base import Dialogue
from colbench_gym.simulators.leak_guard import with_retry_note
from colbench_gym.simulators.openai_chat import OpenAIChatSimulator
from colbench_gym.simulators.prompts import backend_messages
from colbench_gym.tasks.records import BackendTask


class OpenAIBackendSimulator(OpenAIChatSimulator):
    """Backend simulator: an LLM reading the hidden reference function answers the agent."""

    kind = "backend"

    def respond(self, task: BackendTask, dialogue: Dialogue, **context: Any) -> str:
        # with the leak guard's instruction when it withheld the previous reply
        return self._ask(lambda budget: with_retry_note(backend_messages(task, dialogue, budget), context, "backend"),
                         retry=int(context.get("leak_retry") or 0))
