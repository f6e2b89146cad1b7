"""What every simulated person served by an OpenAI-compatible chat endpoint (vLLM, OpenAI, llama.cpp …)
shares: the client, its retries and limits, the errors it raises. Each kind's person is its own module
(``openai_backend.py``, ``openai_frontend.py``) holding only that kind's prompt."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from colbench_gym.simulators.base import REFUSAL_STATUSES, HumanSimulator, PromptRefused, SimulatorError
from colbench_gym.simulators.openai_resilience import GarbageResponse, call_sync, shared_limits, sync_http_client
from colbench_gym.simulators.prompts import READING_BUDGETS
from colbench_gym.spaces import encodable, encodable_data


class OpenAIChatSimulator(HumanSimulator):
    """Shared client handling: timeouts, retries with backoff, adaptive concurrency, clear errors.

    Transient HTTP failures are retried by the ``openai`` client (``max_retries``, exponential
    backoff, ``Retry-After`` honoured); garbage bodies are retried too
    (:mod:`~colbench_gym.simulators.openai_resilience`). Requests from every simulator of the
    process to one endpoint share an AIMD limit (``concurrency=None``: adaptive, start at 4; an
    int: at most that many). What survives the retries becomes :class:`SimulatorError` naming the
    endpoint and what to do; the environment then leaves the agent's turn unconsumed.
    The client is built on first use, so the simulator (and its env) pickles before ``reset``.
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
        concurrency: int | None = None,
    ) -> None:
        try:
            import openai  # noqa: F401, PLC0415 - a base dependency, but keep import cost off gym.make
        except ImportError as exc:  # pragma: no cover
            raise SimulatorError("the 'openai' simulator needs the openai package: pip install openai") from exc
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.model = model or os.environ.get("COLBENCH_SIMULATOR_MODEL")
        if not self.model:
            raise SimulatorError(
                "the 'openai' simulator needs a model name: simulator_kwargs={'model': ..., 'base_url': ...} "
                "(e.g. the model served by `vllm serve`), or set COLBENCH_SIMULATOR_MODEL"
            )
        if concurrency is not None and int(concurrency) < 1:
            raise SimulatorError(f"simulator concurrency must be >= 1, got {concurrency}")
        self._key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"  # local servers accept any key
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.concurrency = None if concurrency is None else int(concurrency)
        self._client_obj: Any = None
        self.sampling = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens}
        self.extra_body = extra_body or {}
        self.seed = seed
        self._episode_seed: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client_obj"] = None  # HTTP clients do not pickle; rebuilt on first use
        return state

    @property
    def _client(self):
        if self._client_obj is None:
            import openai  # noqa: PLC0415

            control, slots = shared_limits(self.base_url, self.concurrency)
            self._client_obj = openai.OpenAI(base_url=self.base_url, api_key=self._key, timeout=self.timeout,
                                             max_retries=self.max_retries, http_client=sync_http_client(control, slots))
        return self._client_obj

    def reset(self, task, *, seed: int | None = None) -> None:
        self._episode_seed = seed if self.seed is None else self.seed

    def _ask(self, build: Callable[[int], list[dict[str, Any]]], retry: int = 0) -> str:
        """The person's reply to the request ``build(budget)`` makes, reading as much of the dialogue
        as the endpoint takes: a request it refuses (:class:`PromptRefused`) is built again with
        the next of :data:`READING_BUDGETS`. What the agent wrote can make the person skim, never
        fail: only a refusal of the request that holds none of the dialogue is the simulator's
        failure (its context cannot hold the task's own prompt, or the endpoint refuses it)."""
        for budget in READING_BUDGETS[:-1]:
            try:
                return self._chat(build(budget), retry=retry)
            except PromptRefused:
                continue
        try:
            return self._chat(build(READING_BUDGETS[-1]), retry=retry)
        except PromptRefused as exc:
            raise SimulatorError(f"{exc}; it refused even the request holding none of the dialogue, so the task's "
                                 "own prompt does not fit: serve the model with a longer context "
                                 "(e.g. vllm --max-model-len) or check what the endpoint refuses") from exc

    def _chat(self, messages: list[dict[str, Any]], retry: int = 0) -> str:
        import openai  # noqa: PLC0415

        client = self._client
        control, _ = shared_limits(self.base_url, self.concurrency)
        # a reply asked for again by the leak guard is sampled with another seed
        seed = None if self._episode_seed is None else self._episode_seed + retry

        # The request leaves Python as UTF-8 JSON: any str of the dialogue is sent, a lone surrogate
        # as U+FFFD (unencoded, the client raises before the request, and the agent's own turn
        # would end its episode as the endpoint's failure).
        messages = encodable_data(messages)

        def request():
            return client.chat.completions.create(model=self.model, messages=messages, seed=seed,
                                                  extra_body=self.extra_body or None, **self.sampling)

        try:
            text, _, response = call_sync(request, control, garbage_retries=self.max_retries)
        except openai.APITimeoutError as exc:
            raise SimulatorError(f"the simulator endpoint {self.base_url} timed out (no answer within {self.timeout:g} s, "
                                 f"{self.max_retries} retries); raise simulator_kwargs['timeout'] or check the "
                                 "server's load") from exc
        except openai.APIConnectionError as exc:
            raise SimulatorError(
                f"cannot reach the simulator endpoint {self.base_url} ({exc}); start the server "
                "(e.g. `vllm serve MODEL`) or fix simulator_kwargs['base_url']"
            ) from exc
        except openai.APIStatusError as exc:
            # a refusal of what the request holds: _ask asks again with less of the dialogue
            error = PromptRefused if exc.status_code in REFUSAL_STATUSES else SimulatorError
            raise error(
                f"the simulator endpoint {self.base_url} answered HTTP {exc.status_code} for model "
                f"{self.model!r}: {' '.join(str(exc).split())[:300]}"
            ) from exc
        except GarbageResponse as exc:
            raise SimulatorError(f"the simulator endpoint {self.base_url} sent an unreadable reply: {exc}") from exc
        tokens = getattr(response, "usage", None)  # the OpenAI usage fields, when the server sends them
        self._count_tokens(getattr(tokens, "prompt_tokens", 0) or 0, getattr(tokens, "completion_tokens", 0) or 0)
        return encodable(text).strip()  # an endpoint's \ud800 escape: no lone surrogate reaches the env

    def close(self) -> None:
        if self._client_obj is not None:
            self._client_obj.close()
            self._client_obj = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"
