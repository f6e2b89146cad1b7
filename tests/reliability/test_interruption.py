"""Interruption: SIGTERM / Ctrl-C / SIGKILL during `sweet-agent rollout` keep every finished
episode and a resumable file; --resume refuses a file made with other settings, naming the
difference; --overwrite never destroys the previous output before the new run is complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweet_agent.trajectories import read_trajectories
from tests.reliability.fault_server import FaultServer

#: subprocess rollouts: still run by `make test`, skipped by `make test-fast`
pytestmark = pytest.mark.slow

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLBENCH_DEBUG": ""}


def agent(body) -> str:
    if sum(m["role"] == "assistant" for m in body["messages"]) == 0:
        return "OUTPUT: What should it return for an empty input?"
    return "I WANT TO ANSWER:\ndef f(*args):\n    return None\n"


def _argv(server, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sweet_agent.cli", "rollout", "--policy", "openai:agent", "--base-url",
            server.base_url, "--episodes", "6", "--k", "2", "--max-turns", "3", "--concurrency", "2",
            "--output", str(out), "--no-progress", *extra]


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip()) if path.exists() else 0


def _default_sigint() -> None:
    # A shell runs background jobs with SIGINT ignored and Python keeps an inherited "ignore"
    # (so would `pytest &`'s children): give the rollout the Ctrl-C a terminal would deliver.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_and_wait(argv, watch: Path, at_least: int) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            start_new_session=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 600
    while _lines(watch) < at_least:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the rollout made no progress"
        time.sleep(0.05)
    return proc


def test_sigterm_keeps_finished_episodes_and_resume_completes(tmp_path):
    out = tmp_path / "run.jsonl"
    with FaultServer(agent, latency=0.25) as server:
        proc = _start_and_wait(_argv(server, out), out, 2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 130, err
        assert "terminated" in err and "--resume" in err and "Traceback" not in err
        kept = read_trajectories(out)
        assert 2 <= len(kept) < 12
        done = subprocess.run(_argv(server, out, "--resume"), capture_output=True, text=True, env=ENV, timeout=900)
        assert done.returncode == 0, done.stderr
    ids = [r["meta"]["episode_id"] for r in read_trajectories(out)]
    assert sorted(ids) == sorted(f"{i}:{k}" for i in range(6) for k in range(2))  # all, exactly once
    assert f"({len(kept)} already in" in done.stdout


def test_ctrl_c_is_handled_like_sigterm(tmp_path):
    out = tmp_path / "run.jsonl"
    with FaultServer(agent, latency=0.25) as server:
        proc = _start_and_wait(_argv(server, out), out, 1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert len(read_trajectories(out)) >= 1


def test_resume_with_other_settings_is_refused_naming_the_difference(tmp_path):
    out = tmp_path / "run.jsonl"
    with FaultServer(agent) as server:
        argv = _argv(server, out)
        argv[argv.index("--episodes") + 1] = "2"
        assert subprocess.run(argv, capture_output=True, env=ENV, timeout=900).returncode == 0
        before = out.read_bytes()
        for flag, value in (("--seed", "5"), ("--k", "3"), ("--tasks", "embedded:train"), ("--policy", "openai:other"),
                            ("--simulator", "openai")):
            bad = list(argv)
            if flag in bad:
                bad[bad.index(flag) + 1] = value
            else:
                bad += [flag, value]
            if flag == "--simulator":
                bad += ["--simulator-kwargs", json.dumps({"model": "sim", "base_url": server.base_url})]
            proc = subprocess.run(bad + ["--resume"], capture_output=True, text=True, env=ENV, timeout=900)
            assert proc.returncode != 0 and flag in proc.stderr and "Traceback" not in proc.stderr, (flag, proc.stderr)
            assert out.read_bytes() == before
        assert len(server.requests) == 8  # the refused resumes never called the model


def test_overwrite_keeps_the_previous_output_until_the_new_run_is_complete(tmp_path):
    out = tmp_path / "run.jsonl"
    partial = tmp_path / "run.jsonl.partial"
    with FaultServer(agent) as server:
        assert subprocess.run(_argv(server, out), capture_output=True, env=ENV, timeout=900).returncode == 0
        before = out.read_bytes()
        server.latency = 0.25
        proc = _start_and_wait(_argv(server, out, "--overwrite", "--seed", "9"), partial, 1)
        os.killpg(proc.pid, signal.SIGKILL)  # no chance to clean up
        proc.communicate(timeout=600)
        assert out.read_bytes() == before  # the previous run is intact
        server.latency = 0.0
        done = subprocess.run(_argv(server, out, "--overwrite", "--seed", "9"), capture_output=True, text=True,
                              env=ENV, timeout=900)
        assert done.returncode == 0, done.stderr
    recs = read_trajectories(out)
    assert len(recs) == 12 and {r["meta"]["seed"] for r in recs} == {9} and not partial.exists()


def test_an_interrupt_inside_an_asyncio_task_is_still_one_line(tmp_path):
    """SIGTERM's handler can raise while a rollout task runs (e.g. while it fsyncs a record): the
    task keeps the exception too, and asyncio printed "Task exception was never retrieved" with a
    traceback at exit (a fresh-clone run of test_sigterm_keeps_finished_episodes_and_resume_completes
    failed on it once). Made deterministic: the command's task raises Terminated itself."""
    script = tmp_path / "cmd.py"
    script.write_text(
        "import asyncio, sys, types\n"
        "from colbench_gym import cli\n"
        "def run(args):\n"
        "    async def step():\n"
        "        raise cli.Terminated()\n"
        "    async def main():\n"
        "        await asyncio.gather(asyncio.ensure_future(step()), asyncio.sleep(5))\n"
        "    asyncio.run(main())\n"
        "sys.modules['fake_cmd'] = types.SimpleNamespace(add_arguments=lambda p: None, run=run)\n"
        "sys.exit(cli.dispatch('tool', [(('go',), 'fake_cmd', 'help')], sys.argv[1:]))\n")
    got = subprocess.run([sys.executable, str(script), "go"], capture_output=True, text=True, env=ENV, timeout=120)
    assert got.returncode == 130
    assert got.stderr.strip().splitlines() == [
        "tool go: terminated (SIGTERM); everything finished so far is kept on disk (rerun with --resume to continue)"]
    debug = subprocess.run([sys.executable, str(script), "go", "--debug"], capture_output=True, text=True, env=ENV,
                           timeout=120)
    assert debug.returncode == 130 and "Traceback" in debug.stderr  # --debug still shows it
