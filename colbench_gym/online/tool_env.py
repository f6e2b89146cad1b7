"""ColBench as a tool environment for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL turns every public method of an environment *class* (except ``reset`` and ``get_reward``)
into a tool whose JSON schema comes from the type hints and the Google-style ``Args:`` docstring
(``transformers.utils.get_json_schema``). That is why the adapter *holds* a Gymnasium env
instead of subclassing it: a subclass would also expose ``step``, ``render``, ``close`` and the
wrapper methods as tools. The tools have no return type hint and no ``Returns:`` docstring section
on purpose: either becomes a ``"return"`` entry beside ``"parameters"`` in the schema the model
reads, and a small model copies it into its call's arguments (Qwen2.5-Coder-0.5B did in 3 of 24
sampled first turns, each call then refused for an unexpected argument); what a tool returns is
said in its first line. The only public methods here are the ColBench actions:

* backend (:class:`ColBenchToolEnv`): ``ask_user(question)`` and ``submit_answer(code)``;
* frontend (:class:`ColBenchFrontendToolEnv`): the same plus ``show_draft(html)``.

Each tool call is exactly one environment step, written in the environment's own protocol
(:mod:`colbench_gym.protocol`): a question is sent as the turn's text, a draft as an
``<html>`` snippet, an answer after ``I WANT TO ANSWER:``. So the dialogue, the 10-turn rule
(the 10th turn counts as the answer) and the reward are the environment's, unchanged: an
episode played through the tools gets the reward the same turns get through ``gym.make``.

Plain Python: importing this module loads no torch, transformers or trl.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from typing import Any

from colbench_gym.protocol import ANSWER_MARKER, extract_html
from colbench_gym.tasks.accounting import end_reason_of, is_infrastructure
from colbench_gym.tasks.kinds import KINDS, env_kind, load

_log = logging.getLogger(__name__)


#: The last sentence of the tool result that ends an episode (an answer submitted, the turn limit
#: reached): a fixed text, so a client can recognise the end without parsing prose (the TRL example's
#: tool-call opener ends the model's turn there instead of forcing another call; examples/trl_grpo.py).
CONVERSATION_OVER = "The conversation is over."


class ToolEnvError(RuntimeError):
    """A tool was called when the episode does not allow it (ended, or never reset).

    TRL returns a tool's exception to the model as ``{"error": "<message>"}``, so the message is
    written for the model to read.
    """


class ColBenchToolEnv:
    """A ColBench backend episode as tools: ask the person, then submit the function.

    Args:
        env: a ColBench Gymnasium environment (``gym.make("ColBench-Backend-v0", ...)``) or
            anything with the same ``reset``/``step`` API (e.g. a remote OpenEnv session).

    ``reset(**row)`` starts an episode from a dataset row and returns the person's request;
    ``get_reward()`` is the environment's reward for the submitted answer (0.0 when nothing was
    submitted), or ``None`` when the episode failed for infrastructure reasons (the simulated
    person's endpoint, the grader, a task no test can measure, a reference page that did not
    render: :attr:`infrastructure_failure` says which) — TRL's GRPOTrainer then leaves the
    completion out of its group's baseline and gives it no advantage, instead of training on a
    number that measures nothing. Counters for logging: :attr:`questions`, :attr:`drafts`, :attr:`turns`,
    :attr:`submitted`, :attr:`ended`, :attr:`success`.
    """

    kind = "backend"

    def __init__(self, env: Any) -> None:
        self._env = env
        self._reset_counters()
        self._ended = True
        self._started = False

    def _reset_counters(self) -> None:
        self._reward = 0.0
        self._infra: str | None = None
        self._info: dict[str, Any] = {}
        self._questions = 0
        self._drafts = 0
        self._turns = 0
        self._submitted = False

    # ------------------------------------------------------------------ TRL's hooks
    def reset(self, **row: Any) -> str | None:
        """Start an episode for a dataset row; returns the person's first message (the task).

        A task whose reference page does not render (also when retried) cannot be played: reset
        returns None (TRL then adds nothing to the prompt, nothing of the failure reaches the
        policy as text), every tool refuses, ``get_reward()`` is None and
        :attr:`infrastructure_failure` is ``rendering_error`` — one task's failed page must not
        end a long GRPO run (TRL calls ``reset`` unguarded). Anything else that fails (a bad row,
        a browser that cannot start, missing web assets) is raised: it would fail every episode.

        Understood columns (what :func:`sweet_agent.grpo.build_prompt_dataset` writes):
        ``task_index`` (int) of the task source named by ``tasks`` (a spec such as
        ``"collab:train"``; without it, the env's own source), ``task`` (an official task record,
        or its JSON text) instead of both, ``kind`` (``"backend"``/``"frontend"``: checked against
        this env) and ``seed`` (int). Other columns are ignored. The row decides the task: a row
        of ``collab:train`` plays ``collab:train`` whatever source the factory's env was made
        with, so a dataset and an environment factory can never disagree about which task a row
        is.
        """
        seed = row.get("seed")
        kind = row.get("kind")
        if kind is not None and kind != self.kind:
            raise ValueError(f"a dataset row of {kind} tasks was given to a {self.kind} environment "
                             f"({type(self).__name__}); build the dataset and the factory for the same kind")
        options: dict[str, Any] = {}
        if row.get("task") is not None:
            task = row["task"]
            options["task"] = json.loads(task) if isinstance(task, str) else task
        elif row.get("task_index") is not None:
            index = int(row["task_index"])
            spec = row.get("tasks")
            if spec is None or _own_source(self._env, spec, self.kind):
                options["task_index"] = index
            else:  # the row's source, not the env's: play that task as a record
                options["task"] = _task_source(str(spec), self.kind)[index].to_record()
        # nothing of the previous episode survives a reset that fails (its reward, its failure)
        self._reset_counters()
        self._ended, self._started = True, False
        try:
            obs, info = self._env.reset(seed=None if seed is None else int(seed), options=options or None)
        except Exception as exc:
            from colbench_gym.rendering.result import ReferenceRenderError  # noqa: PLC0415 - only on failure

            if not isinstance(exc, ReferenceRenderError):
                raise
            self._infra = exc.end_reason
            _log.warning("episode skipped (no reward): %s", exc)
            return None
        self._info = dict(info)
        self._ended = False
        self._started = True
        return obs

    def get_reward(self) -> float | None:
        """The environment's reward for this episode: success (0/1), fraction of tests passed or
        similarity, as the env is configured; 0.0 when the episode ended without an answer; None
        when it failed for infrastructure reasons (no score: TRL excludes it)."""
        if self._infra is not None:
            return None
        return float(self._reward) if self._ended and self._started else 0.0

    @property
    def infrastructure_failure(self) -> str | None:
        """The end reason of an infrastructure failure in this episode (``simulator_error``,
        ``grading_error``, ``task_error``, ``rendering_error``, ...), or None."""
        return self._infra

    # ------------------------------------------------------------------ tools
    def ask_user(self, question: str):  # no return hint (module docstring)
        """Ask the person one clarifying question about what they want; you get their reply.

        Args:
            question: One short, concrete question for the person.
        """
        if ANSWER_MARKER in question:
            raise ToolEnvError(f"a question must not contain {ANSWER_MARKER!r}; call submit_answer to answer")
        self._questions += 1
        return self._step(question)

    def submit_answer(self, code: str):  # no return hint (module docstring)
        """Submit the final answer: the complete Python function. This ends the conversation.

        Args:
            code: The complete Python function, with any imports it needs.
        """
        self._submitted = True
        self._step(f"{ANSWER_MARKER}\n{code}")
        return f"Answer submitted. {CONVERSATION_OVER}"

    # ------------------------------------------------------------------ bookkeeping
    def _step(self, action: str) -> str:
        if self._infra is not None:
            what = "could not start" if not self._started else "was ended by a failure of the environment"
            raise ToolEnvError(f"this episode {what} ({self._infra}); no tool can be used")
        if not self._started:
            raise ToolEnvError("the episode has not started: reset() must be called before any tool")
        if self._ended:
            raise ToolEnvError("the conversation is over (an answer was submitted or the turn limit was reached); "
                               "no more tool calls are possible")
        try:
            obs, reward, terminated, truncated, info = self._env.step(action)
        except Exception as exc:
            # a cause the accounting knows (the person's endpoint, the renderer, the task) has no
            # score; anything else (a malformed tool call: TRL passes the model's arguments as they
            # are) is the agent's doing and stays scored
            reason = end_reason_of(exc, "agent_error")
            if is_infrastructure(reason):
                self._infra, self._ended = reason, True  # nothing more is played in it (a remote session is gone)
            raise
        self._turns += 1
        self._info = dict(info)
        if terminated or truncated:
            self._ended = True
            self._reward = float(reward)
            if is_infrastructure(info.get("end_reason")):
                self._infra = info["end_reason"]
            if info.get("ended_by") == "turn_limit":
                return (f"That was your last turn ({info.get('turn')} of {info.get('max_turns')}), taken as your "
                        f"final answer. {CONVERSATION_OVER}")
        return obs

    @property
    def env(self) -> Any:
        """The held environment."""
        return self._env

    @property
    def questions(self) -> int:
        """``ask_user`` calls this episode."""
        return self._questions

    @property
    def drafts(self) -> int:
        """``show_draft`` calls this episode (always 0 on the backend)."""
        return self._drafts

    @property
    def turns(self) -> int:
        """Environment steps this episode (every accepted tool call is one turn)."""
        return self._turns

    @property
    def submitted(self) -> bool:
        """Whether ``submit_answer`` was called."""
        return self._submitted

    @property
    def ended(self) -> bool:
        """Whether the episode is over (answer submitted or turn limit reached)."""
        return self._ended and self._started

    @property
    def success(self) -> bool:
        """The env's success flag (backend: every hidden test passed). The frontend has none
        (its reward is a similarity): always False there."""
        return bool(self._info.get("success", False)) if self.ended else False

    @property
    def info(self) -> dict[str, Any]:
        """The ``info`` dict of the last reset or step (dialogue messages, grading details)."""
        return dict(self._info)

    @property
    def messages(self) -> list[dict[str, str]]:
        """The dialogue in the environment's own text form (``user`` = person, ``assistant`` = the
        agent's turns as the env received them), e.g. for a critic that scores ColBench dialogues."""
        return [dict(m) for m in self._info.get("messages", [])]

    def __del__(self) -> None:  # not a public method: TRL would expose `close` as a tool
        env = self.__dict__.get("_env")
        if env is not None and hasattr(env, "close"):
            try:
                env.close()
            except Exception:  # noqa: BLE001 - interpreter shutdown; nothing useful to report
                pass


class ColBenchFrontendToolEnv(ColBenchToolEnv):
    """A ColBench frontend episode as tools: ask, show rendered drafts, submit the page.

    Args:
        env: a ColBench frontend Gymnasium environment (``gym.make("ColBench-Frontend-v0")``)
            or anything with the same API.
    """

    kind = "frontend"

    def show_draft(self, html: str):  # no return hint (module docstring)
        """Show the person a draft of the page; they see it rendered next to the page they imagine and
        reply how it differs from what they want.

        Args:
            html: The draft page as HTML (from <html> to </html>), styled with Tailwind CSS classes.
        """
        if ANSWER_MARKER in html:
            raise ToolEnvError(f"a draft must not contain {ANSWER_MARKER!r}; call submit_answer to answer")
        if extract_html(html) is None:
            html = f"<html>\n{html}\n</html>"
        self._drafts += 1
        return self._step(html)

    def submit_answer(self, code: str):  # no return hint (module docstring)
        """Submit the final page. This ends the conversation.

        Args:
            code: The complete HTML page, from <html> to </html>, styled with Tailwind CSS classes.
        """
        return super().submit_answer(code)


@lru_cache(maxsize=16)
def _task_source(spec: str, kind: str) -> Any:
    """A dataset row's task source (resolved once per process: a file is read once)."""
    from colbench_gym.tasks.sources import resolve_task_source  # noqa: PLC0415

    return resolve_task_source(spec, kind)


def _own_source(env: Any, spec: Any, kind: str) -> bool:
    """Whether ``env`` (a local ColBench env) plays the task source ``spec`` itself; False for a
    remote session, whose source is the server's."""
    own = getattr(getattr(env, "unwrapped", None), "task_source", None)
    return own is not None and getattr(own, "name", None) == _task_source(str(spec), kind).name


def tool_env_class(kind: str) -> type[ColBenchToolEnv]:
    """The adapter class of an environment kind (its ``tool_env`` in :mod:`colbench_gym.tasks.kinds`)."""
    return load(env_kind(kind).tool_env)


class ToolEnvFactory:
    """Zero-argument callable building one :class:`ColBenchToolEnv` per call (what TRL wants).

    A class rather than a closure so it pickles (multi-process data loaders, ``accelerate``).
    """

    def __init__(self, env_id: str, **make_kwargs: Any) -> None:
        self.env_id = env_id
        self.make_kwargs = make_kwargs

    def __call__(self) -> ColBenchToolEnv:
        import gymnasium as gym

        import colbench_gym  # noqa: F401 - registers the ids

        env = gym.make(self.env_id, **self.make_kwargs)
        kind = getattr(env.unwrapped, "kind", None)
        if kind not in KINDS:
            env.close()
            raise ValueError(f"{self.env_id!r} is not a ColBench environment (kind {kind!r}); "
                             f"use {' or '.join(k.env_id for k in KINDS.values())}")
        return tool_env_class(kind)(env)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.make_kwargs.items())
        return f"make_tool_env_factory({self.env_id!r}{args})"


def make_tool_env_factory(env_id: str = "ColBench-Backend-v0", **make_kwargs: Any) -> ToolEnvFactory:
    """The ``environment_factory`` for TRL's ``GRPOTrainer``: each call makes a fresh env.

    ``make_kwargs`` go to ``gym.make`` (``tasks``, ``simulator``, ``reward_mode``, ...)::

        trainer = GRPOTrainer(model=..., train_dataset=rows, args=GRPOConfig(...),
                              environment_factory=make_tool_env_factory("ColBench-Backend-v0",
                                                                        reward_mode="fraction"))

    Rows that name their task source (``tasks``, as :func:`sweet_agent.grpo.build_prompt_dataset`
    writes them) play that source's task whatever ``tasks=`` the factory was given; ``tasks=``
    serves rows that carry only a ``task_index``.
    """
    return ToolEnvFactory(env_id, **make_kwargs)
