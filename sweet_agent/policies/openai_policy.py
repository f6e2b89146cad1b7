"""Any OpenAI-compatible chat endpoint as a policy (vLLM's server, llama.cpp, OpenAI, ...).

Why async: an endpoint's cost is latency, not local compute, so many episodes should have a
request in flight at once. :meth:`OpenAIPolicy.agenerate` sends one request per conversation
concurrently (bounded by ``concurrency``); the server (vLLM) does the batching. Seeds are sent
as the request's ``seed`` so servers that honour it (vLLM, OpenAI) give reproducible samples.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from colbench_gym.simulators.base import REFUSAL_STATUSES, dialogue_opening
from colbench_gym.simulators.openai_resilience import (
    AdaptiveConcurrency,
    GarbageResponse,
    async_http_client,
    call_async,
    choice_text,
)
from sweet_agent.policies.base import (
    ContextExhausted,
    EndpointError,
    Generation,
    Messages,
    Policy,
    PolicyError,
    SamplingParams,
    apply_stop,
    check_batch,
    sample_seeds,
)


def _extra_choice_text(choice: Any) -> str:
    """The text of a choice after the first of an ``n > 1`` request (the first one is checked with
    its retries): one that holds no text is an empty turn, as before content parts were read."""
    try:
        return choice_text(choice)
    except GarbageResponse:
        return ""


class OpenAIPolicy(Policy):
    """Chat completions from ``base_url`` (default ``$OPENAI_BASE_URL``) with model ``model``."""

    prefers_async = True

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 64, initial_concurrency: int | None = None, adaptive: bool = True,
                 timeout: float = 120.0, max_retries: int = 3,
                 sampling: SamplingParams | None = None, extra_body: dict[str, Any] | None = None):
        if not model:
            raise PolicyError("an OpenAI-compatible policy needs a model name, e.g. --policy openai:Qwen/Qwen2.5-7B-Instruct")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not self.base_url and not os.environ.get("OPENAI_API_KEY") and not api_key:
            raise PolicyError(
                f"{self.name}: no endpoint configured; pass --base-url http://HOST:PORT/v1 (e.g. a vLLM server) "
                "or set OPENAI_BASE_URL / OPENAI_API_KEY"
            )
        if int(concurrency) < 1:
            raise PolicyError(f"concurrency must be >= 1, got {concurrency}")
        # local servers (vLLM, llama.cpp) accept any key; the client insists on one
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.concurrency = int(concurrency)
        self.max_batch_size = self.concurrency
        # AIMD on requests in flight: start modest and back off on 429/503/timeouts, so a one-slot
        # llama.cpp server is not flooded (colbench_gym.simulators.openai_resilience)
        self.control = AdaptiveConcurrency(self.concurrency, initial_concurrency, adaptive=adaptive)
        self.timeout, self.max_retries = timeout, max_retries
        self.default_sampling = sampling or SamplingParams()
        self.extra_body = dict(extra_body or {})
        self._clients: dict[int, Any] = {}  # one async client per event loop (httpx pools are loop-bound)
        #: Whether the server answers a request for ``n`` choices with ``n`` (None: not asked yet).
        self.supports_n: bool | None = None

    @property
    def model_name(self) -> str:
        return self.model

    def _client(self):
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        client = self._clients.get(id(loop))
        if client is None:
            # Transient errors (429/5xx with Retry-After, dropped connections, timeouts) are retried by
            # the SDK itself; the observing transport tells the AIMD limit about overload.
            client = AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout,
                                 max_retries=self.max_retries, http_client=async_http_client(self.control))
            self._clients = {id(loop): client}  # a new loop means older clients are dead
        return client

    async def _one(self, messages: Messages, sampling: SamplingParams, seed: int | None) -> Generation:
        return (await self._request(messages, sampling, seed, 1))[0]

    async def _request(self, messages: Messages, sampling: SamplingParams, seed: int | None,
                       n: int) -> list[Generation]:
        """One chat-completions request for ``n`` choices (``n`` is sent only when > 1); the
        choices the server returned (a server ignoring ``n`` returns one)."""
        import openai
        from openai.types.chat import ChatCompletion

        client = self._client()
        kwargs: dict[str, Any] = {
            "model": self.model, "messages": messages, "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature, "top_p": sampling.top_p,
        }
        if n > 1:
            kwargs["n"] = n
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        if seed is not None:
            kwargs["seed"] = int(seed) & 0x7FFF_FFFF  # servers take a 32-bit seed
        extra = dict(self.extra_body)
        if sampling.top_k:
            extra["top_k"] = sampling.top_k
        kwargs.update(extra)
        where = f"{self.name} at {self.base_url or 'api.openai.com'}"

        def request():
            # The SDK's documented raw-request path: the same retries, timeouts and response
            # parsing as chat.completions.create, without re-validating every message of a
            # long dialogue on the event loop (~2 ms a request, serialising concurrent episodes).
            return client.post("/chat/completions", body=kwargs, cast_to=ChatCompletion)

        try:
            first, choice, resp = await call_async(request, self.control, garbage_retries=self.max_retries)
        except openai.APITimeoutError as exc:
            raise EndpointError(f"{where}: timed out (no answer within {self.timeout:g} s, {self.max_retries} retries); "
                                "raise --request-timeout or lower --concurrency") from exc
        except openai.APIStatusError as exc:
            detail = f"HTTP {exc.status_code}: {' '.join(str(exc).split())[:300]}"
            if exc.status_code in REFUSAL_STATUSES and await self._takes_opening(kwargs):
                raise ContextExhausted(f"{where}: refused this dialogue ({detail}) but takes its opening: the "
                                       "agent's turns no longer fit its model (the agent's failure, scored 0)") from exc
            raise EndpointError(f"{where}: request failed: {detail}") from exc
        except (openai.APIError, GarbageResponse) as exc:
            raise EndpointError(f"{where}: request failed: {' '.join(str(exc).split())[:300]}") from exc
        usage = getattr(resp, "usage", None)
        choices = list(resp.choices) if n > 1 else [choice]
        tokens = getattr(usage, "completion_tokens", 0) or 0
        out = []
        for j, c in enumerate(choices):
            text, cut = apply_stop(first if c is choice else _extra_choice_text(c), sampling.stop)
            finish = "stop" if cut else ("length" if c.finish_reason == "length" else "stop")
            # usage counts the request: its completion tokens are shared out over the choices
            share = tokens // len(choices) + (j < tokens % len(choices))
            out.append(Generation(text=text, prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                                  completion_tokens=share, finish_reason=finish))
        return out

    async def _takes_opening(self, request: dict[str, Any]) -> bool:
        """Whether the endpoint answers ``request`` (the refused one, every parameter as it was) with
        its messages cut to the dialogue's opening (up to the first user message): then the
        refusal is for what the turns after it hold (:class:`ContextExhausted`). A dialogue that
        is its opening, or an opening refused too, is the endpoint's failure."""
        opening = dialogue_opening(request["messages"])
        if opening is None:
            return False
        client = self._client()
        body = {**request, "messages": opening}

        def probe():
            from openai.types.chat import ChatCompletion

            return client.post("/chat/completions", body=body, cast_to=ChatCompletion)

        try:
            await call_async(probe, self.control, garbage_retries=self.max_retries)
        except Exception:  # noqa: BLE001 - any failure of the probe: the endpoint's, as before
            return False
        return True

    async def asample_n(self, conversation: Messages, n: int, sampling: SamplingParams | None = None,
                        seed: int | None = None) -> list[Generation]:
        """``n`` samples of one conversation's next turn: one request for ``n`` choices (vLLM, SGLang
        and OpenAI answer it with one prefill); a server that answers fewer (llama.cpp's servers
        ignore ``n``) gets the rest as concurrent single requests, sample ``j`` seeded with
        :func:`~sweet_agent.policies.base.sample_seeds`, and later calls go straight to those."""
        check_batch([conversation], [seed])
        sampling = sampling or self.default_sampling
        seeds = sample_seeds(seed, n)
        self._client()
        gens: list[Generation] = []
        if n > 1 and self.supports_n is not False:
            gens = await self._request(list(conversation), sampling, seed, n)
            if self.supports_n is None:
                self.supports_n = len(gens) >= n
            gens = gens[:n]
        rest = range(len(gens), n)
        gens += await asyncio.gather(*(self._one(list(conversation), sampling, seeds[j]) for j in rest))
        return gens

    def sample_n(self, conversation: Messages, n: int, sampling: SamplingParams | None = None,
                 seed: int | None = None) -> list[Generation]:
        return self._run(self.asample_n(conversation, n, sampling, seed))

    async def agenerate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                        seeds: Sequence[int | None] | None = None) -> list[Generation]:
        seeds = check_batch(conversations, seeds)
        sampling = sampling or self.default_sampling
        self._client()
        return list(await asyncio.gather(*(self._one(list(c), sampling, s) for c, s in zip(conversations, seeds))))

    def generate(self, conversations: Sequence[Messages], sampling: SamplingParams | None = None,
                 seeds: Sequence[int | None] | None = None) -> list[Generation]:
        return self._run(self.agenerate(conversations, sampling, seeds))

    def _run(self, call):
        """Run ``call`` (a coroutine of this policy) on a fresh event loop, closing its client."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            async def once():
                try:
                    return await call
                finally:
                    await self.aclose()

            return asyncio.run(once())
        call.close()
        raise PolicyError("OpenAIPolicy.generate() was called inside a running event loop; await agenerate() instead")

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (its connections die with the loop)."""
        client = self._clients.pop(id(asyncio.get_running_loop()), None)
        if client is not None:
            await client.close()

    def close(self) -> None:
        self._clients = {}
