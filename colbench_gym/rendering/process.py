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
import shutil
import signal
from pathlib import Path

from colbench_gym.rendering.result import RendererError

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


#: Flags that make Debian's Chromium start fast and stay off the network, each named for what it
#: turns off: no GPU, no QUIC, no first-run, background, update or sync traffic, /tmp instead of
#: a small /dev/shm, no scrollbars, no audio, no font hinting.
CHROMIUM_ARGS = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--font-render-hinting=none",
    # pooled pages are all "background" tabs but one: never throttle their timers or frames
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows", "--disable-extensions",
    # Every request is answered by our router before DNS is needed; this makes anything that
    # bypasses it (preconnect hints, WebSockets, TURN over TCP) fail at once instead of touching the net.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # WebRTC sends STUN/TURN over UDP straight to IP literals (no resolver): no UDP at all.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    # (Playwright already passes --disable-back-forward-cache: a page left behind is gone, not frozen.
    # Do not pass --disable-features here: it would replace Playwright's own list.)
)


def find_chromium(explicit: str | None = None) -> str | None:
    """Chromium to launch: ``explicit``, ``$COLBENCH_CHROMIUM``, else a system Chromium/Chrome on
    PATH. ``None`` means "let Playwright use its own downloaded browser"."""
    for cand in (explicit, os.environ.get("COLBENCH_CHROMIUM")):
        if cand:
            if not (os.path.isfile(cand) or shutil.which(cand)):
                raise RendererError(f"Chromium executable {cand!r} does not exist")
            return shutil.which(cand) or cand
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None
