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

#: A reply's text, or (text, finish_reason) for a reply that did not stop by itself.
Responder = Callable[[dict[str, Any]], "str | tuple[str, str]"]


#: The end-of-turn token id of ``vllm_tokens`` replies (an empty reply is this one id).
END_ID = 2


def _token_ids(text: str) -> list[int]:
    """A stand-in tokenizer: one id a word (stable within a run)."""
    return [10 + hash(word) % 1000 for word in text.split()]


class LocalOpenAIServer:
    def __init__(self, responder: Responder, latency: float = 0.0, fail_first: int = 0, fail_status: int = 500,
                 honour_n: bool = True, refuse: Callable[[dict[str, Any]], str | None] | None = None,
                 vllm_tokens: bool = False, fail_paths: tuple[str, ...] = ()):
        """``honour_n``: a request for ``n`` choices gets ``n`` (as vLLM answers), the responder
        called once per choice with the body plus ``"choice": j``; False: one choice whatever
        ``n`` (as llama.cpp's servers answer). ``refuse``: a request for which it returns a text is
        answered HTTP 400 with that text, as vLLM refuses a prompt longer than its context.
        ``vllm_tokens``: as vLLM with ``return_token_ids`` (what verifiers' interleaved rollouts
        read): replies carry ``prompt_token_ids``, each choice its ``token_ids`` (one id a word,
        then an end id) and log-probs, and it serves ``/tokenize`` and PRIME-RL's
        ``/chat/completions/tokens``. ``fail_paths``: requests to a path ending so are always
        answered ``fail_status`` (a helper route that fails while the model's own is served)."""
        self.responder, self.latency, self.honour_n, self.refuse = responder, latency, honour_n, refuse
        self.vllm_tokens, self.fail_paths = vllm_tokens, fail_paths
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
                    failing = failing or (bool(server.fail_paths) and self.path.endswith(server.fail_paths))
                if server.latency:
                    time.sleep(server.latency)
                if failing:
                    self._send(server.fail_status, {"error": {"message": "injected failure", "type": "server_error"}})
                    return
                if server.vllm_tokens and self.path.endswith("/tokenize"):
                    ids = _token_ids(json.dumps(body.get("messages") or body.get("prompt")))
                    self._send(200, {"count": len(ids), "max_model_len": 32768, "tokens": ids})
                    return
                routes = ("/chat/completions", "/chat/completions/tokens") if server.vllm_tokens else ("/chat/completions",)
                if not self.path.endswith(routes):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                why = server.refuse(body) if server.refuse else None
                if why:
                    self._send(400, {"object": "error", "message": why, "type": "BadRequestError", "code": 400})
                    return
                n = int(body.get("n") or 1) if server.honour_n else 1
                texts = [server.responder(body)] if n == 1 else [server.responder({**body, "choice": j})
                                                                 for j in range(n)]
                replies = [t if isinstance(t, tuple) else (t, "stop") for t in texts]
                choices = [{"index": j, "finish_reason": finish, "message": {"role": "assistant", "content": text}}
                           for j, (text, finish) in enumerate(replies)]
                payload = {"id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                           "created": int(time.time()), "model": body.get("model", "local"), "choices": choices,
                           "usage": {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": 1 + n}}
                if server.vllm_tokens:
                    payload["prompt_token_ids"] = body.get("tokens") or _token_ids(json.dumps(body.get("messages")))
                    for choice, (text, _) in zip(choices, replies):
                        choice["token_ids"] = _token_ids(text) + [END_ID]
                        choice["logprobs"] = {"content": [{"token": str(i), "logprob": -0.5, "bytes": None,
                                                           "top_logprobs": []} for i in choice["token_ids"]]}
                self._send(200, payload)

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
