"""A fake OpenAI-compatible server on 127.0.0.1 that injects the faults real servers produce.

Faults (``FAULTS``): HTTP 500 / 503 (with ``Retry-After``) / 429 (with ``Retry-After``) / 400,
a garbage body, a truncated body (the connection closes mid-body), a dropped connection (closed
without any reply), a timeout (the reply comes after ``hang`` seconds, later than the client
waits) and a slow reply (``slow`` seconds). Faults are drawn per request at the given ``rates``
from a seeded generator, or forced in order with :meth:`FaultServer.force`; every request and
every injected fault is counted. The reply text of a healthy request comes from ``responder``.

Used by ``tests/reliability`` and ``benchmarks/soak_rollouts.py``.
"""

from __future__ import annotations

import collections
import json
import random
import socket
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = ("500", "503", "429", "400", "garbage", "truncated", "drop", "timeout", "slow")

Responder = Callable[[dict[str, Any]], str]


class FaultServer:
    def __init__(self, responder: Responder, *, rates: Mapping[str, float] | None = None, seed: int = 0,
                 hang: float = 3.0, slow: float = 0.3, retry_after: float = 0.2, latency: float = 0.0,
                 max_in_flight: int | None = None, hold: Callable[[int], bool] | None = None, hold_cap: float = 10.0):
        unknown = set(rates or {}) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; choose from {FAULTS}")
        self.responder, self.rates = responder, dict(rates or {})
        self.hang, self.slow, self.retry_after, self.latency = hang, slow, retry_after, latency
        #: Like a one-slot llama.cpp server: more than this many requests at once get HTTP 429.
        self.max_in_flight = max_in_flight
        #: A healthy reply waits while ``hold(requests in flight)`` is true (at most ``hold_cap`` s):
        #: lets a test make requests overlap whatever the machine's load (e.g. "busy whenever the
        #: client may send a second request"), instead of hoping ``latency`` is long enough.
        self.hold, self.hold_cap = hold, hold_cap
        self._rng = random.Random(seed)
        self._forced: collections.deque[str | None] = collections.deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.injected: collections.Counter[str] = collections.Counter()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.over_capacity = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with server._lock:
                    server.requests.append({"t": time.monotonic(), "path": self.path, "body": body})
                    fault = server._forced.popleft() if server._forced else server._draw()
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                    busy = server.max_in_flight is not None and server.in_flight > server.max_in_flight
                    if busy:
                        server.over_capacity += 1
                        fault = "429"
                    if fault:
                        server.injected[fault] += 1
                try:
                    self._serve(body, fault)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _serve(self, body: dict[str, Any], fault: str | None) -> None:
                if server.hold is not None and fault is None:
                    deadline = time.monotonic() + server.hold_cap
                    while server.hold(server.in_flight) and time.monotonic() < deadline:
                        time.sleep(0.002)
                if server.latency:
                    time.sleep(server.latency)
                if fault in ("500", "503", "429", "400"):
                    headers = {"Retry-After": str(server.retry_after)} if fault in ("503", "429") else {}
                    self._send(int(fault), json.dumps({"error": {"message": f"injected {fault}",
                                                                 "type": "server_error"}}).encode(), headers)
                    return
                if fault == "drop":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault == "timeout":
                    time.sleep(server.hang)
                elif fault == "slow":
                    time.sleep(server.slow)
                if not self.path.endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "no route"}}')
                    return
                try:
                    text = server.responder(body)
                except Exception as exc:  # a responder bug is a 500, never a hung client
                    self._send(500, json.dumps({"error": {"message": repr(exc)}}).encode())
                    return
                payload = json.dumps({
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "fault"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": max(1, len(text) // 4), "total_tokens": 2},
                }).encode()
                if fault == "garbage":
                    self._send(200, b"\x00\xffnot json {{{ <html>502 Bad Gateway</html>")
                elif fault == "truncated":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                else:
                    self._send(200, payload)

            def _send(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timed out) first
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            request_queue_size = 512
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients that gave up (timeouts, killed rollouts) are part of the test

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _draw(self) -> str | None:
        x = self._rng.random()
        for fault, rate in self.rates.items():
            if x < rate:
                return fault
            x -= rate
        return None

    def force(self, *faults: str | None) -> None:
        """The next requests get exactly these faults (None = healthy), then the rates apply again."""
        with self._lock:
            self._forced.extend(faults)

    def set_rates(self, rates: Mapping[str, float]) -> None:
        with self._lock:
            self.rates = dict(rates)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
