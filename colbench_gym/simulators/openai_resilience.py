"""Surviving real OpenAI-compatible servers: retries, bad bodies, and concurrency that adapts.

Shared by the endpoint simulators here and by ``sweet_agent``'s endpoint policy, so both ends of
a rollout behave the same against a flaky or overloaded server.

- **Transient HTTP errors** (408/409/429/5xx, connection errors, dropped connections, truncated
  bodies, timeouts) are retried by the ``openai`` client itself (``max_retries``, exponential
  backoff with jitter, ``Retry-After`` honoured on 429/503). We do not duplicate that.
- **Garbage bodies** — a 200 whose body is not JSON, or JSON without ``choices`` (proxies and
  crashed workers produce both) — the client does not retry: :func:`call_sync` /
  :func:`call_async` retry them with the same backoff.
- **Permanent errors** (400, 401, 404, 422, ...) are not retried; the caller fails that one
  request (a rollout records the episode as failed and goes on).
- **Concurrency** adapts with AIMD (:class:`AdaptiveConcurrency`): start modest, one more slot
  per window of successes, halve on overload (429/503 or a timeout, seen per HTTP attempt by
  an observing transport, where every attempt — the client's retries included — takes a slot), so a one-slot llama.cpp server is not flooded while a vLLM server
  is driven to what it sustains.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

#: HTTP statuses that mean "too much load, slow down" (besides timeouts).
OVERLOAD_STATUSES = (429, 503)
#: A body the client parsed into nonsense raises one of these (the SDK does not validate).
GARBAGE_ERRORS = (ValueError, UnicodeDecodeError, AttributeError, TypeError, KeyError, IndexError)


class GarbageResponse(ValueError):
    """The server answered 200 with a body that is not a chat completion."""


class AdaptiveConcurrency:
    """Additive-increase / multiplicative-decrease limit on requests in flight (thread-safe).

    ``limit`` starts at ``initial`` (default ``min(4, maximum)``), grows by one slot per success
    until the first overload (TCP's slow start), then by one slot per ``4 * limit`` successes
    (a server that said "too much" once is probed gently: a one-slot server sees few 429s), and
    halves on an overload signal. Like TCP, one window of requests sent together counts as one
    signal: each attempt carries the :attr:`epoch` it started in, and only an overload from the
    current epoch cuts (and starts a new epoch). ``adaptive=False`` keeps it at ``maximum``.
    """

    def __init__(self, maximum: int, initial: int | None = None, *, minimum: int = 1, adaptive: bool = True):
        if maximum < 1:
            raise ValueError(f"concurrency must be >= 1, got {maximum}")
        self.maximum, self.minimum, self.adaptive = int(maximum), max(1, int(minimum)), adaptive
        start = self.maximum if not adaptive else (initial if initial is not None else min(4, self.maximum))
        self._limit = float(min(self.maximum, max(self.minimum, start)))
        self.epoch = 0
        self._lock = threading.Lock()
        self.successes = 0
        self.overloads = 0
        self.cuts = 0
        self._listeners: list[Callable[[], None]] = []

    @property
    def limit(self) -> int:
        return int(self._limit)

    def on_success(self) -> None:
        with self._lock:
            self.successes += 1
            if self.adaptive and self._limit < self.maximum:
                # slow start (doubling per window) until the first overload, then one slot per window
                step = 1.0 if self.cuts == 0 else 1.0 / (4.0 * self._limit)
                self._limit = min(float(self.maximum), self._limit + step)
        self._notify()

    def on_overload(self, epoch: int | None = None) -> None:
        """An attempt started in ``epoch`` (None: the current one) met 429/503 or a timeout."""
        with self._lock:
            self.overloads += 1
            if not self.adaptive or (epoch is not None and epoch != self.epoch):
                return  # this window was already cut for
            self.epoch += 1
            self._limit = max(float(self.minimum), self._limit / 2.0)
            self.cuts += 1

    def subscribe(self, fn: Callable[[], None]) -> None:
        self._listeners.append(fn)

    def _notify(self) -> None:
        for fn in list(self._listeners):
            fn()

    def __repr__(self) -> str:
        return (f"AdaptiveConcurrency(limit={self.limit}, max={self.maximum}, successes={self.successes}, "
                f"overloads={self.overloads}, cuts={self.cuts})")


class ThreadSlots:
    """Blocking slots for threads, as many as the controller's current limit."""

    def __init__(self, control: AdaptiveConcurrency):
        self.control = control
        self.in_use = 0
        self._cond = threading.Condition()

    def __enter__(self) -> ThreadSlots:
        with self._cond:
            while self.in_use >= self.control.limit:
                self._cond.wait(timeout=0.5)
            self.in_use += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self.in_use -= 1
            self._cond.notify_all()


class AsyncSlots:
    """Awaitable slots for one event loop, as many as the controller's current limit."""

    def __init__(self, control: AdaptiveConcurrency):
        self.control = control
        self.in_use = 0
        self._cond = asyncio.Condition()

    async def __aenter__(self) -> AsyncSlots:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_use < self.control.limit)
            self.in_use += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        async with self._cond:
            self.in_use -= 1
            self._cond.notify_all()


def _transports(control: AdaptiveConcurrency):
    import httpx2
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    def seen(status: int, epoch: int) -> None:
        if status in OVERLOAD_STATUSES:
            control.on_overload(epoch)

    class ObservingTransport(httpx2.BaseTransport):
        """Each HTTP attempt (the client's retries included) takes a slot until its body is read."""

        def __init__(self, slots: ThreadSlots) -> None:
            self.inner = httpx2.HTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
            self.slots = slots

        def handle_request(self, request):
            with self.slots:
                epoch = control.epoch
                try:
                    response = self.inner.handle_request(request)
                    response.read()
                except httpx2.TimeoutException:
                    control.on_overload(epoch)
                    raise
            seen(response.status_code, epoch)
            return response

        def close(self) -> None:
            self.inner.close()

    class ObservingAsyncTransport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
            self.slots = AsyncSlots(control)

        async def handle_async_request(self, request):
            async with self.slots:
                epoch = control.epoch
                try:
                    response = await self.inner.handle_async_request(request)
                    await response.aread()
                except httpx2.TimeoutException:
                    control.on_overload(epoch)
                    raise
            seen(response.status_code, epoch)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    return ObservingTransport, ObservingAsyncTransport


def sync_http_client(control: AdaptiveConcurrency, slots: ThreadSlots):
    """An ``http_client`` for ``openai.OpenAI`` whose requests take ``slots`` (sized by ``control``)
    and report overload (429/503, timeouts) to ``control``."""
    import openai

    sync_cls, _ = _transports(control)
    return openai.DefaultHttpxClient(transport=sync_cls(slots))


def async_http_client(control: AdaptiveConcurrency):
    """An ``http_client`` for ``openai.AsyncOpenAI`` (one event loop) limited and informed likewise."""
    import openai

    _, async_cls = _transports(control)
    return openai.DefaultAsyncHttpxClient(transport=async_cls())


def completion_text(response: Any) -> tuple[str, Any]:
    """``(text, choice)`` of a chat completion, or :class:`GarbageResponse` if it is not one."""
    try:
        choice = response.choices[0]
    except GARBAGE_ERRORS as exc:
        raise GarbageResponse(f"the response is not a chat completion ({type(exc).__name__}: {exc})") from None
    return choice_text(choice), choice


def choice_text(choice: Any) -> str:
    """The reply text of one choice of a chat completion: its message's content, a string, or a
    list of content parts whose text parts are joined (Mistral's reasoning models answer so; their
    thinking parts are not the reply); :class:`GarbageResponse` for anything else."""
    try:
        content = choice.message.content
    except GARBAGE_ERRORS as exc:
        raise GarbageResponse(f"the response is not a chat completion ({type(exc).__name__}: {exc})") from None
    if isinstance(content, list):  # content parts (Mistral's reasoning models): the text parts are the reply
        if not all(isinstance(part, dict) for part in content):
            raise GarbageResponse("the response's message content is a list of something other than content parts")
        content = "".join(part["text"] for part in content
                          if part.get("type") == "text" and isinstance(part.get("text"), str))
    if content is not None and not isinstance(content, str):
        raise GarbageResponse(f"the response's message content is a {type(content).__name__}, not text")
    return content or ""


def backoff(attempt: int, base: float = 0.5, cap: float = 8.0) -> float:
    """The openai client's schedule: ``base * 2**attempt`` capped, minus up to 25 % jitter."""
    return min(base * 2.0 ** attempt, cap) * (1 - 0.25 * random.random())


def call_sync(request: Callable[[], Any], control: AdaptiveConcurrency, *,
              garbage_retries: int = 3) -> tuple[str, Any, Any]:
    """Run ``request()``; retry garbage bodies; returns ``(text, choice, response)``.

    Errors the client raises after its own retries propagate unchanged.
    """
    for attempt in range(garbage_retries + 1):
        try:
            response = request()
            text, choice = completion_text(response)
        except GARBAGE_ERRORS as exc:
            if attempt >= garbage_retries:
                raise GarbageResponse(f"garbage response body {garbage_retries + 1} times in a row: {exc}") from exc
        else:
            control.on_success()
            return text, choice, response
        time.sleep(backoff(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


async def call_async(request: Callable[[], Awaitable[Any]], control: AdaptiveConcurrency, *,
                     garbage_retries: int = 3) -> tuple[str, Any, Any]:
    """The asyncio form of :func:`call_sync`."""
    for attempt in range(garbage_retries + 1):
        try:
            response = await request()
            text, choice = completion_text(response)
        except GARBAGE_ERRORS as exc:
            if attempt >= garbage_retries:
                raise GarbageResponse(f"garbage response body {garbage_retries + 1} times in a row: {exc}") from exc
        else:
            control.on_success()
            return text, choice, response
        await asyncio.sleep(backoff(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


_SHARED: dict[tuple[str, int | None], tuple[AdaptiveConcurrency, ThreadSlots]] = {}
_SHARED_LOCK = threading.Lock()


def shared_limits(base_url: str, maximum: int | None = None) -> tuple[AdaptiveConcurrency, ThreadSlots]:
    """One controller and one set of slots per endpoint per process: every env's simulator in a
    rollout shares them, so together they adapt to the server rather than each to its own share.
    ``maximum=None``: adaptive from 4 up to 64 requests in flight; an int: start there, never
    exceed it, still halve on overload."""
    with _SHARED_LOCK:
        key = (base_url, maximum)
        if key not in _SHARED:
            control = AdaptiveConcurrency(maximum or 64, maximum)
            _SHARED[key] = (control, ThreadSlots(control))
        return _SHARED[key]
