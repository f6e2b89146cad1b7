"""BackendGrader: sandboxed execution, trusted comparison, pytest-driven verdicts.

Flow of :meth:`BackendGrader.grade`:
1. the reference outputs of the task are looked up (memory, then disk cache) or computed once
   by a *separate* sandboxed worker that never runs agent code;
2. a pooled sandboxed worker forks a child that executes the answer and every test call, and
   returns plain data;
3. here, in the trusted process, the data are decoded and validated, and a warm pytest session
   runs one item per hidden test that compares answer and reference outputs.
"""

from __future__ import annotations

import ast
import atexit
import functools
import json
import logging
import math
import os
import queue
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.grading.compare import ABS_TOL, REL_TOL, ComparisonRules, outcomes_match
from colbench_gym.grading.environmental import as_expected, reference_failed_reason, unpassable_reason
from colbench_gym.grading.pytest_driver import Case, PytestDriver
from colbench_gym.grading.sandbox import Isolation, Worker, WorkerFailed, probe_isolation
from colbench_gym.grading.wire import Outcome, WireError, decode, encode, parse_segments, safe_text
from colbench_gym.jsonl import write_text_atomic
from colbench_gym.tasks import BackendTask
from colbench_gym.tasks.accounting import INTERNAL_GRADING_ERROR

_log = logging.getLogger(__name__)

#: Bumped whenever what the sandbox computes for a reference changes (invalidates disk caches).
#: v2: outputs keyed by test identity (name + call), not by position.
CACHE_VERSION = 2

#: A test's identity: its name and its call expression. Reference outputs are stored under it,
#: never by position: the task id hashes the tests as a key-sorted mapping, so two records of
#: one task may list their tests in different orders.
TestKey = tuple[str, str]

#: Tasks whose reference outputs stay in memory (least recently used go; the disk cache stays).
REF_CACHE_TASKS = 8192
#: Runs of a task's reference, at most, while its results are incomplete for a reason that may
#: pass (a call timed out on a loaded machine, a sandbox crashed), before any answer is scored
#: against them: one timeout under load made that test unpassable (failed whatever the answer)
#: in that score and in every later one of the process.
REF_ATTEMPTS = 3
#: Why a reference outcome is missing when that is a property of the task, the same in every run.
_SETTLED_MISSING = ("the reference failed before any test ran", "the test call is not a Python expression")
_REF_LOCK_STRIPES = 64


@dataclass
class GradeResult:
    """Verdict on one answer: per hidden test, passed or not."""

    passed: int
    total: int
    per_test: dict[str, bool] = field(default_factory=dict)
    error: str | None = None
    reasons: dict[str, str] = field(default_factory=dict)  # why each failed test failed
    #: Tests no answer can pass, with why: the reference gave no usable result (timeout, crash,
    #: not plain data, an exception of the sandbox such as ModuleNotFoundError), or the test
    #: call itself is broken. Counted in ``total``; reported so that evaluators can see them.
    unpassable: dict[str, str] = field(default_factory=dict)
    #: The grader's own verdict that this score is *not* the answer's: ``"grading_error"`` when
    #: the trusted process failed (its catch-all), else None. Set only here, on the host side,
    #: from what the host itself observed; never from text, names or exit codes the sandboxed
    #: code produced (every failure of the answer's code, whatever it raised or wrote, leaves it
    #: None and scores 0). Read it through
    #: :func:`colbench_gym.tasks.accounting.grading_failure`, the one rule every consumer uses.
    end_reason: str | None = None

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0

    @property
    def success(self) -> bool:
        return self.total > 0 and self.passed == self.total


@functools.lru_cache(maxsize=4096)
def _import_preamble_cached(reference: str, calls: tuple[str, ...]) -> str:
    return _import_preamble(reference, list(calls))


def _import_preamble(reference: str, calls: list[str]) -> str:
    """Top-level imports of the reference that the *call expressions* need (e.g. ``datetime``).

    Test calls such as ``f(datetime.date(2024, 1, 1))`` are evaluated in the answer's
    namespace; an answer that did not import ``datetime`` itself must not fail for that.
    Only import statements are taken from the reference, and only for names the calls use.
    """
    try:
        tree = ast.parse(reference)
    except _UNPARSABLE:
        return ""
    used: set[str] = set()
    for call in calls:
        try:
            used |= {n.id for n in ast.walk(ast.parse(call, mode="eval")) if isinstance(n, ast.Name)}
        except _UNPARSABLE:
            continue
    lines = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
            if names & used:
                lines.append(ast.unparse(node))
    return "\n".join(lines)


#: What ``ast.parse`` raises on text it cannot take: crafted nesting gives RecursionError or
#: MemoryError (not SyntaxError), NUL bytes ValueError.
_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)
_TOO_DEEP = "nested too deeply to parse"


def _parse_problem(source: str, mode: str) -> str | None:
    """None if ``source`` parses; else why not, in a few words."""
    try:
        ast.parse(source.strip() if mode == "eval" else source, mode=mode)
        return None
    except (RecursionError, MemoryError):
        return _TOO_DEEP
    except (SyntaxError, ValueError):
        return "not a Python expression" if mode == "eval" else "not valid Python"


@functools.lru_cache(maxsize=4096)
def _task_problems(reference: str, tests: tuple[TestKey, ...]) -> tuple[str | None, dict[str, str]]:
    """Defects of the task material itself: (why the reference is unusable, {test: why unpassable}).

    Crafted material (deeply nested ground truth or test calls) makes ``ast.parse`` raise
    RecursionError/MemoryError; that must fail *this task* with a clear message, never abort
    a run. A reference that is merely invalid Python is left to the sandbox (its tests then
    have no reference result), as before.
    """
    ref_problem = _parse_problem(reference, "exec")
    ref_error = f"task error: the reference is {ref_problem}" if ref_problem == _TOO_DEEP else None
    calls: dict[str, str] = {}
    for name, call in tests:
        problem = _parse_problem(call, "eval")
        if problem:
            calls[name] = f"the test call is {problem}"
    return ref_error, calls


def _is_expression(call: str) -> bool:
    return _parse_problem(call, "eval") is None


class _Pool:
    """A fixed set of workers handed out one request at a time."""

    def __init__(self, make: Any, size: int) -> None:
        self.workers = [make() for _ in range(size)]
        self._free: queue.Queue[Worker] = queue.Queue()
        for w in self.workers:
            self._free.put(w)

    def acquire(self) -> Worker:
        return self._free.get()

    def release(self, w: Worker) -> None:
        self._free.put(w)

    def close(self) -> None:
        for w in self.workers:
            w.close()


class BackendGrader:
    """Grades backend answers in a sandbox; thread-safe (a pool of ``workers`` sandboxes).

    Args:
        call_timeout: wall-clock seconds for the answer's module code and for each test call.
            A call that exceeds it fails alone; the next calls run in a fresh child.
        total_timeout: wall-clock seconds for a whole submission.
        memory_mb: address-space limit of each child (``RLIMIT_AS``).
        isolation: ``"auto"`` (strongest available, warns on fallback), ``"namespaces"``
            (bubblewrap; raise if unavailable) or ``"rlimits-only"``.
        workers: sandboxed workers for answers (concurrent ``grade`` calls).
        cache_dir: where reference outputs are cached on disk (``None``: memory only).
        rel_tol, abs_tol: float tolerance of the comparison.
        output_cap_bytes: most bytes a submission may send back; more is a failure.
        pids_max: processes one sandbox may hold (pids cgroup), including its worker.
    """

    def __init__(self, *, call_timeout: float = 2.0, total_timeout: float = 10.0, memory_mb: int = 512,
                 isolation: str = "auto", workers: int = 1, cache_dir: str | os.PathLike[str] | None = None,
                 rel_tol: float = REL_TOL, abs_tol: float = ABS_TOL, output_cap_bytes: int = 4 << 20,
                 pids_max: int = 16, file_size_mb: int = 8) -> None:
        if call_timeout <= 0 or total_timeout <= 0:
            raise ValueError("call_timeout and total_timeout must be positive")
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.call_timeout = float(call_timeout)
        self.total_timeout = float(total_timeout)
        self.memory_mb = int(memory_mb)
        self.rel_tol, self.abs_tol = rel_tol, abs_tol
        self.rules = ComparisonRules(rel_tol=rel_tol, abs_tol=abs_tol)
        self.output_cap = int(output_cap_bytes)
        self.file_size_mb = int(file_size_mb)
        self.isolation: Isolation = probe_isolation(isolation)
        _log.info("backend grader sandbox:\n%s", self.isolation.describe())
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._options = dict(call_timeout=call_timeout, total_timeout=total_timeout, memory_mb=memory_mb,
                             isolation=isolation, workers=workers, cache_dir=cache_dir, rel_tol=rel_tol,
                             abs_tol=abs_tol, output_cap_bytes=output_cap_bytes, pids_max=pids_max,
                             file_size_mb=file_size_mb)
        # Bounded (LRU): an RL run over generated tasks would otherwise grow it without end.
        self._refs: OrderedDict[str, dict[TestKey, Outcome]] = OrderedDict()
        self._refs_lock = threading.Lock()
        self._closed = False
        self._start_runtime()

    def _start_runtime(self) -> None:
        """Workers, locks and the pytest session: everything a forked process must not share."""
        pids_max = self._options["pids_max"]
        self._pid = os.getpid()
        self._pool = _Pool(lambda: Worker(self.isolation, pids_max=pids_max), self._options["workers"])
        # References run in their own sandbox: an answer can never observe them being computed.
        self._ref_pool = _Pool(lambda: Worker(self.isolation, pids_max=pids_max), self._options["workers"])
        # Striped: one computation per task, different tasks mostly in parallel, bounded memory.
        self._ref_locks = [threading.Lock() for _ in range(_REF_LOCK_STRIPES)]
        self._driver: PytestDriver | None = None
        self._driver_lock = threading.Lock()

    def _check_fork(self) -> None:
        """After ``fork`` (e.g. a multiprocessing vector env) the child gets its own sandboxes.

        The parent's workers, pipes and locks are left alone: they are the parent's.
        """
        if self._pid != os.getpid():
            for w in [*self._pool.workers, *self._ref_pool.workers]:
                w.disown()
            self._start_runtime()

    def __reduce__(self):
        # Picklable (spawn-based multiprocessing) and deep-copyable: the copy is rebuilt from the
        # options, as the *same class* (a ReleaseGrader stays one), and starts its own sandboxes.
        return (_rebuild, (type(self), self._options))

    # ------------------------------------------------------------------ public API
    def grade(self, code: str, task: BackendTask | Mapping[str, Any]) -> GradeResult:
        """Grade ``code`` (Python source) against ``task``'s hidden tests.

        Never raises on bad code, on anything the sandbox sends back, or on crafted task
        material: those are failed tests with ``error`` set. Any internal error becomes this
        submission's error record (all tests failed), so one submission cannot stop a run.
        Raises only for a closed grader or a task record of the wrong shape (caller errors).
        """
        if self._closed:
            raise RuntimeError("this BackendGrader is closed")
        self._check_fork()
        if not isinstance(task, BackendTask):
            task = BackendTask.from_record(task)
        names = list(task.test_cases)
        try:
            return self._grade(code if isinstance(code, str) else "", task, names)
        except Exception as exc:  # noqa: BLE001 - the catch-all the reward channel needs
            # Only the trusted process gets here: everything the sandbox sends is decoded without
            # raising (_execute), so this is the infrastructure's failure, and the verdict says so
            # in end_reason (the text below is for people: its type name only, the details go to
            # the log, so no message can carry task material into info or records).
            _log.exception("internal error while grading a submission")
            why = f"{INTERNAL_GRADING_ERROR}: {type(exc).__name__} (details in the grader's log)"
            return GradeResult(0, len(names), {n: False for n in names}, why, {n: why for n in names},
                               end_reason="grading_error")

    def _grade(self, code: str, task: BackendTask, names: list[str]) -> GradeResult:
        calls = [task.test_cases[n] for n in names]
        ref_error, bad_calls = _task_problems(task.ground_truth, tuple(zip(names, calls)))
        if ref_error is not None:  # nothing can be compared: do not even run the answer
            return GradeResult(0, len(names), {n: False for n in names}, ref_error, {n: ref_error for n in names},
                               {n: ref_error for n in names})
        refs = self._reference_map(task)
        raw = [refs[(n, c)] for n, c in zip(names, calls)]
        unpassable = _unpassable(names, raw, bad_calls)
        # An exception the sandbox caused in the reference is no expected result (environmental.py).
        expected = [as_expected(o) for o in raw]
        actual, error = self._execute(self._pool, code, calls, _import_preamble_cached(task.ground_truth, tuple(calls)))
        if bad_calls:
            first = next(iter(bad_calls))
            error = f"task error: test {safe_text(first, 80)!r}: {bad_calls[first]}"
        cases = [Case(name, _checker(exp, act, self.rules)) for name, exp, act in zip(names, expected, actual)]
        per_test, reasons = self._pytest().run(cases)
        passed = sum(per_test[n] is True for n in names)
        return GradeResult(passed, len(names), {n: per_test[n] is True for n in names}, error,
                           {n: safe_text(r) for n, r in reasons.items()}, unpassable)

    def unpassable_tests(self, task: BackendTask | Mapping[str, Any]) -> dict[str, str]:
        """The tests of ``task`` that no answer can pass under this grader, with why (runs the
        reference once, cached): what ``colbench tasks audit`` lists."""
        if not isinstance(task, BackendTask):
            task = BackendTask.from_record(task)
        names, calls = list(task.test_cases), list(task.test_cases.values())
        ref_error, bad_calls = _task_problems(task.ground_truth, tuple(zip(names, calls)))
        if ref_error is not None:
            return {n: ref_error for n in names}
        refs = self._reference_map(task)
        return _unpassable(names, [refs[(n, c)] for n, c in zip(names, calls)], bad_calls)

    def reference_outputs(self, task: BackendTask) -> list[Outcome]:
        """The reference's outcome per test call, in ``task.test_cases`` order (computed once, cached)."""
        refs = self._reference_map(task)
        return [refs[(n, c)] for n, c in task.test_cases.items()]

    def _reference_map(self, task: BackendTask) -> dict[TestKey, Outcome]:
        """Reference outcomes keyed by test identity (name, call): memory, disk, or the sandbox."""
        self._check_fork()
        key = task.task_id
        wanted = list(task.test_cases.items())
        cached = self._cached_refs(key)
        if cached is not None and all(t in cached for t in wanted):
            return cached
        with self._ref_locks[hash(key) % _REF_LOCK_STRIPES]:
            cached = self._cached_refs(key)
            if cached is None or not all(t in cached for t in wanted):
                cached = self._load_disk(key, wanted)
            if cached is None:
                cached = self._run_reference(task, wanted)
            with self._refs_lock:
                self._refs[key] = cached
                self._refs.move_to_end(key)
                while len(self._refs) > REF_CACHE_TASKS:
                    self._refs.popitem(last=False)
            return cached

    def _run_reference(self, task: BackendTask, wanted: list[TestKey]) -> dict[TestKey, Outcome]:
        """The reference's outcomes, run in its sandbox until they are settled (every call gave a
        value or raised, or is missing for a reason of the task itself) or REF_ATTEMPTS runs were
        made, a later run filling the calls an earlier one missed (references are deterministic)."""
        calls = [c for _, c in wanted]
        outs: list[Outcome] = []
        for _ in range(REF_ATTEMPTS):
            new, error = self._execute(self._ref_pool, task.ground_truth, calls, "", answer=False)
            if error and all(o.kind == "missing" for o in new) and error not in ("timeout", "sandbox crashed"):
                # e.g. a top-level `import numpy`: say so, instead of "no result" per test
                new = [Outcome.missing(reference_failed_reason(safe_text(error, 200)))] * len(new)
            # A test whose call is not an expression can be passed by nobody (not by
            # "raising SyntaxError like the reference").
            new = [o if _is_expression(c) else Outcome.missing("the test call is not a Python expression")
                   for o, c in zip(new, calls)]
            outs = new if not outs else [o if o.kind != "missing" else n for o, n in zip(outs, new)]
            if all(o.kind != "missing" or str(o.value).startswith(_SETTLED_MISSING) for o in outs):
                break
        cached = dict(zip(wanted, outs))
        # Only complete results go to disk: a timeout on a loaded machine is retried
        # by the next process instead of being frozen into the cache.
        if all(o.kind != "missing" for o in outs):
            self._save_disk(task.task_id, cached)
        return cached

    def _cached_refs(self, key: str) -> dict[TestKey, Outcome] | None:
        with self._refs_lock:
            cached = self._refs.get(key)
            if cached is not None:
                self._refs.move_to_end(key)
            return cached

    def close(self) -> None:
        """Stop every worker (killing whatever they run) and the pytest session."""
        if self._closed:
            return
        self._closed = True
        if self._pid != os.getpid():  # a forked copy never kills its parent's sandboxes
            return
        self._pool.close()
        self._ref_pool.close()
        if self._driver is not None:
            self._driver.close()

    def __enter__(self) -> "BackendGrader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        return self.isolation.describe()

    # ------------------------------------------------------------------ internals
    def _pytest(self) -> PytestDriver:
        if self._driver is None:
            with self._driver_lock:
                if self._driver is None:
                    self._driver = PytestDriver()
        return self._driver

    def _request(self, code: str, calls: list[str], preamble: str) -> dict[str, Any]:
        cpu = max(1, math.ceil(self.total_timeout)) + 1
        return {"code": code, "preamble": preamble, "calls": calls, "call_timeout": self.call_timeout,
                "drop_uid": self.isolation.drop_uid,
                "total_timeout": self.total_timeout, "cap": self.output_cap,
                "limits": {"as": self.memory_mb << 20, "cpu": cpu, "fsize": self.file_size_mb << 20,
                           "nofile": 64, "nproc": 64 if self.isolation.nproc_rlimit else None}}

    def _execute(self, pool: _Pool, code: str, calls: list[str], preamble: str, *,
                 answer: bool = True) -> tuple[list[Outcome], str | None]:
        """Run ``code`` and ``calls`` in a worker of ``pool``: one outcome per call and an error
        summary. Whatever the sandbox did or sent (``answer``: it ran an answer), this returns
        outcomes and never raises: a failure here is the sandboxed code's, never the grader's."""
        req = self._request(code, calls, preamble)
        # The worker itself enforces the deadlines; this outer one catches a stuck or dead worker.
        outer = self.total_timeout + self.call_timeout + 5.0
        # Child bytes come back JSON-escaped (at most 6 bytes per byte, for U+FFFD).
        max_bytes = 6 * self.output_cap + 256 * len(calls) + (1 << 16)
        worker = pool.acquire()
        try:
            try:
                resp = worker.request(req, outer, max_bytes)
            except WorkerFailed as exc:
                why = "timeout" if str(exc) == "timeout" else "sandbox crashed"
                return [Outcome.missing(why)] * len(calls), why
        finally:
            pool.release(worker)
        segments = resp.get("segments") if type(resp) is dict else None
        try:
            return parse_segments(segments, len(calls), answer=answer)
        except Exception:  # noqa: BLE001 - parse_segments does not raise; if it ever did, the bytes were the sandbox's
            _log.exception("decoding the sandbox's output raised")
            return [Outcome.missing("malformed output from the sandbox")] * len(calls), "malformed output from the sandbox"

    def _cache_file(self, key: str) -> Path | None:
        if self.cache_dir is None:
            return None
        return self.cache_dir / f"ref-v{CACHE_VERSION}-{key}.json"

    def _load_disk(self, key: str, wanted: list[TestKey]) -> dict[TestKey, Outcome] | None:
        """The cached outcomes of every wanted test, or None (absent, damaged or incomplete)."""
        path = self._cache_file(key)
        if path is None or not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            out: dict[TestKey, Outcome] = {}
            for item in data["tests"]:
                name, call, kind = item["name"], item["call"], item["kind"]
                if type(name) is not str or type(call) is not str:
                    return None
                if kind == "value":
                    out[(name, call)] = Outcome("value", decode(item["v"]))
                elif kind in ("raise", "missing") and type(item["v"]) is str:
                    out[(name, call)] = Outcome(kind, safe_text(item["v"], 200))
                else:
                    return None
            return out if all(t in out for t in wanted) else None
        except (OSError, ValueError, KeyError, TypeError, RecursionError, MemoryError):
            return None  # a damaged cache entry is recomputed (WireError is a ValueError)

    def _save_disk(self, key: str, outcomes: dict[TestKey, Outcome]) -> None:
        path = self._cache_file(key)
        if path is None:
            return
        try:
            data = {"tests": [{"name": name, "call": call, "kind": o.kind,
                               "v": encode(o.value) if o.kind == "value" else o.value}
                              for (name, call), o in outcomes.items()]}
            # a fresh temporary name, so a planted symlink is never written through; 0600: the
            # expected values must stay unreadable to answers run as another user (rlimits-only
            # as root); ensure_ascii: text with lone surrogates is stored escaped, never fails to encode.
            write_text_atomic(path, json.dumps(data, ensure_ascii=True), mode=0o600)
        except (OSError, WireError, ValueError, RecursionError) as exc:
            # A cache that cannot be written only costs speed: grading goes on.
            _log.warning("reference cache %s not written: %s", path, exc)


def _rebuild(cls: Any, options: dict[str, Any] | None = None) -> "BackendGrader":
    if options is None:  # a pickle made before the class travelled with the options
        cls, options = BackendGrader, cls
    return cls(**options)


def _unpassable(names: list[str], expected: list[Outcome], bad_calls: Mapping[str, str]) -> dict[str, str]:
    """{test: why no answer can pass it} from the reference's raw outcomes and the broken test calls."""
    out = {}
    for name, exp in zip(names, expected):
        why = bad_calls.get(name) or unpassable_reason(exp)
        if why:
            out[name] = safe_text(why)
    return out


def _checker(expected: Outcome, actual: Outcome, rules: ComparisonRules):
    return lambda: outcomes_match(expected, actual, rules)


# ---------------------------------------------------------------------- process-wide grader
_default: BackendGrader | None = None
_default_lock = threading.Lock()


def get_default_grader() -> BackendGrader:
    """The process-wide grader: started on first use, closed at exit. Thread-safe.

    Options come from the environment: ``COLBENCH_GRADER_WORKERS`` (default 1),
    ``COLBENCH_GRADER_ISOLATION`` (auto), ``COLBENCH_GRADER_CACHE`` (a directory; default none).
    """
    global _default
    with _default_lock:
        if _default is None or _default._closed or _default._pid != os.getpid():
            _default = BackendGrader(
                workers=int(os.environ.get("COLBENCH_GRADER_WORKERS", "1")),
                isolation=os.environ.get("COLBENCH_GRADER_ISOLATION", "auto"),
                cache_dir=os.environ.get("COLBENCH_GRADER_CACHE") or None,
            )
            atexit.register(_default.close)
        return _default


def _after_fork_in_child() -> None:
    global _default_lock
    _default_lock = threading.Lock()  # another thread may have held it at fork time


os.register_at_fork(after_in_child=_after_fork_in_child)
