"""How one rank of a multi-process launch ends (``sweet_agent.cli._end_launch``).

A rank that saved its model must not fail the launch in the interpreter's teardown (gloo's worker
threads abort a rank there now and then, docs/training.md "ZeRO-3"). The launched script below
plants a teardown that aborts for certain, the way that rare crash does: the rank must leave with
its command's exit code before it, with its output flushed and its ``atexit`` handlers run, and
only after every rank got there.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import atexit, os, sys, time
    import torch.distributed as dist
    from sweet_agent.cli import _end_launch

    class AbortsInTeardown:  # stands for a C++ object whose destruction at exit aborts
        def __del__(self, abort=os.abort):  # bound now: module globals are gone by then
            abort()

    KEEP = AbortsInTeardown()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out = sys.argv[1]
    atexit.register(lambda: open(f"{out}/atexit-{rank}", "w").close())
    if rank == 0:
        time.sleep(1.5)  # rank 0 still saving: rank 1 must wait for it before it leaves
        open(f"{out}/saved", "w").close()
    print(f"rank {rank} done", end="")  # no newline: only an explicit flush writes it
    if sys.argv[2] == "end-launch":
        _end_launch(int(sys.argv[3]))
    dist.destroy_process_group()
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp_path: Path, how: str, code: int = 0) -> subprocess.CompletedProcess:
    script = tmp_path / "rank.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), str(script), str(tmp_path), how, str(code)]
    launcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        out, err = launcher.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        launcher.send_signal(signal.SIGTERM)  # the launcher passes it on to the ranks it started
        out, err = launcher.communicate(timeout=60)
        pytest.fail(f"the launch hung: {err[-3000:]}")
    return subprocess.CompletedProcess(cmd, launcher.returncode, out, err)


@pytest.mark.slow
def test_each_rank_leaves_with_its_code_before_the_teardown(tmp_path):
    ended = _launch(tmp_path, "end-launch")
    assert ended.returncode == 0, ended.stderr[-3000:]
    assert "rank 0 done" in ended.stdout and "rank 1 done" in ended.stdout  # flushed before leaving
    assert (tmp_path / "atexit-0").exists() and (tmp_path / "atexit-1").exists()
    assert (tmp_path / "saved").exists()

    # the planted teardown does abort a rank that returns normally: what _end_launch skips
    (tmp_path / "atexit-0").unlink()
    plain = _launch(tmp_path, "return")
    assert plain.returncode != 0 and "SIGABRT" in plain.stderr, plain.stderr[-3000:]


@pytest.mark.slow
def test_a_rank_leaves_with_a_failing_commands_code(tmp_path):
    failed = _launch(tmp_path, "end-launch", code=3)
    assert failed.returncode != 0 and "exitcode  : 3" in failed.stderr, failed.stderr[-3000:]


def test_one_process_returns_the_code():
    from sweet_agent.cli import _end_launch

    assert _end_launch(3) == 3  # no process group: an ordinary return, nothing torn down early
