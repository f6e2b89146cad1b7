"""An OpenAI-compatible chat server on llama.cpp that answers a request for ``n`` choices in one
batch: the prompt is decoded once, its KV cells shared by ``n`` sequences (``llama_memory_seq_cp``
on a unified KV cache), and the ``n`` continuations advance together, one ``llama_decode`` per
token step for all of them, each with its own seeded sampler.

WHY: ``python -m llama_cpp.server`` (llama-cpp-python's server) ignores ``n`` and serves one
sequence at a time, so the ``n`` candidates of a step-pair turn cost ``n`` single-stream decodes;
on a CPU a decoding step of a small model costs about the same for 1 row as for 16 (it reads the
weights once), which is where vLLM's and SGLang's speed for ``n`` comes from too. This is that,
on the CPU, with the GGUF the project's default model ships as. It is a tool for the
step-pair stage's candidates (``train-actor --candidates_from openai:MODEL
--candidates_base_url http://127.0.0.1:PORT/v1``) and ``benchmarks/bench_step_pairs.py``,
not a general server: one request at a time (a lock), no streaming, no tools.

Needs llama-cpp-python (not a dependency of the project)::

    pip install "llama-cpp-python==0.3.36"      # compiles llama.cpp once (~20-35 min on 2 cores)
    python scripts/llama_server.py --port 8000   # serves the default model's GGUF

llama.cpp's extra CPU buffer types (AMX, weight repacking) are off unless ``--extra-bufts``:
the AMX matmul of the build made here crashed (SIGSEGV in ``ggml_backend_amx_mul_mat``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def disable_extra_bufts() -> None:
    """Load every later llama.cpp model without its extra CPU buffer types (AMX, repacking): on
    this machine's build they crash in ``ggml_backend_amx_mul_mat`` (SIGSEGV). The one place for
    this workaround: this server and ``benchmarks/bench_step_pairs.py``'s ``llama_cpp.server``."""
    import llama_cpp.llama_cpp as C

    defaults = C.llama_model_default_params

    def params():
        p = defaults()
        p.use_extra_bufts = False
        return p

    C.llama_model_default_params = params



class ServerProcess:
    """A local OpenAI-compatible server as a subprocess on a free port, in its own process group
    (stopped by its group id: the server and nothing else). The one launcher for the benchmarks
    that start a server of their own (``bench_step_pairs.py``, ``bench_learning.py``)."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str] | None = None,
                 start_timeout: float = 600.0):
        self.name, self.log, self.env, self.start_timeout = name, Path(log), env, start_timeout
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.argv = [a.replace("{port}", str(self.port)) for a in argv]
        self.proc: subprocess.Popen | None = None

    @classmethod
    def batched(cls, gguf: str | os.PathLike[str], threads: int, log: Path, *, extra_bufts: bool = False,
                env: dict[str, str] | None = None, model_name: str = "default") -> ServerProcess:
        """This script: llama.cpp answering ``n`` choices in one batch."""
        return cls("scripts/llama_server.py (n batched)",
                   [sys.executable, str(Path(__file__).resolve()), "--model", str(gguf), "--port", "{port}",
                    "--threads", str(threads), "--model-name", model_name] + (["--extra-bufts"] if extra_bufts else []),
                   log, env)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> ServerProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         env=None if self.env is None else {**os.environ, **self.env})
        t0 = time.time()
        while True:
            try:
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2).read()
                break
            except OSError:
                if self.proc.poll() is not None or time.time() - t0 > self.start_timeout:
                    self.__exit__()
                    raise SystemExit(f"{self.name} did not start (see {self.log})") from None
                time.sleep(0.5)
        self.started_in = time.time() - t0
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)

class BatchedLlama:
    """The model, one context holding ``max_seqs`` sequences, and ``sample_n``."""

    def __init__(self, gguf: str, *, threads: int, n_ctx: int = 8192, max_seqs: int = 16, n_batch: int = 512,
                 extra_bufts: bool = False):
        import llama_cpp.llama_cpp as C

        if not extra_bufts:
            disable_extra_bufts()
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.C = C
        self.llm = Llama(gguf, n_ctx=256, n_threads=threads, verbose=False)  # the model, tokenizer, metadata
        meta = self.llm.metadata
        eos = self.llm.detokenize([self.llm.token_eos()]).decode("utf-8", "ignore")
        bos = self.llm.detokenize([self.llm.token_bos()]).decode("utf-8", "ignore")
        self.formatter = Jinja2ChatFormatter(meta["tokenizer.chat_template"], eos_token=eos, bos_token=bos)
        model = self.llm._model.model
        self.vocab = C.llama_model_get_vocab(model)
        cp = C.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_ctx, n_batch, n_batch, max_seqs
        cp.kv_unified = True  # the prompt's cells are shared by every sequence, not copied
        cp.n_threads = cp.n_threads_batch = threads
        self.ctx = C.llama_init_from_model(model, cp)
        if not self.ctx:
            raise RuntimeError("llama_init_from_model failed")
        self.mem = C.llama_get_memory(self.ctx)
        self.n_ctx, self.n_batch, self.max_seqs = n_ctx, n_batch, max_seqs
        self.batch = C.llama_batch_init(n_batch, 0, max_seqs)
        self.lock = threading.Lock()

    def _decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        """One ``llama_decode`` of ``(token, position, sequence, wants logits)`` items."""
        b = self.batch
        b.n_tokens = len(items)
        for i, (tok, pos, seq, logits) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i] = tok, pos, 1
            b.seq_id[i][0] = seq
            b.logits[i] = int(logits)
        if self.C.llama_decode(self.ctx, b) != 0:
            raise RuntimeError("llama_decode failed (context full? raise --n-ctx)")

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> list[int]:
        prompt = self.formatter(messages=messages).prompt
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def sample_n(self, tokens: list[int], n: int, max_tokens: int, temperature: float, top_p: float,
                 seed: int | None) -> list[tuple[list[int], str]]:
        """``n`` continuations of ``tokens``: ``(token ids, finish reason)`` each."""
        C = self.C
        if not 1 <= n <= self.max_seqs:
            raise ValueError(f"n must be in [1, {self.max_seqs}] (--max-seqs), got {n}")
        if len(tokens) + n * max_tokens > self.n_ctx:
            raise ValueError(f"{len(tokens)} prompt tokens + {n} x {max_tokens} new tokens exceed --n-ctx {self.n_ctx}")
        C.llama_memory_clear(self.mem, True)
        for start in range(0, len(tokens), self.n_batch):  # the prompt, once
            chunk = tokens[start:start + self.n_batch]
            self._decode([(t, start + i, 0, start + i == len(tokens) - 1) for i, t in enumerate(chunk)])
        last = (len(tokens) - 1) % self.n_batch
        for j in range(1, n):
            C.llama_memory_seq_cp(self.mem, 0, j, -1, -1)
        base = int(time.time_ns()) if seed is None else int(seed)
        samplers = []
        for j in range(n):
            chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
            if temperature <= 0:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
            else:
                if top_p < 1:
                    C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(top_p, 1))
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temperature))
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist((base + 7919 * j) & 0xFFFFFFFF))
            samplers.append(chain)
        out: list[list[int]] = [[] for _ in range(n)]
        finish = ["length"] * n
        try:
            current = [C.llama_sampler_sample(s, self.ctx, last) for s in samplers]  # all from the prompt's logits
            active = list(range(n))
            pos = len(tokens)
            while active:
                still = []
                for j in active:
                    t = current[j]
                    if C.llama_vocab_is_eog(self.vocab, t):
                        finish[j] = "stop"
                        continue
                    out[j].append(t)
                    if len(out[j]) < max_tokens:
                        still.append(j)
                active = still
                if not active:
                    break
                self._decode([(current[j], pos, j, True) for j in active])
                for i, j in enumerate(active):
                    current[j] = C.llama_sampler_sample(samplers[j], self.ctx, i)
                pos += 1
        finally:
            for s in samplers:
                C.llama_sampler_free(s)
        return [(toks, f) for toks, f in zip(out, finish)]

    def text(self, tokens: list[int]) -> str:
        return self.llm.detokenize(tokens).decode("utf-8", "ignore")


def make_server(engine: BatchedLlama, host: str, port: int, model_name: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model", "owned_by": "local"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                n = int(body.get("n") or 1)
                stop = body.get("stop") or []
                stop = [stop] if isinstance(stop, str) else list(stop)
                with engine.lock:
                    prompt = engine.prompt_tokens(body["messages"])
                    results = engine.sample_n(prompt, n, int(body.get("max_tokens") or 256),
                                              float(body.get("temperature", 1.0)), float(body.get("top_p", 1.0)),
                                              body.get("seed"))
                    texts = [(engine.text(toks), len(toks), f) for toks, f in results]
            except (KeyError, ValueError, TypeError, json.JSONDecodeError) as exc:
                self._send(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
                return
            except RuntimeError as exc:
                self._send(500, {"error": {"message": str(exc), "type": "server_error"}})
                return
            choices = []
            for j, (text, _, finish) in enumerate(texts):
                cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
                choices.append({"index": j, "finish_reason": finish, "message": {"role": "assistant", "content": text}})
            completion = sum(k for _, k, _ in texts)
            self._send(200, {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion",
                             "created": int(time.time()), "model": model_name, "choices": choices,
                             "usage": {"prompt_tokens": len(prompt), "completion_tokens": completion,
                                       "total_tokens": len(prompt) + completion}})

    return ThreadingHTTPServer((host, port), Handler)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="GGUF file (default: the default policy model's, assembled once)")
    ap.add_argument("--model-name", default="default", help="the name /v1/models reports")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--n-ctx", type=int, default=8192, help="KV cells for the prompt plus n x max_tokens")
    ap.add_argument("--max-seqs", type=int, default=16, help="largest n")
    ap.add_argument("--extra-bufts", action="store_true", help="keep llama.cpp's extra CPU buffer types (AMX, repack)")
    args = ap.parse_args(argv)
    gguf = args.model
    if gguf is None:
        sys.path.insert(0, str(ROOT))
        from sweet_agent.policies.default_model import gguf_path

        gguf = str(gguf_path())
    engine = BatchedLlama(gguf, threads=args.threads, n_ctx=args.n_ctx, max_seqs=args.max_seqs,
                          extra_bufts=args.extra_bufts)
    server = make_server(engine, args.host, args.port, args.model_name)
    print(f"llama_server: {gguf} at http://{args.host}:{server.server_address[1]}/v1 ({args.threads} threads, "
          f"n up to {args.max_seqs})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
