"""pytest drives the hidden tests, warm and in the trusted process.

Why warm: a cold ``pytest`` process costs ~0.3 s, thirty times the per-submission budget. We
build one pytest ``Config`` + ``Session`` once (plugins that touch process-wide state — output
capture, faulthandler, warnings, logging, unraisable/thread-exception hooks, assertion
rewriting, cache, entry-point plugins — are disabled so an embedding program, or an outer
pytest run, is not disturbed) and then, per submission, create one :class:`VerdictItem` per
hidden test and push each through pytest's own ``pytest_runtest_protocol`` hook. Outcomes are
taken from the ``TestReport`` objects that pytest hands to our plugin's
``pytest_runtest_logreport`` — never from our own return values — and every expected test id
must have a passing ``call`` report.

The items only compare data that the sandbox sent back; the agent's code is never imported
here. Not thread-safe by itself: :class:`PytestDriver` serialises runs with a lock.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

# Plugins whose configure step changes process-wide state, or that we never use.
_DISABLED = (
    "cacheprovider", "capture", "faulthandler", "warnings", "logging", "junitxml", "pastebin",
    "doctest", "stepwise", "unraisableexception", "threadexception", "debugging", "terminal",
    "terminalprogress", "setuponly", "setupplan", "tmpdir", "monkeypatch", "recwarn", "unittest",
    "legacypath", "subtests", "python", "skipping", "reports", "assertion",
)

_CURRENT_TEST_VAR = "PYTEST_CURRENT_TEST"
_SYS_LAST = ("last_type", "last_value", "last_traceback", "last_exc")


class VerdictMismatch(AssertionError):
    """Raised by a :class:`VerdictItem` whose answer differs from the reference."""


@dataclass(frozen=True)
class Case:
    """One hidden test: a name and a zero-argument check returning ``(passed, reason)``."""

    name: str
    check: Callable[[], tuple[bool, str]]


class VerdictItem(pytest.Item):
    """A pytest item whose test body is the trusted comparison of one call's results."""

    def __init__(self, *, case: Case, **kwargs) -> None:
        super().__init__(**kwargs)
        self.case = case

    @property
    def ihook(self):  # noqa: ANN201 - no conftest can apply to our items: skip the per-path lookup
        return self.config.hook

    def runtest(self) -> None:
        ok, why = self.case.check()
        if ok is not True:
            raise VerdictMismatch(why)

    def repr_failure(self, excinfo, style=None):  # noqa: ANN001 - pytest signature
        # A one-line reason: formatting a traceback per failing test would cost milliseconds. A
        # verdict's reason is shown as it is (its class name says nothing a reader needs).
        if excinfo.type is VerdictMismatch:
            return str(excinfo.value)
        return f"{excinfo.type.__name__}: {excinfo.value}"

    def reportinfo(self):
        return self.path, None, self.name


class _ReportPlugin:
    """Collects pytest's reports of the items of the current run."""

    def __init__(self) -> None:
        self.calls: dict[str, bool] = {}
        self.failed: set[str] = set()
        self.reasons: dict[str, str] = {}

    def reset(self) -> None:
        self.calls, self.failed, self.reasons = {}, set(), {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report) -> None:  # noqa: ANN001 - pytest hook
        if report.failed:
            self.failed.add(report.nodeid)
            self.reasons.setdefault(report.nodeid, str(report.longrepr))
        if report.when == "call":
            self.calls[report.nodeid] = bool(report.passed)


class PytestDriver:
    """One warm pytest session; :meth:`run` returns ``{test name: passed}`` for given cases."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tmp = tempfile.TemporaryDirectory(prefix="colbench-pytest-")
        ini = os.path.join(self._tmp.name, "pytest.ini")
        with open(ini, "w", encoding="utf-8") as fh:
            fh.write("[pytest]\naddopts =\n")
        args = ["-c", ini, "--rootdir", self._tmp.name,
                "--disable-plugin-autoload", "--noconftest"]
        for name in _DISABLED:
            args += ["-p", f"no:{name}"]
        self._plugin = _ReportPlugin()
        from _pytest.config import _prepareconfig  # noqa: PLC0415 - pytest's own entry used by pytest.main

        self.config = _prepareconfig(args, plugins=[self._plugin])
        self.config._do_configure()
        self.session = pytest.Session.from_config(self.config)
        self.config.hook.pytest_sessionstart(session=self.session)
        self._closed = False

    def run(self, cases: Sequence[Case], prefix: str = "") -> tuple[dict[str, bool], dict[str, str]]:
        """Run one item per case through pytest; a case passes only on pytest's own say-so."""
        with self._lock:
            if self._closed:
                raise RuntimeError("PytestDriver is closed")
            self._plugin.reset()
            items = [VerdictItem.from_parent(self.session, name=f"{prefix}{c.name}", case=c) for c in cases]
            hook = self.config.hook
            # pytest's runner publishes the current test in os.environ and sys.last_*; an
            # embedding program (or an outer pytest run) must not see ours.
            saved_env = os.environ.get(_CURRENT_TEST_VAR)
            saved_last = {k: getattr(sys, k) for k in _SYS_LAST if hasattr(sys, k)}
            try:
                for i, item in enumerate(items):
                    nxt = items[i + 1] if i + 1 < len(items) else None
                    hook.pytest_runtest_protocol(item=item, nextitem=nxt)
            finally:
                if saved_env is None:
                    os.environ.pop(_CURRENT_TEST_VAR, None)
                else:
                    os.environ[_CURRENT_TEST_VAR] = saved_env
                for k in _SYS_LAST:
                    if k in saved_last:
                        setattr(sys, k, saved_last[k])
                    elif hasattr(sys, k):
                        delattr(sys, k)
            out: dict[str, bool] = {}
            reasons: dict[str, str] = {}
            for case, item in zip(cases, items):
                nodeid = item.nodeid
                # Every expected id must have a passing call report and no failed phase.
                out[case.name] = self._plugin.calls.get(nodeid) is True and nodeid not in self._plugin.failed
                if not out[case.name]:
                    reasons[case.name] = self._plugin.reasons.get(nodeid, "no report")
            return out, reasons

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self.config.hook.pytest_sessionfinish(session=self.session, exitstatus=0)
            finally:
                self.config._ensure_unconfigure()
                self._tmp.cleanup()
