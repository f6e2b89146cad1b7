"""The OpenEnv hub package's server listens on loopback unless told otherwise, like `colbench
serve` (issue 37, item 6): its ``server`` script (``main()``) and ``python -m
colbench_env.server.app`` used to bind 0.0.0.0, opening a sandbox that runs code and spends
simulator tokens to every machine that can reach this one. Opening it is explicit: ``--host`` or
``COLBENCH_HOST`` (the container's Dockerfile passes ``--host 0.0.0.0`` on purpose)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv")
pytest.importorskip("colbench_env", reason="the hub package: pip install -e hub/colbench_env")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(monkeypatch):
    """Where uvicorn would have been asked to listen (nothing is started)."""
    import uvicorn

    monkeypatch.setenv("COLBENCH_SCORER", "fallback")
    monkeypatch.delenv("COLBENCH_HOST", raising=False)
    calls: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    return calls


def test_the_server_script_binds_loopback_by_default(served, monkeypatch):
    from colbench_env.server.app import main

    main()
    assert served[-1]["host"] == "127.0.0.1" and served[-1]["port"] == 8000
    monkeypatch.setenv("COLBENCH_HOST", "0.0.0.0")  # opened on purpose
    main()
    assert served[-1]["host"] == "0.0.0.0"
    main(host="::1", port=9001)  # an explicit host wins
    assert served[-1] == {"host": "::1", "port": 9001}


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy on an imported module
@pytest.mark.parametrize("argv,host", [([], "127.0.0.1"), (["--host", "0.0.0.0"], "0.0.0.0")])
def test_python_dash_m_binds_loopback_unless_asked(served, monkeypatch, argv, host):
    monkeypatch.setattr(sys, "argv", ["colbench_env.server.app", *argv, "--port", "8123"])
    runpy.run_module("colbench_env.server.app", run_name="__main__", alter_sys=False)
    assert served[-1] == {"host": host, "port": 8123}


def test_only_the_container_opens_it_and_says_so():
    from colbench_env.server.app import DEFAULT_HOST

    assert DEFAULT_HOST == "127.0.0.1"
    docker = (ROOT / "hub" / "colbench_env" / "server" / "Dockerfile").read_text()
    assert '"--host", "0.0.0.0"' in docker  # a container is reached from outside: explicit there
