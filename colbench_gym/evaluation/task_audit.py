"""``colbench tasks audit FILE``: can each backend task be solved at all, before anyone reports on it?

Why: a task that no answer can pass, or whose hidden information never determines the answer,
scores every agent 0 and says nothing about any of them. The audit gives each task a verdict
(``ok``, ``warning`` with the findings that do not fail it, ``unsolvable`` with the findings that
do, ``invalid``) and prints a summary line. It exits 1 when any task is ``unsolvable`` or
``invalid`` (``--strict``: also when any has a warning), 2 on a usage error. FILE is a task file
(official backend records, or trajectory records ``{"task": ...}``: each distinct task once) or a
task source such as ``embedded:test``.

Checks that need no model (always run); each is a **failure** (the task cannot be scored fairly)
unless marked as a warning:

- **reference** — each test's reference result must be usable under grading: a timeout, a crash,
  an exception the sandbox caused (ModuleNotFoundError for numpy, MemoryError, FileNotFoundError,
  ...: :mod:`colbench_gym.grading.environmental`), a result that is not plain data or a test
  call that is not an expression makes the test unpassable for every answer (the references run
  in the grading sandbox, once per task);
- **nondeterministic** — the reference is run again (``--reruns N`` more times, graded as an
  answer in its own sandboxed process): a reference whose results change from run to run
  (``random``, the clock, set order under hash randomisation, ...) fails its own tests, and then
  no answer can match the expected results except by chance;
- **unstated constant** — a full-information check: the hidden information the person can give
  is the offline simulated person's fact sheet (every fact it could state if asked,
  :mod:`colbench_gym.simulators.offline_backend`), plus the request itself. A constant of the
  reference (a threshold, a rate, a label, a format string) that neither states, and that
  *decides* the tests — changing it in the reference changes a test's result, run in the sandbox
  — can only be guessed;
- **signature** — the request names the function or its parameters differently from the
  reference the tests call (text contradicting the reference);
- **contradiction** — *a lexical heuristic*: the request's superlatives or sort order say one
  thing and the reference's operations the opposite (a request for the "smallest" over a
  reference that selects with ``max(xs)`` and never calls ``min``; "ascending" or "alphabetical"
  over a reference whose every sort is ``reverse=True``, and the reverse). Only words with one
  reading count (``smallest``, ``lowest``, ``fewest``, ``shortest``, ``cheapest`` / ``largest``,
  ``biggest``, ``highest``, ``greatest``, ``longest``; ``ascending``, ``alphabetical``,
  ``increasing order`` / ``descending``, ``decreasing``, ``reverse order``), only a reference
  that uses one side alone is judged, and a cap (``min(x, 100)``: two arguments) is no
  selection, so "at most" or "the largest allowed" over a ``min`` cap never fire;
- **test call** — a test calls the reference's function with arguments its signature refuses
  (too many or too few positional arguments, an unknown keyword): its expected result is the
  call's own ``TypeError``, an expectation the request never sets and that checks nothing;
- **unreadable** (warning) — parts of the reference the offline person cannot put into words.

With ``--oracle-model MODEL`` (any OpenAI-compatible endpoint: ``--oracle-base-url``, e.g. a vLLM
or llama.cpp server with a local model) a **full-information oracle** runs too: the model is
given the request and *every* fact of the sheet up front (the hidden information in words,
never the reference's code) and writes the function in one turn, graded in the sandbox; a task
that no sample solves is flagged (a failure). The verdict names the model: a weak oracle fails
solvable tasks, so read its failures beside the model-free findings.

    colbench tasks audit embedded:test
    colbench tasks audit backend_tasks/test.jsonl --json --workers 2
    colbench tasks audit embedded:test --oracle-model Qwen/Qwen2.5-7B-Instruct --oracle-base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import re
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from colbench_gym.protocol import extract_code
from colbench_gym.simulators.offline_backend.reference import extract_facts
from colbench_gym.tasks import BackendTask, TaskFormatError, iter_jsonl
from colbench_gym.tasks.sources import GENERATED_SPACE, resolve_task_source

#: Constants that structure code rather than state a person's wish (start values, steps, indices).
STRUCTURAL = (0, 1, -1)
#: The checks, in report order.
CHECKS = ("reference", "nondeterministic", "unstated_constant", "signature", "contradiction", "test_call",
          "unreadable", "oracle")
#: Checks whose findings warn without failing the task (``--strict`` fails them too); every other
#: check's finding makes the task ``unsolvable``.
WARNING_CHECKS = frozenset({"unreadable"})


@dataclass
class Finding:
    check: str  # one of CHECKS
    detail: str
    severity: str = "failure"  # "failure" or "warning" (WARNING_CHECKS)


@dataclass
class TaskVerdict:
    """One task's verdict: ``ok``, ``warning`` (findings of :data:`WARNING_CHECKS` only),
    ``unsolvable`` (a failing finding, see ``findings``) or ``invalid`` (not a task)."""

    where: str
    task_id: str | None = None
    function: str = "?"
    tests: int = 0
    verdict: str = "ok"
    findings: list[Finding] = field(default_factory=list)
    #: the oracle's run: {"model", "samples", "solved", "best_fraction"} (None: no oracle asked)
    oracle: dict[str, Any] | None = None
    #: test name -> why no answer can pass it (the reference check)
    unpassable: dict[str, str] = field(default_factory=dict)

    @property
    def environmental(self) -> int:
        """How many unpassable tests come from an exception the sandbox caused."""
        return sum("error of the grading environment" in why for why in self.unpassable.values())

    def add(self, check: str, detail: str) -> None:
        severity = "warning" if check in WARNING_CHECKS else "failure"
        self.findings.append(Finding(check, " ".join(detail.split()), severity))
        if severity == "failure":
            self.verdict = "unsolvable"
        elif self.verdict == "ok":
            self.verdict = "warning"

    @property
    def failed(self) -> bool:
        """Whether this task fails the audit (``unsolvable`` or ``invalid``)."""
        return self.verdict in ("unsolvable", "invalid")


def read_tasks(path: str) -> list[tuple[str, BackendTask | None, str | None]]:
    """``(where, task, why invalid)`` per distinct task of a file of task records or trajectory
    records (``{"task": ...}``), in file order, each named by the first line it appears on."""
    out: list[tuple[str, BackendTask | None, str | None]] = []
    seen: set[str] = set()
    for lineno, record in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if isinstance(record, dict) and isinstance(record.get("task"), dict) and "problem_description" not in record:
            record = record["task"]
        try:
            task = BackendTask.from_record(record, where=where, check_python=True)
        except TaskFormatError as exc:
            out.append((where, None, str(exc)))
            continue
        if task.task_id not in seen:
            seen.add(task.task_id)
            out.append((where, task, None))
    return out


# ----------------------------------------------------------------------------- model-free checks
def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _format_spec_nodes(tree: ast.AST) -> set[int]:
    """Constants inside f-string format specs (``{x:02d}``): the person words those ("as 2 digits
    with leading zeros"), never as the spec itself."""
    return {id(c) for node in ast.walk(tree) if isinstance(node, ast.FormattedValue) and node.format_spec
            for c in ast.walk(node.format_spec)}


def _negated(tree: ast.AST) -> set[int]:
    """Constants written with a minus sign (``-2``: a ``UnaryOp`` around ``2``)."""
    return {id(n.operand) for n in ast.walk(tree) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)
            and isinstance(n.operand, ast.Constant)}


def _constants(tree: ast.AST) -> list[tuple[int, Any]]:
    """``(position in ast.walk order, value)`` of the reference's constants that could be a
    person's wish: numbers (not structural ones, not booleans) and strings (not docstrings, not
    format specs)."""
    docs = _docstring_nodes(tree) | _format_spec_nodes(tree)
    negated = _negated(tree)
    out = []
    for i, node in enumerate(ast.walk(tree)):
        if not isinstance(node, ast.Constant) or id(node) in docs:
            continue
        v = node.value
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = -v if id(node) in negated else v
            if v not in STRUCTURAL:
                out.append((i, v))
        elif isinstance(v, str) and v.strip():
            out.append((i, v))
    return out


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:\.\d+)?")


def _numbers_in(text: str) -> set[float]:
    out = set()
    for m in _NUMBER.finditer(text):
        try:
            out.add(float(m.group().replace(",", "")))
        except ValueError:
            pass
    return out


#: Numbers people state in words (the offline person says "n is even", not "n % 2 == 0").
NUMBER_WORDS: dict[float, tuple[str, ...]] = {
    2: ("two", "even", "odd", "half", "halves", "twice", "double", "pair"), 3: ("three", "third", "triple"),
    4: ("four", "quarter"), 5: ("five",), 6: ("six",), 7: ("seven", "week", "weekly"), 8: ("eight",),
    9: ("nine",), 10: ("ten", "tenth"), 12: ("twelve", "dozen", "month", "months"), 24: ("hours", "day", "daily"),
    60: ("sixty", "minute", "minutes", "hour", "hours", "seconds"), 100: ("hundred", "percent", "cents", "%"),
    1000: ("thousand",),
}


def _stated(value: Any, numbers: set[float], text: str) -> bool:
    """Whether the person's words (``numbers`` they state, ``text``) give ``value``."""
    if isinstance(value, str):
        v = value.strip().lower()
        return v in text or (len(v) > 2 and v.strip(" :,.-_") in text)
    x = abs(float(value))  # "-4" as an index is worded "the last 4"
    if any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text) for w in NUMBER_WORDS.get(x, ())):
        return True
    numbers = numbers | {abs(n) for n in numbers}
    return any(abs(x - n) <= 1e-9 * max(1.0, abs(x)) for n in numbers) or \
        any(abs(x * 100 - n) <= 1e-6 or abs(x / 100 - n) <= 1e-12 for n in numbers)


def _mutated(value: Any) -> Any:
    if isinstance(value, str):
        return value + "_audit"
    if isinstance(value, int):
        return value + 7 if abs(value) < 1000 else value * 2
    return value * 1.37 + 0.11


def _mutate(source: str, position: int, value: Any) -> str:
    tree = ast.parse(source)
    negated = _negated(tree)
    for i, node in enumerate(ast.walk(tree)):
        if i == position and isinstance(node, ast.Constant):
            new = _mutated(value)
            node.value = -new if id(node) in negated else new  # the minus sign stays in the source
            break
    return ast.unparse(tree)


def _outputs(grader: Any, task: BackendTask) -> list[tuple[str, Any]]:
    return [(o.kind, repr(o.value)) for o in grader.reference_outputs(task)]


def unstated_constants(task: BackendTask, grader: Any) -> list[str]:
    """The constants of ``task``'s reference that the full hidden information (the request and
    every fact the offline person can state) never gives and that decide a test's result."""
    sheet = extract_facts(task.ground_truth, task.problem_description, task.test_cases.values())
    text = " ".join([task.problem_description, *(f.text for f in sheet.facts)]).lower()
    numbers = set(_numbers_in(text))
    strings = set()
    for f in sheet.facts:
        numbers |= {float(n) for n in f.numbers}
        strings |= {s.lower() for s in f.strings}
    text += " " + " ".join(strings)
    try:
        tree = ast.parse(task.ground_truth)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    base = None
    found = []
    seen: set[Any] = set()
    for position, value in _constants(tree):
        key = (type(value).__name__, value)
        if key in seen or _stated(value, numbers, text):
            continue
        seen.add(key)
        if base is None:
            base = _outputs(grader, task)
        try:
            mutant = BackendTask.from_record({**task.to_record(), "ground_truth": _mutate(task.ground_truth, position, value)})
        except (TaskFormatError, SyntaxError, ValueError):
            continue
        if _outputs(grader, mutant) != base:
            found.append(repr(value))
    return found


_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^()]*)\)")
_NOT_A_FUNCTION_NAME = {"e", "i", "eg", "ie", "etc", "print", "len", "sum", "max", "min", "round", "sorted", "list",
                        "dict", "set", "tuple", "str", "int", "float", "bool", "range", "abs", "open", "map"}


def _tested_function(task: BackendTask) -> tuple[str | None, list[str]]:
    """The reference's function the tests call most, and its parameter names."""
    try:
        tree = ast.parse(task.ground_truth)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, []
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    called: Counter[str] = Counter()
    for call in task.test_cases.values():
        try:
            nodes = ast.walk(ast.parse(call, mode="eval"))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        called.update(n.func.id for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                      and n.func.id in defs)
    if not called:
        return None, []
    name = called.most_common(1)[0][0]
    a = defs[name].args
    return name, [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]


def signature_findings(task: BackendTask) -> list[str]:
    """Where the request names the tested function or its parameters differently from the reference."""
    name, params = _tested_function(task)
    if name is None:
        return ["the tests call no function of the reference"]
    desc = task.problem_description
    calls = [(m.group(1), m.group(2)) for m in _CALL.finditer(desc) if m.group(1).lower() not in _NOT_A_FUNCTION_NAME]
    named = [(n, args) for n, args in calls if n == name]
    if not named:
        others = sorted({n for n, _ in calls if "_" in n or n[0].islower() and len(n) > 3} - {name})
        return [f"the request names {', '.join(o + '()' for o in others)} but the tests call {name}()"] if others else []
    out = []
    listed = [a.split("=")[0].strip().lstrip("*") for a in named[0][1].split(",") if a.strip()]
    if listed and params and len(listed) != len(params):
        out.append(f"the request gives {name}({', '.join(listed)}) but the reference takes "
                   f"{name}({', '.join(params)})")
    elif listed and params and all(re.fullmatch(r"[A-Za-z_]\w*", a) for a in listed) and listed != params:
        out.append(f"the request names the parameters of {name} ({', '.join(listed)}) differently from the "
                   f"reference ({', '.join(params)})")
    return out


#: Request words with one reading each (a heuristic, documented in the module docstring): the
#: side of ``min``/``max`` a superlative asks for, and the sort order a request asks for.
_SUPERLATIVES = {"min": ("smallest", "lowest", "fewest", "shortest", "cheapest"),
                 "max": ("largest", "biggest", "highest", "greatest", "longest")}
_ORDERS = {"ascending": ("ascending", "alphabetical", "alphabetically", "increasing order", "a to z", "a-z"),
           "descending": ("descending", "decreasing", "reverse order", "z to a", "z-a")}
_EXTREMES = {"min": "min", "max": "max", "nsmallest": "min", "nlargest": "max"}


def _said(text: str, words: tuple[str, ...]) -> list[str]:
    return [w for w in words if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text)]


def _reference_operations(tree: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """What the reference computes: the sides of ``min``/``max`` it *selects* with (``max(xs)``,
    ``min(xs, key=...)``, ``heapq.nsmallest``: one iterable), the sides it calls at all (a cap such
    as ``min(x, 100)`` included), and the orders of its sorts (``sorted``/``.sort``: ``descending``
    when ``reverse=True``, ``unknown`` when ``reverse`` is not a constant)."""
    selects, called, orders = set(), set(), set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in _EXTREMES:
            called.add(_EXTREMES[name])
            if name.startswith("n") or (len(node.args) == 1 and not isinstance(node.args[0], ast.Starred)):
                selects.add(_EXTREMES[name])
        elif name in ("sorted", "sort"):
            reverse = next((k.value for k in node.keywords if k.arg == "reverse"), None)
            if reverse is None:
                orders.add("ascending")
            elif isinstance(reverse, ast.Constant):
                orders.add("descending" if reverse.value else "ascending")
            else:
                orders.add("unknown")
    return selects, called, orders


def contradiction_findings(task: BackendTask) -> list[str]:
    """Where the request's words contradict what the reference computes (a lexical heuristic:
    superlatives against ``min``/``max``, sort order against ``reverse=``; see the module docstring)."""
    try:
        tree = ast.parse(task.ground_truth)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    text = " ".join(task.problem_description.lower().split())
    selects, called, orders = _reference_operations(tree)
    out = []
    asked = {side: _said(text, words) for side, words in _SUPERLATIVES.items()}
    for side, other in (("min", "max"), ("max", "min")):
        if asked[side] and not asked[other] and selects == {other} and side not in called:
            out.append(f"the request asks for the {asked[side][0]} but the reference computes {other}() and never "
                       f"{side}()")
    asked = {order: _said(text, words) for order, words in _ORDERS.items()}
    for order, other in (("ascending", "descending"), ("descending", "ascending")):
        if asked[order] and not asked[other] and orders == {other}:
            how = "reverse=True" if other == "descending" else "without reverse=True"
            out.append(f"the request asks for {asked[order][0]} order but every sort of the reference is {other} "
                       f"({how})")
    return out


def _signature_of(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> inspect.Signature:
    """The signature a ``def`` binds with (defaults as placeholders: only their presence matters)."""
    P, a = inspect.Parameter, fn.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    params = [P(p.arg, P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD,
                default=None if i >= first_default else P.empty) for i, p in enumerate(positional)]
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    params += [P(p.arg, P.KEYWORD_ONLY, default=P.empty if d is None else None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


def refused_call_findings(task: BackendTask) -> list[str]:
    """Tests that call a function of the reference with arguments its signature refuses (their
    expected result is that call's own ``TypeError``). Only undecorated top-level ``def`` s and
    calls without ``*``/``**`` unpacking are judged."""
    try:
        tree = ast.parse(task.ground_truth)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out = []
    for test, call in task.test_cases.items():
        try:
            nodes = list(ast.walk(ast.parse(call.strip(), mode="eval")))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # the reference check names broken test calls
        for node in nodes:
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defs):
                continue
            fn = defs[node.func.id]
            if fn.decorator_list or any(isinstance(x, ast.Starred) for x in node.args) \
                    or any(k.arg is None for k in node.keywords):
                continue
            sig = _signature_of(fn)
            try:
                sig.bind(*range(len(node.args)), **{k.arg: None for k in node.keywords})
            except TypeError as exc:
                out.append(f"{test} calls {_short_call(call)}, which the reference's {fn.name}{sig} refuses ({exc}): "
                           "its expected result is the call's own TypeError")
                break
    return out


def _short_call(call: str, width: int = 60) -> str:
    text = " ".join(call.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def rerun_findings(task: BackendTask, grader: Any, reruns: int = 1) -> list[str]:
    """Run the reference ``reruns`` more times (graded as an answer against its own first run's
    results, each in its own sandboxed process): the tests it fails, except those no answer can
    pass anyway, mean its results change from run to run."""
    unpassable = set(grader.unpassable_tests(task))
    changed: dict[str, str] = {}
    for _ in range(reruns):
        result = grader.grade(task.ground_truth, task)
        if result.end_reason is not None:  # the grader failed: that run measured nothing
            continue
        for name, ok in result.per_test.items():
            if not ok and name not in unpassable and name not in changed:
                changed[name] = " ".join(str(result.reasons.get(name, "")).split())[:80]
    if not changed:
        return []
    names = list(changed)
    shown = ", ".join(names[:4]) + (f", ... ({len(names) - 4} more)" if len(names) > 4 else "")
    timeouts = sum("timeout" in why.lower() or "timed out" in why.lower() for why in changed.values())
    why = (f"; {timeouts} of them timed out on the rerun" if timeouts else
           ": its results change from run to run (random numbers, the clock, set order, ...)")
    return [f"the reference fails {len(names)} of its own {len(task.test_cases) - len(unpassable)} passable tests "
            f"when run again ({shown}){why}, so no answer can match them except by chance"]


# ----------------------------------------------------------------------------- the oracle
ORACLE_PROMPT = """You are writing one Python function for a person. You will not be able to ask them \
anything, but you already know everything they know about what they want.

Their request:
{request}

Everything they know about the function (all of it applies):
{facts}

Write the complete function (and any imports it needs). Reply with the code in one ```python block."""


def oracle_prompt(task: BackendTask) -> str:
    """The full-information prompt: the request and every fact the person can state (no code)."""
    sheet = extract_facts(task.ground_truth, task.problem_description, task.test_cases.values())
    facts = "\n".join(f"- {f.text}" for f in sheet.facts) or "- (nothing beyond the request)"
    return ORACLE_PROMPT.format(request=task.problem_description.strip(), facts=facts)


class Oracle:
    """A model on an OpenAI-compatible endpoint, asked :func:`oracle_prompt` ``samples`` times."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, samples: int = 1,
                 temperature: float = 0.0, max_tokens: int = 1024, timeout: float = 120.0, max_retries: int = 2):
        import openai  # noqa: PLC0415 - a base dependency; only the oracle needs it

        self.model, self.samples = model, samples
        self.temperature, self.max_tokens = temperature, max_tokens
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
                                     timeout=timeout, max_retries=max_retries)

    def answers(self, task: BackendTask) -> list[str]:
        prompt = oracle_prompt(task)
        out = []
        for k in range(self.samples):
            resp = self._client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": prompt}], temperature=self.temperature,
                max_tokens=self.max_tokens, seed=k)
            out.append(resp.choices[0].message.content or "")
        return out

    def close(self) -> None:
        self._client.close()


# ----------------------------------------------------------------------------- the audit
def audit_task(entry: tuple[str, BackendTask | None, str | None], grader: Any, oracle: Oracle | None = None,
               reruns: int = 1) -> TaskVerdict:
    where, task, invalid = entry
    if task is None:
        return TaskVerdict(where, verdict="invalid", findings=[Finding("reference", invalid or "not a task")])
    name, _ = _tested_function(task)
    v = TaskVerdict(where, task.task_id, name or "?", len(task.test_cases))
    v.unpassable = grader.unpassable_tests(task)
    if v.unpassable:
        reasons = "; ".join(f"{t}: {' '.join(why.split())[:120]}" for t, why in list(v.unpassable.items())[:3])
        v.add("reference", f"{len(v.unpassable)} of {v.tests} tests unpassable (no usable reference result): {reasons}")
    for problem in rerun_findings(task, grader, reruns) if reruns > 0 else []:
        v.add("nondeterministic", problem)
    for const in unstated_constants(task, grader):
        v.add("unstated_constant", f"{const} decides the tests but neither the request nor anything the person "
                                   "can state gives it")
    for problem in signature_findings(task):
        v.add("signature", problem)
    for problem in contradiction_findings(task):
        v.add("contradiction", problem)
    for problem in refused_call_findings(task):
        v.add("test_call", problem)
    sheet = extract_facts(task.ground_truth, task.problem_description, task.test_cases.values())
    if sheet.parse_error:
        v.add("unreadable", f"the person cannot read the reference: {sheet.parse_error}")
    for problem in sheet.problems:
        v.add("unreadable", f"the person cannot put into words: {problem}")
    if oracle is not None:
        try:
            fractions = [grader.grade(extract_code(a), task).fraction for a in oracle.answers(task)]
        except Exception as exc:  # noqa: BLE001 - the endpoint's failure is reported, the audit goes on
            v.oracle = {"model": oracle.model, "samples": oracle.samples, "solved": None,
                        "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"}
        else:
            solved = any(f >= 1.0 for f in fractions)
            v.oracle = {"model": oracle.model, "samples": oracle.samples, "solved": solved,
                        "best_fraction": max(fractions)}
            if not solved:
                v.add("oracle", f"{oracle.model} given every fact up front solved none of {oracle.samples} "
                                f"sample(s) (best {100 * max(fractions):.0f}% of the tests)")
    return v


def summary(verdicts: list[TaskVerdict], oracle: Oracle | None = None) -> str:
    counts = Counter(v.verdict for v in verdicts)

    def checks(verdict: str, severity: str) -> str:
        """Per check, how many tasks of ``verdict`` have a finding of it (of ``severity``)."""
        by_check = Counter(c for v in verdicts if v.verdict == verdict
                           for c in {f.check for f in v.findings if f.severity == severity})
        return ", ".join(f"{by_check[c]} {c}" for c in CHECKS if by_check[c])

    warned = checks("warning", "warning")
    valid = [v for v in verdicts if v.verdict != "invalid"]
    hit = [v for v in valid if v.unpassable]
    n_bad = sum(len(v.unpassable) for v in hit)
    env = sum(v.environmental for v in hit)
    line = (f"audited {len(verdicts)} tasks ({sum(v.tests for v in valid)} tests): {counts['ok']} ok, "
            f"{counts['warning']} with warnings{f' ({warned})' if warned else ''}, "
            f"{counts['unsolvable']} unsolvable ({checks('unsolvable', 'failure') or 'no findings'}), "
            f"{counts['invalid']} invalid")
    if hit:
        line += (f"; {n_bad} tests in {len(hit)} tasks have no usable reference result ({env} an exception of the "
                 f"sandbox, {n_bad - env} a timeout, crash, non-plain result or broken test call)")
    if oracle is not None:
        ran = [v for v in verdicts if v.oracle is not None]
        solved = sum(bool(v.oracle.get("solved")) for v in ran)
        failed = sum(v.oracle.get("solved") is None for v in ran)
        line += (f"; oracle {oracle.model} ({oracle.samples} sample(s), full information) solved {solved} of {len(ran)}"
                 + (f", its endpoint failed on {failed}" if failed else ""))
    else:
        line += "; no oracle run (--oracle-model MODEL for one)"
    return line


def _line(v: TaskVerdict) -> str:
    head = f"{v.where}  {(v.task_id or '-')[:12]:<12}  {v.function:<22} {v.verdict.upper()}"
    if not v.findings:
        return head
    shown = "; ".join(f"{f.check}: {f.detail[:140]}" for f in v.findings[:3])
    more = f"; ... ({len(v.findings) - 3} more)" if len(v.findings) > 3 else ""
    return f"{head}  {shown}{more}"


def read_entries(spec: str, count: int | None = None) -> list[tuple[str, BackendTask | None, str | None]]:
    """The tasks of a file (:func:`read_tasks`) or of a task source spec."""
    if os.path.exists(spec) or spec.endswith((".jsonl", ".json")):
        return read_tasks(spec)
    source = resolve_task_source(spec, "backend")
    n = len(source) if count is None else count
    if n >= GENERATED_SPACE:
        raise ValueError(f"{spec} is unbounded: give --count N")
    return [(f"{spec}[{i}]", source[i], None) for i in range(min(n, len(source)))]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE",
                        help="backend task JSONL (official records, or trajectories {task, ...}) or a task source "
                             "such as embedded:test")
    parser.add_argument("--count", type=int, default=None, help="audit the first N tasks (required for generated:*)")
    parser.add_argument("--json", action="store_true", help="one JSON object per task, then the summary")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 on warnings too (without it: exit 1 when any task is unsolvable or invalid)")
    parser.add_argument("--reruns", type=int, default=1, metavar="N",
                        help="run each reference N more times to catch results that change between runs "
                             "(0: skip; default: %(default)s)")
    parser.add_argument("--workers", type=int, default=1, help="sandboxed workers running references in parallel")
    parser.add_argument("--call-timeout", type=float, default=2.0, help="seconds per test call (as in grading)")
    parser.add_argument("--isolation", choices=("auto", "namespaces", "rlimits-only"), default="auto")
    parser.add_argument("--cache-dir", default=None, help="reference-output cache shared with grading")
    g = parser.add_argument_group("full-information oracle (optional: needs a model)")
    g.add_argument("--oracle-model", default=None, metavar="MODEL",
                   help="a model on an OpenAI-compatible endpoint, given every fact the person knows up front")
    g.add_argument("--oracle-base-url", default=None, metavar="URL", help="its endpoint (default: $OPENAI_BASE_URL)")
    g.add_argument("--oracle-api-key", default=None, help="(default: $OPENAI_API_KEY or 'EMPTY')")
    g.add_argument("--oracle-samples", type=int, default=1, metavar="N",
                   help="answers per task; solved when any passes every test (default: %(default)s)")
    g.add_argument("--oracle-temperature", type=float, default=0.0, help="(default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    if args.workers < 1 or args.oracle_samples < 1 or args.reruns < 0:
        print("error: --workers and --oracle-samples must be >= 1, --reruns >= 0", file=sys.stderr)
        return 2
    try:
        entries = read_entries(args.file, args.count)
    except (TaskFormatError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from colbench_gym.grading.grader import BackendGrader  # noqa: PLC0415 - starts sandboxes

    oracle = (Oracle(args.oracle_model, args.oracle_base_url, args.oracle_api_key, args.oracle_samples,
                     args.oracle_temperature) if args.oracle_model else None)
    try:
        with BackendGrader(workers=args.workers, call_timeout=args.call_timeout, isolation=args.isolation,
                           cache_dir=args.cache_dir) as grader, ThreadPoolExecutor(max_workers=args.workers) as pool:
            verdicts = list(pool.map(lambda e: audit_task(e, grader, oracle, args.reruns), entries))
    finally:
        if oracle is not None:
            oracle.close()
    for v in verdicts:
        print(json.dumps({**asdict(v), "environmental": v.environmental}, ensure_ascii=False) if args.json
              else _line(v))
    print(summary(verdicts, oracle))
    return exit_status(verdicts, args.strict)


def exit_status(verdicts: list[TaskVerdict], strict: bool = False) -> int:
    """1 when any task fails the audit (``unsolvable`` or ``invalid``) or, with ``strict``, has a
    warning; else 0."""
    return 1 if any(v.failed or (strict and v.verdict != "ok") for v in verdicts) else 0


__all__ = ["CHECKS", "WARNING_CHECKS", "Finding", "Oracle", "TaskVerdict", "audit_task", "contradiction_findings",
           "exit_status", "oracle_prompt", "read_entries", "refused_call_findings", "rerun_findings",
           "signature_findings", "summary", "unstated_constants"]
