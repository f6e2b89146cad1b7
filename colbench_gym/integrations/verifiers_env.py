"""ColBench as a verifiers environment: ``load_environment(**kwargs) -> vf.Environment``.

``pip install colbench-gym[verifiers]``, then ``vf-eval colbench-gym -a '{"kind": "backend"}'``
(verifiers imports the module named by the environment id, ``colbench_gym``, whose
``load_environment`` is this one). In verifiers' terms:

* **dataset** — the task records: ``question`` is the person's request, ``answer`` the hidden
  reference (never in the prompt), ``info`` the hidden test calls, task index and episode seed;
  the system prompt is the agent's instructions (:mod:`colbench_gym.instructions`);
* **env_response** — the simulated person (the env's simulator: offline by default, any
  OpenAI-compatible endpoint with ``simulator="openai"``), through
  :class:`~colbench_gym.integrations.conversation.Conversation`: the paper's protocol, 10 turns,
  ``I WANT TO ANSWER:`` or the last turn ends the rollout;
* **rubric** — our grader: the sandboxed tests (backend reward: ``success`` 0/1 or the fraction of
  tests passed with ``reward_mode="fraction"``; ``success`` and ``tests`` also as metrics) or the
  renderer + screenshot scorer (frontend reward: similarity).

Infrastructure failures are ``vf.InfraError`` in ``state["error"]`` (:func:`infra_error`, its
message led by the end reason): a dialogue the infrastructure broke (the person's endpoint, a
reference page that does not render) ends the rollout there, and an answer it could not score
(grader failure, a task no test can measure, a renderer that failed) keeps the error beside the
0.0 that verifiers forces a reward to be. ``max_retries`` retries them; eval lists them under
errors. Drop rollouts with an ``error`` (and their group, for group-relative advantages: verifiers'
``score_group`` averages the 0.0 in) before using rewards. What is the agent's stays scored, as in
the rollout collector: an empty reply is an empty turn (not verifiers' ``EmptyModelResponseError``,
which ``max_retries`` would redraw), and a request the agent's endpoint refuses (HTTP 400, 413,
422) while it takes the dialogue's opening ends the rollout as verifiers' overlong prompt, scored.

verifiers (and the ``datasets`` package it loads) is imported only inside
:func:`load_environment`: importing ``colbench_gym`` never pulls in the ML stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from typing import Any

from colbench_gym.instructions import instructions
from colbench_gym.integrations.conversation import Conversation, check_kind, entry_task, score_final, task_entries
from colbench_gym.protocol import MAX_TURNS
from colbench_gym.simulators.base import REFUSAL_STATUSES, dialogue_opening
from colbench_gym.spaces import encodable_data
from colbench_gym.tasks.accounting import end_reason_of, failure_message, is_infrastructure, named_reason
from colbench_gym.tasks.kinds import env_kind


def task_rows(kind: str, tasks: Any = None, num_tasks: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """Dataset rows (``question``, ``answer``, ``info``, ``task``) for the first tasks of a source."""
    _, entries = task_entries(kind, tasks, num_tasks, seed)
    # info as JSON text: test names differ from task to task, which one Arrow schema cannot hold.
    return [{"question": record.problem_description, "answer": record.ground_truth, "info": json.dumps(info),
             "task": f"colbench-{kind}"} for record, info in entries]


def row_task(kind: str, problem: str, reference: str, info: dict[str, Any]) -> Any:
    """The ColBench task of a rollout, from its row alone."""
    return entry_task(kind, problem, reference, info, where="row")


def _verifiers() -> Any:
    try:
        import verifiers
    except ImportError as exc:
        raise ImportError(f"the ColBench verifiers environment needs verifiers ({exc.name} is missing): "
                          "pip install 'colbench-gym[verifiers]'") from exc
    return verifiers


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", "")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


#: How verifiers words the ``EmptyModelResponseError`` of a reply that holds nothing (as against
#: no response or no choices at all, the provider's failure).
EMPTY_TURN = "Model returned no content"


#: The routes of the agent model's own turn (verifiers' chat, completion and token-in requests).
#: A refusal elsewhere (vLLM's ``/tokenize``, which interleaved rollouts call first) says nothing
#: of what the agent's turns hold.
TURN_ROUTES = ("/chat/completions", "/completions", "/chat/completions/tokens")


def refused(exc: BaseException | None) -> bool:
    """An endpoint's refusal of the agent's own turn request for what it holds (HTTP 400, 413 or
    422), as the rollout collector's policies and the LLM persons read one."""
    if getattr(exc, "status_code", None) not in REFUSAL_STATUSES:
        return False
    request = getattr(exc, "request", None)
    path = str(getattr(getattr(request, "url", None), "path", "") or "")
    return path.rstrip("/").endswith(TURN_ROUTES)


def empty_turn(response: Any) -> Any:
    """The endpoint's own reply holding nothing, as a turn whose text is "" (verifiers takes a
    reply with no content for no turn at all): its token ids, log-probs, finish reason and usage
    stay what the endpoint said, so an interleaved rollout goes on from its tokens and training
    sees the empty turn it has to learn against."""
    choice = response.choices[0]
    if hasattr(choice, "message"):
        message = choice.message.model_copy(update={"content": ""})
        choice = choice.model_copy(update={"message": message})
    else:
        choice = choice.model_copy(update={"text": ""})
    return response.model_copy(update={"choices": [choice]})


def infra_error(exc: BaseException, reason: str) -> Exception:
    """verifiers' ``InfraError`` for an infrastructure failure of ours (what ``max_retries``
    retries, a rollout's ``error`` in the outputs): its message is the failure's text led by
    ``reason``, its cause the failure itself."""
    err = _verifiers().InfraError(failure_message(reason, str(exc)))
    err.__cause__ = exc
    return err


@contextlib.contextmanager
def dialogue_failures():
    """Around the dialogue: a failure that names an infrastructure reason (the person's endpoint,
    a reference page, the task) becomes an ``InfraError``; anything else (a bad setting, a bug) is
    raised as it is and stops the run, as verifiers wants of errors that retries cannot fix."""
    try:
        yield
    except Exception as exc:
        reason = named_reason(exc)
        if not is_infrastructure(reason):
            raise
        raise infra_error(exc, reason) from exc


@functools.cache
def environment_class() -> type:
    """``ColBenchEnv``, the verifiers ``MultiTurnEnv`` (built on first use: verifiers imports lazily)."""
    vf = _verifiers()

    class ColBenchEnv(vf.MultiTurnEnv):
        """A ColBench dialogue per rollout; the person answers in ``env_response``."""

        def __init__(self, kind: str, conversation_kwargs: dict[str, Any], max_turns: int, **kwargs: Any) -> None:
            # verifiers' own turn cap stays off: the protocol's last turn is the answer and must
            # reach env_response (Conversation ends the dialogue there).
            super().__init__(max_turns=-1, **kwargs)
            self.kind, self.conversation_kwargs, self.colbench_max_turns = kind, conversation_kwargs, max_turns
            self._conversations: dict[str, Conversation] = {}
            self._replies: dict[str, Any] = {}  # a turn's reply as the endpoint sent it, while the turn is asked

        async def setup_state(self, state: Any) -> Any:
            info = state["info"]
            state["colbench"] = {"answer": None, "ended_by": None, "turns": 0}
            with dialogue_failures():  # a reference page that does not render, a broken task row ...
                conversation = await asyncio.to_thread(Conversation, self.kind, max_turns=self.colbench_max_turns,
                                                       **self.conversation_kwargs)
                self._conversations[state["trajectory_id"]] = conversation
                task = row_task(self.kind, _text(state["prompt"][-1]), state["answer"], info)
                await asyncio.to_thread(conversation.start, task=task.to_record(), seed=info.get("seed"))
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            conversation = self._conversations[state["trajectory_id"]]
            with dialogue_failures():  # the person's endpoint, the renderer of a draft ...
                outcome = await asyncio.to_thread(conversation.play, _text(messages[-1]))
            state["colbench"]["turns"] = conversation.turn
            if outcome.done:
                state["colbench"].update(answer=outcome.answer, ended_by=outcome.ended_by)
                state["final_env_response"] = []  # the person says nothing more: the rollout ends
                return []
            return [{"role": "user", "content": outcome.reply}]

        async def get_model_response(self, state: Any, prompt: Any, client: Any = None, model: Any = None,
                                     oai_tools: Any = None, sampling_args: Any = None, message_type: Any = None) -> Any:
            """The agent's turn, as the rollout collector takes it: an empty reply is an empty turn
            (verifiers raises ``EmptyModelResponseError``, which ``max_retries`` redraws and the
            outputs drop: a failing sample escaped its 0), and a request its endpoint refuses
            (HTTP 400, 413, 422) while it takes the dialogue's opening is the agent's own context
            filled (verifiers' ``OverlongPromptError``: the rollout ends, scored), whatever words
            the server's error uses. Anything else stays the endpoint's failure."""
            key = state["trajectory_id"]
            try:
                return await super().get_model_response(state, prompt, client, model, oai_tools, sampling_args,
                                                        message_type)
            except vf.EmptyModelResponseError as exc:
                response = self._replies.pop(key, None)
                if not str(exc).startswith(EMPTY_TURN) or response is None:  # no response or choices: the provider's
                    raise
                return empty_turn(response)
            except vf.OverlongPromptError:
                raise
            except vf.ModelError as exc:
                if refused(exc.__cause__) and await self._takes_opening(state, prompt, client, model, oai_tools,
                                                                        sampling_args, message_type):
                    raise vf.OverlongPromptError("the agent's turns no longer fit its model's context") from exc
                raise
            finally:
                self._replies.pop(key, None)

        def increment_state_usage_from_response(self, state: Any, response: Any) -> None:  # verifiers: @final
            # verifiers hands every reply here before it checks its content: the one place that
            # sees an empty reply's tokens (kept for get_model_response above, which takes them
            # back out of this slot before the call returns). Only adds: usage counts as verifiers counts it.
            if "trajectory_id" in state:
                self._replies[state["trajectory_id"]] = response
            super().increment_state_usage_from_response(state, response)

        async def _takes_opening(self, state: Any, prompt: Any, client: Any, model: Any, oai_tools: Any,
                                 sampling_args: Any, message_type: Any) -> bool:
            """Whether the agent's endpoint answers the refused request cut to the dialogue's
            opening, every other parameter as it was. Asked of the client itself, as the rollout
            collector's policy asks it: verifiers' own call would count the probe's tokens as the
            agent's and, in interleaved rollouts, send the whole dialogue's tokens again."""
            opening = dialogue_opening(prompt) if (message_type or self.message_type) == "chat" else None
            if opening is None:
                return False
            client, model = client or state["client"], model or state["model"]
            tools = oai_tools or state.get("oai_tools")
            sampling = {k: v for k, v in dict(sampling_args or state.get("sampling_args") or {}).items()
                        if v is not None}
            try:
                await client.chat.completions.create(model=model, messages=opening,
                                                     **({"tools": tools} if tools else {}), **sampling)
            except Exception:  # noqa: BLE001 - any failure of the probe: the endpoint's, as before
                return False
            return True

        async def get_prompt_messages(self, state: Any) -> Any:
            # The agent model's next request leaves Python as UTF-8 JSON: the dialogue goes encodable
            # (a lone surrogate of the agent's own earlier turn as U+FFFD), or the request fails to
            # encode and the rollout ends as a model error instead of going on as it does locally.
            return encodable_data(await super().get_prompt_messages(state))

        @vf.cleanup
        async def close_conversation(self, state: Any) -> None:
            conversation = self._conversations.pop(state.get("trajectory_id"), None)
            if conversation is not None:
                await asyncio.to_thread(conversation.close)

    ColBenchEnv.__qualname__ = ColBenchEnv.__name__  # picklable by reference, as the module attribute
    return ColBenchEnv


def _rubric(kind: str, reward_mode: str, scorer: str) -> Any:
    vf = _verifiers()
    # the settings of how the kind's reward is computed, to the kinds that take them (the table's reward_options)
    options = {name: value for name, value in (("reward_mode", reward_mode), ("scorer", scorer))
               if name in env_kind(kind).reward_options}

    async def outcome(state: Any) -> dict[str, Any]:
        if "colbench_result" not in state:
            answer = (state.get("colbench") or {}).get("answer")
            info = state["info"]
            task = row_task(kind, _text(state["prompt"][-1]), state["answer"], info)
            result = {"reward": 0.0, "success": False, "fraction": 0.0, "similarity": 0.0}
            try:
                if answer is not None:  # else no answer (the rollout failed or was cut): nothing to grade
                    verdict = await asyncio.to_thread(score_final, answer, task, **options)
                    result = {**verdict.evidence, "reward": verdict.reward}
            except Exception as exc:  # ScoreUnavailable, a renderer or grader that failed: never the answer's
                # Not the answer's score: the rollout carries verifiers' InfraError (retried with
                # max_retries, listed under the outputs' errors); the rubric still wants a float.
                # (Settings that cannot work, e.g. missing CLIP weights, fail in load_environment.)
                reason = end_reason_of(exc, "environment_error")
                state["error"] = infra_error(exc, reason)
                result = {**result, "end_reason": reason}
            state["colbench_result"] = result
        return state["colbench_result"]

    async def reward(state: Any) -> float:
        """The env's reward: success (0/1), fraction of tests (``reward_mode="fraction"``) or similarity."""
        return float((await outcome(state))["reward"])

    async def success(state: Any) -> float:
        return float((await outcome(state)).get("success", False))

    async def tests(state: Any) -> float:
        return float((await outcome(state)).get("fraction", 0.0))

    rubric = vf.Rubric(funcs=[reward], weights=[1.0])
    if kind == "backend":
        rubric.add_metric(success)
        rubric.add_metric(tests)
    return rubric


def load_environment(kind: str = "backend", tasks: str = "embedded:test", num_tasks: int | None = None,
                     max_turns: int = MAX_TURNS, simulator: str = "offline",
                     simulator_kwargs: dict[str, Any] | None = None, reward_mode: str = "success",
                     scorer: str = "auto", seed: int = 0, **kwargs: Any) -> Any:
    """A ColBench verifiers environment (``vf.MultiTurnEnv``).

    Args:
        kind: ``"backend"`` (write a function) or ``"frontend"`` (design a page).
        tasks: task source (``embedded:test``, ``embedded:train``, ``collab:train``, ``generated:…``
            or a task JSONL); the rows are its first ``num_tasks`` tasks.
        num_tasks: how many tasks (default: all; required for the unbounded generators).
        max_turns: agent turns per rollout (paper: 10; the last one is the answer).
        simulator: the person: ``offline`` (no model) or ``openai`` (an endpoint, with
            ``simulator_kwargs={"model": ..., "base_url": ...}``).
        reward_mode: backend reward, ``success`` or ``fraction``.
        scorer: frontend scorer, ``auto`` | ``clip`` | ``fallback``.
        seed: episode seed of row 0 (row ``i`` uses ``seed + i``: every rollout of a group plays
            the same task with the same person).
        **kwargs: further ``vf.Environment`` options (e.g. ``sampling_args``).
    """
    _verifiers()  # a clear message when the extra is missing (it brings datasets too)
    from datasets import Dataset

    entry = env_kind(check_kind(kind))
    if reward_mode not in ("success", "fraction"):
        raise ValueError(f"reward_mode must be 'success' or 'fraction', got {reward_mode!r}")
    if isinstance(simulator, str) and simulator not in entry.simulators:
        raise ValueError(f"simulator must be one of {sorted(entry.simulators)} for {kind}, got {simulator!r}")
    if "scorer" in entry.reward_options:  # a scorer that cannot work fails here, not as an error of every rollout
        from colbench_gym.scoring import shared_scorer

        shared_scorer(scorer)
    conversation_kwargs = {"tasks": tasks, "simulator": simulator, "simulator_kwargs": simulator_kwargs}
    dataset = Dataset.from_list(task_rows(kind, tasks, num_tasks, seed))
    return environment_class()(kind, conversation_kwargs, max_turns, dataset=dataset,
                               system_prompt=instructions(kind, max_turns),
                               rubric=_rubric(kind, reward_mode, scorer), **kwargs)


def __getattr__(name: str) -> Any:
    if name == "ColBenchEnv":
        return environment_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
