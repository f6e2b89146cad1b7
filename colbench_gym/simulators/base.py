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
from colbench_gym.simulators.leak_guard import guard_respond
from colbench_gym.tasks.accounting import add_usage, usage
from colbench_gym.tasks.records import BackendTask, FrontendTask

Task = BackendTask | FrontendTask
#: A dialogue as chat messages from the simulated person's point of view of the protocol:
#: ``{"role": "user", ...}`` are the person's messages, ``{"role": "assistant", ...}`` the
#: agent's *visible* messages (private thought already removed).
Dialogue = Messages


class SimulatorError(RuntimeError):
    """A simulator could not produce a reply (endpoint down, model missing, ...)."""

    #: An episode this ends is an infrastructure failure (:mod:`colbench_gym.tasks.accounting`).
    end_reason = "simulator_error"


#: The HTTP statuses with which an OpenAI-compatible endpoint refuses a request for what it holds
#: (longer than its context, text it will not take): the one list the persons, the agent's policy
#: and the integrations read a refusal by.
REFUSAL_STATUSES = (400, 413, 422)


def dialogue_opening(messages: Any) -> list[Any] | None:
    """The dialogue's opening (its messages up to the first user message: the instructions and the
    task) when the dialogue holds more than that, else None. A refused request whose opening the
    endpoint takes was refused for what the turns after it hold: the agent's own turns outgrew
    its model (the policy's and the verifiers env's reading of a refusal). Messages are dicts or
    objects with a ``role``."""
    if not isinstance(messages, (list, tuple)):
        return None
    roles = [m.get("role") if isinstance(m, dict) else getattr(m, "role", None) for m in messages]
    first_user = next((i for i, role in enumerate(roles) if role == "user"), None)
    if first_user is None or first_user + 1 >= len(messages):
        return None
    return list(messages[:first_user + 1])


class PromptRefused(SimulatorError):
    """The person's endpoint refused a request for what it holds (HTTP 400, 413 or 422: longer than
    its context, or text it will not take): asked again with less of the dialogue
    (:data:`~colbench_gym.simulators.prompts.READING_BUDGETS`), it is a failure only when a
    request holding none of the dialogue is refused too."""


class HumanSimulator(ABC):
    """Base class: override :meth:`respond`; :meth:`reset` and :meth:`close` are optional.

    Every subclass's ``respond`` is wrapped by the leak guard
    (:mod:`colbench_gym.simulators.leak_guard`), whoever calls it: a reply that would hand the
    agent the hidden reference, its tests or inputs (or, frontend, HTML of the page) is asked
    for again (``context`` then carries ``leak_retry`` and ``leak_reason``) and otherwise
    replaced by a refusal. ``respond`` therefore returns a
    :class:`~colbench_gym.simulators.leak_guard.GuardedReply` (a ``str`` saying what was blocked).
    """

    #: ``"backend"``, ``"frontend"`` or ``"any"``: which environments the simulator can serve.
    kind: str = "any"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "respond" in cls.__dict__ and not getattr(cls.__dict__["respond"], "__isabstractmethod__", False):
            cls.respond = guard_respond(cls.__dict__["respond"])  # type: ignore[method-assign]

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

    # ------------------------------------------------------------------ cost accounting
    @property
    def model_name(self) -> str:
        """The model that plays the person, as a price table names it ("" when no model runs)."""
        model = getattr(self, "model", None)
        return model if isinstance(model, str) else ""

    def token_usage(self) -> dict[str, int]:
        """Tokens the person's model used so far, summed over every call of this simulator
        (``prompt_tokens``, ``completion_tokens``; 0 for a simulator that runs no model). The
        environment reports each episode's share in ``info["simulator_usage"]``."""
        return dict(getattr(self, "_tokens", None) or usage())

    def _count_tokens(self, prompt_tokens: int, completion_tokens: int) -> None:
        """Book one model call (subclasses that run a model call this)."""
        self._tokens = add_usage(self.token_usage(), usage(prompt_tokens, completion_tokens))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
