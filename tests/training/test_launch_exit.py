"""How one rank of a multi-process launch ends (``sweet_agent.cli._end_launch``).

A rank that saved its model must not fail the launch in the interpreter's teardown (gloo's worker
threads abort a rank there now and then, docs/training.md "ZeRO-3"). The launched script below
plants a teardown that aborts for certain, the way that rare crash does: the rank must leave with
its command's exit code before it, with its output flushed and its ``atexit`` handlers run, and
only after every rank got there; a rank whose command failed leaves at once.
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

    if sys.argv[3] == sys.argv[4] == "0":  # a failing rank's teardown is the interpreter's own, not planted
        KEEP = AbortsInTeardown()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out = sys.argv[1]
    # what each rank's atexit handler saw: rank 1 leaves only after rank 0 saved
    atexit.register(lambda: open(f"{out}/atexit-{rank}", "w").write(str(os.path.exists(f"{out}/saved"))))
    code = int(sys.argv[3 + rank])  # each rank's command's exit code
    if rank == 0 and code == 0:
        time.sleep(1.5)  # rank 0 still saving: rank 1 must wait for it before it leaves
        open(f"{out}/saved", "w").close()
    if rank == 1 and code == 0 and sys.argv[3] != "0":
        dist.barrier()  # in a collective rank 0 (failed) never joins: the launcher must stop it
    print(f"rank {rank} done", end="")  # no newline: only an explicit flush writes it
    if sys.argv[2] == "end-launch":
        returned = _end_launch(code)  # a rank that succeeded never comes back: it left by os._exit
        open(f"{out}/returned-{rank}", "w").write(str(returned))
        sys.exit(returned)  # as sweet_agent.cli.main returns it
    dist.destroy_process_group()
    sys.exit(code)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp_path: Path, how: str, codes: tuple[int, int] = (0, 0)) -> subprocess.CompletedProcess:
    script = tmp_path / "rank.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), str(script), str(tmp_path), how, *map(str, codes)]
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
    assert (tmp_path / "atexit-0").read_text() == (tmp_path / "atexit-1").read_text() == "True"  # after the save
    assert not list(tmp_path.glob("returned-*"))  # left by os._exit, not through the interpreter's end

    # the planted teardown does abort a rank that returns normally: what _end_launch skips
    (tmp_path / "atexit-0").unlink()
    plain = _launch(tmp_path, "return")
    assert plain.returncode != 0 and "SIGABRT" in plain.stderr, plain.stderr[-3000:]


@pytest.mark.slow
def test_a_failed_rank_leaves_at_once_with_its_code(tmp_path):
    """Rank 0's command failed (3) while rank 1 waits in a collective: rank 0 does not wait at a
    barrier it would never pass, the launch fails with its code instead of hanging."""
    failed = _launch(tmp_path, "end-launch", codes=(3, 0))
    assert failed.returncode != 0, failed.stderr[-3000:]
    # rank 0 came back from _end_launch with its code at once (no barrier), and the launch ended; which rank the
    # launcher names first is a race (rank 1's collective fails as soon as rank 0 closes the group)
    assert (tmp_path / "returned-0").read_text() == "3"
    assert not (tmp_path / "saved").exists() and not (tmp_path / "returned-1").exists()


def test_one_process_returns_the_code():
    from sweet_agent.cli import _end_launch

    assert _end_launch(3) == 3  # no process group: an ordinary return, nothing torn down early
