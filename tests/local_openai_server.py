"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol.

Tests use it to exercise clients end to end (HTTP, JSON, retries, timeouts) without a model:
the reply is computed by a Python callable from the request, and every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]


class LocalOpenAIServer:
    def __init__(self, responder: Responder, latency: float = 0.0, fail_first: int = 0, fail_status: int = 500,
                 honour_n: bool = True, refuse: Callable[[dict[str, Any]], str | None] | None = None):
        """``honour_n``: a request for ``n`` choices gets ``n`` (as vLLM answers), the responder
        called once per choice with the body plus ``"choice": j``; False: one choice whatever
        ``n`` (as llama.cpp's servers answer). ``refuse``: a request for which it returns a text is
        answered HTTP 400 with that text, as vLLM refuses a prompt longer than its context."""
        self.responder, self.latency, self.honour_n, self.refuse = responder, latency, honour_n, refuse
        self.fail_first, self.fail_status = fail_first, fail_status
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": body})
                    failing = server.fail_first > 0
                    if failing:
                        server.fail_first -= 1
                if server.latency:
                    time.sleep(server.latency)
                if failing:
                    self._send(server.fail_status, {"error": {"message": "injected failure", "type": "server_error"}})
                    return
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                why = server.refuse(body) if server.refuse else None
                if why:
                    self._send(400, {"object": "error", "message": why, "type": "BadRequestError", "code": 400})
                    return
                n = int(body.get("n") or 1) if server.honour_n else 1
                texts = [server.responder(body)] if n == 1 else [server.responder({**body, "choice": j})
                                                                 for j in range(n)]
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "local"),
                    "choices": [{"index": j, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}} for j, text in enumerate(texts)],
                    "usage": {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": 1 + n},
                })

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # bursts of concurrent clients, as a real server would accept

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "LocalOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
