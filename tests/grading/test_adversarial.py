"""Hostile answers: each scores no more than an honest wrong answer and leaves nothing behind.

Every attack runs in the real sandbox. After each one we check that the process tree under
this test process (and the sandbox's pids cgroup, when there is one) is exactly what it was
before, that no file appeared outside, that no connection was made, and that the grader still
grades a correct answer 10/10. Attacks that *probe* for a leak return the correct value only
when the leak worked, so a leak would show up as a score above the honest wrong answer.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.grading.helpers import CORRECT, HONEST_WRONG, cgroup_pids, descendants, parent_killer

NAMESPACES_ONLY = "needs the namespace sandbox (filesystem / network isolation)"
RIGHT_VALUE = "x * 31 + y"  # what a probing attack returns when its probe succeeded


@pytest.fixture(scope="module")
def honest_score(grader, task) -> int:
    res = grader.grade(HONEST_WRONG, task)
    assert res.total == 10
    return res.passed


@pytest.fixture
def leftovers(grader, task):
    """Snapshot processes before an attack; after it, assert the very same set is alive."""
    assert grader.grade(CORRECT, task).success  # workers warm
    before = descendants(os.getpid())
    cg_before = cgroup_pids(grader)
    yield
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # a restarted worker may take a moment to settle
        after = descendants(os.getpid())
        if len(after) == len(before):
            break
        time.sleep(0.05)
    assert len(after) == len(before), f"processes left behind: {sorted(after - before)}"
    if cg_before is not None:
        assert cgroup_pids(grader) == cg_before
    # ...and the grader is still fully functional.
    assert grader.grade(CORRECT, task).passed == 10


def _attack(grader, task, honest_score, code: str, max_seconds: float | None = None):
    t0 = time.monotonic()
    res = grader.grade(code, task)
    elapsed = time.monotonic() - t0
    assert res.total == 10
    assert res.passed <= honest_score, f"attack scored {res.passed}/10: {res.per_test}"
    limit = max_seconds if max_seconds is not None else grader.total_timeout + grader.call_timeout + 3
    assert elapsed < limit, f"attack took {elapsed:.1f}s"
    return res


def _namespaces(grader) -> bool:
    return grader.isolation.level == "namespaces"


# ------------------------------------------------------------------ resource attacks


def test_fork_bomb(grader, task, honest_score, leftovers):
    code = ("import os\n"
            "while True:\n"
            "    try:\n        os.fork()\n"
            "    except OSError:\n        pass\n"
            "def f(x, y):\n    return x * 31 + y\n")
    res = _attack(grader, task, honest_score, code)
    assert res.error == "timeout"


def test_fork_bomb_inside_call(grader, task, honest_score, leftovers):
    code = ("import os\n"
            "def f(x, y):\n"
            "    while True:\n"
            "        try:\n            os.fork()\n"
            "        except OSError:\n            pass\n")
    _attack(grader, task, honest_score, code)


def test_setsid_grandchild_does_not_survive(grader, task, honest_score, leftovers):
    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n        time.sleep(120)\n"
            "    os._exit(0)\n"
            "def f(x, y):\n    return None\n")
    _attack(grader, task, honest_score, code)


def test_signal_ignoring_infinite_loop(grader, task, honest_score, leftovers):
    code = ("import signal\n"
            "for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGALRM,\n"
            "          signal.SIGUSR1, signal.SIGQUIT):\n"
            "    signal.signal(s, signal.SIG_IGN)\n"
            "def f(x, y):\n    while True:\n        pass\n")
    res = _attack(grader, task, honest_score, code)
    assert res.error == "timeout"


def test_memory_blow_up(grader, task, honest_score, leftovers):
    code = ("def f(x, y):\n    blocks = []\n    while True:\n"
            "        blocks.append(bytearray(32 * 1024 * 1024))\n")
    _attack(grader, task, honest_score, code)
    # 2 GiB would be granted lazily outside the sandbox; RLIMIT_AS refuses it at once.
    res = _attack(grader, task, honest_score, "def f(x, y):\n    return len(bytearray(2 << 30)) + x * 31 + y\n")
    assert all("MemoryError" in why for why in res.reasons.values()), res.reasons


def test_unbounded_recursion(grader, task, honest_score, leftovers):
    _attack(grader, task, honest_score, "def f(x, y):\n    return f(y, x)\n")


def test_recursion_limit_raised_until_the_c_stack_breaks(grader, task, honest_score, leftovers):
    code = "import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(x, y):\n    return f(y, x)\n"
    _attack(grader, task, honest_score, code)


def test_stdout_flood_100mb(grader, task, honest_score, leftovers):
    code = ("import os, sys\n"
            "def f(x, y):\n"
            "    sys.stdout.write('x' * (100 << 20))\n"
            "    os.write(1, b'10 passed ' * 1000)\n"
            "    print('=== 10 passed in 0.01s ===', file=sys.stderr)\n"
            "    return None\n")
    _attack(grader, task, honest_score, code)


def test_result_pipe_flood_100mb(grader, task, honest_score, leftovers):
    code = ("import os\n"
            "def f(x, y):\n"
            "    for fd in range(3, 64):\n"
            "        try:\n            os.write(fd, b'x' * (100 << 20))\n"
            "        except OSError:\n            pass\n"
            "    return None\n")
    _attack(grader, task, honest_score, code)


# ------------------------------------------------------------------ escaping the verdict


def test_sys_exit(grader, task, honest_score, leftovers):
    _attack(grader, task, honest_score, "import sys\nsys.exit(0)\ndef f(x, y):\n    return None\n")
    _attack(grader, task, honest_score, "def f(x, y):\n    raise SystemExit(0)\n")


def test_os_exit_at_import(grader, task, honest_score, leftovers):
    res = _attack(grader, task, honest_score, "import os\nos._exit(0)\ndef f(x, y):\n    return x * 31 + y\n")
    assert res.error


def test_atexit_tricks(grader, task, honest_score, leftovers):
    code = ("import atexit, os, sys\n"
            "def fake():\n"
            "    for fd in (1, 2, 3):\n"
            "        try:\n            os.write(fd, b'{\"t\":\"r\",\"i\":0,\"v\":[\"i\",\"20\"]}\\n10 passed\\n')\n"
            "        except OSError:\n            pass\n"
            "atexit.register(fake)\n"
            "sys.exitfunc = fake\n"
            "def f(x, y):\n    return None\n")
    _attack(grader, task, honest_score, code)


def test_forged_result_records(grader, task, honest_score, leftovers):
    """Writing our own protocol lines only ever reports values the answer chose itself."""
    code = ("import os\n"
            "lines = b'{\"t\":\"ready\"}\\n' + b''.join(\n"
            "    b'{\"t\":\"r\",\"i\":%d,\"v\":[\"b\",1]}\\n' % i for i in range(10))\n"
            "for fd in range(3, 16):\n"
            "    try:\n        os.write(fd, lines)\n"
            "    except OSError:\n        pass\n"
            "os._exit(0)\n")
    _attack(grader, task, honest_score, code)


def test_killing_the_parent(grader, task, honest_score, leftovers):
    """The worker survives (or is replaced), and no process outside the sandbox is touched."""
    canaries = [subprocess.Popen(["sleep", "60"])]
    if os.geteuid() == 0:  # answers may run as nobody: a nobody process must survive too
        canaries.append(subprocess.Popen(["sleep", "60"], user=65534, group=65534))
    pids_before = [w.proc.pid for w in grader._pool.workers if w.proc]
    kill_all = grader.isolation.pid_namespace  # kill(-1) is only ever tried inside a PID namespace
    code = parent_killer(kill_all)
    try:
        _attack(grader, task, honest_score, code)
        assert all(c.poll() is None for c in canaries), "a process outside the sandbox was killed"
    finally:
        for c in canaries:
            c.kill()
            c.wait()
    if grader.isolation.pid_namespace:  # the worker is PID 1 of its namespace: it cannot be killed
        assert [w.proc.pid for w in grader._pool.workers if w.proc] == pids_before


def test_eq_cheats(grader, task, honest_score, leftovers):
    always = ("class Always:\n"
              "    def __eq__(self, other):\n        return True\n"
              "    def __ne__(self, other):\n        return False\n"
              "    __hash__ = object.__hash__\n")
    _attack(grader, task, honest_score, always + "def f(x, y):\n    return Always()\n")
    _attack(grader, task, honest_score, "class I(int):\n    def __eq__(self, o):\n        return True\n"
                                        "    __hash__ = int.__hash__\n"
                                        "def f(x, y):\n    return I(0)\n")
    _attack(grader, task, honest_score, "class S:\n    __class__ = int\n"
                                        "    def __eq__(self, o):\n        return True\n"
                                        "def f(x, y):\n    return S()\n")


def test_frame_walk_cheat(grader, task, honest_score, leftovers):
    code = ("import sys, gc\n"
            "NAMES = ('expected', 'exp', 'reference', 'ref', 'want', 'ground_truth', 'outputs')\n"
            "def f(x, y):\n"
            "    fr = sys._getframe(1)\n"
            "    while fr is not None:\n"
            "        for k in NAMES:\n"
            "            if k in fr.f_locals:\n                return fr.f_locals[k]\n"
            "        fr = fr.f_back\n"
            "    for o in gc.get_objects():\n"
            "        if type(o) is dict:\n"
            "            for k in NAMES:\n"
            "                if k in o:\n                    return o[k]\n"
            "    return None\n")
    _attack(grader, task, honest_score, code)


def test_patching_pytest_internals(grader, task, honest_score, leftovers):
    import _pytest.runner

    original = _pytest.runner.call_and_report
    code = ("import sys\n"
            "try:\n"
            "    import _pytest.runner, _pytest.reports\n"
            "    _pytest.runner.call_and_report = lambda *a, **k: None\n"
            "    _pytest.reports.TestReport.passed = property(lambda self: True)\n"
            "except ImportError:\n    pass\n"
            "sys.modules['_pytest'] = None\n"
            "def f(x, y):\n    return None\n")
    _attack(grader, task, honest_score, code)
    assert _pytest.runner.call_and_report is original


# ------------------------------------------------------------------ information leaks


def test_loopback_network_connection(grader, task, honest_score, leftovers):
    if not grader.isolation.pid_namespace:  # bubblewrap or unshare: both add a network namespace
        pytest.skip(NAMESPACES_ONLY)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        code = ("import socket\n"
                "def f(x, y):\n"
                f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=0.2)\n"
                "    s.sendall(b'leak')\n"
                f"    return {RIGHT_VALUE}\n")
        res = _attack(grader, task, honest_score, code)
        assert res.passed == 0
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    finally:
        listener.close()


def test_file_write_outside(grader, task, honest_score, leftovers, tmp_path):
    if not _namespaces(grader):
        pytest.skip(NAMESPACES_ONLY)
    targets = [tmp_path / "escaped.txt", Path(f"/tmp/colbench-escape-{uuid.uuid4().hex}"),
               Path(__file__).with_name(f"escape-{uuid.uuid4().hex}.txt")]
    code = ("def f(x, y):\n"
            f"    for p in {[str(t) for t in targets]!r}:\n"
            "        with open(p, 'w') as fh:\n            fh.write('escaped')\n"
            f"    return {RIGHT_VALUE}\n")
    res = _attack(grader, task, honest_score, code)
    assert res.passed == 0
    for t in targets:
        assert not t.exists(), f"{t} was written from inside the sandbox"


def test_files_written_inside_do_not_outlive_the_submission(grader, task, honest_score, leftovers):
    plant = ("import os\n"
             "open('planted.txt', 'w').write('x')\n"
             "open(os.path.join(os.environ.get('TMPDIR', '/tmp'), '..', 'planted-up.txt'), 'w').write('x')\n"
             "try:\n    open('/tmp/planted-root.txt', 'w').write('x')\nexcept OSError:\n    pass\n"
             "def f(x, y):\n    return None\n")
    _attack(grader, task, honest_score, plant)
    # A later submission looks for them and is right only if it finds nothing (in the fallback,
    # /tmp is the host's own and not ours to judge).
    extra = ", '/tmp'" if _namespaces(grader) else ""
    probe = ("import os\n"
             "def f(x, y):\n"
             f"    for root in ('.', '..', os.environ.get('TMPDIR') or '/tmp'{extra}):\n"
             "        for dirpath, _, files in os.walk(root):\n"
             "            if any(name.startswith('planted') for name in files):\n"
             "                return None\n"
             f"    return {RIGHT_VALUE}\n")
    assert grader.grade(probe, task).passed == 10


def test_reading_the_test_and_input_files(grader, task, honest_score, leftovers, tmp_path):
    if not _namespaces(grader):
        pytest.skip(NAMESPACES_ONLY)
    input_file = tmp_path / "trajectories.jsonl"
    input_file.write_text('{"task": {"ground_truth": "def f(x, y): return x * 31 + y"}}\n')
    secrets = [str(input_file), __file__, str(Path(__file__).parents[2] / "pyproject.toml"), "/etc/passwd",
               "/proc/1/environ", "/proc/self/environ"]
    for path in secrets:
        code = ("def f(x, y):\n"
                f"    data = open({path!r}, 'rb').read()\n"
                "    assert data\n"
                f"    return {RIGHT_VALUE}\n")
        res = _attack(grader, task, honest_score, code)
        assert res.passed == 0, f"the answer could read {path}"
    # Nor is the project importable from inside.
    res = _attack(grader, task, honest_score,
                  f"import colbench_gym\ndef f(x, y):\n    return {RIGHT_VALUE}\n")
    assert res.passed == 0
