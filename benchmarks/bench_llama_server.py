"""Concurrent multi-turn completions through ``scripts/llama_server.py``: one request at a time (the
default) and ``--batch-requests`` (concurrent requests batched, prompts cached), side by side in one run.

What ``sweet-agent mc-values`` asks of the server: ``--dialogues`` completions at once, each a
dialogue of ``--turns`` agent turns (one single-choice request per turn, the whole dialogue
re-sent each time), ``--max-tokens`` per turn at temperature 0.8. Prints each mode's seconds and
its speed against one request at a time, and the load average before and after (run it on an idle
machine: the modes run one after the other)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

MODES = {"one at a time": [], "batched + cached prompts": ["--batch-requests"]}


def ask(url: str, messages: list[dict], max_tokens: int, seed: int) -> str:
    body = json.dumps({"model": "m", "messages": messages, "n": 1, "seed": seed, "max_tokens": max_tokens,
                       "temperature": 0.8}).encode()
    req = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=3600).read())["choices"][0]["message"]["content"]


def dialogue(url: str, i: int, turns: int, max_tokens: int, system_words: int) -> None:
    msgs = [{"role": "system", "content": "You help a person write a Python function; ask before you answer. "
             + " ".join(f"rule{k % 50}" for k in range(system_words))},
            {"role": "user", "content": f"I need function number {i}: it computes a discount on a price."}]
    for t in range(turns):
        a = ask(url, msgs, max_tokens, seed=1000 * i + t)
        msgs += [{"role": "assistant", "content": a}, {"role": "user", "content": f"The rate is {10 + t} percent."}]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialogues", type=int, default=8, help="completions in flight (mc-values --concurrency)")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--system-words", type=int, default=300, help="lengthens every prompt (v2's are ~300-1,500 tokens)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--model", help="GGUF (default: the default model's)")
    args = ap.parse_args(argv)
    from llama_server import ServerProcess

    from sweet_agent.policies.default_model import gguf_path

    gguf = args.model or str(gguf_path())
    load = os.getloadavg()
    print(f"[bench] load average before: {load[0]:.2f} on {os.cpu_count()} cores; {args.dialogues} dialogues x "
          f"{args.turns} turns x {args.max_tokens} tokens", flush=True)
    times = {}
    for name, flags in MODES.items():
        server = ServerProcess(name, [sys.executable, str(ROOT / "scripts" / "llama_server.py"), "--model", gguf,
                                      "--port", "{port}", "--threads", str(args.threads), *flags],
                               Path("/tmp") / f"bench_llama_server.{os.getpid()}.log")
        with server:
            t0 = time.perf_counter()
            threads = [threading.Thread(target=dialogue, args=(server.base_url, i, args.turns, args.max_tokens,
                                                                 args.system_words)) for i in range(args.dialogues)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            times[name] = time.perf_counter() - t0
        print(f"  {name}: {times[name]:.1f} s", flush=True)
    base = times["one at a time"]
    print("\n| mode | seconds | speed vs one at a time |\n|---|---|---|")
    for name, sec in times.items():
        print(f"| {name} | {sec:.1f} | {base / sec:.2f}x |")
    after = os.getloadavg()
    print(f"load average after: {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
