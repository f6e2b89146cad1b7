"""``sweet_agent.forkserver``: a command forked from the server that imported torch / transformers /
TRL once is the process ``python -m`` would have started (its own session and process group, its
working directory, environment, argv, output, exit status, ``atexit`` handlers), only without the
imports; a stop signal to its group ends it and what it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweet_agent.forkserver import ForkedCommand, can_fork

ROOT = Path(__file__).resolve().parents[2]
PROBE = "tests.agent.command_probe"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PROBE_VALUE": "forty-two", "OMP_NUM_THREADS": "3", **extra}


def _start(how: str, cmd: list[str], log: Path, cwd: Path, env: dict[str, str]):
    if how == "forked":
        return ForkedCommand(cmd, log=log, cwd=cwd, env=env)
    with open(log, "a", encoding="utf-8") as fh:
        return subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _first_line(log: Path, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else ():
            if line.startswith("{"):
                return json.loads(line)
        time.sleep(0.05)
    raise AssertionError(f"{log} has no line from the probe: {log.read_text() if log.exists() else 'missing'}")


def test_a_forked_command_is_the_process_python_m_would_start(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    seen = {}
    for how in ("forked", "fresh"):
        log, out = tmp_path / f"{how}.log", tmp_path / f"{how}.atexit"
        proc = _start(how, [sys.executable, "-m", PROBE, str(out), "3", "two words"], log, cwd, _env())
        assert proc.wait(timeout=120) == 3 and proc.returncode == 3 and proc.poll() == 3
        seen[how] = s = _first_line(log)
        assert s["pid"] == proc.pid == s["pgid"] == s["sid"]  # its own session and process group
        assert s["cwd"] == str(cwd) and s["value"] == "forty-two" and s["name"] == "__main__"
        assert s["argv"][0].endswith("command_probe.py") and s["argv"][1:] == [str(out), "3", "two words"]
        assert "a line to stderr" in log.read_text()
        assert out.read_text() == "atexit ran"  # atexit handlers run (a forked child leaves with os._exit)
    # what differs: torch was imported by the server before the command ran; OMP_NUM_THREADS still applies
    assert seen["forked"]["torch_preloaded"] and seen["forked"]["threads"] == 3
    assert not seen["fresh"]["torch_preloaded"]


def test_a_real_command_prints_and_exits_the_same_forked_or_fresh(tmp_path):
    """The product's own CLI: a refused input gives the same one-line error and exit 2 both ways."""
    logs = {}
    for how in ("forked", "fresh"):
        log = tmp_path / f"{how}.log"
        cmd = [sys.executable, "-m", "sweet_agent.cli", "evaluate", str(tmp_path / "missing.jsonl")]
        assert _start(how, cmd, log, ROOT, _env()).wait(timeout=120) == 2
        logs[how] = log.read_text()
    assert logs["forked"] == logs["fresh"] and logs["forked"].startswith("sweet-agent evaluate: error: ")
    assert logs["forked"].count("\n") == 1


def test_sigterm_to_its_group_ends_the_command_and_what_it_started(tmp_path):
    log, pidfile = tmp_path / "probe.log", tmp_path / "child.pid"
    proc = ForkedCommand([sys.executable, "-m", PROBE, str(tmp_path / "out"), "0", "--child", str(pidfile), "--sleep"],
                         log=log, cwd=ROOT, env=_env())
    _first_line(log)
    for _ in range(1200):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    child = int(pidfile.read_text())
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    assert proc.returncode is None
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM  # as Popen reports a signal
    for _ in range(400):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if open(f"/proc/{child}/stat").read().split(")")[1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the command's own child outlived the stop")


def test_only_this_interpreters_module_commands_are_forked(tmp_path):
    assert can_fork([sys.executable, "-m", "sweet_agent.cli", "evaluate"])
    assert not can_fork([sys.executable, "-c", "print(1)"])
    assert not can_fork([sys.executable, "-m"])
    assert not can_fork([str(tmp_path / "python"), "-m", "sweet_agent.cli"])
    with pytest.raises(ValueError, match="start it with subprocess"):
        ForkedCommand([sys.executable, "-c", "pass"], log=tmp_path / "log", cwd=tmp_path, env=dict(os.environ))
