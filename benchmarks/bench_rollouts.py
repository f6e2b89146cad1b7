"""Rollout speed, measured side by side in one run.

1. Concurrent vs sequential episodes against an OpenAI-compatible endpoint with 200 ms latency
   (a scripted agent served on 127.0.0.1 by this script that asks 2 clarifying questions, then
   answers): 16 backend episodes of 3 turns, offline simulator, real sandboxed grading (2
   grader workers). Target: >= 12x.
2. Batched vs one-by-one generation with the embedded default model on CPU (tokens/s), and the
   float32 single-stream rate beside the bfloat16 one (why bf16 is the default).

Usage: python benchmarks/bench_rollouts.py [--episodes 16] [--latency 0.2] [--skip-model]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# grade finished episodes on both cores: all 16 episodes end in the same round here
os.environ.setdefault("COLBENCH_GRADER_WORKERS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _reply(body: dict, questions: int) -> str:
    msgs = body["messages"]
    m = re.search(r"([a-z_][a-z0-9_]*)\(", msgs[1]["content"])
    name = m.group(1) if m else "solution"
    asked = sum(msg["role"] == "assistant" for msg in msgs)
    if asked < questions:
        return ("What should {} return when the input is empty?",
                "Which values are allowed for the first argument of {}?",
                "Should {} raise an error or return None on bad input?")[asked % 3].format(name)
    return f"I WANT TO ANSWER:\n```python\ndef {name}(*args, **kwargs):\n    return None\n```"


def _serve(latency: float, questions: int, port_out) -> None:
    """Server process main: a threading HTTP server speaking chat completions."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # one segment per response and no Nagle: otherwise loopback delayed-ACK stalls add
        # ~40 ms per request, which a real server (uvicorn/vLLM) does not have
        disable_nagle_algorithm = True
        wbufsize = 1 << 16

        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            time.sleep(latency)
            data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": _reply(body, questions)}}],
                               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        # socketserver's default listen backlog is 5: a burst of 16 connects overflows it and the
        # kernel retries the dropped SYNs after 1 s. Real servers (uvicorn/vLLM) use 2048.
        request_queue_size = 256
        daemon_threads = True

    httpd = Server(("127.0.0.1", 0), Handler)
    port_out.send(httpd.server_address[1])
    httpd.serve_forever()


class ScriptedAgentEndpoint:
    """A chat-completions server in its own process (as vLLM would be): asks ``questions``
    clarifying questions, then answers; sleeps ``latency`` per request."""

    def __init__(self, latency: float, questions: int = 2):
        ctx = multiprocessing.get_context("spawn")
        recv, send = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_serve, args=(latency, questions, send), daemon=True)
        self._recv = recv
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self.proc.start()
        if not self._recv.poll(30):
            self.proc.kill()
            raise RuntimeError("the scripted endpoint did not start")
        self.port = self._recv.recv()
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.join(5)


def bench_concurrency(episodes: int, latency: float, questions: int) -> float:
    from colbench_gym.grading import get_default_grader
    from sweet_agent.policies.base import SamplingParams
    from sweet_agent.policies.openai_policy import OpenAIPolicy
    from sweet_agent.rollout.collector import RolloutConfig, collect

    get_default_grader()  # start the sandbox worker outside the timed runs
    tasks = min(episodes, 30)
    k = -(-episodes // tasks)
    with ScriptedAgentEndpoint(latency, questions) as server:
        policy = OpenAIPolicy("scripted-agent", base_url=server.base_url, concurrency=episodes)
        # warm-up outside the timed runs: the first request pays the client's imports (~1 s)
        collect(policy, RolloutConfig(num_tasks=1, concurrency=1), None, progress=False)
        results = {}
        for name, conc in (("sequential", 1), ("concurrent", episodes)):
            cfg = RolloutConfig(num_tasks=tasks, samples_per_task=k, concurrency=conc, seed=0,
                                sampling=SamplingParams(max_new_tokens=64))
            t0 = time.perf_counter()
            res = collect(policy, cfg, None, progress=False)
            results[name] = (time.perf_counter() - t0, res)
    (t_seq, r_seq), (t_con, r_con) = results["sequential"], results["concurrent"]
    same = sorted(json.dumps(r["dialogue_history"]) for r in r_seq.records) == \
        sorted(json.dumps(r["dialogue_history"]) for r in r_con.records)
    requests = sum(r["meta"]["turns"] for r in r_con.records)
    print(f"endpoint rollouts: {len(r_con.records)} episodes, {requests} requests, {latency * 1000:.0f} ms latency each")
    print(f"  {'sequential (concurrency 1)':32s} {t_seq:7.2f} s")
    print(f"  {f'concurrent (concurrency {episodes})':32s} {t_con:7.2f} s")
    ratio = t_seq / t_con
    print(f"  speed-up {ratio:.1f}x (target >= 12x); same dialogues both ways: {same}")
    return ratio


def bench_generation(n_conv: int, new_tokens: int) -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    from colbench_gym.tasks.sources import resolve_task_source
    from sweet_agent.policies import SamplingParams, load_policy
    from sweet_agent.prompts import agent_messages, system_prompt

    source = resolve_task_source("embedded:test", "backend")
    convs = [agent_messages([{"role": "user", "content": source[i].problem_description}], system_prompt("backend"))
             for i in range(n_conv)]
    sp = SamplingParams(max_new_tokens=new_tokens, temperature=0.7)
    seeds = list(range(n_conv))
    print(f"generation, default model on CPU: {n_conv} conversations x up to {new_tokens} new tokens, T=0.7")
    rows = []
    for dtype in ("bfloat16", "float32"):
        t0 = time.perf_counter()
        policy = load_policy("default", dtype=dtype, max_batch_size=n_conv, quiet=True)
        load = time.perf_counter() - t0
        policy.generate([convs[0]], SamplingParams(max_new_tokens=2), [0])  # warm-up
        modes = [("one-by-one", 1), ("batched", n_conv)] if dtype == "bfloat16" else [("one-by-one", 1)]
        for mode, bs in modes:
            policy.max_batch_size = bs
            t0 = time.perf_counter()
            gens = policy.generate(convs, sp, seeds)
            dt = time.perf_counter() - t0
            toks = sum(g.completion_tokens for g in gens)
            rows.append((dtype, mode, toks, dt, load))
        policy.close()
    base = next(r for r in rows if r[0] == "bfloat16" and r[1] == "one-by-one")
    for dtype, mode, toks, dt, load in rows:
        rate = toks / dt
        print(f"  {dtype:9s} {mode:11s} {toks:5d} tok in {dt:6.1f} s = {rate:5.2f} tok/s "
              f"({rate / (base[2] / base[3]):.2f}x bf16 one-by-one; model load {load:.1f} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--questions", type=int, default=2, help="clarifying questions the scripted agent asks")
    ap.add_argument("--conversations", type=int, default=4)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--skip-model", action="store_true", help="only the endpoint benchmark")
    args = ap.parse_args()
    ratio = bench_concurrency(args.episodes, args.latency, args.questions)
    if not args.skip_model:
        from sweet_agent.policies.default_model import default_model_status

        if default_model_status()["ready"]:
            bench_generation(args.conversations, args.new_tokens)
        else:
            print("generation: default model not prepared (run `sweet-agent fetch-model`); skipped")
    return 0 if ratio >= 12 else 1


if __name__ == "__main__":
    sys.exit(main())
