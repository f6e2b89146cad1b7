"""The human-simulator interface shared by every backend and frontend simulator.

A simulator plays the person who wants the code or the page. It holds the task's hidden
information (the reference solution) and answers the agent's visible messages. Environments call
:meth:`HumanSimulator.reset` once per episode and :meth:`HumanSimulator.respond` once per
non-final agent turn; they cut the reply to the paper's length cap themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from colbench_gym.protocol import Messages
from colbench_gym.tasks.records import BackendTask, FrontendTask

Task = BackendTask | FrontendTask
#: A dialogue as chat messages from the simulated person's point of view of the protocol:
#: ``{"role": "user", ...}`` are the person's messages, ``{"role": "assistant", ...}`` the
#: agent's *visible* messages (private thought already removed).
Dialogue = Messages


class SimulatorError(RuntimeError):
    """A simulator could not produce a reply (endpoint down, model missing, ...)."""


class HumanSimulator(ABC):
    """Base class: override :meth:`respond`; :meth:`reset` and :meth:`close` are optional."""

    #: ``"backend"``, ``"frontend"`` or ``"any"``: which environments the simulator can serve.
    kind: str = "any"

    def reset(self, task: Task, *, seed: int | None = None) -> None:  # noqa: B027 - optional hook
        """Start a new episode on ``task`` (seeded so replies are reproducible)."""

    @abstractmethod
    def respond(self, task: Task, dialogue: Dialogue, **context: Any) -> str:
        """Reply to the last agent message in ``dialogue``.

        ``context`` carries environment-specific evidence, e.g. for the frontend:
        ``agent_html``, ``agent_image`` and ``reference_image`` (PIL images) and the rendered
        DOM summaries ``agent_dom`` / ``reference_dom``.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections, models or processes."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
