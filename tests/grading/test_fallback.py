"""The rlimits-only fallback must still protect the machine (regression tests).

Without bubblewrap, a child that runs as root outside a PID namespace could ``kill(-1)`` every
process on the machine. The fallback therefore gets PID/network namespaces from ``unshare``
where it can and never runs answers as root. These tests run hostile answers through it and
check that processes outside the sandbox — ours, and a ``nobody`` one — survive.
The whole adversarial suite can be pointed at the fallback with
``COLBENCH_GRADER_ISOLATION=rlimits-only``.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests.grading.helpers import CORRECT, descendants, parent_killer


@pytest.fixture(scope="module")
def fallback(task, make_grader):
    return make_grader(isolation="rlimits-only", total_timeout=2.0)


def _settle(before: set[int]) -> set[int]:
    deadline = time.monotonic() + 5
    while True:
        after = descendants(os.getpid())
        if len(after) <= len(before) or time.monotonic() > deadline:
            return after
        time.sleep(0.05)


def test_answers_never_run_as_root(fallback, task):
    iso = fallback.isolation
    assert iso.drop_uid is not None or os.geteuid() != 0 or "--user" in iso.unshare
    probe = ("import os\n"
             f"IN_USERNS = {'--user' in iso.unshare}\n"
             "def f(x, y):\n"
             "    ok = os.getuid() != 0 and os.geteuid() != 0 or IN_USERNS\n"
             "    return x * 31 + y if ok else None\n")
    assert fallback.grade(probe, task).passed == 10


def test_kill_everything_touches_nothing_outside(fallback, task):
    assert fallback.grade(CORRECT, task).success
    canaries = [subprocess.Popen(["sleep", "60"])]
    if os.geteuid() == 0:
        canaries.append(subprocess.Popen(["sleep", "60"], user=65534, group=65534))
    before = descendants(os.getpid())
    # kill(-1) is only attempted where the sandbox has its own PID namespace; without one the
    # answer runs as nobody and we still do not fire it at a shared machine from a test.
    kill_all = fallback.isolation.pid_namespace
    code = parent_killer(kill_all)
    try:
        assert fallback.grade(code, task).passed == 0
        assert all(c.poll() is None for c in canaries), "a process outside the sandbox was killed"
        assert fallback.grade(CORRECT, task).success
    finally:
        for c in canaries:
            c.kill()
            c.wait()
    assert len(_settle(before - {c.pid for c in canaries})) <= len(before)


def test_fork_bomb_and_escaped_grandchild(fallback, task):
    assert fallback.grade(CORRECT, task).success
    before = descendants(os.getpid())
    bomb = ("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n")
    assert fallback.grade(bomb, task).passed == 0
    escape = ("import os, time\n"
              "if os.fork() == 0:\n    os.setsid()\n"
              "    if os.fork() == 0:\n        time.sleep(120)\n"
              "    os._exit(0)\n"
              "def f(x, y):\n    return None\n")
    assert fallback.grade(escape, task).passed == 0
    assert len(_settle(before)) == len(before)
    assert fallback.grade(CORRECT, task).success
