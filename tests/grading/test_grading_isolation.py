"""What one submission leaves in the sandbox must not reach the next, nor escape the limits.

Probing answers return the right value only when their probe *succeeds*, so a leak shows up
as a score above the honest wrong answer's (0 here).
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from colbench_gym.grading import BackendGrader
from tests.grading.helpers import CORRECT

RIGHT = "x * 31 + y"


@pytest.fixture(scope="module")
def grader_settings() -> dict:
    return {"call_timeout": 1.0, "total_timeout": 5.0}  # the probes below need more than the default 0.5 s


_IPC = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
KEY = 0xC0B3
"""


def test_sysv_ipc_does_not_outlive_a_submission(grader, task):
    """Shared memory, a message queue and a semaphore set planted by one submission are gone
    for the next (each submission has its own IPC namespace, and SysV IPC is refused anyway)."""
    plant = _IPC + ("libc.shmget(KEY, 1 << 20, 0o1600)\nlibc.msgget(KEY, 0o1600)\nlibc.semget(KEY, 1, 0o1600)\n"
                    "def f(x, y):\n    return None\n")
    probe = _IPC + ("def f(x, y):\n"
                    "    found = [libc.shmget(KEY, 0, 0), libc.msgget(KEY, 0), libc.semget(KEY, 0, 0)]\n"
                    f"    return {RIGHT} if max(found) >= 0 else None\n")
    assert grader.grade(plant, task).passed == 0
    res = grader.grade(probe, task)
    assert res.passed == 0, "a SysV IPC object planted by an earlier submission was found"
    # The planting submission itself could not create one either (no memory outside RLIMIT_AS).
    own = _IPC + ("def f(x, y):\n"
                  f"    return {RIGHT} if libc.shmget(0, 1 << 20, 0o1600) >= 0 else None\n")
    assert grader.grade(own, task).passed == 0


def test_memory_outside_the_address_space_limit_is_unreachable(grader, task):
    """RLIMIT_AS bounds one process's mappings only: memfd pages, detached SysV segments, a
    tmpfs in a mount namespace of the answer's own, or a second process each escape it."""
    probes = {
        "memfd": "os.memfd_create('m')",
        "sysv shm": "libc.shmget(0, 1 << 24, 0o1600) >= 0 or (_ for _ in ()).throw(OSError())",
        "own mount namespace": "libc.unshare(0x10000000 | 0x20000) == 0 or (_ for _ in ()).throw(OSError())",
        "second process": "os.fork() or os._exit(0)",
    }
    for name, expr in probes.items():
        code = ("import os, ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                "def f(x, y):\n"
                f"    {expr}\n"
                f"    return {RIGHT}\n")
        res = grader.grade(code, task)
        assert res.passed == 0, f"{name} was allowed"
    threads = ("import threading\ndef f(x, y):\n    out = []\n"
               "    t = threading.Thread(target=lambda: out.append(x * 31 + y))\n    t.start()\n    t.join()\n"
               "    return out[0]\n")
    assert grader.grade(threads, task).passed == 10  # threads share the one address space: allowed


def _worker_pid(grader: BackendGrader) -> int:
    """Host PID of the pool's worker interpreter (bubblewrap/unshare start it as their child)."""
    proc = grader._pool.workers[0].proc
    assert proc is not None
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().decode("ascii", "replace").rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == proc.pid:
                kids.append(int(entry))
    return kids[0] if len(kids) == 1 else proc.pid


def test_ctrl_c_delivered_to_the_worker_does_not_break_grading(grader, task):
    """SIGINT sent to the worker (again and again) during a submission: graded as usual."""
    assert grader.grade(CORRECT, task).passed == 10
    worker = grader._pool.workers[0]
    restarts, pid = worker.restarts, _worker_pid(grader)
    slow = "import time\ndef f(x, y):\n    time.sleep(0.03)\n    return 31 * x + y\n"
    stop = threading.Event()

    def pester() -> None:
        while not stop.is_set():
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                return
            time.sleep(0.01)

    th = threading.Thread(target=pester)
    th.start()
    try:
        results = [grader.grade(slow, task) for _ in range(3)]
    finally:
        stop.set()
        th.join()
    assert [r.passed for r in results] == [10, 10, 10], [r.error for r in results]
    assert all(r.error is None for r in results)
    assert worker.restarts == restarts and _worker_pid(grader) == pid  # the same worker, still whole


def test_very_deep_directory_tree_is_removed(task):
    """2500 nested directories (past PATH_MAX and Python's recursion limit), the last one
    unreadable, are wiped after the submission, which is graded normally, and the worker goes
    on without a restart. (Generous deadlines: the rlimits-only fallback writes to disk.)"""
    code = ("import os\n"
            "for _ in range(2500):\n"
            "    os.mkdir('d')\n"
            "    os.chdir('d')\n"
            "os.chmod('.', 0)\n"
            "def f(x, y):\n    return 31 * x + y\n")
    with BackendGrader(call_timeout=20.0, total_timeout=30.0, memory_mb=256,
                       isolation=os.environ.get("COLBENCH_GRADER_ISOLATION", "auto")) as grader:
        worker = grader._pool.workers[0]
        assert grader.grade(CORRECT, task).passed == 10
        restarts = worker.restarts
        res = grader.grade(code, task)
        assert res.passed == 10 and res.error is None, res.error
        # The sandbox's temp root holds only the probing submission's own directory afterwards.
        probe = ("import os\n"
                 "ROOT = os.path.dirname(os.path.dirname(os.getcwd()))\n"
                 "def f(x, y):\n"
                 f"    return {RIGHT} if len(os.listdir(ROOT)) > 1 else None\n")
        assert grader.grade(probe, task).passed == 0
        assert worker.restarts == restarts


def test_deep_tree_in_the_host_temp_dir_is_removed(tmp_path):
    """The trusted side removes a sandbox temp dir the same way (rlimits-only keeps it on disk)."""
    from colbench_gym.grading.sandbox import _remove_tree

    # tmpfs when there is one: a journaled disk spends ~3 ms per rmdir, which is not under test
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else tmp_path
    root = Path(tempfile.mkdtemp(prefix="colbench-deep-", dir=base))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(2500):  # past PATH_MAX (4096 bytes) and Python's recursion limit
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "w") as fh:
            fh.write("x")
    finally:
        os.close(fd)
    _remove_tree(str(root))
    assert not root.exists()


def test_no_descriptor_of_the_worker_reaches_the_answer(grader, task):
    """Only stdin/stdout/stderr (/dev/null) and the result pipe are open when the answer runs."""
    code = ("import os\n"
            "def _open(fd):\n"
            "    try:\n        os.fstat(fd)\n        return True\n"
            "    except OSError:\n        return False\n"
            "LEAKED = [fd for fd in range(4, 4096) if _open(fd)]\n"
            f"def f(x, y):\n    return {RIGHT} if LEAKED else None\n")
    assert grader.grade(code, task).passed == 0
