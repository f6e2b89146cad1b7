"""The sandbox worker: runs *inside* the sandbox, standard library only, self-contained.

Its source is handed to a fresh interpreter (``python -s -S -B -P -c SOURCE``, with
``PYTHONHASHSEED`` fixed so that answer and reference iterate sets alike) so the sandbox needs
to see nothing but the interpreter's own installation. It stays warm and forks one child per
submission. Importing it has no side effects (the trusted process imports
:func:`clear_dir`); everything process-wide happens in :func:`main`.

Each child, before the answer runs, gets its own SysV IPC namespace (objects it creates die
with it) and a seccomp filter that refuses SysV IPC, ``memfd_create``, new namespaces and
mounts: memory reached that way is outside ``RLIMIT_AS``, so it is not reachable at all.

Why fork from a warm worker: a new interpreter costs ~20 ms, a fork ~1 ms, and the 10 ms per
submission budget leaves no room for the former.

Protocol (one JSON object per line, both directions):
  request  ``{"code", "preamble", "calls": [expr...], "call_timeout", "total_timeout",
             "limits": {"as", "cpu", "fsize", "nofile", "nproc"}, "cap", "scope"?}``
  response ``{"segments": [{"start": k, "lines": [str...], "end": reason}], "clean": bool}``
where each segment is one child's output: its first line is ``READY`` (or an import-error
record), then one record per call starting at call ``k``. The worker does not interpret the
records; the trusted process parses them (plain JSON, tagged values) and decides.
"""

import builtins
import json
import os
import resource
import select
import signal
import sys
import time

READY = '{"t":"ready"}'
MAX_DEPTH = 64
MAX_NODES = 200_000

# Modules an answer is likely to import: loading them once in the worker makes them free in children.
_PRELOAD = ("math", "re", "json", "collections", "itertools", "functools", "datetime", "string",
            "random", "heapq", "bisect", "statistics", "decimal", "fractions", "typing",
            "dataclasses", "copy", "operator", "enum", "calendar", "textwrap", "unicodedata",
            "hashlib", "abc", "array", "time", "cmath", "numbers", "struct", "base64", "threading")

IS_INIT = False  # set in main(): PID namespace init, kill(-1) reaches every other process
_libc = None
_FILTER = None  # the child's seccomp program, built once in main()
_FILTER_REF = None  # ctypes.byref(_FILTER), made in the worker: a child only calls, never builds

_CLONE_NEWIPC, _CLONE_NEWUSER = 0x08000000, 0x10000000
_CLONE_NS_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_CLONE_THREAD = 0x00010000
# Syscalls refused to answers (EPERM), per architecture: SysV shm/msg/sem, memfd_create and
# memfd_secret (memory outside RLIMIT_AS), unshare/setns/mount family (a user namespace of its
# own would let an answer mount a tmpfs), io_uring, userfaultfd, bpf, perf_event_open, keyrings,
# and new processes (fork/vfork, clone without CLONE_THREAD): RLIMIT_AS is per process, so a
# submission that may fork holds pids_max times memory_mb; threads share one address space.
_SECCOMP = {
    "x86_64": (0xC000003E, 56, (29, 30, 31, 67, 64, 65, 66, 68, 69, 70, 71, 220, 272, 308, 165, 166, 155,
                                428, 429, 430, 431, 432, 442, 319, 447, 425, 323, 321, 298, 248, 249, 250,
                                57, 58), True),
    "aarch64": (0xC00000B7, 220, (194, 195, 196, 197, 186, 187, 188, 189, 190, 191, 192, 193, 97, 268, 40, 39,
                                  41, 428, 429, 430, 431, 432, 442, 279, 447, 425, 282, 280, 241, 217, 218, 219),
                False),
}
_CLONE3 = 435


def _build_filter():
    """The seccomp BPF program as a ctypes ``sock_fprog`` (None on an unknown architecture)."""
    import ctypes

    spec = _SECCOMP.get(os.uname().machine)
    if spec is None:
        return None
    audit_arch, clone_nr, denied, has_x32 = spec
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    prog = [(ld, 0, 0, 4), (jeq, 0, "deny", audit_arch), (ld, 0, 0, 0)]  # arch, then syscall nr
    if has_x32:
        prog.append((jge, "deny", 0, 0x40000000))  # the x32 ABI: other numbers, same arch
    prog += [(jeq, "deny", 0, nr) for nr in denied]
    prog.append((jeq, "nosys", 0, _CLONE3))  # flags in memory we cannot inspect: glibc falls back to clone
    prog += [(jeq, 0, "allow", clone_nr), (ld, 0, 0, 16), (jset, "deny", 0, _CLONE_NS_FLAGS),
             (jset, "allow", "deny", _CLONE_THREAD)]
    labels = {"allow": len(prog), "deny": len(prog) + 1, "nosys": len(prog) + 2}
    prog += [(ret, 0, 0, allow), (ret, 0, 0, eperm), (ret, 0, 0, enosys)]

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    def target(i, where):
        return where if type(where) is int else labels[where] - i - 1

    insns = (SockFilter * len(prog))(*[SockFilter(c, target(i, t), target(i, f), k)
                                       for i, (c, t, f, k) in enumerate(prog)])
    fprog = SockFprog(len(prog), insns)
    fprog._keep = insns  # the program must outlive this frame
    return fprog


def _new_ipc_namespace():
    """A SysV IPC namespace of the child's own: whatever it creates dies with it."""
    if _libc is None:
        return False
    if _libc.unshare(_CLONE_NEWIPC) == 0:  # we hold CAP_SYS_ADMIN (rlimits-only as root)
        return True
    # No capabilities (bubblewrap drops them): a user namespace of our own owns the new IPC one.
    return _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWIPC) == 0


def _seccomp():
    """Install the filter (no_new_privs first, as an unprivileged process must)."""
    if _libc is None or _FILTER_REF is None:
        return False
    if _libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return False
    return _libc.prctl(22, 2, _FILTER_REF, 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


class Unencodable(Exception):
    pass


def encode(value, depth=0, budget=None):
    """Tagged plain data. Exact types only: no method of an answer-defined class is called."""
    if budget is None:
        budget = [MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise Unencodable("value too large or too deep")
    t = type(value)
    if value is None:
        return ["n"]
    if t is bool:
        return ["b", 1 if value is True else 0]
    if t is int:
        return ["i", int.__format__(value, "x")]
    if t is float:
        return ["f", float.hex(value)]
    if t is str:
        return ["s", str.__str__(value)]
    if t is bytes:
        return ["y", bytes.hex(value)]
    if t is list:
        return ["l", [encode(v, depth + 1, budget) for v in list.copy(value)]]
    if t is tuple:
        return ["t", [encode(v, depth + 1, budget) for v in tuple.__iter__(value)]]
    if t is dict:
        return ["d", [[encode(k, depth + 1, budget), encode(v, depth + 1, budget)]
                      for k, v in list(dict.items(value))]]
    if t is set:
        return ["S", [encode(v, depth + 1, budget) for v in list(set.__iter__(value))]]
    if t is frozenset:
        return ["F", [encode(v, depth + 1, budget) for v in list(frozenset.__iter__(value))]]
    raise Unencodable("unsupported result type")


def _type_name(exc):
    """The raised type's name, read through ``type``'s own descriptors (no answer code runs)."""
    try:
        t = type(exc)
        name = type.__dict__["__qualname__"].__get__(t)
        mod = type.__dict__["__module__"].__get__(t)
        if type(name) is not str:
            return "<unknown>"
        if type(mod) is str and mod not in ("builtins", "solution", "__main__", ""):
            return mod + "." + name
        return name
    except BaseException:  # noqa: BLE001
        return "<unknown>"


def _limit(which, value):
    if value is None:
        return
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        try:  # cannot raise the hard limit: lower the soft one only
            _, hard = resource.getrlimit(which)
            resource.setrlimit(which, (min(value, hard) if hard != resource.RLIM_INFINITY else value, hard))
        except (ValueError, OSError):
            pass


def child_main(w, workdir, req, start):
    """Runs in the forked child: isolate, then execute the answer and the calls."""
    os.setsid()
    for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGXFSZ):
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    # Move the result pipe to fd 3 and close everything else we inherited.
    if w != 3:
        os.dup2(w, 3)
        w = 3
    os.closerange(4, 1 << 20)
    os.chdir(workdir)
    os.environ.clear()
    os.umask(0o077)
    _new_ipc_namespace()  # before dropping privileges: may need them
    lim = req.get("limits", {})
    _limit(resource.RLIMIT_CORE, 0)
    _limit(resource.RLIMIT_AS, lim.get("as"))
    _limit(resource.RLIMIT_CPU, lim.get("cpu"))
    _limit(resource.RLIMIT_FSIZE, lim.get("fsize"))
    _limit(resource.RLIMIT_NOFILE, lim.get("nofile"))
    _limit(resource.RLIMIT_NPROC, lim.get("nproc"))
    write = os.write
    dumps = json.dumps

    def emit(obj):
        data = (dumps(obj, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")
        view = memoryview(data)
        while view:
            view = view[write(w, view):]

    drop = req.get("drop_uid")
    if drop is not None:
        # Without a PID/user namespace a root child could kill(-1) the whole machine: run the
        # answer as an unprivileged user instead (this also makes RLIMIT_NPROC enforceable).
        try:
            os.setgroups([])
            os.setresgid(drop, drop, drop)
            os.setresuid(drop, drop, drop)
        except OSError:
            pass
        if os.getuid() == 0 or os.geteuid() == 0 or os.getgid() == 0:
            emit({"t": "import_error", "x": "SandboxError", "m": "could not drop root privileges"})
            os._exit(0)
    _seccomp()

    sys.argv = ["solution"]
    ns = {"__name__": "solution", "__builtins__": builtins}
    # scope "split" (the paper release's semantics, colbench_gym/grading/release.py): the code's
    # names go to a locals dict its functions cannot see, as exec() inside a function does there.
    loc = {} if req.get("scope") == "split" else ns
    try:
        if req.get("preamble"):
            exec(compile(req["preamble"], "<preamble>", "exec"), ns)  # noqa: S102 - sandboxed child
        exec(compile(req["code"], "<answer>", "exec"), ns, loc)  # noqa: S102 - sandboxed child
    except BaseException as exc:  # noqa: BLE001 - everything is a result here
        try:
            msg = str.__str__(exc.args[0]) if exc.args and type(exc.args[0]) is str else ""
        except BaseException:  # noqa: BLE001
            msg = ""
        emit({"t": "import_error", "x": _type_name(exc), "m": msg[:300]})
        os._exit(0)
    write(w, (READY + "\n").encode())
    calls = req["calls"]
    for i in range(start, len(calls)):
        try:
            code = compile(calls[i].strip(), "<test>", "eval")
            value = eval(code, ns, loc)  # noqa: S307 - sandboxed child; literals are re-built per call
            try:
                rec = {"t": "r", "i": i, "v": encode(value)}
            except Unencodable as exc:
                rec = {"t": "u", "i": i, "m": str(exc)}
            except RecursionError:
                rec = {"t": "u", "i": i, "m": "value too deep"}
        except BaseException as exc:  # noqa: BLE001 - an exception is a result
            rec = {"t": "e", "i": i, "x": _type_name(exc)}
        emit(rec)
    os._exit(0)


def _probe_confinement():
    """Fork a throw-away child and report what confinement it gets (for ``sandbox-info``)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            ipc = _new_ipc_namespace()
            sec = _seccomp()
            os.write(w, (("1" if ipc else "0") + ("1" if sec else "0")).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = os.read(r, 2).decode("ascii", "replace")
    os.close(r)
    os.waitpid(pid, 0)
    return {"ipc_namespace": data[:1] == "1", "seccomp": data[1:2] == "1"}


def kill_all(child):
    """Leave no process behind: in a PID namespace everything but us; else the child's tree."""
    if IS_INIT:
        # kill(-1) from a namespace's init reaches every other process in it, and a fork racing
        # with it is cancelled by the kernel: blocking waits then return promptly.
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(child, 0)
    except ChildProcessError:
        pass
    while True:  # as a subreaper, orphaned descendants come back to us: kill them too
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            _kill_children()
            time.sleep(0.001)


def _kill_children():
    me = str(os.getpid())
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return
    for p in pids:
        try:
            with open("/proc/" + p + "/stat", "rb") as fh:
                stat = fh.read().decode("ascii", "replace")
            ppid = stat.rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            continue
        if ppid == me:
            try:
                os.kill(int(p), signal.SIGKILL)
            except OSError:
                pass
            try:
                os.killpg(int(p), signal.SIGKILL)
            except OSError:
                pass


def run_child(req, start, t_end, base, cap):
    """Fork one child for calls[start:], collect its lines until done, deadline or cap."""
    n = len(req["calls"])
    want = 1 + (n - start)
    call_timeout = float(req["call_timeout"])
    workdir = os.path.join(base, "w" + str(start))
    os.mkdir(workdir, 0o700)
    if req.get("drop_uid") is not None:
        os.chown(workdir, req["drop_uid"], req["drop_uid"])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            child_main(w, workdir, req, start)
        finally:
            os._exit(0)
    os.close(w)
    lines, buf, total, end = [], bytearray(), 0, "eof"
    deadline = min(time.monotonic() + call_timeout, t_end)
    try:
        while len(lines) < want:
            left = deadline - time.monotonic()
            if left <= 0:
                end = "timeout"
                break
            ready, _, _ = select.select([r], [], [], left)
            if not ready:
                end = "timeout"
                break
            data = os.read(r, 1 << 16)
            if not data:
                end = "eof"
                break
            total += len(data)
            if total > cap:
                end = "oversize"
                break
            # Linear however the child splits its writes: grow in place, search only new bytes.
            scan = len(buf)
            buf += data
            while len(lines) < want:
                nl = buf.find(b"\n", scan)
                if nl < 0:
                    break
                lines.append(buf[:nl].decode("utf-8", "replace"))
                del buf[:nl + 1]
                scan = 0
                deadline = min(time.monotonic() + call_timeout, t_end)
        else:
            end = "done"
    finally:
        kill_all(pid)
        os.close(r)
    return {"start": start, "lines": lines, "end": end, "bytes": total}


def handle(req, base):
    n = len(req["calls"])
    t_end = time.monotonic() + float(req["total_timeout"])
    segments, start = [], 0
    cap = int(req.get("cap", 4 << 20))  # for the whole submission, over all its children
    while True:
        seg = run_child(req, start, t_end, base, cap)
        cap -= seg.pop("bytes")
        segments.append(seg)
        got = len(seg["lines"])
        ready = got >= 1 and seg["lines"][0] == READY
        done = start + max(got - 1, 0)
        # A call that hung or killed its process loses only itself: go on with the next one.
        if ready and seg["end"] in ("timeout", "eof") and done < n - 1 and time.monotonic() < t_end:
            start = done + 1
            continue
        return segments


def clear_dir(root):
    """Remove everything inside ``root``, however deep or unreadable; False if something stayed.

    Iterative and relative to directory descriptors: depth costs neither Python recursion
    (``os.walk``/``shutil.rmtree`` hit RecursionError near depth 1000) nor path length
    (PATH_MAX), and at most two descriptors are open at a time. Run only when every process
    that could write there is dead, so nothing moves under us.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags)
    except OSError:
        return False
    names = []  # the path from root down to fd, as names
    try:
        while True:
            sub = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if sub is not None:
                try:  # an answer may have made its directories unreadable
                    os.chmod(sub, 0o700, dir_fd=fd)
                except OSError:
                    pass
                child = os.open(sub, flags, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            if not names:
                return True
            parent = os.open("..", flags, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    except OSError:
        return False
    finally:
        os.close(fd)


def wipe(root):
    """Empty ``root`` (our private tmpfs or temp dir); False if something could not go."""
    return clear_dir(root)


def main():
    global IS_INIT, _libc, _FILTER, _FILTER_REF
    for name in _PRELOAD:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a missing optional module only costs speed
            pass
    IS_INIT = os.getpid() == 1
    try:  # no ptrace / no /proc/PID/mem of the worker by its children
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
        if not IS_INIT:
            _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come back to us
        _FILTER = _build_filter()
        _FILTER_REF = ctypes.byref(_FILTER) if _FILTER is not None else None
        _libc.unshare  # noqa: B018 - resolve the symbol here: each child would pay the lookup (and its page faults)
    except Exception:  # noqa: BLE001
        pass
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # Our life is governed by stdin EOF and SIGKILL from the grader; a stray Ctrl-C (SIGINT)
    # must not kill us halfway through a submission. Children restore the default.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    root = os.environ.get("TMPDIR") or "/tmp"
    counter = 0
    while True:
        line = stdin.readline()
        if not line:
            return
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "ping":
            stdout.write((json.dumps({"pong": os.getpid(), "init": IS_INIT, "confined": _probe_confinement(),
                                      "hash_seed_fixed": not sys.flags.hash_randomization}) + "\n").encode())
            stdout.flush()
            continue
        counter += 1
        base = os.path.join(root, "s" + str(counter))
        os.mkdir(base, 0o711 if req.get("drop_uid") is not None else 0o700)
        os.chmod(base, 0o711 if req.get("drop_uid") is not None else 0o700)  # umask-proof
        segments = handle(req, base)
        clean = wipe(root)  # every file the answer wrote anywhere it could goes away
        resp = {"id": req.get("id"), "segments": segments, "clean": clean}
        stdout.write((json.dumps(resp) + "\n").encode())
        stdout.flush()
        if not clean:
            return


if __name__ == "__main__":
    main()
