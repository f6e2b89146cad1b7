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
--candidates_base_url http://127.0.0.1:PORT/v1``), the Monte-Carlo completions of
``sweet-agent mc-values`` and ``benchmarks/bench_step_pairs.py``, not a general server: no
streaming, no tools.

Concurrent requests are decoded together too (continuous batching, as llama.cpp's own server and
vLLM do): a request joins the running batch as soon as sequence slots and KV cells are free for
it (its prompt decoded once, then its ``n`` sequences), every decoding step advances every
running sequence of every request in one ``llama_decode``, and a request leaves when its
sequences end. WHY: ``mc-values`` plays its completions as concurrent single-choice requests;
served one at a time they decoded one sequence at a time (protocol v2's ``mc-train`` ran ~9 min
per agent turn). This is ``--batch-requests``, with a prompt cache: a finished single-choice
request's KV cells stay for a request that continues its dialogue (longest common prefix; the
oldest cached prompt gives way first). It is off by default: batched rows and cached prompts round
differently from a prompt decoded alone, so with it a seeded request's tokens depend on what else
ran (a greedy dialogue's later turn diverged after a few tokens in a test); by default requests are
served one after the other and a seed gives the same tokens every time.

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
                env: dict[str, str] | None = None, model_name: str = "default",
                batch_requests: bool = False) -> ServerProcess:
        """This script: llama.cpp answering ``n`` choices in one batch (and, with ``batch_requests``,
        concurrent requests batched together, prompts cached: ``--batch-requests``)."""
        return cls("scripts/llama_server.py (n batched" + (", requests batched)" if batch_requests else ")"),
                   [sys.executable, str(Path(__file__).resolve()), "--model", str(gguf), "--port", "{port}",
                    "--threads", str(threads), "--model-name", model_name] + (["--extra-bufts"] if extra_bufts else [])
                   + (["--batch-requests"] if batch_requests else []),
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

#: A cached prompt is reused only for a common prefix of at least this many tokens.
MIN_REUSE = 32


class _Request:
    """One request's sequences while it is decoded: what it asked, its slots, samplers and tokens."""

    def __init__(self, prompt: list[int], n: int, max_tokens: int, temperature: float, top_p: float, seed: int):
        self.prompt, self.n, self.max_tokens = prompt, n, max_tokens
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.cells = len(prompt) + n * max_tokens  # KV cells it may fill
        self.reused = 0  # prompt tokens read from a cached sequence
        self.seqs: list[int] = []
        self.samplers: list = []
        self.current: list[int] = []
        self.pos: list[int] = []
        self.active: list[int] = []
        self.out: list[list[int]] = [[] for _ in range(n)]
        self.finish = ["length"] * n
        self.error: Exception | None = None
        self.done = threading.Event()


class BatchedLlama:
    """The model, one context holding ``max_seqs`` sequences of any running requests, and ``sample_n``."""

    def __init__(self, gguf: str, *, threads: int, n_ctx: int | None = None, max_seqs: int = 16, n_batch: int = 512,
                 extra_bufts: bool = False, batch_requests: bool = False):
        # running requests and cached prompts share the KV cells: more of them when requests are batched
        n_ctx = n_ctx or (32768 if batch_requests else 8192)
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
        self.batch = C.llama_batch_init(max(n_batch, max_seqs), 0, 1)
        self.batch_requests = batch_requests  # see the module's docstring
        self.lock = threading.Lock()  # the tokenizer's
        self.cond = threading.Condition()
        self.pending: list[_Request] = []
        self.worker: threading.Thread | None = None
        #: sequence -> the tokens its KV cells hold, of finished single-choice requests (insertion order: age)
        self.cached: dict[int, list[int]] = {}

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

    def check(self, tokens: list[int], n: int, max_tokens: int) -> None:
        """A request that can never run: one line naming the limit (a 400)."""
        if not 1 <= n <= self.max_seqs:
            raise ValueError(f"n must be in [1, {self.max_seqs}] (--max-seqs), got {n}")
        if len(tokens) + n * max_tokens > self.n_ctx:
            raise ValueError(f"{len(tokens)} prompt tokens + {n} x {max_tokens} new tokens exceed --n-ctx {self.n_ctx}")

    def _sampler(self, temperature: float, top_p: float, seed: int):
        C = self.C
        chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
        if temperature <= 0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
        else:
            if top_p < 1:
                C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(top_p, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temperature))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed & 0xFFFFFFFF))
        return chain

    def sample_n(self, tokens: list[int], n: int, max_tokens: int, temperature: float, top_p: float,
                 seed: int | None, stats: dict[str, int] | None = None) -> list[tuple[list[int], str]]:
        """``n`` continuations of ``tokens``: ``(token ids, finish reason)`` each. Blocks until
        they are done; requests from several threads are decoded together (:meth:`_serve`).
        ``stats["cached_tokens"]``: how many prompt tokens were read from a cached sequence."""
        self.check(tokens, n, max_tokens)
        req = _Request(tokens, n, max_tokens, temperature, top_p,
                       int(time.time_ns()) if seed is None else int(seed))
        with self.cond:
            self.pending.append(req)
            if self.worker is None:
                self.worker = threading.Thread(target=self._serve, name="llama-batch", daemon=True)
                self.worker.start()
            self.cond.notify_all()
        req.done.wait()
        if req.error is not None:
            raise req.error
        if stats is not None:
            stats["cached_tokens"] = req.reused
        return [(toks, f) for toks, f in zip(req.out, req.finish)]

    def _serve(self) -> None:
        """The one thread that touches the context: admit waiting requests while slots and cells
        allow (all of them with ``batch_requests``, else one), then one decoding step
        for every running sequence; a request whose sequences all ended is answered and leaves."""
        running: list[_Request] = []
        while True:
            try:
                self._step(running)
            except Exception as exc:  # noqa: BLE001 - never leave a request waiting on a dead loop
                with self.cond:
                    for req in running:
                        req.error = RuntimeError(f"server error: {type(exc).__name__}: {exc}")
                        try:
                            self._finish(req)
                        except Exception:  # noqa: BLE001
                            req.done.set()
                    running.clear()
                    for j in list(self.cached):
                        self._drop_cached(j)

    def _step(self, running: list[_Request]) -> None:
        """Admit what fits, advance every running sequence by one token, answer what ended."""
        admitted = []
        with self.cond:
            while not self.pending and not running:
                self.cond.wait()
            while self.pending and self._fits(self.pending[0], running):
                req = self.pending.pop(0)
                reuse, keep = self._best_cached(req.prompt)
                busy = {j for r in running for j in r.seqs}
                free = [j for j in range(self.max_seqs) if j not in busy and j not in self.cached and j != reuse]
                while len(free) < req.n - (reuse is not None):  # evict cached prompts, oldest first
                    j = next(k for k in self.cached if k != reuse)
                    self._drop_cached(j)
                    free.append(j)
                if reuse is not None:
                    del self.cached[reuse]
                    req.seqs = [reuse, *free[: req.n - 1]]
                else:
                    req.seqs = free[: req.n]
                running.append(req)
                admitted.append((req, keep))
        for req, keep in admitted:  # prompts decoded outside the lock: new requests can queue meanwhile
            self._start(req, keep)
        for req in [r for r in running if r.error is None]:
            self._advance(req)  # the tokens sampled last step: an end, or one more to decode
        live = [(r, j) for r in running if r.error is None for j in r.active]
        if live:
            try:
                self._decode([(r.current[j], r.pos[j], r.seqs[j], True) for r, j in live])
                for i, (r, j) in enumerate(live):
                    r.current[j] = self.C.llama_sampler_sample(r.samplers[j], self.ctx, i)
                    r.pos[j] += 1
            except RuntimeError as exc:
                for r in {id(r): r for r, _ in live}.values():
                    r.error = exc
        for req in [r for r in running if r.error is not None or not r.active]:
            running.remove(req)
            self._finish(req)

    def _fits(self, req: _Request, running: list[_Request]) -> bool:
        """Slots and KV cells for ``req`` beside the running requests; cached prompts give theirs
        up when needed (the oldest first)."""
        if running and not self.batch_requests:
            return False
        slots = self.max_seqs - sum(r.n for r in running)
        cells = self.n_ctx - sum(r.cells for r in running)
        if req.n > slots or req.cells > cells:
            return False
        while self.cached and sum(len(t) for t in self.cached.values()) > cells - req.cells:
            self._drop_cached(next(iter(self.cached)))
        return True

    def _best_cached(self, prompt: list[int]) -> tuple[int | None, int]:
        """The cached sequence sharing the longest prefix with ``prompt`` and that length (at most
        all but the prompt's last token, whose logits must be computed); ``(None, 0)`` below
        :data:`MIN_REUSE` tokens."""
        best, keep = None, 0
        for j, toks in self.cached.items():
            n = 0
            for a, b in zip(toks, prompt[:-1]):
                if a != b:
                    break
                n += 1
            if n > keep:
                best, keep = j, n
        return (best, keep) if keep >= MIN_REUSE else (None, 0)

    def _drop_cached(self, seq: int) -> None:
        self.C.llama_memory_seq_rm(self.mem, seq, -1, -1)
        del self.cached[seq]

    def _start(self, req: _Request, keep: int = 0) -> None:
        """The prompt once into the request's first sequence (from token ``keep`` on when that
        sequence already holds the prompt's first ``keep`` tokens: a cached prompt), copied to its
        others, and each sequence's first token sampled from the prompt's last logits."""
        C, first = self.C, req.seqs[0]
        try:
            C.llama_memory_seq_rm(self.mem, first, keep, -1)  # what the cached sequence holds beyond the match
            req.reused = keep
            for start in range(keep, len(req.prompt), self.n_batch):
                chunk = req.prompt[start:start + self.n_batch]
                self._decode([(t, start + i, first, start + i == len(req.prompt) - 1) for i, t in enumerate(chunk)])
            last = (len(req.prompt) - 1 - keep) % self.n_batch
            for j in req.seqs[1:]:
                C.llama_memory_seq_cp(self.mem, first, j, -1, -1)
            req.samplers = [self._sampler(req.temperature, req.top_p, req.seed + 7919 * k) for k in range(req.n)]
            req.current = [C.llama_sampler_sample(s, self.ctx, last) for s in req.samplers]
            req.pos = [len(req.prompt)] * req.n
            req.active = list(range(req.n))
        except RuntimeError as exc:
            req.error = exc

    def _advance(self, req: _Request) -> None:
        """The tokens sampled last: an end of generation ends its sequence, else it joins the
        output and is decoded next unless the sequence reached ``max_tokens``."""
        still = []
        for j in req.active:
            t = req.current[j]
            if self.C.llama_vocab_is_eog(self.vocab, t):
                req.finish[j] = "stop"
                continue
            req.out[j].append(t)
            if len(req.out[j]) < req.max_tokens:
                still.append(j)
        req.active = still

    def _finish(self, req: _Request) -> None:
        """Free the request's sequences; with ``n`` = 1 and no error, keep its first one's prompt
        and output cached for a later request that continues the same dialogue (a multi-turn
        completion's next turn re-sends all of it)."""
        keep = req.seqs[0] if (self.batch_requests and req.n == 1 and req.error is None and req.seqs) else None
        for j in req.seqs:
            if j != keep:
                self.C.llama_memory_seq_rm(self.mem, j, -1, -1)
        if keep is not None:  # what its cells hold: a sequence cut at max_tokens never decoded its last token
            held = req.out[0] if req.finish[0] == "stop" else req.out[0][:-1]
            self.cached[keep] = req.prompt + held  # the newest last: evicted last
        for s in req.samplers:
            self.C.llama_sampler_free(s)
        req.samplers = []
        req.done.set()

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
                stats: dict[str, int] = {}
                results = engine.sample_n(prompt, n, int(body.get("max_tokens") or 256),
                                          float(body.get("temperature", 1.0)), float(body.get("top_p", 1.0)),
                                          body.get("seed"), stats)
                with engine.lock:
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
                                       "total_tokens": len(prompt) + completion,
                                       "prompt_tokens_details": {"cached_tokens": stats.get("cached_tokens", 0)}}})

    return ThreadingHTTPServer((host, port), Handler)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="GGUF file (default: the default policy model's, assembled once)")
    ap.add_argument("--model-name", default="default", help="the name /v1/models reports")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--n-ctx", type=int, default=None,
                    help="KV cells shared by the running requests, each needing its prompt + n x max_tokens, and "
                         "by cached prompts (default 8192; 32768 with --batch-requests)")
    ap.add_argument("--max-seqs", type=int, default=16, help="largest n, and most sequences decoded together")
    ap.add_argument("--batch-requests", action="store_true",
                    help="decode concurrent requests together and keep a finished single-choice request's KV "
                         "cells for a request continuing its dialogue: faster under concurrency, but a request's "
                         "tokens then depend on what else runs (rounding), so seeded outputs are not reproducible")
    ap.add_argument("--extra-bufts", action="store_true", help="keep llama.cpp's extra CPU buffer types (AMX, repack)")
    args = ap.parse_args(argv)
    gguf = args.model
    if gguf is None:
        sys.path.insert(0, str(ROOT))
        from sweet_agent.policies.default_model import gguf_path

        gguf = str(gguf_path())
    engine = BatchedLlama(gguf, threads=args.threads, n_ctx=args.n_ctx, max_seqs=args.max_seqs,
                          extra_bufts=args.extra_bufts, batch_requests=args.batch_requests)
    server = make_server(engine, args.host, args.port, args.model_name)
    print(f"llama_server: {gguf} at http://{args.host}:{server.server_address[1]}/v1 ({args.threads} threads, "
          f"n up to {args.max_seqs}, {'concurrent requests batched, prompts cached' if args.batch_requests else 'one request at a time'})",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
