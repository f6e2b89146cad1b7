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
``TOKENIZERS_PARALLELISM``, ``HF_HOME``) are those the server started with, so
:func:`ensure_running` starts it under the environment the commands will get; the modules of
:data:`PRELOAD` are imported once, before any command's arguments are known (importing them
starts no thread, so forking is safe); and the interpreter is this one (:func:`can_fork` refuses
a command naming another).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import runpy
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
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
_start_lock = threading.Lock()
_started = False


@contextmanager
def _environ(env: Mapping[str, str]):
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def ensure_running(env: Mapping[str, str] | None = None) -> None:
    """Start the fork server (once per process) under ``env``, importing :data:`PRELOAD`: the
    environment its imports read is the one the commands run with. Call it before other threads
    read ``os.environ``: the first call swaps the process's environment while the server starts."""
    global _started
    from multiprocessing import forkserver

    with _start_lock:
        if not _started:
            _CTX.set_forkserver_preload(list(PRELOAD))
            with _environ(env if env is not None else os.environ):
                forkserver.ensure_running()
            _started = True


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
    sys.argv = [module, *argv]  # run_module puts the module's file first
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:  # the module's own exit: sys.exit(main()), argparse, one-line errors
        code = exc.code
    except BaseException:  # noqa: BLE001 - what the interpreter would print, and its exit status
        traceback.print_exc()
        code = 1
    finally:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    sys.exit(code)


class ForkedCommand:
    """A ``python -m`` command forked from the server, with the part of :class:`subprocess.Popen`'s
    interface a caller that waits and stops by process group needs: ``args``, ``pid`` (also its
    process group), ``wait(timeout)``, ``poll()``, ``returncode``."""

    def __init__(self, cmd: Sequence[str], *, log: Path | str, cwd: Path | str, env: Mapping[str, str]):
        self.args = [str(c) for c in cmd]
        if not can_fork(self.args):
            raise ValueError(f"not a `{sys.executable} -m <module>` command: {self.args[:3]} "
                             "(start it with subprocess)")
        ensure_running(env)
        self._proc = _CTX.Process(target=_child, args=(self.args[2], self.args[3:], str(log), str(cwd), dict(env)),
                                  name=" ".join(self.args[2:4]))
        self._proc.start()
        self.pid = self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.exitcode

    def poll(self) -> int | None:
        return self._proc.exitcode

    def wait(self, timeout: float | None = None) -> int:
        self._proc.join(timeout)
        if self._proc.exitcode is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self._proc.exitcode
