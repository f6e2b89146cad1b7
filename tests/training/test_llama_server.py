"""scripts/llama_server.py, the llama.cpp server that answers a request for ``n`` choices in one
batch, with the default model's GGUF: one request gives ``n`` distinct candidates, the same seed
the same ones, and the step-pair stage's endpoint policy takes them from one request per turn.
llama-cpp-python is not a dependency of the project: skipped where it is not installed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
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
                             "--port", str(port), "--threads", "2", "--n-ctx", "4096", "--max-seqs", "4"],
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
