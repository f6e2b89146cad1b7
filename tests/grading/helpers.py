"""Helpers shared by the grading tests: the test task and process accounting."""

from __future__ import annotations

import os

from colbench_gym.grading import BackendGrader

# f(x, y) = 31x + y on ten different inputs: no constant or trivial answer passes any test.
REFERENCE = "def f(x, y):\n    return x * 31 + y\n"
CORRECT = "def f(x, y):\n    return 31 * x + y\n"
HONEST_WRONG = "def f(x, y):\n    return x + y\n"


def descendants(root: int) -> set[int]:
    """Every live process whose parent chain reaches ``root`` (zombies excluded)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().decode("ascii", "replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == "Z":
            continue
        parent[int(entry)] = int(fields[1])
    out: set[int] = set()
    frontier = [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        frontier.extend(kids)
    return out


def cgroup_pids(g: BackendGrader) -> int | None:
    """Processes in the pids cgroups of the grader's sandboxes (None when there are none)."""
    total, found = 0, False
    for w in [*g._pool.workers, *g._ref_pool.workers]:
        if w._cgroup:
            found = True
            with open(os.path.join(w._cgroup, "cgroup.procs")) as fh:
                total += len(fh.read().split())
    return total if found else None


def parent_killer(kill_all: bool) -> str:
    """An answer that SIGKILLs its parent and PID 1 and, when ``kill_all``, every process it can
    reach (``kill(-1)``). Tests only pass ``kill_all=True`` where the sandbox has its own PID
    namespace: fired from a shared PID namespace it would take down the whole machine."""
    return ("import os, signal\n"
            "def f(x, y):\n"
            "    for pid in (os.getppid(), 1):\n"
            "        try:\n            os.kill(pid, signal.SIGKILL)\n"
            "        except OSError:\n            pass\n"
            + ("    try:\n        os.kill(-1, signal.SIGKILL)\n"
               "    except OSError:\n        pass\n" if kill_all else "")
            + "    return None\n")
