"""One ColBench dialogue played by an outside harness, and the scoring of its final answer.

Inspect AI and verifiers run their own agent loop: they call the model, then want the person's
reply, and score the final answer with a scorer (Inspect) or a rubric (verifiers). This module
gives them exactly those two pieces, built from the environment's own parts so that nothing about
the dialogue differs from ``gym.make``:

* :class:`Conversation` holds a ``gym.make`` env. Each agent turn goes through the paper's
  protocol (:func:`~colbench_gym.protocol.parse_action`): a turn with ``I WANT TO ANSWER:`` or the
  last of the ``max_turns`` turns ends the dialogue and yields the answer (the last turn counts
  as the answer, as in the paper); any other turn is stepped into the env, whose simulator
  answers (frontend drafts are rendered for it, replies cut to the paper's length).
  The final turn is never stepped into the env: the harness scores it with
* :func:`score_final` — the kind's own score entry (:mod:`colbench_gym.verdicts`: the sandboxed
  grader on the answer's code, or the renderer and the screenshot scorer), the same for every kind.
  A score that would measure nothing (the grader failed, no test of the task has a usable
  reference result, the reference page did not render) is never returned as a number: it raises
  :class:`ScoreUnavailable`, which each harness records as its own kind of error.
  (:func:`grade_backend` and :func:`score_frontend` give a verdict's evidence as a dict.)

Both harnesses also build their dataset the same way: :func:`task_entries` lists the tasks of a
source with what a sample keeps beside the request and the reference (index, identity, episode
seed, the kind's hidden record fields), and :func:`entry_task` rebuilds the task from a sample.

Plain Python: no harness, torch or browser is imported until used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colbench_gym.envs.base import reset_options
from colbench_gym.protocol import MAX_TURNS, Messages, parse_action
from colbench_gym.tasks.accounting import InfrastructureFailure
from colbench_gym.tasks.kinds import env_kind
from colbench_gym.tasks.sources import resolve_task_source
from colbench_gym.verdicts import score_answer

#: Sources larger than this (the procedural generators) need an explicit ``num_tasks``.
UNBOUNDED = 1_000_000


class ScoreUnavailable(InfrastructureFailure):
    """The answer has no score because of an infrastructure failure, not because of the answer:
    ``end_reason`` is ``grading_error`` (the grader failed internally), ``task_error`` (no test of
    the task has a usable reference result) or ``rendering_error`` (the reference page, or the
    browser on the answer's page, failed). A harness records an error (Inspect: a sample error,
    retried with ``retry_on_error``; verifiers: ``state["error"]``, an ``InfraError`` retried with
    ``max_retries``), never a number that would reward or punish the policy for the infrastructure."""


def check_kind(kind: str) -> str:
    """``kind`` when it names an environment kind (:mod:`colbench_gym.tasks.kinds`), else ValueError."""
    return env_kind(kind).name


def task_entries(kind: str, tasks: Any = None, num_tasks: int | None = None, seed: int = 0,
                 num_tasks_flag: str = "num_tasks") -> tuple[str, list[tuple[Any, dict[str, Any]]]]:
    """The name of the task source ``tasks`` (default ``embedded:test``) and its first
    ``num_tasks`` tasks (default: all; ``num_tasks_flag`` is how the harness's user says how many
    of an unbounded source), each with the metadata a harness keeps beside it.

    Task ``i`` gets ``{"kind", "task_index": i, "task_id", "seed": seed + i}`` plus the kind's
    :attr:`~colbench_gym.tasks.kinds.EnvKind.record_fields` (backend: the hidden test calls), so
    that :func:`entry_task` can rebuild the task from the sample alone.
    """
    entry = env_kind(kind)
    source = resolve_task_source(tasks, entry.name)
    if num_tasks is None:
        if len(source) >= UNBOUNDED:
            raise ValueError(f"tasks={source.name!r} is unbounded; say how many with {num_tasks_flag}")
        num_tasks = len(source)
    if not 0 < num_tasks <= len(source):
        raise ValueError(f"num_tasks must be between 1 and {len(source)} for {source.name!r}, got {num_tasks}")
    entries = []
    for index in range(num_tasks):
        record = source[index]
        info: dict[str, Any] = {"kind": kind, "task_index": index, "task_id": record.task_id, "seed": seed + index}
        fields = record.to_record()
        info.update({name: fields[name] for name in entry.record_fields})
        entries.append((record, info))
    return source.name, entries


def entry_task(kind: str, problem: str, reference: str, info: dict[str, Any], where: str = "sample") -> Any:
    """The task of a harness's sample (its request, reference and :func:`task_entries` metadata):
    the kind's task class, validated (a sample that is not a task of the kind is an error)."""
    entry = env_kind(kind)
    record = {"problem_description": problem, "ground_truth": reference}
    record.update({name: info[name] for name in entry.record_fields if name in info})
    return entry.task_cls.from_record(record, where=where)


@dataclass(frozen=True)
class TurnOutcome:
    """What one agent turn led to: the person's reply, or the end of the dialogue with its answer."""

    reply: str | None
    answer: str | None = None
    #: ``"answer"`` (the agent wrote ``I WANT TO ANSWER:``), ``"turn_limit"`` (its last turn) or None.
    ended_by: str | None = None

    @property
    def done(self) -> bool:
        return self.ended_by is not None


class Conversation:
    """A ColBench dialogue whose agent turns come from outside (an Inspect solver, a verifiers env).

    Args:
        kind: ``"backend"`` or ``"frontend"``.
        tasks: the env's task source (``"embedded:test"`` by default, a path, ``generated:…``).
        simulator: the person: ``"offline"`` (default), ``"openai"``, ``"transformers"`` or a
            :class:`~colbench_gym.simulators.HumanSimulator` instance (e.g. one backed by an
            Inspect model role).
        simulator_kwargs: the simulator's options (with a simulator name).
        max_turns: agent turns per dialogue (paper: 10).
        **make_kwargs: further ``gym.make`` options (frontend: ``renderer``, ``renderer_kwargs``).
    """

    def __init__(self, kind: str, *, tasks: Any = None, simulator: Any = "offline",
                 simulator_kwargs: dict[str, Any] | None = None, max_turns: int = MAX_TURNS,
                 **make_kwargs: Any) -> None:
        import gymnasium as gym

        self.kind = check_kind(kind)
        self.max_turns = max_turns
        # "module:id" makes gymnasium import colbench_gym (which registers the ids) itself.
        self._env = gym.make(f"colbench_gym:{env_kind(kind).env_id}", tasks=tasks, simulator=simulator, simulator_kwargs=simulator_kwargs,
                             max_turns=max_turns, **make_kwargs)
        self._turn = 0
        self._done = True
        self._messages: Messages = []
        self.answer: str | None = None
        self.ended_by: str | None = None

    @property
    def env(self) -> Any:
        """The held Gymnasium env (unwrapped: its ``task`` and ``task_source``)."""
        return self._env.unwrapped

    @property
    def task(self) -> Any:
        return self.env.task

    @property
    def turn(self) -> int:
        """Agent turns taken so far."""
        return self._turn

    @property
    def done(self) -> bool:
        return self._done

    @property
    def messages(self) -> Messages:
        """The dialogue (``user`` = the person, ``assistant`` = the agent's raw turns), final turn included."""
        return [dict(m) for m in self._messages]

    def start(self, *, task_index: int | None = None, seed: int | None = None,
              task: dict[str, Any] | None = None) -> str:
        """Begin a dialogue on a task; returns the person's opening request (the problem description)."""
        text, info = self._env.reset(seed=seed, options=reset_options(task_index, task))
        self._turn, self._done = 0, False
        self._messages = list(info["messages"])
        self.answer = self.ended_by = None
        return text

    def play(self, text: str) -> TurnOutcome:
        """Play one agent turn. The answer turn and the last turn end the dialogue (not stepped)."""
        if self._done:
            raise RuntimeError("the dialogue has ended (or start() was never called); call start() first")
        parsed = parse_action(text)
        if parsed.is_answer or self._turn + 1 >= self.max_turns:
            self._turn += 1
            self._done = True
            self._messages.append({"role": "assistant", "content": text})
            self.answer = parsed.answer if parsed.is_answer else parsed.message
            self.ended_by = "answer" if parsed.is_answer else "turn_limit"
            return TurnOutcome(None, self.answer, self.ended_by)
        reply, _, _, _, info = self._env.step(text)
        self._turn += 1
        self._messages = list(info["messages"])
        return TurnOutcome(reply)

    def close(self) -> None:
        self._env.close()


def score_final(answer: str, task: Any, **parts: Any) -> Any:
    """The final answer's :class:`~colbench_gym.verdicts.Verdict` from its kind's score entry
    (:func:`colbench_gym.verdicts.score_answer`, the env's own scoring; ``parts``: the kind's
    options, e.g. ``reward_mode``, ``scorer``, ``grader``, ``renderer``). Raises
    :class:`ScoreUnavailable` when the score would not be the answer's own (``grading_error``,
    ``task_error``, ``rendering_error``): a harness records an error, never that number."""
    verdict = score_answer(answer, task, **parts)
    if not verdict.scored:
        raise ScoreUnavailable(verdict.end_reason, verdict.detail)
    return verdict


def grade_backend(answer: str, task: Any, grader: Any = None) -> dict[str, Any]:
    """:func:`score_final`'s evidence for a backend answer: ``success``, ``fraction``,
    ``tests_passed`` … (the sandboxed grader)."""
    return dict(score_final(answer, task, grader=grader).evidence)


def score_frontend(answer: str, task: Any, scorer: Any = "auto", renderer: Any = None) -> dict[str, Any]:
    """:func:`score_final`'s evidence for a frontend answer: ``similarity`` and the scorer's name
    (CLIP, or the declared fallback — never silently called CLIP)."""
    return dict(score_final(answer, task, scorer=scorer, renderer=renderer).evidence)
