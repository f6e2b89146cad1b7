"""Exceptions that the *sandbox* causes, never the task: a reference raising one has no expected result.

Why: the reference runs in the same sandbox as the answers (only the standard library, an address
space limit, a read-only empty file system, stdin at ``/dev/null``, no network, no new
processes). A reference that imports numpy inside its body, builds a large buffer, opens a file
or reads stdin raises under grading only because of *where* it runs; had that exception been
taken as the expected result, an answer that just raises it would pass (3/3, 2/2, 2/2 measured
before issue 24). So a test whose reference raised one of these is **unpassable**, like a
reference timeout: no answer passes it, and it is counted and reported (``GradeResult.unpassable``,
``info["tests_unpassable"]``, ``colbench evaluate backend``, ``colbench tasks audit``).

Which exceptions (by the name the sandbox reports: builtins bare, others ``module.Qualname``):

* ``ImportError`` and its subclasses: only the standard library is importable;
* ``MemoryError``: the address-space limit (``memory_mb``);
* ``RecursionError``: the interpreter's recursion limit, a resource limit rather than a
  behaviour of the task (an iterative answer would return the value);
* ``EOFError``: stdin is ``/dev/null`` (``input()``);
* ``OSError`` and every subclass: files (missing, read-only, permissions), the network (refused,
  unreachable, name resolution, timeouts), processes (refused by seccomp and the pids limit) —
  the builtin ones and the standard library's named ones listed below.

The price: a reference that raises one of these *on purpose* (``raise FileNotFoundError(...)``
for a missing key) loses that test too; ``colbench tasks audit`` lists every such test, so a task
author sees it. Exceptions the task raises on purpose otherwise (``ValueError``, ``KeyError``,
custom classes ...) stay results: an answer must raise the same type.
"""

from __future__ import annotations

import builtins

from colbench_gym.grading.wire import Outcome

#: The builtin exception families that only the environment raises (see the module docstring).
_BUILTIN_ROOTS = (OSError, ImportError, MemoryError, RecursionError, EOFError)

#: Standard-library subclasses of those roots, as the sandbox names them (``module.Qualname``).
#: Aliases of builtins (``socket.timeout``, ``select.error``, ``IOError`` ...) report the builtin's name.
_STDLIB_NAMES = frozenset({
    "socket.gaierror", "socket.herror",
    "urllib.error.URLError", "urllib.error.HTTPError", "urllib.error.ContentTooShortError",
    "http.client.RemoteDisconnected",
    "ssl.SSLError", "ssl.SSLZeroReturnError", "ssl.SSLWantReadError", "ssl.SSLWantWriteError",
    "ssl.SSLSyscallError", "ssl.SSLEOFError", "ssl.SSLCertVerificationError",
    "shutil.Error", "shutil.SameFileError", "shutil.SpecialFileError", "shutil.ExecError", "shutil.ReadError",
    "shutil.RegistryError",
    "io.UnsupportedOperation",
    "zipimport.ZipImportError",
    "smtplib.SMTPException", "ftplib.Error",
    "_ssl.SSLError", "_socket.gaierror", "_socket.herror",
})

#: Every exception name that makes a reference's outcome environmental.
ENVIRONMENTAL_EXCEPTIONS: frozenset[str] = frozenset(
    {name for name, value in vars(builtins).items()
     if isinstance(value, type) and issubclass(value, _BUILTIN_ROOTS)}
    | {value.__name__ for value in vars(builtins).values()
       if isinstance(value, type) and issubclass(value, _BUILTIN_ROOTS)}
    | _STDLIB_NAMES
)


def environmental_exception(name: str) -> bool:
    """Whether an exception of this (sandbox-reported) type name comes from the sandbox, not the task."""
    return name in ENVIRONMENTAL_EXCEPTIONS


def unpassable_reason(expected: Outcome) -> str | None:
    """Why no answer can pass a test whose reference gave ``expected``, or None when one can."""
    if expected.kind == "missing":
        why = str(expected.value)
        return why if why.startswith("the reference") else f"the reference gives no result ({why})"
    if expected.kind == "raise" and environmental_exception(expected.value):
        return (f"the reference raised {expected.value}, an error of the grading environment (sandbox: standard "
                "library only, memory limit, no files, stdin or network), not a result of the task")
    return None


def reference_failed_reason(error: str) -> str:
    """Why every test is unpassable when the reference failed before any test ran (``error`` is
    the sandbox's ``"Type: message"``, e.g. a top-level ``import numpy``)."""
    name = error.split(":", 1)[0].strip()
    text = f"the reference failed before any test ran: {error}"
    if environmental_exception(name):
        text += " (an error of the grading environment, not a result of the task)"
    return text


def as_expected(expected: Outcome) -> Outcome:
    """The outcome an answer is compared with: an environmental exception becomes a missing result."""
    if expected.kind == "raise" and environmental_exception(expected.value):
        return Outcome.missing(unpassable_reason(expected) or "")
    return expected
