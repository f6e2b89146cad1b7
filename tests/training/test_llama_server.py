"""scripts/llama_server.py, the llama.cpp server that answers a request for ``n`` choices in one
batch, with the default model's GGUF: one request gives ``n`` distinct candidates, the same seed
the same ones, and the step-pair stage's endpoint policy takes them from one request per turn.
llama-cpp-python is not a dependency of the project: skipped where it is not installed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _serve(*flags):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed on demand, not by make setup")
    from sweet_agent.policies.default_model import ModelNotAvailableError, gguf_path

    try:
        gguf = gguf_path()
    except ModelNotAvailableError:
        pytest.skip("the default model's verified GGUF is not in the model cache (sweet-agent fetch-model)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "llama_server.py"), "--model", str(gguf),
                             "--port", str(port), "--threads", "2", "--n-ctx", "4096", "--max-seqs", "4", *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 300
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, proc.stderr.read().decode()[-2000:]
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # its own process group: the server only
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server():
    yield from _serve()


@pytest.fixture(scope="module")
def batching_server():
    """--batch-requests: concurrent requests decoded together, dialogues' prompts cached."""
    yield from _serve("--batch-requests")


def _chat(url, messages, n=1, max_tokens=16, temperature=0.0, seed=1):
    body = json.dumps({"model": "m", "messages": messages, "n": n, "max_tokens": max_tokens,
                       "temperature": temperature, "seed": seed}).encode()
    req = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=600).read())


@pytest.mark.slow
def test_n_choices_in_one_request_seeded(server):
    from sweet_agent.policies.base import SamplingParams
    from sweet_agent.policies.openai_policy import OpenAIPolicy

    conv = [{"role": "user", "content": "Write a python function that adds two numbers."}]
    sampling = SamplingParams(max_new_tokens=12, temperature=1.0, top_p=1.0)
    policy = OpenAIPolicy("default", base_url=server, api_key="x", timeout=120)
    first = policy.sample_n(conv, 4, sampling, seed=7)
    assert policy.supports_n is True and len(first) == 4  # one request answered all four
    assert len({g.text for g in first}) > 1 and all(g.text for g in first)
    assert all(g.finish_reason in ("stop", "length") for g in first) and sum(g.completion_tokens for g in first) > 4
    assert [g.text for g in policy.sample_n(conv, 4, sampling, seed=7)] == [g.text for g in first]
    greedy = policy.sample_n(conv, 2, sampling.with_(temperature=0.0), seed=1)
    assert greedy[0].text == greedy[1].text
    with pytest.raises(Exception, match="n must be in"):
        policy.sample_n(conv, 5, sampling, seed=1)  # more than --max-seqs: a 400 naming the limit


@pytest.mark.slow
def test_by_default_a_seeded_request_gives_the_same_tokens_whatever_runs_beside_it(server):
    conv = [{"role": "user", "content": "Write a python function that adds one to a number."}]
    alone = _chat(server, conv, n=2, temperature=0.8, seed=9)
    out: dict[int, dict] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, _chat(server, conv if i == 0 else [
        {"role": "user", "content": f"Write a python function number {i}."}], n=2, temperature=0.8, seed=9 + i)))
        for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [c["message"]["content"] for c in out[0]["choices"]] == [c["message"]["content"] for c in alone["choices"]]
    assert _chat(server, conv)["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


@pytest.mark.slow
def test_batch_requests_answers_concurrent_requests_and_reads_a_dialogues_cached_prompt(batching_server):
    """With --batch-requests, requests sent at once share the decoding batch and each gets its own
    choices; the next turn of a dialogue (which re-sends all of it) reads the earlier turn's tokens
    from the sequence the server kept (usage.prompt_tokens_details.cached_tokens)."""
    convs = [[{"role": "user", "content": f"Write a python function number {i} that adds {i} to a number."}]
             for i in range(4)]
    out: dict[int, dict] = {}
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, _chat(batching_server, convs[i], n=1 + i % 2,
                                                                             temperature=0.8, seed=i)))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [len(out[i]["choices"]) for i in range(4)] == [1, 2, 1, 2]
    assert all(c["message"]["content"] for i in range(4) for c in out[i]["choices"])
    msgs = [{"role": "system", "content": "You help write Python. " + " ".join(f"rule{k}" for k in range(60))},
            {"role": "user", "content": "I need a function that computes a discount."}]
    first = _chat(batching_server, msgs)
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    msgs += [{"role": "assistant", "content": first["choices"][0]["message"]["content"]},
             {"role": "user", "content": "The rate is 15 percent."}]
    second = _chat(batching_server, msgs)
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] > first["usage"]["prompt_tokens"] // 2
    assert second["choices"][0]["message"]["content"]
