"""The Chromium process a renderer launched: found by a per-launch token, killed by its group.

Why: Playwright does not expose the browser's PID, and a browser that is hung (stopped, stuck in
a system call, swapping) cannot be closed politely — only killed. Each launch passes a random
``--colbench-instance=<token>`` switch (Chromium ignores unknown switches), so the browser process
is the one whose command line carries *our* token and no ``--type=`` (its children have one). It
is never looked up by name. Playwright starts the browser detached, i.e. as the leader of its own
process group, so the whole tree (renderers, zygote, GPU process) goes with one ``killpg``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

TOKEN_SWITCH = "--colbench-instance="


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def owns(pid: int, token: str) -> bool:
    """Whether ``pid`` is still the browser launched with ``token`` (not a recycled PID)."""
    args = _cmdline(pid)
    return (TOKEN_SWITCH + token).encode() in args and not any(a.startswith(b"--type=") for a in args)


def find_browser_pid(token: str) -> int | None:
    """PID of the browser process launched with ``token`` (Linux ``/proc``; None elsewhere)."""
    if not os.path.isdir("/proc"):
        return None
    for d in os.listdir("/proc"):
        if d.isdigit() and owns(int(d), token):
            return int(d)
    return None


def kill_browser(pid: int | None, token: str) -> bool:
    """SIGKILL the browser ``pid`` and its process group, if it is still ours; True if signalled."""
    if pid is None or not owns(pid, token):
        return False
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False
