"""`colbench serve`: a real OpenEnv server on 127.0.0.1, driven over real sockets."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import gymnasium as gym
import pytest

pytest.importorskip("openenv")
# A real server process: importing OpenEnv (FastAPI, fastmcp, gradio when installed) takes seconds.
pytestmark = pytest.mark.slow

from colbench_gym.online.client import (  # noqa: E402
    ColBenchEnvClient,
    RemoteColBenchEnv,
    RemoteEnvironmentError,
    make_remote_tool_env_factory,
)
from colbench_gym.online.server import ColBenchAction  # noqa: E402
from colbench_gym.online.tool_env import ToolEnvError  # noqa: E402
from colbench_gym.protocol import ANSWER_MARKER  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def _serve(*args: str, procs: list | None = None):
    """`colbench serve ARGS` as a user starts it (the real CLI, a real port); yields its URL (and
    appends its process to ``procs``, for a test that stops the server itself)."""
    port = _free_port()
    log = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a chatty server never blocks on it
    proc = subprocess.Popen(
        [sys.executable, "-m", "colbench_gym.cli", "serve", "--port", str(port), *args],
        stdout=log, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if procs is not None:
        procs.append(proc)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600  # imports alone take minutes on a loaded 2-core machine
    while True:
        try:
            _get(f"{base}/backend/health")
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait(timeout=30)
                log.seek(0)
                pytest.fail(f"colbench serve did not start: {log.read()[-2000:]}")
            time.sleep(0.3)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:  # a loaded machine: do not leave the server behind
            proc.kill()
            proc.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def server():
    with _serve("--envs", "backend", "frontend", "--max-sessions", "4", "--reward-mode", "fraction",
                "--scorer", "fallback") as base:
        yield base


def test_index_and_prefixes(server) -> None:
    index = _get(f"{server}/")
    assert index["environments"] == {"/backend": "ColBench-Backend-v0", "/frontend": "ColBench-Frontend-v0"}
    assert index["max_concurrent_envs"] == 4
    assert _get(f"{server}/frontend/health")["status"] == "healthy"
    schema = _get(f"{server}/backend/schema")
    assert "message" in schema["action"]["properties"]


def test_http_reset_returns_the_task(server) -> None:
    req = urllib.request.Request(f"{server}/backend/reset", data=json.dumps({"seed": 0, "task_index": 2}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = json.loads(r.read())
    local, _ = gym.make("ColBench-Backend-v0").reset(seed=0, options={"task_index": 2})
    assert body["observation"]["text"] == local and body["done"] is False


def test_websocket_episode_equals_local_gym_episode(server) -> None:
    questions = ["What is the function called?", "What should an empty input give?"]
    with ColBenchEnvClient(base_url=f"{server}/backend").sync() as client:
        first = client.reset(seed=5, task_index=1)
        replies = [client.step(ColBenchAction(message=q)).observation.text for q in questions]
        final = client.step(ColBenchAction(message=f"{ANSWER_MARKER}\ndef nothing():\n    return None"))
        state = client.state()
    env = gym.make("ColBench-Backend-v0", reward_mode="fraction")
    obs, _ = env.reset(seed=5, options={"task_index": 1})
    local = [env.step(q)[0] for q in questions]
    _, reward, done, _, info = env.step(f"{ANSWER_MARKER}\ndef nothing():\n    return None")
    assert first.observation.text == obs and replies == local
    assert final.done and done and final.reward == reward
    assert final.observation.info["tests_total"] == info["tests_total"]
    assert "ground_truth" not in json.dumps(final.observation.info)
    assert state.turn == 3 and state.done and state.task_index == 1


def test_two_concurrent_sessions_do_not_interfere(server) -> None:
    a = RemoteColBenchEnv(f"{server}/backend")
    b = RemoteColBenchEnv(f"{server}/backend")
    try:
        text_a, _ = a.reset(seed=1, options={"task_index": 0})
        text_b, _ = b.reset(seed=2, options={"task_index": 4})
        assert text_a != text_b
        a.step("Question for A: what is the name?")
        b.step("Question for B: what are the inputs?")
        _, _, _, _, info_a = a.step("Second question for A: any edge cases?")
        reward_b = b.step(f"{ANSWER_MARKER}\ndef nothing():\n    return None")[1]
        # Each session holds its own dialogue only, on its own task.
        dialogue_a = [m["content"] for m in info_a["messages"]]
        assert dialogue_a[0] == text_a and len(dialogue_a) == 5
        assert not any("for B" in c for c in dialogue_a)
        assert a.state().task_index == 0 and b.state().task_index == 4
        assert b.state().done and not a.state().done and reward_b == 0.0
        with pytest.raises(RuntimeError, match="episode has ended"):
            b.step("one more?")
        a.step("Third question for A?")  # A goes on after B's error
        assert a.state().turn == 3
    finally:
        a.close()
        b.close()


def test_remote_tool_env_reward_equals_local(server) -> None:
    from colbench_gym.online import make_tool_env_factory

    rewards = []
    for factory in (make_remote_tool_env_factory(f"{server}/backend"),
                    make_tool_env_factory("ColBench-Backend-v0", reward_mode="fraction")):
        tool_env = factory()
        tool_env.reset(task_index=3, seed=9)
        reference = gym.make("ColBench-Backend-v0").unwrapped.task_source[3].ground_truth
        tool_env.ask_user("Which inputs does it take?")
        tool_env.submit_answer(reference.replace("return ", "return 1 + ", 1))
        rewards.append((tool_env.get_reward(), tool_env.turns, tool_env.messages))
    assert rewards[0] == rewards[1]


def test_url_must_name_an_env() -> None:
    with pytest.raises(ValueError, match="/backend"):
        make_remote_tool_env_factory("http://127.0.0.1:1/")


@pytest.mark.timeout(2400)  # two cold Python processes (server, trainer) on a shared 2-core machine
def test_example_trains_against_the_remote_server(server, tmp_path) -> None:
    """examples/online_grpo.py --env-url: TRL's GRPOTrainer with one server session per rollout
    (a tiny random Qwen-template model stands in for the 0.5B policy to keep this short)."""
    pytest.importorskip("trl")
    from trl.chat_template_utils import qwen2_5_chat_template

    from tests.training.tiny_model import build_tiny_model, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    tok.chat_template = qwen2_5_chat_template
    model_dir = tmp_path / "tiny"
    build_tiny_model(tok).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, os.path.join(root, "examples", "online_grpo.py"), "--model", str(model_dir),
         "--env-url", f"{server}/backend", "--tasks", "embedded:test", "--num-tasks", "2", "--steps", "1",
         "--num-generations", "2", "--max-completion-length", "16", "--output-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=1200, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step 1: env reward" in proc.stdout
    assert (tmp_path / "out" / "adapter_config.json").is_file()


def test_an_answer_the_infrastructure_cannot_score_has_no_reward_over_the_wire(server) -> None:
    """A task no test can measure (its reference cannot run): the final observation's reward and
    the session's state say None, with info's end_reason naming why — not the env's placeholder 0."""
    broken = {"problem_description": "Write f(x) that returns x.",
              "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    with ColBenchEnvClient(base_url=f"{server}/backend").sync() as client:
        client.reset(seed=0, task=broken)
        final = client.step(ColBenchAction(message=f"{ANSWER_MARKER}\ndef f(x):\n    return x"))
        state = client.state()
    assert final.done and final.reward is None and final.observation.info["end_reason"] == "task_error"
    assert state.done and state.reward is None


def test_a_remote_person_that_fails_leaves_the_episode_unscored_as_a_local_one_does() -> None:
    """The server's person (an OpenAI-compatible endpoint) fails for good: OpenEnv sends only the
    error's message, which the server leads with the end reason, so the remote tool env knows a
    simulator_error (get_reward() None: GRPO leaves it out) instead of taking it for the agent's
    mistake and training on a 0."""
    from tests.local_openai_server import LocalOpenAIServer

    with LocalOpenAIServer(lambda body: "never served", fail_first=10_000) as person:
        kwargs = json.dumps({"model": "person", "base_url": person.base_url, "api_key": "none", "max_retries": 0})
        with _serve("--envs", "backend", "--simulator", "openai", "--simulator-kwargs", kwargs) as base:
            tool_env = make_remote_tool_env_factory(f"{base}/backend")()
            tool_env.reset(task_index=0, seed=0)
            with pytest.raises(RemoteEnvironmentError, match="simulator_error") as err:
                tool_env.ask_user("What should it return?")
            assert err.value.end_reason == "simulator_error" and person.requests
            assert tool_env.get_reward() is None and tool_env.infrastructure_failure == "simulator_error"
            with ColBenchEnvClient(base_url=f"{base}/backend").sync() as client:  # a caller's misuse stays as it is
                with pytest.raises(RuntimeError, match="task_index") as bad:
                    client.reset(task_index=10_000)
                assert not isinstance(bad.value, RemoteEnvironmentError)
                with pytest.raises(RuntimeError, match="ground_truth") as bad:  # a malformed task of the caller's
                    client.reset(task={"problem_description": "Write f."})
                assert not isinstance(bad.value, RemoteEnvironmentError)


def test_a_server_slower_than_the_client_is_the_server_s_failure_and_the_next_episode_is_in_step() -> None:
    """A step slower than the client's ``message_timeout_s`` (here a person's endpoint that takes
    15 s) was a TimeoutError the tool env scored as the agent's 0, and the socket was kept: the late
    reply then answered the next request (a reset read the last step's reply, every later call one
    behind, for the rest of the run). Now the step is an ``environment_error`` (no reward) and the
    session is dropped: the next episode plays its own task and is scored. The dropped session
    stays busy on the server until its slow step ends: with ``--max-sessions`` sized to the
    trainer (here 1), the next reset found the server full and raised, which stops a TRL run
    (it calls ``reset`` unguarded); it now waits for the session."""
    import threading

    from tests.local_openai_server import LocalOpenAIServer

    answered = threading.Event()

    def slow_person(body: dict) -> str:  # slower than the client's timeout (10 s), once
        if not answered.is_set():
            time.sleep(15)
            answered.set()
        return "It returns a list."

    tasks = gym.make("ColBench-Backend-v0").unwrapped.task_source
    with LocalOpenAIServer(slow_person) as person:
        kwargs = json.dumps({"model": "person", "base_url": person.base_url, "api_key": "none", "max_retries": 0})
        with _serve("--envs", "backend", "--max-sessions", "1", "--simulator", "openai",
                    "--simulator-kwargs", kwargs) as base:
            tool_env = make_remote_tool_env_factory(f"{base}/backend", message_timeout_s=10.0, capacity_wait_s=120)()
            assert tool_env.reset(task_index=0, seed=0) == tasks[0].problem_description
            with pytest.raises(RemoteEnvironmentError, match="did not answer within 10 s") as err:
                tool_env.ask_user("What should it return?")
            assert err.value.end_reason == "environment_error"
            assert tool_env.get_reward() is None and tool_env.infrastructure_failure == "environment_error"
            with pytest.raises(ToolEnvError, match="ended by a failure of the environment"):
                tool_env.ask_user("And for one element?")  # nothing more is played in that episode
            assert not answered.is_set()  # the server's one session is still busy with the slow step
            assert tool_env.reset(task_index=1, seed=0) == tasks[1].problem_description  # waited for it
            assert answered.is_set()
            tool_env.submit_answer(tasks[1].ground_truth)
            assert tool_env.ended and tool_env.get_reward() == 1.0 and tool_env.infrastructure_failure is None


def test_a_server_that_dies_mid_episode_leaves_it_unscored_and_an_oversized_turn_is_the_agent_s(server) -> None:
    """The server killed mid-episode was a ConnectionError, scored as the agent's 0; now it is an
    ``environment_error`` (no reward). A turn over the server's frame limit (its close code 1009)
    is the agent's doing and stays a 0."""
    task = gym.make("ColBench-Backend-v0").unwrapped.task_source[0]
    tool_env = make_remote_tool_env_factory(f"{server}/backend")()
    tool_env.reset(task_index=0, seed=0)
    with pytest.raises(ConnectionError, match="larger than it takes"):
        tool_env.ask_user("\U0001F600" * 1_500_000)  # ~18 MB as JSON escapes, over uvicorn's 16 MiB
    assert tool_env.get_reward() == 0.0 and tool_env.infrastructure_failure is None

    procs: list = []
    with _serve("--envs", "backend", procs=procs) as base:
        tool_env = make_remote_tool_env_factory(f"{base}/backend")()
        tool_env.reset(task_index=0, seed=0)
        tool_env.ask_user("What should it return?")
        procs[0].kill()
        procs[0].wait(timeout=30)
        with pytest.raises(RemoteEnvironmentError) as err:
            tool_env.submit_answer(task.ground_truth)
        assert err.value.end_reason == "environment_error"
        assert tool_env.get_reward() is None and tool_env.infrastructure_failure == "environment_error"


def test_a_remote_task_whose_reference_does_not_render_is_skipped_as_a_local_one_is(server) -> None:
    """A reference page that does not render (also when retried) makes the local tool env skip the
    episode: ``reset`` returns None, no tool plays, no reward. Over OpenEnv the same failure was
    raised out of ``reset``, which TRL calls unguarded: one such task stopped a remote run."""
    from colbench_gym.rendering.result import ReferenceRenderError

    stuck = "<html><body><h1>Never loads</h1><script>for (;;) {}</script></body></html>"
    tool_env = make_remote_tool_env_factory(f"{server}/frontend")()
    assert tool_env.reset(task={"problem_description": "A page.", "ground_truth": stuck}, kind="frontend") is None
    assert tool_env.get_reward() is None and tool_env.infrastructure_failure == "rendering_error"
    with pytest.raises(ToolEnvError, match="could not start"):
        tool_env.show_draft("<html><body>draft</body></html>")
    remote = RemoteColBenchEnv(f"{server}/frontend")
    try:
        with pytest.raises(ReferenceRenderError, match="did not render"):  # the client's own call says what failed
            remote.reset(options={"task": {"problem_description": "A page.", "ground_truth": stuck}})
    finally:
        remote.close()
    task = gym.make("ColBench-Frontend-v0").unwrapped.task_source[0]
    assert tool_env.reset(task_index=0, seed=0) == task.problem_description  # the next episode plays


def test_a_script_that_exits_with_its_remote_session_open_exits(server) -> None:
    """A script that ended with a remote tool env still open hung for good at exit: the session's
    close ran in the tool env's ``__del__`` at interpreter shutdown, where OpenEnv's sync client
    starts its event-loop thread anew, and no thread starts then. It is closed at exit now."""
    script = (f"from colbench_gym.online.client import make_remote_tool_env_factory\n"
              f"env = make_remote_tool_env_factory({server + '/backend'!r})()\n"
              f"print(env.reset(task_index=0, seed=0)[:40])\n")
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as exc:  # subprocess.run killed it
        pytest.fail(f"the script did not exit: {exc}")
    task = gym.make("ColBench-Backend-v0").unwrapped.task_source[0]
    assert done.returncode == 0 and done.stdout.strip() == task.problem_description[:40], done.stderr[-2000:]


def test_an_observation_echoing_a_long_dialogue_reaches_the_client(server) -> None:
    """Each observation echoes the dialogue (``info["messages"]``), each agent turn kept up to
    200,000 characters (~2.4 MB as JSON escapes): with a ``--max-turns`` of ~40 or more, long
    turns outgrew OpenEnv's 100 MB receive limit, the client closed the socket (1009), an
    ``environment_error``, and an agent that wrote long turns left its episode unscored. The
    client takes any size by default; a limit set on it that the agent's dialogue outgrows is
    the agent's 0 (scaled down here: a 0.5 MB limit, 200 kB turns)."""
    tool_env = make_remote_tool_env_factory(f"{server}/backend")()
    assert tool_env.env._client._async._ws.protocol.max_message_size is None  # no limit on what it receives
    small = make_remote_tool_env_factory(f"{server}/backend")()
    small.env._client.close()
    small.env._client = ColBenchEnvClient(base_url=f"{server}/backend", max_message_size_mb=0.5).sync()
    for env in (tool_env, small):
        env.reset(task_index=0, seed=0)
    long_turn = "x" * 199_999 + "?"
    for _ in range(4):
        tool_env.ask_user(long_turn)
    assert [len(m["content"]) for m in tool_env.messages][1::2] == [200_000] * 4  # every turn echoed whole
    assert tool_env.infrastructure_failure is None
    with pytest.raises(ConnectionError, match="larger than this client takes, max_message_size_mb=0.5"):
        for _ in range(4):
            small.ask_user(long_turn)
    assert small.get_reward() == 0.0 and small.infrastructure_failure is None


@pytest.mark.parametrize("question", ["What is the rate \ud800?", "nul\x00 \x1b[31m control\x7f?", "\udfff" * 250_000])
def test_any_string_is_a_turn_over_the_wire_as_it_is_locally(server, question) -> None:
    """Issue 37: a turn holding a lone surrogate raised inside the server's env (the client got
    RemoteEnvironmentError: environment_error, unscored) and its echo in the observation could not
    be sent as UTF-8 JSON. Now the remote episode is the local one: the same replies, end reason and
    reward; the observation's dialogue holds the turn with U+FFFD for each lone surrogate."""
    from colbench_gym.spaces import encodable

    answer = f"{ANSWER_MARKER}\n" + gym.make("ColBench-Backend-v0").unwrapped.task_source[0].ground_truth
    remote = RemoteColBenchEnv(f"{server}/backend")
    try:
        remote.reset(seed=4, options={"task_index": 0})
        remote_reply, _, remote_done, _, remote_info = remote.step(question)
        _, remote_reward, _, _, remote_final = remote.step(answer)
    finally:
        remote.close()
    env = gym.make("ColBench-Backend-v0", reward_mode="fraction")
    env.reset(seed=4, options={"task_index": 0})
    local_reply, *_ = env.step(question)
    _, local_reward, _, _, local_final = env.step(answer)
    assert remote_reply == local_reply and not remote_done
    assert remote_info["messages"][1]["content"] == encodable(question[:200_000])
    assert remote_final["end_reason"] == local_final["end_reason"] == "answer"
    assert remote_reward == local_reward == 1.0
