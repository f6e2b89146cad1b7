"""Client of ``colbench serve``: OpenEnv's WebSocket ``EnvClient`` for ColBench, a Gymnasium-like
wrapper around it, and the TRL ``environment_factory`` for remote envs.

Each :class:`RemoteColBenchEnv` is one WebSocket session, i.e. one env on the server. The tool
adapter (:class:`~colbench_gym.online.tool_env.ColBenchToolEnv`) holds it exactly as it holds a
local ``gym.make`` env, so training against a remote server changes one argument::

    factory = make_remote_tool_env_factory("http://cpu-box:8000/backend")
    GRPOTrainer(..., environment_factory=factory)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from colbench_gym.online.server import PREFIXES, ColBenchAction, ColBenchObservation, ColBenchState
from colbench_gym.online.tool_env import ColBenchToolEnv, tool_env_class


class ColBenchEnvClient(EnvClient[ColBenchAction, ColBenchObservation, ColBenchState]):
    """OpenEnv client of one ColBench env of ``colbench serve`` (``base_url`` = server + prefix,
    e.g. ``http://host:8000/backend``)."""

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
            simulator).
    """

    def __init__(self, base_url: str, message_timeout_s: float = 300.0) -> None:
        self.kind = kind_from_url(base_url)
        self.base_url = base_url
        self._client = ColBenchEnvClient(base_url=base_url, message_timeout_s=message_timeout_s).sync()
        self._client.connect()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        options = dict(options or {})
        kwargs: dict[str, Any] = {"seed": seed}
        if "task_index" in options:
            kwargs["task_index"] = options.pop("task_index")
        if "task" in options:
            kwargs["task"] = options.pop("task")
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; use 'task' or 'task_index'")
        result = self._client.reset(**kwargs)
        return result.observation.text, dict(result.observation.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self._client.step(ColBenchAction(message=action))
        return result.observation.text, float(result.reward or 0.0), bool(result.done), False, \
            dict(result.observation.info)

    def state(self) -> ColBenchState:
        return self._client.state()

    def close(self) -> None:
        self._client.close()


class RemoteToolEnvFactory:
    """Zero-argument, picklable ``environment_factory``: one remote session per tool env."""

    def __init__(self, base_url: str, message_timeout_s: float = 300.0) -> None:
        self.kind = kind_from_url(base_url)
        self.base_url = base_url
        self.message_timeout_s = message_timeout_s

    def __call__(self) -> ColBenchToolEnv:
        return tool_env_class(self.kind)(RemoteColBenchEnv(self.base_url, self.message_timeout_s))

    def __repr__(self) -> str:
        return f"make_remote_tool_env_factory({self.base_url!r})"


def make_remote_tool_env_factory(base_url: str, message_timeout_s: float = 300.0) -> RemoteToolEnvFactory:
    """The ``environment_factory`` for TRL's ``GRPOTrainer`` against a ``colbench serve`` env."""
    return RemoteToolEnvFactory(base_url, message_timeout_s)
