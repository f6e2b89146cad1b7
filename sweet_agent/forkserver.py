"""Start ``python -m <module>`` commands forked from a process that imported torch, transformers and TRL once.

WHY: importing torch + transformers + TRL takes ~15 s on the loaded 2-core machine (8.6 s of CPU),
while a command of the learning benchmark's quick profile does a second or two of work with a tiny
model; the quick profile starts ~77 ``sweet-agent`` commands, so nearly all of its ~20 minutes went
on imports. Here every command is forked from multiprocessing's fork server (the standard
library's, not a hand-written zygote), which imported :data:`PRELOAD` once: a command then starts
in well under a second, copy-on-write, and runs its module as ``python -m`` does
(:func:`runpy.run_module` as ``__main__``, the working directory first on ``sys.path``). It is
otherwise the process ``subprocess.Popen([python, "-m", ...], start_new_session=True)`` would be:
its own session and process group (its pid: ``os.killpg(pid, SIGTERM)`` stops it and whatever it
started), stdout and stderr appended to its log file, its own working directory and environment,
``OMP_NUM_THREADS`` applied (torch read the server's value at import), its exit status (a signal as
``-signum``, as Popen reports it), and its ``atexit`` handlers run (the grader's sandbox pool and
the renderer's browser close there; a forked child otherwise leaves with ``os._exit``).

What is not the same: environment variables read at *import* time (``HF_HUB_OFFLINE``,
``TOKENIZERS_PARALLELISM``, ``HF_HOME``) are those of ``os.environ`` when the server started (set
them there first: multiprocessing starts the server again under ``os.environ`` if it dies); the
modules of :data:`PRELOAD` are imported once, before any command's arguments are known (importing
them starts jemalloc's background thread, which handles fork itself, and no other); the hash seed
is the server's (numpy's and torch's global generators are seeded afresh in each command, as a new
interpreter seeds them; ``random`` reseeds itself after a fork); and the interpreter is this one
(:func:`can_fork` refuses a command naming another). If the fork server dies while a command runs,
the command is still waited for (its pid, through a pidfd) and stopped like any other, but its
exit status is lost: :data:`STATUS_UNKNOWN`.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.process
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path

#: What the fork server imports once: the ``sweet-agent`` commands the learning benchmark runs
#: (each imports torch / transformers / TRL / peft at module level, see ``sweet_agent.cli.COMMANDS``).
PRELOAD = (
    "sweet_agent.rollout.cli",
    "sweet_agent.rollout.evaluate",
    "sweet_agent.critic.cli",
    "sweet_agent.actor.cli",
    "sweet_agent.actor.mc_values",
    "sweet_agent.actor.critic_report",
    "sweet_agent.baselines.rft",
    "sweet_agent.baselines.mtdpo",
)

_CTX = multiprocessing.get_context("forkserver")
#: The exit status of a command whose fork server died before reporting it (multiprocessing reads
#: an end of file there as 255).
STATUS_UNKNOWN = 255
_start_lock = threading.Lock()  # one start at a time: see ForkedCommand.__init__


def ensure_running() -> None:
    """Start the fork server under the current ``os.environ``, importing :data:`PRELOAD` (once:
    later calls only check it runs). The environment its imports read is this process's: set
    what the commands need at import time in ``os.environ`` before the first call."""
    from multiprocessing import forkserver

    _CTX.set_forkserver_preload(list(PRELOAD))
    forkserver.ensure_running()


def can_fork(cmd: Sequence[str]) -> bool:
    """True for ``[<this interpreter>, "-m", module, ...]``, the commands this module starts."""
    return (len(cmd) >= 3 and cmd[1] == "-m"
            and os.path.realpath(str(cmd[0])) == os.path.realpath(sys.executable))


def _child(module: str, argv: list[str], log: str, cwd: str, env: dict[str, str]) -> None:
    """The forked command: what ``python -m module *argv`` would do, in its own session."""
    os.setsid()  # its own process group (= its pid): a stop signals the command and all it starts
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.path.insert(0, cwd)  # as `python -m` puts the working directory first
    torch = sys.modules.get("torch")
    if torch is not None and env.get("OMP_NUM_THREADS", "").isdigit():
        torch.set_num_threads(int(env["OMP_NUM_THREADS"]))
    _seed_like_a_new_interpreter()
    sys.argv = [module, *argv]  # run_module puts the module's file first
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:  # the module's own exit: sys.exit(main()), argparse, one-line errors
        code = exc.code
    except KeyboardInterrupt:  # the interpreter ends by the signal itself: the status is -SIGINT
        traceback.print_exc()
        leave_as_the_interpreter_does()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
        raise
    except BaseException:  # noqa: BLE001 - what the interpreter would print, and its exit status
        traceback.print_exc()
        code = 1
    leave_as_the_interpreter_does()
    sys.exit(code)


def _seed_like_a_new_interpreter() -> None:
    """A fork copies the server's generator states, so every command would draw the same "random"
    numbers; a new interpreter seeds numpy's and torch's global generators from the OS."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()


def leave_as_the_interpreter_does() -> None:
    """What the interpreter does at its end and a forked child, leaving by ``os._exit``, skips: wait
    for non-daemon threads, then run the ``atexit`` handlers (the grader's sandbox pool and the
    renderer's browser close there), then flush."""
    threading._shutdown()  # noqa: SLF001 - the interpreter's own step, in its order
    atexit._run_exitfuncs()  # noqa: SLF001
    for stream in (sys.stdout, sys.stderr):
        stream.flush()


class ForkedCommand:
    """A ``python -m`` command forked from the server, with the part of :class:`subprocess.Popen`'s
    interface a caller that waits and stops by process group needs: ``args``, ``pid`` (also its
    process group), ``wait(timeout)``, ``poll()``, ``returncode``."""

    def __init__(self, cmd: Sequence[str], *, log: Path | str, cwd: Path | str, env: Mapping[str, str]):
        self.args = [str(c) for c in cmd]
        if not can_fork(self.args):
            raise ValueError(f"not a `{sys.executable} -m <module>` command: {self.args[:3]} "
                             "(start it with subprocess)")
        ensure_running()
        self._lock = threading.Lock()
        self._proc = _CTX.Process(target=_child, args=(self.args[2], self.args[3:], str(log), str(cwd), dict(env)),
                                  name=" ".join(self.args[2:4]))
        # WHY: every Process.start() polls the children multiprocessing knows of, from whichever thread
        # starts one; two threads reading one child's status pipe at once gave a command that exited 0
        # the status 255 (23 of 200 tries). Forgotten by multiprocessing as soon as it starts, this
        # command's status is read by its own poll() only, under its lock.
        with _start_lock:
            self._proc.start()
            multiprocessing.process._children.discard(self._proc)  # noqa: SLF001
        self.pid = self._proc.pid
        try:  # the command itself, not the server's report of it: outlives a fork server that dies
            self._pidfd: int | None = os.pidfd_open(self.pid)
        except ProcessLookupError:  # already gone (and its status reported)
            self._pidfd = None

    def _alive(self) -> bool:
        if self._pidfd is None:
            return False
        return not select.select([self._pidfd], [], [], 0)[0]

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        with self._lock:
            code = self._proc.exitcode
            if code == STATUS_UNKNOWN and self._alive():  # the server died, the command runs on
                return None
            if code is not None and self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None
            return code

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            with self._lock:  # the server's report of the command or, once the server is gone, the command's end
                fd = self._proc.sentinel if self._proc.exitcode is None else self._pidfd
            select.select([fd], [], [], left)
        return code
