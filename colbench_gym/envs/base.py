"""Episode bookkeeping shared by the ColBench environments.

Both environments follow one protocol (see :mod:`colbench_gym.protocol`): the agent writes free
text, the simulated person answers the visible part, and the episode ends when the agent writes
``I WANT TO ANSWER:`` or uses its last turn. Subclasses only say how a final answer is scored
(:meth:`ColBenchEnv._score`) and what evidence a turn produces for the simulator and for ``info``
(:meth:`ColBenchEnv._turn_evidence`); everything a step reports flows through these return values.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, NamedTuple

import gymnasium as gym

from colbench_gym.protocol import MAX_TURNS, Messages, ParsedAction, parse_action, truncate
from colbench_gym.simulators import HumanSimulator, make_simulator
from colbench_gym.simulators.leak_guard import ensure_guarded
from colbench_gym.spaces import UnicodeText, encodable
from colbench_gym.tasks.accounting import usage
from colbench_gym.tasks.kinds import EnvKind, env_kind
from colbench_gym.tasks.records import BackendTask, FrontendTask
from colbench_gym.tasks.sources import TaskSource, resolve_task_source

#: Longest action accepted as is; longer actions are cut (and flagged in ``info``), never crashed on.
MAX_ACTION_CHARS = 200_000
#: Upper bound of the text spaces (a problem description from a task file may be long).
MAX_TEXT_CHARS = 1_000_000


class EpisodeOverError(RuntimeError):
    """``step`` was called after the episode ended."""


class TurnEvidence(NamedTuple):
    """A non-final turn's evidence (see :meth:`ColBenchEnv._turn_evidence`)."""

    #: Keyword arguments for ``HumanSimulator.respond`` besides the task and the visible dialogue.
    context: dict[str, Any]
    #: Keys added to the step's ``info``.
    info: dict[str, Any]


def reset_options(task_index: int | None = None, task: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The ``options`` of :meth:`ColBenchEnv.reset` that pick a task: ``task_index`` (a task of
    the env's source) or ``task`` (a record); None when neither is given (the env draws one).
    For wrappers that take the two as arguments (an outside harness's dialogue, an OpenEnv session)."""
    options: dict[str, Any] = {}
    if task_index is not None:
        options["task_index"] = int(task_index)
    if task is not None:
        options["task"] = task
    return options or None


class ColBenchEnv(gym.Env[str, str]):
    """Base class of the ColBench environments (not registered itself)."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    #: The environment kind's name (``"backend"``, ``"frontend"``): its entry in
    #: :mod:`colbench_gym.tasks.kinds` gives the task shape, the reply cap and the simulators.
    kind: str = ""

    def __init__(
        self,
        tasks: Any = None,
        simulator: str | HumanSimulator | None = "offline",
        simulator_kwargs: dict[str, Any] | None = None,
        max_turns: int = MAX_TURNS,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if not isinstance(max_turns, int) or max_turns < 1:
            raise ValueError(f"max_turns must be a positive int, got {max_turns!r}")
        self.render_mode = render_mode
        self.max_turns = max_turns
        self.kind_entry: EnvKind = env_kind(self.kind)
        #: Simulator replies are cut to this many characters (the kind's cap).
        self.reply_chars = self.kind_entry.reply_chars
        self.task_source: TaskSource = resolve_task_source(tasks, self.kind)
        self.simulator: HumanSimulator = make_simulator(simulator, self.kind, **(simulator_kwargs or {}))
        self.observation_space = UnicodeText(MAX_TEXT_CHARS)
        self.action_space = UnicodeText(MAX_TEXT_CHARS)
        self.task: BackendTask | FrontendTask | None = None
        self.task_index: int | None = None
        self._messages: Messages = []  # agent's view: raw agent turns
        self._visible: Messages = []  # simulator's view: thought removed
        self._turn = 0
        self._done = True
        self._leaks_blocked = self._replies_refused = 0  # simulator replies withheld by the leak guard
        self._tokens_at_reset = usage()

    # ----------------------------------------------------------------- hooks for subclasses
    @abstractmethod
    def _score(self, answer: str) -> tuple[float, dict[str, Any]]:
        """Score the final answer: ``(reward, extra info)``."""

    def _turn_evidence(self, parsed: ParsedAction) -> TurnEvidence:
        """What a non-final turn produces besides the dialogue, computed once per turn.

        ``context`` goes to ``simulator.respond`` as keyword arguments (e.g. the screenshots of the
        agent's draft and of the reference); ``info`` is merged into that step's ``info`` (e.g.
        whether a draft was rendered). The base environment adds nothing. Final turns are scored by
        :meth:`_score` instead, whose extra info is merged the same way.
        """
        return TurnEvidence({}, {})

    def _on_reset(self) -> None:
        """Per-episode preparation once ``self.task`` is set (e.g. render the reference)."""

    def _on_turn_undone(self) -> None:
        """A turn failed before the person replied (:meth:`step` undoes it): forget what
        :meth:`_turn_evidence` kept of it (e.g. the draft ``render()`` would show)."""

    # ----------------------------------------------------------------- Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task", "task_index"}
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; use 'task' (a record) or 'task_index' (an int)")
        if "task" in options and "task_index" in options:
            raise ValueError("pass either options['task'] or options['task_index'], not both")
        if "task" in options:
            self.task, self.task_index = self.kind_entry.task_cls.from_record(options["task"], where="options['task']", check_python=True), None
        elif "task_index" in options:
            index = options["task_index"]
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"options['task_index'] must be an int, got {type(index).__name__}")
            self.task, self.task_index = self.task_source[index], index
        else:
            self.task_index, self.task = self.task_source.sample(self.np_random)
        self.simulator.reset(self.task, seed=int(self.np_random.integers(2**31 - 1)))
        self._tokens_at_reset = self.simulator.token_usage()
        self._turn = 0
        self._done = True  # until _on_reset succeeds: a refused reset leaves no episode to step
        self._leaks_blocked = self._replies_refused = 0
        first = {"role": "user", "content": self.task.problem_description}
        self._messages = [dict(first)]
        self._visible = [dict(first)]
        self._on_reset()
        self._done = False
        return self.task.problem_description, self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done:
            raise EpisodeOverError("the episode has ended (or reset() was never called); call env.reset() first")
        if not isinstance(action, str):
            raise TypeError(f"an action is the agent's text turn (str), got {type(action).__name__}")
        cut = len(action) > MAX_ACTION_CHARS
        if cut:
            action = action[:MAX_ACTION_CHARS]
        parsed = parse_action(action)
        self._turn += 1
        self._messages.append({"role": "assistant", "content": action})
        self._visible.append({"role": "assistant", "content": parsed.message})
        extra: dict[str, Any] = {"action_truncated": cut}
        if parsed.is_answer or self._turn >= self.max_turns:
            # The paper counts the last turn as the answer when the agent never used the marker.
            answer = parsed.answer if parsed.is_answer else parsed.message
            self._done = True
            reward, score_info = self._score(answer)
            ended_by = "answer" if parsed.is_answer else "turn_limit"
            # end_reason: ended_by, unless scoring hit an infrastructure failure (the grader's
            # own error, a reference page that did not render): see colbench_gym.tasks.accounting
            extra.update(score_info, answer=answer, ended_by=ended_by,
                         end_reason=score_info.get("end_reason") or ended_by)
            return "", float(reward), True, False, self._info(**extra)
        try:
            evidence = self._turn_evidence(parsed)
            extra.update(evidence.info)
            reply = self.simulator.respond(self.task, [dict(m) for m in self._visible], **evidence.context)
        except BaseException:
            # A failed reply (endpoint down, a browser that cannot render the draft, Ctrl-C) must
            # not consume the agent's turn: undo it, so the caller can retry step(action) or end
            # the episode; never two agent turns in a row.
            self._turn -= 1
            del self._messages[-1], self._visible[-1]
            self._on_turn_undone()
            raise
        # Every reply passed the leak guard in the simulator (HumanSimulator wraps respond); a
        # reply that did not (a respond set on an instance) is checked here, never passed on raw.
        guarded = ensure_guarded(reply, self.task, self._visible)
        self._leaks_blocked += len(guarded.blocked)
        self._replies_refused += guarded.refused
        extra["leak_guard"] = {"blocked": list(guarded.blocked), "refused": guarded.refused}
        # The person's reply is what the agent's policy reads (a tokenizer, an endpoint): valid text,
        # even when it quotes a lone surrogate of the agent's own draft (U+FFFD in its place).
        reply = truncate(encodable(str(guarded)), self.reply_chars)
        self._messages.append({"role": "user", "content": reply})
        self._visible.append({"role": "user", "content": reply})
        if self.render_mode == "human":
            self.render()  # prints the dialogue itself (and returns None)
        return reply, 0.0, False, False, self._info(**extra)

    def render(self) -> str | None:
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'human' to gym.make")
            return None
        lines = []
        for m in self._messages:
            who = "PERSON" if m["role"] == "user" else "AGENT"
            lines.append(f"[{who}] {m['content']}")
        text = "\n".join(lines)
        return text if self.render_mode == "ansi" else (print(text) or None)

    def close(self) -> None:
        self.simulator.close()
        super().close()

    # ----------------------------------------------------------------- helpers
    @property
    def messages(self) -> Messages:
        """The dialogue so far in chat-template form (``user`` = person, ``assistant`` = agent)."""
        return [dict(m) for m in self._messages]

    @property
    def turn(self) -> int:
        return self._turn

    def _info(self, **extra: Any) -> dict[str, Any]:
        assert self.task is not None
        return {
            "messages": self.messages,
            "turn": self._turn,
            "max_turns": self.max_turns,
            "task_id": self.task.task_id,
            "task_index": self.task_index,
            # simulator replies the leak guard withheld this episode (each regenerated or refused)
            "simulator_leaks_blocked": self._leaks_blocked,
            "simulator_replies_refused": self._replies_refused,
            # what the simulated person cost this episode so far (0 tokens: no model runs)
            "simulator_model": self.simulator.model_name,
            "simulator_usage": self.simulator_usage,
            **extra,
        }

    @property
    def simulator_usage(self) -> dict[str, int]:
        """The simulated person's tokens in this episode (since the last ``reset``)."""
        now, then = self.simulator.token_usage(), self._tokens_at_reset
        return usage(now["prompt_tokens"] - then["prompt_tokens"], now["completion_tokens"] - then["completion_tokens"])
