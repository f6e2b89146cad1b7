"""A human simulator served by any OpenAI-compatible chat endpoint (vLLM, OpenAI, llama.cpp …)."""

from __future__ import annotations

import os
from typing import Any

from colbench_gym.simulators.base import Dialogue, HumanSimulator, SimulatorError
from colbench_gym.simulators.prompts import BACKEND_SYSTEM_PROMPT, simulator_messages
from colbench_gym.tasks.records import BackendTask


class OpenAIChatSimulator(HumanSimulator):
    """Shared client handling: timeouts, retries with exponential backoff, clear errors.

    Retries and backoff are the ``openai`` client's own (``max_retries``); connection and HTTP
    failures that survive them become :class:`SimulatorError` naming the endpoint and what to do.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        max_tokens: int = 256,
        timeout: float = 60.0,
        max_retries: int = 3,
        extra_body: dict[str, Any] | None = None,
        seed: int | None = None,
    ) -> None:
        try:
            import openai  # noqa: PLC0415 - a base dependency, but keep import cost off gym.make
        except ImportError as exc:  # pragma: no cover
            raise SimulatorError("the 'openai' simulator needs the openai package: pip install openai") from exc
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.model = model or os.environ.get("COLBENCH_SIMULATOR_MODEL")
        if not self.model:
            raise SimulatorError(
                "the 'openai' simulator needs a model name: simulator_kwargs={'model': ..., 'base_url': ...} "
                "(e.g. the model served by `vllm serve`), or set COLBENCH_SIMULATOR_MODEL"
            )
        key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"  # local servers accept any key
        self._client = openai.OpenAI(base_url=self.base_url, api_key=key, timeout=timeout, max_retries=max_retries)
        self._openai = openai
        self.sampling = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        self.extra_body = extra_body or {}
        self.seed = seed
        self._episode_seed: int | None = None

    def reset(self, task, *, seed: int | None = None) -> None:
        self._episode_seed = seed if self.seed is None else self.seed

    def _chat(self, messages: list[dict[str, Any]]) -> str:
        try:
            response = self._client.chat.completions.create(
                model=self.model, messages=messages, seed=self._episode_seed, extra_body=self.extra_body or None,
                **self.sampling,
            )
        except self._openai.APIConnectionError as exc:
            raise SimulatorError(
                f"cannot reach the simulator endpoint {self.base_url} ({exc}); start the server "
                "(e.g. `vllm serve MODEL`) or fix simulator_kwargs['base_url']"
            ) from exc
        except self._openai.APIStatusError as exc:
            raise SimulatorError(
                f"the simulator endpoint {self.base_url} answered HTTP {exc.status_code} for model "
                f"{self.model!r}: {str(exc)[:300]}"
            ) from exc
        if not response.choices:
            raise SimulatorError(f"the simulator endpoint {self.base_url} returned no choices")
        return (response.choices[0].message.content or "").strip()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"


class OpenAIBackendSimulator(OpenAIChatSimulator):
    """Backend simulator: an LLM reading the hidden reference function answers the agent."""

    kind = "backend"

    def respond(self, task: BackendTask, dialogue: Dialogue, **context: Any) -> str:
        system = BACKEND_SYSTEM_PROMPT.format(problem_description=task.problem_description,
                                              ground_truth=task.ground_truth)
        return self._chat(simulator_messages(system, dialogue))
