"""ColBench as Inspect AI tasks: ``inspect eval colbench_gym/colbench_backend --model <provider/model>``.

``pip install colbench-gym[inspect]`` registers both tasks through the ``inspect_ai`` entry point
(``colbench_gym/colbench_backend``, ``colbench_gym/colbench_frontend``). In Inspect's terms:

* **dataset** — the task records, one :class:`~inspect_ai.dataset.Sample` each: the person's
  request is the ``input``, the hidden reference is the ``target`` (never shown to the agent),
  the hidden test calls, task index and episode seed are ``metadata``;
* **solver** — :func:`colbench_dialogue`, the paper's protocol: the agent (the evaluated
  ``--model``) gets our instructions and up to 10 turns; ``I WANT TO ANSWER:`` or its last turn
  ends the dialogue with the answer;
* **the person** — the model bound to the ``user`` role (``--model-role user=openai/gpt-4o``,
  any Inspect provider: ``get_model(role="user")``), given the hidden reference (backend) or
  both screenshots (frontend) in our simulator prompts; with no ``user`` role, our offline
  simulator (no model, deterministic per seed) plays the person;
* **scorers** — :func:`colbench_grader` (the sandboxed grader: ``success`` and ``tests``, the
  paper's two backend metrics) and :func:`colbench_similarity` (the renderer and the screenshot
  scorer: CLIP, or the declared fallback named in each score). An answer the infrastructure could
  not score (grader failure, a task no test can measure, a reference page that did not render)
  is a sample error (``ScoreUnavailable``), never a score: Inspect then fails the eval, or
  retries and tolerates it as ``retry_on_error`` / ``fail_on_error`` say.

The dialogue, the person's generations and the scores are in the eval log (``inspect view``).
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        ContentImage,
        ContentText,
        Model,
        get_model,
        model_roles,
    )
    from inspect_ai.scorer import Score, Target, mean, scorer, stderr
    from inspect_ai.solver import Generate, TaskState, solver
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError(f"the ColBench Inspect tasks need Inspect AI ({exc.name} is missing): "
                      "pip install 'colbench-gym[inspect]'") from exc

from colbench_gym.instructions import instructions
from colbench_gym.integrations.conversation import Conversation, check_kind, entry_task, score_final, task_entries
from colbench_gym.protocol import MAX_TURNS
from colbench_gym.simulators import HumanSimulator, SimulatorError
from colbench_gym.simulators.base import REFUSAL_STATUSES, PromptRefused
from colbench_gym.spaces import encodable, encodable_data
from colbench_gym.tasks.kinds import env_kind, load

#: Where the solver leaves the dialogue's outcome for the scorers (``state.store``).
ANSWER_KEY, ENDED_BY_KEY, TURNS_KEY = "colbench:answer", "colbench:ended_by", "colbench:turns"


# --------------------------------------------------------------------------------------- dataset
def colbench_dataset(kind: str, tasks: Any = None, num_tasks: int | None = None, seed: int = 0) -> MemoryDataset:
    """The task records of ``tasks`` (default ``embedded:test``) as Inspect samples.

    Sample ``i`` is task ``i`` with episode seed ``seed + i``; its id is the task index.
    """
    name, entries = task_entries(kind, tasks, num_tasks, seed, num_tasks_flag="num_tasks (-T num_tasks=40)")
    samples = [Sample(id=info["task_index"], input=record.problem_description, target=record.ground_truth,
                      metadata=info) for record, info in entries]
    return MemoryDataset(samples, name=f"colbench-{kind}:{name}")


def sample_task(kind: str, problem: str, reference: str, metadata: dict[str, Any]) -> Any:
    """The ColBench task a sample stands for (built from the sample alone, as Inspect scorers expect)."""
    return entry_task(kind, problem, reference, metadata, where="sample")


# --------------------------------------------------------------------------- the person as a role
def _inspect_messages(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    """OpenAI-style chat messages (our simulator prompts) as Inspect messages."""
    out: list[ChatMessage] = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [ContentImage(image=p["image_url"]["url"]) if p["type"] == "image_url"
                       else ContentText(text=p["text"]) for p in content]
        cls = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}[m["role"]]
        out.append(cls(content=content))
    return out


class InspectRoleSimulator(HumanSimulator):
    """The simulated person played by an Inspect model (the ``user`` role).

    WHY it wraps the kind's chat-model person (the kinds table's ``"openai"`` simulator): that
    class owns the kind's prompt (the hidden reference for backend, both screenshots for frontend,
    the leak guard's retry note); only where its request goes changes, to the role's model. So a
    new kind with a chat-model person is playable here without a line of this module.

    The environment calls :meth:`respond` from a worker thread (``asyncio.to_thread``); the
    generation runs on the eval's event loop, so it is logged in the sample's transcript like
    any other model call.
    """

    def __init__(self, kind: str, model: Model, loop: asyncio.AbstractEventLoop, timeout: float = 900.0) -> None:
        self.kind, self.model, self.loop, self.timeout = check_kind(kind), model, loop, timeout
        person_cls = env_kind(self.kind).simulators.get("openai")
        if person_cls is None:
            raise ValueError(f"the {self.kind} kind has no chat-model person (no 'openai' simulator in the kinds "
                             "table), so an Inspect user role cannot play it; run without --model-role user")
        self.person = load(person_cls)(model=str(model))
        self.person._chat = self._chat  # the person's prompt, the role's model

    def respond(self, task: Any, dialogue: list[dict[str, str]], **context: Any) -> str:
        return self.person.respond(task, dialogue, **context)

    def _chat(self, messages: list[dict[str, Any]], retry: int = 0) -> str:
        # the provider's request is UTF-8 JSON: any str of the dialogue goes, a lone surrogate as U+FFFD
        messages = encodable_data(messages)
        future = asyncio.run_coroutine_threadsafe(self.model.generate(_inspect_messages(messages)), self.loop)
        try:
            output = future.result(self.timeout)
        except Exception as exc:  # noqa: BLE001 - any provider failure is the simulator's
            # a refusal of what the request holds: the person asks again with less of the dialogue
            status = getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)
            error = PromptRefused if status in REFUSAL_STATUSES else SimulatorError
            raise error(f"the user-role model {self.model} could not reply: {exc}") from exc
        if output.stop_reason in ("model_length", "content_filter"):
            # Inspect's providers answer an over-long prompt or a filtered one with an output whose
            # text is the provider's error: never a reply of the person
            raise PromptRefused(f"the user-role model {self.model} refused the request ({output.stop_reason})")
        return output.completion.strip()

    def __repr__(self) -> str:
        return f"InspectRoleSimulator({self.kind!r}, model={self.model})"


def user_role_model() -> Model | None:
    """The model bound to the ``user`` role of this eval, or None (then the offline simulator plays)."""
    bound = model_roles().get("user")
    if isinstance(bound, list):
        bound = bound[0] if bound else None
    return None if bound is None else get_model(role="user")


# ---------------------------------------------------------------------------------------- solver
def _make_encodable(message: ChatMessage) -> None:
    """The agent's turn as Inspect keeps it (its log is UTF-8 JSON; the next request sends it back
    to the model) made encodable: a turn holding a lone surrogate would otherwise end the whole eval
    in a serialization error. The dialogue itself gets the turn as the model wrote it."""
    if isinstance(message.content, str):
        message.content = encodable(message.content)
        return
    for part in message.content:
        # only the part's own string fields: a reasoning part's ``text`` is a read-only property
        # (assigning it raised, and a reasoning model's every turn failed its sample)
        for name in ("text", "reasoning", "summary"):
            value = getattr(part, name, None)
            if name in type(part).model_fields and isinstance(value, str) and encodable(value) != value:
                setattr(part, name, encodable(value))


@solver
def colbench_dialogue(kind: str = "backend", max_turns: int = MAX_TURNS, simulator: str = "offline",
                      simulator_kwargs: dict[str, Any] | None = None, **make_kwargs: Any):
    """The paper's protocol: our instructions, then agent turns and the person's replies until the
    agent writes ``I WANT TO ANSWER:`` or uses its last of ``max_turns`` turns.

    The person is the ``user`` role's model when one is bound, else ``simulator`` (default
    ``"offline"``; ``"openai"`` with ``simulator_kwargs`` reaches an endpoint directly).
    """
    check_kind(kind)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        role = user_role_model()
        person: Any = simulator if role is None else InspectRoleSimulator(kind, role, asyncio.get_running_loop())
        conversation = await asyncio.to_thread(
            Conversation, kind, simulator=person, simulator_kwargs=None if role is not None else simulator_kwargs,
            max_turns=max_turns, **make_kwargs)
        try:
            record = sample_task(kind, state.input_text, state.target.text, state.metadata).to_record()
            opening = await asyncio.to_thread(conversation.start, task=record, seed=state.metadata.get("seed"))
            state.messages = [ChatMessageSystem(content=instructions(kind, max_turns)), ChatMessageUser(content=opening)]
            while True:
                state = await generate(state)
                if state.completed:  # a limit of the eval (tokens, time, messages) stopped the agent
                    state.store.set(ENDED_BY_KEY, "limit")
                    break
                _make_encodable(state.messages[-1])
                outcome = await asyncio.to_thread(conversation.play, state.output.completion)
                if outcome.done:
                    state.store.set(ANSWER_KEY, outcome.answer)
                    state.store.set(ENDED_BY_KEY, outcome.ended_by)
                    break
                state.messages.append(ChatMessageUser(content=outcome.reply))
            state.store.set(TURNS_KEY, conversation.turn)
        finally:
            await asyncio.to_thread(conversation.close)
        return state

    return solve


# --------------------------------------------------------------------------------------- scorers
@scorer(metrics={"success": [mean(), stderr()], "tests": [mean(), stderr()]})
def colbench_grader():
    """The sandboxed grader: ``success`` (every hidden test passes) and ``tests`` (fraction passed)."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.store.get(ANSWER_KEY) or ""
        task_ = sample_task("backend", state.input_text, target.text, state.metadata)
        result = (await asyncio.to_thread(score_final, answer, task_)).evidence
        explanation = f"{result['tests_passed']}/{result['tests_total']} hidden tests passed"
        if result["grade_error"]:
            explanation += f" ({result['grade_error']})"
        return Score(value={"success": float(result["success"]), "tests": result["fraction"]}, answer=answer,
                     explanation=explanation,
                     metadata={**result, "ended_by": state.store.get(ENDED_BY_KEY),
                               "turns": state.store.get(TURNS_KEY)})

    return score


@scorer(metrics=[mean(), stderr()])
def colbench_similarity(scorer_spec: str = "auto"):
    """The renderer + screenshot scorer: similarity of the final page to the reference page
    (CLIP ViT-B/32, or the declared fallback named in the score's metadata)."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = state.store.get(ANSWER_KEY) or ""
        task_ = sample_task("frontend", state.input_text, target.text, state.metadata)
        result = (await asyncio.to_thread(score_final, answer, task_, scorer=scorer_spec)).evidence
        return Score(value=result["similarity"], answer=answer, explanation=f"similarity by {result['scorer']}",
                     metadata={**result, "ended_by": state.store.get(ENDED_BY_KEY),
                               "turns": state.store.get(TURNS_KEY)})

    return score


# ----------------------------------------------------------------------------------------- tasks
@task
def colbench_backend(tasks: str = "embedded:test", num_tasks: int | None = None, max_turns: int = MAX_TURNS,
                     simulator: str = "offline", simulator_kwargs: dict[str, Any] | None = None,
                     seed: int = 0) -> Task:
    """ColBench backend programming: write the Python function the person has in mind.

    Args:
        tasks: task source (``embedded:test``, ``collab:test``, ``generated:test`` or a task JSONL).
        num_tasks: how many tasks (default: all; required for the unbounded generators).
        max_turns: agent turns per dialogue (paper: 10).
        simulator: the person when no ``user`` model role is bound (``offline``, ``openai``).
        simulator_kwargs: that simulator's options (e.g. ``{"model": ..., "base_url": ...}``).
        seed: episode seed of the first sample (sample ``i`` uses ``seed + i``).
    """
    return Task(dataset=colbench_dataset("backend", tasks, num_tasks, seed),
                solver=colbench_dialogue("backend", max_turns, simulator, simulator_kwargs),
                scorer=colbench_grader())


@task
def colbench_frontend(tasks: str = "embedded:test", num_tasks: int | None = None, max_turns: int = MAX_TURNS,
                      simulator: str = "offline", simulator_kwargs: dict[str, Any] | None = None,
                      scorer: str = "auto", seed: int = 0) -> Task:
    """ColBench frontend design: build the web page the person has in mind (they see screenshots).

    Args:
        tasks: task source (``embedded:test``, ``generated:test`` or a task JSONL).
        num_tasks: how many tasks (default: all; required for the unbounded generators).
        max_turns: agent turns per dialogue (paper: 10).
        simulator: the person when no ``user`` model role is bound (``offline``, ``openai``).
        simulator_kwargs: that simulator's options.
        scorer: ``auto`` (CLIP when its weights are cached, else the declared fallback), ``clip``
            or ``fallback``.
        seed: episode seed of the first sample (sample ``i`` uses ``seed + i``).
    """
    return Task(dataset=colbench_dataset("frontend", tasks, num_tasks, seed),
                solver=colbench_dialogue("frontend", max_turns, simulator, simulator_kwargs),
                scorer=colbench_similarity(scorer))
