"""ColBench as an OpenEnv hub package (hub/colbench_env), checked with OpenEnv's own tools: its
`openenv validate` CLI (the package layout, and a running server), `AutoEnv`, and `EnvClient`
sessions; plus the stateless HTTP routes and a full server as OpenEnv clients meet them."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("openenv")
colbench_env = pytest.importorskip("colbench_env", reason="the hub package: pip install -e hub/colbench_env")

from colbench_gym.online.client import ServerCapacityError, make_remote_tool_env_factory  # noqa: E402
from colbench_gym.online.server import NO_EPISODE  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HUB = ROOT / "hub" / "colbench_env"
OPENENV = Path(sys.executable).with_name("openenv")
MAX_SESSIONS = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """The hub package's server app (`colbench_env.server.app:app`, what its container runs) on a real port."""
    import importlib

    import uvicorn

    with pytest.MonkeyPatch.context() as env:  # the app reads its configuration when imported
        env.setenv("COLBENCH_MAX_SESSIONS", str(MAX_SESSIONS))
        env.setenv("COLBENCH_SCORER", "fallback")
        # imported afresh: an earlier test of the run (test_hub_app_host.py) may hold the module
        # built with the default configuration, whose session limit is not this test's
        sys.modules.pop("colbench_env.server.app", None)
        app = importlib.import_module("colbench_env.server.app").app

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/health", timeout=5).close()
            break
        except OSError:
            assert time.monotonic() < deadline and thread.is_alive(), "the hub app did not start"
            time.sleep(0.1)
    yield base
    srv.should_exit = True
    thread.join(timeout=30)


def _openenv(*args: str) -> subprocess.CompletedProcess[str]:
    """The `openenv` command, as a user runs it."""
    return subprocess.run([str(OPENENV), "validate", *args], capture_output=True, text=True, timeout=300)


def _openenv_in_process(*args: str):
    """The same CLI app (`openenv.cli.__main__:app`) run in this process: no second import of OpenEnv."""
    from openenv.cli.__main__ import app
    from typer.testing import CliRunner

    return CliRunner().invoke(app, ["validate", *args])


def test_openenv_validate_accepts_the_hub_package() -> None:
    """What `openenv init` generates and `openenv validate` checks: manifest, pyproject with the
    `server` script, uv.lock, server/app.py with main(), a Dockerfile, the client class."""
    out = _openenv(str(HUB), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["passed"] and report["environment"] == "colbench"
    for name in ("openenv.yaml", "uv.lock", "server/app.py", "server/Dockerfile", "client.py", "models.py"):
        assert (HUB / name).is_file(), name


@pytest.mark.parametrize("path", ["", "/frontend"])  # "": the backend, also served at the root
def test_openenv_validate_accepts_the_running_server(server, path: str) -> None:
    # the validator's own 5 s HTTP timeout failed a fresh clone's suite once at load ~4 (GET /schema timed out,
    # every endpoint fine): what it checks is the API contract, not latency, so the timeout is generous
    out = _openenv_in_process("--url", server + path, "--timeout", "120")
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["passed"] and report["mode"] == "simulation", report


def test_autoenv_finds_colbench_without_skip_install(server) -> None:
    from openenv import AutoEnv
    from openenv.auto._discovery import get_discovery

    get_discovery().clear_cache()  # a discovery cache from before the package was installed would hide it
    client = AutoEnv.from_env("colbench", base_url=f"{server}/backend")
    assert isinstance(client, colbench_env.ColbenchEnv)
    with client.sync() as env:
        first = env.reset(seed=4)
        reply = env.step(colbench_env.ColBenchAction(message="What is the function called?"))
    assert first.observation.text and reply.observation.text and not reply.done


@pytest.mark.parametrize("path", ["/backend", "/frontend", ""])
def test_http_step_is_refused_with_the_reason(server, path: str) -> None:
    req = urllib.request.Request(f"{server}{path}/step", data=json.dumps({"action": {"message": "hi"}}).encode(),
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=30)
    assert err.value.code == 409
    detail = json.loads(err.value.read())["detail"]
    assert detail == NO_EPISODE and "WebSocket" in detail and "/ws" in detail


def test_websocket_step_before_reset_says_why(server) -> None:
    with colbench_env.ColbenchEnv(base_url=server).sync() as env:
        with pytest.raises(RuntimeError, match="no episode to step: call reset first"):
            env.step(colbench_env.ColBenchAction(message="hi"))


def test_a_full_server_says_so_to_the_client(server) -> None:
    held = [colbench_env.ColbenchEnv(base_url=f"{server}/backend").sync() for _ in range(MAX_SESSIONS)]
    try:
        for env in held:
            env.reset(seed=0)
        extra = colbench_env.ColbenchEnv(base_url=f"{server}/backend").sync()
        extra.connect()
        time.sleep(0.5)  # the server's refusal and its close arrive before our first message
        with pytest.raises(ServerCapacityError, match=rf"is full: {MAX_SESSIONS}/{MAX_SESSIONS} sessions.*--max-sessions"):
            extra.reset(seed=0)
        with pytest.raises(ServerCapacityError, match="is full"):  # also when the refusal arrives as an answer
            extra.reset(seed=0)
        held.pop().close()
        time.sleep(0.2)
        assert extra.reset(seed=0).observation.text  # the same client gets a session once there is room
        held.append(extra)
    finally:
        for env in held:
            env.close()


def test_rollouts_of_a_group_start_from_the_same_task(server) -> None:
    """The dataset row's seed reaches `reset`: every rollout of a GRPO group plays the same task with
    the same person (OpenEnv clients, and TRL's environment_factory over the remote server)."""
    openings, replies = [], []
    for _ in range(2):
        with colbench_env.ColbenchEnv(base_url=f"{server}/backend").sync() as env:
            openings.append(env.reset(seed=11).observation.text)
            replies.append(env.step(colbench_env.ColBenchAction(message="Any edge cases?")).observation.text)
    assert len(set(openings)) == 1 and len(set(replies)) == 1
    factory = make_remote_tool_env_factory(f"{server}/backend")
    group = [factory() for _ in range(2)]
    try:
        assert {tool_env.reset(prompt="...", seed=11) for tool_env in group} == {openings[0]}
        assert len({tool_env.reset(prompt="...", task_index=5, seed=1) for tool_env in group}) == 1
    finally:
        for tool_env in group:
            tool_env.env.close()
