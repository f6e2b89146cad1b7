"""ColBench as OpenEnv environments, served over HTTP and WebSocket (``colbench serve``).

OpenEnv (``pip install colbench-gym[serve]``) serves an ``Environment`` with ``reset``/``step``
/``state`` through ``create_fastapi_app``: stateless HTTP endpoints and WebSocket sessions with
one environment per session (``/ws``). Each ColBench environment gets its own app, mounted under
its own prefix of one server:

* ``/backend`` — ``ColBench-Backend-v0`` (``/backend/ws``, ``/backend/reset``, ``/backend/step``,
  ``/backend/state``, ``/backend/health``, ``/backend/schema``);
* ``/frontend`` — ``ColBench-Frontend-v0`` (same routes under ``/frontend``).

An action is the agent's whole turn in ColBench's text protocol (:class:`ColBenchAction`), so a
remote episode is the local ``gym.make`` episode, step for step; the observation carries the
person's message and the env's ``info`` (dialogue, grading results — never the reference).
Grading sandboxes and browsers thus run on CPU machines apart from the GPU trainer, which talks
to them through :mod:`colbench_gym.online.client`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from openenv.core.env_server import Action, Environment, Observation, State, create_fastapi_app
from pydantic import Field

from colbench_gym.envs.base import EpisodeOverError, reset_options
from colbench_gym.spaces import encodable, encodable_data
from colbench_gym.tasks.accounting import failure_message, is_infrastructure, named_reason
from colbench_gym.tasks.kinds import KINDS

#: URL prefix (the kind's name) -> Gymnasium id of the environment served there.
PREFIXES = {kind.name: kind.env_id for kind in KINDS.values()}


class ColBenchAction(Action):
    """One agent turn: free text in ColBench's protocol (``OUTPUT:``, ``I WANT TO ANSWER:``)."""

    message: str = Field(description="the agent's whole turn, exactly as gym's env.step(action) takes it")


class ColBenchObservation(Observation):
    """The person's newest message (the task at reset, ``""`` at the end) and the env's ``info``."""

    text: str = Field(default="", description="the observation of gym's reset/step")
    info: dict[str, Any] = Field(default_factory=dict, description="gym's info (JSON-safe): messages, turn, grading")


class ColBenchState(State):
    """Session state: the episode id, steps, and where the episode stands."""

    kind: str = ""
    task_id: str | None = None
    task_index: int | None = None
    turn: int = 0
    done: bool = True
    reward: float | None = None


#: Why a step without a reset is refused: over HTTP it is the only thing a step can be.
NO_EPISODE = (
    "no episode to step: call reset first. OpenEnv's stateless HTTP routes (POST /reset, POST /step, "
    "GET /state) build a fresh environment for every request, so an HTTP step never follows a reset: play "
    "episodes over one WebSocket session, ws://HOST:PORT/<env>/ws (ColBenchEnvClient, RemoteColBenchEnv or "
    "any OpenEnv EnvClient with base_url http://HOST:PORT/<env>). HTTP POST /reset only shows a task's "
    "opening message.")


class EpisodeNotStarted(RuntimeError):
    """``step`` on an environment that was never reset (every HTTP ``/step``): answered with 409."""


def raise_tagged(exc: BaseException, unnamed: str | None = None, caller_task: bool = False) -> None:
    """Raise what the client receives for a failure inside the env. OpenEnv sends only the
    message, so an infrastructure failure (:func:`~colbench_gym.tasks.accounting.named_reason`,
    else ``unnamed``: ``step`` passes ``environment_error``) goes as :func:`failure_message` text,
    which :mod:`colbench_gym.online.client` turns back into an exception carrying its end reason (a
    remote trainer then leaves the episode unscored, as a local one does). Anything else is raised
    as it is: a caller's bad argument, or (``caller_task``) a malformed task the caller passed."""
    reason = named_reason(exc) or unnamed
    if not is_infrastructure(reason) or (caller_task and reason == "task_error"):
        raise exc
    raise RuntimeError(encodable(failure_message(reason, f"{type(exc).__name__}: {exc}"))) from exc


def _json_safe(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` as the wire carries it: JSON data, every string encodable (OpenEnv sends UTF-8
    JSON; an agent's turn holding a lone surrogate goes back in ``messages`` with U+FFFD)."""
    return encodable_data(json.loads(json.dumps(info, default=str)))


class ColBenchOpenEnv(Environment):
    """A ``gym.make`` ColBench env behind OpenEnv's ``Environment`` interface.

    Args:
        env_id: ``ColBench-Backend-v0`` or ``ColBench-Frontend-v0``.
        **make_kwargs: ``gym.make`` options (``tasks``, ``simulator``, ``reward_mode``, ...).

    ``reset(seed=, episode_id=, task_index=, task=)`` picks the task like the Gymnasium env's
    ``options``. Sessions are independent envs; the grader and the renderer they share are
    thread-safe, so concurrent sessions are supported.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str = "ColBench-Backend-v0", **make_kwargs: Any) -> None:
        super().__init__()
        import gymnasium as gym

        import colbench_gym  # noqa: F401 - registers the ids

        self._env = gym.make(env_id, **make_kwargs)
        self._state = ColBenchState(kind=getattr(self._env.unwrapped, "kind", ""))
        self._started = False

    def reset(self, seed: int | None = None, episode_id: str | None = None, task_index: int | None = None,
              task: dict[str, Any] | None = None, **kwargs: Any) -> ColBenchObservation:
        if kwargs:
            raise ValueError(f"unknown reset argument(s) {sorted(kwargs)}; use seed, episode_id, task_index or task")
        try:
            text, info = self._env.reset(seed=seed, options=reset_options(task_index, task))
        except Exception as exc:
            raise_tagged(exc, caller_task=task is not None)
        self._started = True
        self._state = ColBenchState(episode_id=episode_id, step_count=0, kind=self._state.kind,
                                    task_id=info.get("task_id"), task_index=info.get("task_index"),
                                    turn=0, done=False, reward=None)
        return ColBenchObservation(text=encodable(text), info=_json_safe(info), done=False, reward=None)

    def step(self, action: ColBenchAction, timeout_s: float | None = None, **kwargs: Any) -> ColBenchObservation:
        if not self._started:
            raise EpisodeNotStarted(NO_EPISODE)
        try:
            text, reward, terminated, truncated, info = self._env.step(action.message)
        except EpisodeOverError:
            raise  # the caller's misuse, said as it is
        except Exception as exc:  # inside the env, whatever it is: infrastructure
            raise_tagged(exc, unnamed="environment_error")
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.turn = int(info.get("turn", self._state.turn + 1))
        self._state.done = done
        # An answer the infrastructure could not score (grading_error, task_error, rendering_error:
        # info["end_reason"]) has no reward over the wire: OpenEnv's reward is optional, and a
        # trainer must not learn from the env's placeholder number.
        scored = None if is_infrastructure(info.get("end_reason")) else float(reward)
        if done:
            self._state.reward = scored
        return ColBenchObservation(text=encodable(text), info=_json_safe(info), done=done, reward=scored)

    @property
    def state(self) -> ColBenchState:
        return self._state

    def close(self) -> None:
        self._env.close()


def _refuse_step_without_episode(request: Any, exc: EpisodeNotStarted) -> Any:
    from fastapi.responses import JSONResponse

    return JSONResponse(status_code=409, content={"detail": str(exc)})


def _check_task_sources(envs: dict[str, dict[str, Any]]) -> None:
    """Resolve each served env's ``tasks`` once, at start-up: the envs are made per session, so
    an unknown source would otherwise be found only at the first reset (an HTTP 500)."""
    from colbench_gym.tasks.sources import resolve_task_source

    for name, make_kwargs in envs.items():
        try:
            resolve_task_source(make_kwargs.get("tasks"), name)
        except (ValueError, OSError) as exc:
            raise ValueError(f"{name} tasks: {' '.join(str(exc).split())}; `colbench tasks sources` lists the "
                             "task sources") from None


def create_colbench_app(envs: dict[str, dict[str, Any]] | None = None, max_concurrent_envs: int = 16,
                        root: str | None = None):
    """One FastAPI app serving each ColBench env under its prefix (see :data:`PREFIXES`).

    ``envs`` maps a prefix (``"backend"``, ``"frontend"``) to its ``gym.make`` options; default:
    both, with default options. ``max_concurrent_envs`` caps the WebSocket sessions per env.
    ``root`` (one of the served prefixes) also serves that env at ``/`` (same sessions), where
    OpenEnv's tools look for an environment (a Hugging Face Space, ``openenv validate --url``).

    Which routes to use: the WebSocket session ``/<env>/ws`` plays episodes. The stateless HTTP
    routes are OpenEnv's: ``POST /<env>/reset`` shows a task's opening message; ``POST /<env>/step``
    has no episode to step and answers 409 with the reason (:data:`NO_EPISODE`).
    """
    from fastapi import FastAPI

    envs = {name: {} for name in PREFIXES} if envs is None else envs
    unknown = set(envs) - set(PREFIXES)
    if unknown:
        raise ValueError(f"unknown environment(s) {sorted(unknown)}; choose from {sorted(PREFIXES)}")
    if max_concurrent_envs < 1:
        raise ValueError(f"max_concurrent_envs must be >= 1, got {max_concurrent_envs}")
    if root is not None and root not in envs:
        raise ValueError(f"root={root!r} is not a served environment; choose from {sorted(envs)}")
    _check_task_sources(envs)
    # With a root env, /openapi.json and /docs are the root env's (OpenEnv's tools read them there).
    docs = {} if root is None else {"openapi_url": None, "docs_url": None, "redoc_url": None}
    app = FastAPI(title="ColBench OpenEnv server",
                  description="ColBench environments as OpenEnv environments, one per URL prefix.", **docs)
    subs: dict[str, Any] = {}
    for name, make_kwargs in envs.items():
        factory = functools.partial(ColBenchOpenEnv, PREFIXES[name], **make_kwargs)
        sub = create_fastapi_app(factory, ColBenchAction, ColBenchObservation, max_concurrent_envs=max_concurrent_envs)
        sub.add_exception_handler(EpisodeNotStarted, _refuse_step_without_episode)
        app.mount(f"/{name}", sub)
        subs[name] = sub

    @app.get("/")
    def index() -> dict[str, Any]:
        return {"environments": {f"/{name}": PREFIXES[name] for name in envs},
                "websocket": {name: f"/{name}/ws" for name in envs},
                "max_concurrent_envs": max_concurrent_envs, "root": root}

    if root is not None:
        app.mount("/", subs[root])  # after "/" itself (the index above): every other root path is the env's
    return app
