"""`colbench serve` resolves every task source at start-up: a source that does not exist is one
error line before anything is served (it used to start, then answer HTTP 500 at the first reset)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("openenv")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("flag,source,kind", [("--backend-tasks", "embeded:test", "backend"),
                                              ("--frontend-tasks", "collab:train", "frontend"),
                                              ("--backend-tasks", "no/such/file.jsonl", "backend")])
def test_a_bad_task_source_stops_serve_before_it_serves(flag, source, kind):
    port = _free_port()
    # a server that starts anyway never exits by itself: the timeout fails the test (and kills it)
    proc = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "serve", "--port", str(port), flag, source],
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "COLBENCH_DEBUG": ""})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert "[colbench serve]" not in proc.stderr  # nothing was announced as served
    [line] = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert line.startswith(f"colbench serve: error: {flag} {source}: "), line
    assert "`colbench tasks sources` lists the task sources" in line
    if source == "embeded:test":
        assert "'embedded:test'" in line and "'generated:train'" in line  # the valid ones are named
    if kind == "frontend":
        assert "backend" in line  # collab:train holds backend tasks only
    with socket.socket() as s:  # and the port is free: nothing listened
        s.bind(("127.0.0.1", port))


def test_the_hub_app_refuses_a_bad_task_source_when_built():
    """The OpenEnv hub app (hub/colbench_env/server/app.py) builds through the same function."""
    from colbench_gym.online.server import create_colbench_app

    with pytest.raises(ValueError, match=r"backend tasks: tasks='embeded:test' is neither a file nor one of "
                                         r"'embedded:test'.*`colbench tasks sources`"):
        create_colbench_app({"backend": {"tasks": "embeded:test"}})
    app = create_colbench_app({"backend": {"tasks": "generated:train"}})  # a good one still builds
    assert any(getattr(r, "path", "") == "/backend" for r in app.routes)
