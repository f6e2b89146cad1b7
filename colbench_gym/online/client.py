"""Client of ``colbench serve``: OpenEnv's WebSocket ``EnvClient`` for ColBench, a Gymnasium-like
wrapper around it, and the TRL ``environment_factory`` for remote envs.

Each :class:`RemoteColBenchEnv` is one WebSocket session, i.e. one env on the server. The tool
adapter (:class:`~colbench_gym.online.tool_env.ColBenchToolEnv`) holds it exactly as it holds a
local ``gym.make`` env, so training against a remote server changes one argument::

    factory = make_remote_tool_env_factory("http://cpu-box:8000/backend")
    GRPOTrainer(..., environment_factory=factory)
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from typing import Any
from urllib.parse import urlparse

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from websockets.exceptions import ConnectionClosed

from colbench_gym.online.server import PREFIXES, ColBenchAction, ColBenchObservation, ColBenchState
from colbench_gym.online.tool_env import ColBenchToolEnv, tool_env_class
from colbench_gym.rendering.result import ReferenceRenderError
from colbench_gym.tasks.accounting import (
    InfrastructureFailure,
    check_end_reason,
    failure_message,
    is_infrastructure,
    parse_failure_message,
)

#: The WebSocket close code of a message over the receiver's size limit (RFC 6455).
TOO_BIG = 1009


class ServerCapacityError(ConnectionError):
    """The server holds as many sessions as it allows (``--max-sessions``): no session for this client."""


class RemoteEnvironmentError(InfrastructureFailure):
    """An infrastructure failure inside the server's env (the person's endpoint, the renderer, the
    task): ``end_reason`` names it, as the local env's exception would, so the tool env and the
    accounting leave the episode unscored."""


class RemoteReferenceRenderError(RemoteEnvironmentError, ReferenceRenderError):
    """The server's env could not render a task's reference page (also when retried): the
    episode cannot be played, as locally, so the tool env skips it (``reset`` returns None, no
    reward) instead of raising out of the ``reset`` that TRL calls unguarded."""

    def __init__(self, end_reason: str, detail: str) -> None:
        RuntimeError.__init__(self, failure_message(check_end_reason(end_reason), detail))
        self.end_reason, self.reason, self.detail = end_reason, detail, detail


class ColBenchEnvClient(EnvClient[ColBenchAction, ColBenchObservation, ColBenchState]):
    """OpenEnv client of one ColBench env of ``colbench serve`` (``base_url`` = server + prefix,
    e.g. ``http://host:8000/backend``).

    ``reset(seed=..., task_index=...)`` picks the task: rollouts reset with the same row (the
    same ``seed``, or ``task_index``) start from the same task with the same person, as the
    completions of one GRPO group must. When the server refuses or ends the session (a full
    server, a failed environment), the server's reason is raised — :class:`ServerCapacityError`
    for ``CAPACITY_REACHED`` — instead of the bare ``ConnectionClosedOK`` of the closed socket.

    ``max_message_size_mb`` (OpenEnv's: 100 MB) is None here, no limit on what the client receives:
    every observation echoes the dialogue (``info["messages"]``), each agent turn kept up to
    200,000 characters (~2.4 MB as JSON escapes) for as many turns as the server's ``--max-turns``,
    so a fixed limit let an agent's long turns end its episode as the client's failure, unscored. A limit you set that an observation outgrows is the
    agent's dialogue grown past it: its 0, as a turn over the server's own limit is.
    """

    def __init__(self, base_url: str, connect_timeout_s: float = 10.0, message_timeout_s: float = 60.0,
                 max_message_size_mb: float | None = None, provider: Any = None, mode: str | None = None) -> None:
        super().__init__(base_url, connect_timeout_s=connect_timeout_s, message_timeout_s=message_timeout_s,
                         max_message_size_mb=100.0 if max_message_size_mb is None else max_message_size_mb,
                         provider=provider, mode=mode)
        if max_message_size_mb is None:
            self._max_message_size = None  # websockets: no limit

    async def _send_and_receive(self, message: dict[str, Any]) -> dict[str, Any]:
        # EnvClient's own, except that a refused or closed session raises the server's reason.
        try:
            await self._send(message)
            response = await self._receive()
        except ConnectionClosed as exc:
            reason = await self._reason_for_close()
            await self._drop()  # the next call opens a new session (e.g. once the server has room)
            raise self._closed_error(reason, exc) from exc
        except (asyncio.TimeoutError, OSError) as exc:
            # No reply in time (a slow person's endpoint), or the connection broke: the server's
            # late reply would answer the *next* request of this socket (a reset read the last
            # step's reply, every later call one behind), so the session is dropped; the step is
            # the server's failure, not the agent's 0.
            await self._drop()
            what = (f"did not answer within {self._message_timeout:g} s" if isinstance(exc, asyncio.TimeoutError)
                    else f"could not be reached ({type(exc).__name__}: {exc})")
            raise RemoteEnvironmentError("environment_error", f"the ColBench server at {self._ws_url} {what}; "
                                         "raise message_timeout_s or check the server") from exc
        if response.get("type") == "error":
            data = response.get("data") or {}
            if data.get("code") == "CAPACITY_REACHED":  # the server closes this session next
                await self._drop()
                raise self._closed_error(data, None)
            message = str(data.get("message", "Unknown error"))
            reason, detail = parse_failure_message(message)
            if data.get("code") == "EXECUTION_ERROR" and is_infrastructure(reason):
                # the server's env led its failure with the end reason (then the exception's class name)
                remote = (RemoteReferenceRenderError if detail.startswith(f"{ReferenceRenderError.__name__}:")
                          else RemoteEnvironmentError)
                raise remote(reason, f"{detail} (on the server)")
            raise RuntimeError(f"Server error: {message} (code: {data.get('code', 'UNKNOWN')})")
        return response

    async def _drop(self) -> None:
        ws, self._ws = self._ws, None
        try:
            await ws.close()
        except Exception:  # noqa: BLE001 - already closed
            pass

    async def _reason_for_close(self) -> dict[str, Any] | None:
        """The error the server sent before closing (OpenEnv sends one, then closes), if it arrived."""
        try:
            raw = await asyncio.wait_for(self._ws.recv(), timeout=1.0)
            payload = json.loads(raw)
        except Exception:  # noqa: BLE001 - nothing buffered or unreadable: no reason to report
            return None
        return payload.get("data") if isinstance(payload, dict) and payload.get("type") == "error" else None

    def _closed_error(self, reason: dict[str, Any] | None, exc: ConnectionClosed | None) -> Exception:
        url = self._ws_url
        if reason is None:
            code = getattr(getattr(exc, "rcvd", None), "code", None)
            if code == TOO_BIG:  # the agent's own message is over the server's frame limit: its turn, its 0
                return ConnectionError(f"the ColBench server at {url} closed the session: the message was larger "
                                       f"than it takes ({exc})")
            if getattr(getattr(exc, "sent", None), "code", None) == TOO_BIG:  # over the limit set on this client
                return ConnectionError(f"an observation of the ColBench server at {url} (the dialogue, echoed) was "
                                       f"larger than this client takes, max_message_size_mb={self._max_message_size / 2**20:g} "
                                       f"({exc}); the agent's turns outgrew it")
            # the server went away mid-episode (killed, crashed, its connection lost): not the agent's doing
            return RemoteEnvironmentError("environment_error", f"the ColBench server at {url} closed the session "
                                          f"({exc}); check that it is running and its log")
        if reason.get("code") == "CAPACITY_REACHED":
            return ServerCapacityError(
                f"the ColBench server at {url} is full: {reason.get('active_sessions')}/{reason.get('max_sessions')} "
                f"sessions in use ({reason.get('message')}). Close sessions you no longer need, retry later, or "
                "start `colbench serve` with a larger --max-sessions (a trainer needs one session per rollout).")
        return RuntimeError(f"Server error: {reason.get('message', 'unknown error')} (code: {reason.get('code')})")

    def _step_payload(self, action: ColBenchAction) -> dict[str, Any]:
        return {"message": action.message}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ColBenchObservation]:
        obs = ColBenchObservation(**payload.get("observation", {}), done=payload.get("done", False),
                                  reward=payload.get("reward"))
        return StepResult(observation=obs, reward=payload.get("reward"), done=bool(payload.get("done", False)))

    def _parse_state(self, payload: dict[str, Any]) -> ColBenchState:
        return ColBenchState(**payload)


def kind_from_url(base_url: str) -> str:
    """``backend``/``frontend`` from the URL's last path segment (the server's prefixes)."""
    last = urlparse(base_url).path.rstrip("/").rsplit("/", 1)[-1]
    if last not in PREFIXES:
        raise ValueError(f"{base_url!r} names no ColBench env; end it with one of the server's prefixes "
                         f"{['/' + p for p in PREFIXES]}, e.g. http://host:8000/backend")
    return last


class RemoteColBenchEnv:
    """A remote ColBench env with the Gymnasium ``reset``/``step``/``close`` API (one session).

    Args:
        base_url: ``http://host:port/backend`` or ``.../frontend``.
        message_timeout_s: how long one step may take on the server (grading, rendering, an LLM
            simulator). Keep it well above the server's slowest step: an answer's grading alone
            may take the grader's ``total_timeout`` + ``call_timeout`` + 5 s (17 s by default),
            and a step the client stops waiting for is unscored (``environment_error``), so a
            timeout under that would let a slow answer escape its score.
        capacity_wait_s: how long ``reset`` waits for a session on a full server (default:
            ``message_timeout_s``). A session dropped after a step timed out stays busy on the
            server until that step ends, so with ``--max-sessions`` sized to the trainer the next
            episode's reset found the server full, and TRL, which calls ``reset`` unguarded,
            stopped the run. A server still full after the wait is raised
            (:class:`ServerCapacityError`): too few sessions would fail every episode.
    """

    def __init__(self, base_url: str, message_timeout_s: float = 300.0, capacity_wait_s: float | None = None) -> None:
        self.kind = kind_from_url(base_url)
        self.base_url = base_url
        self.capacity_wait_s = message_timeout_s if capacity_wait_s is None else float(capacity_wait_s)
        self._client = ColBenchEnvClient(base_url=base_url, message_timeout_s=message_timeout_s).sync()
        self._client.connect()
        # Closed when garbage-collected, or at exit while OpenEnv's sync loop thread still runs: a
        # close left to interpreter shutdown starts that thread anew, which never starts then (a
        # script that exited with an open session hung for good).
        self._closer = weakref.finalize(self, _close_quietly, self._client)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        options = dict(options or {})
        kwargs: dict[str, Any] = {"seed": seed}
        if "task_index" in options:
            kwargs["task_index"] = options.pop("task_index")
        if "task" in options:
            kwargs["task"] = options.pop("task")
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; use 'task' or 'task_index'")
        deadline, pause = time.monotonic() + self.capacity_wait_s, 0.25
        while True:
            try:
                result = self._client.reset(**kwargs)
                break
            except ServerCapacityError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                time.sleep(min(pause, left))
                pause = min(2 * pause, 5.0)
        return result.observation.text, dict(result.observation.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self._client.step(ColBenchAction(message=action))
        return result.observation.text, float(result.reward or 0.0), bool(result.done), False, \
            dict(result.observation.info)

    def state(self) -> ColBenchState:
        return self._client.state()

    def close(self) -> None:
        self._closer()


def _close_quietly(client: Any) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - a session the server already ended (or a server gone): nothing to close
        pass


class RemoteToolEnvFactory:
    """Zero-argument, picklable ``environment_factory``: one remote session per tool env."""

    def __init__(self, base_url: str, message_timeout_s: float = 300.0, capacity_wait_s: float | None = None) -> None:
        self.kind = kind_from_url(base_url)
        self.base_url = base_url
        self.message_timeout_s = message_timeout_s
        self.capacity_wait_s = capacity_wait_s

    def __call__(self) -> ColBenchToolEnv:
        return tool_env_class(self.kind)(RemoteColBenchEnv(self.base_url, self.message_timeout_s, self.capacity_wait_s))

    def __repr__(self) -> str:
        return f"make_remote_tool_env_factory({self.base_url!r})"


def make_remote_tool_env_factory(base_url: str, message_timeout_s: float = 300.0,
                                 capacity_wait_s: float | None = None) -> RemoteToolEnvFactory:
    """The ``environment_factory`` for TRL's ``GRPOTrainer`` against a ``colbench serve`` env
    (the options are :class:`RemoteColBenchEnv`'s)."""
    return RemoteToolEnvFactory(base_url, message_timeout_s, capacity_wait_s)
