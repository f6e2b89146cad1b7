"""Reading a whole reference into a fact sheet, and reporting what cannot be read.

WHY: the offline simulator stands in for the person who "wrote" the hidden reference.
:func:`extract_facts` picks the function the tests call, reads it (:mod:`.reader`), adds the
module's constants and, at a lower priority, its helper functions, and returns the
:class:`.sheet.FactSheet` the simulator answers from. Static only: parsed, never executed.

A reference it cannot read is reported, never silently dropped: one that does not parse (a
``SyntaxError``; nesting too deep for the parser, ``RecursionError`` / ``MemoryError``) or has
no function gives a sheet with no facts and ``parse_error`` set; a part it cannot put into
words is skipped and listed in ``problems``. :func:`extract_facts` never raises, so one bad task
cannot crash an environment step; the simulator turns both into an
:class:`UnreadableReferenceWarning`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from colbench_gym.simulators.offline_backend.reader import FunctionReader
from colbench_gym.simulators.offline_backend.sheet import Fact, FactSheet
from colbench_gym.simulators.offline_backend.speaker import Speaker
from colbench_gym.simulators.offline_backend.syntax import const_key, module_tables
from colbench_gym.simulators.offline_backend.wording import humanise, sentence
from colbench_gym.simulators.offline_backend.words import keywords


class UnreadableReferenceWarning(RuntimeWarning):
    """The offline backend simulator could not read (part of) a task's hidden reference.

    Emitted once per task and simulator, when the simulator first reads the task
    (:meth:`OfflineBackendSimulator.facts_for`). The episode goes on: the simulated person
    answers "I don't know" about what it could not read, as a person who cannot describe their
    function would. The message names the task and why. To reject such tasks instead (say,
    when checking a new task set), make it an error:
    ``warnings.simplefilter("error", UnreadableReferenceWarning)``.
    """


def _called_names(calls: Iterable[str]) -> list[str]:
    names = []
    for call in calls:
        m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", call or "")
        if m and m.group(1) not in names:
            names.append(m.group(1))
    return names


def extract_facts(source: str, problem: str = "", test_calls: Iterable[str] = ()) -> FactSheet:
    """Read a reference function into a :class:`FactSheet`; never raises.

    What cannot be read is on the sheet instead: ``parse_error`` when nothing could be read
    (then there are no facts), ``problems`` for parts that were skipped.
    """
    try:
        return _extract(source, problem, test_calls)
    except Exception as exc:  # noqa: BLE001 - reported as the sheet's parse_error, never a crash
        lines = [ln.strip() for ln in str(source).splitlines() if ln.strip()]
        return FactSheet(None, [], [], lines, parse_error=f"{type(exc).__name__}: {exc}")


def _extract(source: str, problem: str = "", test_calls: Iterable[str] = ()) -> FactSheet:
    """Read a reference function into a :class:`FactSheet` (never executes it).

    The main function is the one the test calls use, else one the problem description names,
    else the last top-level ``def``. Helpers contribute facts at a lower priority.
    """
    lines = [ln.strip() for ln in source.splitlines() if ln.strip()]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return FactSheet(None, [], [], lines, parse_error=f"{type(exc).__name__}: {exc}")
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        funcs += [m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not funcs:
        return FactSheet(None, [], [], lines, parse_error="no function definition in the reference")
    called = _called_names(test_calls)
    main = next((f for name in called for f in funcs if f.name == name), None)
    if main is None:
        main = next((f for f in funcs if re.search(rf"\b{re.escape(f.name)}\b", problem)), None)
    if main is None:
        top = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
        main = top[-1] if top else funcs[-1]
    tables, consts = module_tables(tree)
    facts: list[Fact] = []
    module_consts = {name: const_key(value) for name, value in consts
                     if const_key(value) is not None and not isinstance(const_key(value), bool)}
    reader = FunctionReader(main, tables, main=True, module_consts=module_consts)
    facts += reader.read()
    sp = Speaker(reader.params, problems=reader.problems)
    for name, value in consts:
        sp.start()
        text = sentence(f"the {humanise(name)} is {sp.say(value)}")
        facts.append(Fact("constant", text, f"the {humanise(name)}", frozenset(keywords(text) | keywords(name)),
                          frozenset(sp.numbers), frozenset(sp.strings), frozenset({"values", "money"}), 6.0))
    problems = list(reader.problems)
    for f in funcs:
        if f is main:
            continue
        try:
            helper_reader = FunctionReader(f, tables, main=False, module_consts=module_consts)
            helper = helper_reader.read()
        except (RecursionError, ValueError, AttributeError, TypeError) as exc:
            problems.append(f"the helper function {f.name}: {type(exc).__name__}: {exc}"[:200])
            continue
        problems += helper_reader.problems
        facts += [h for h in helper if h.kind not in ("signature", "round", "raise") or h.polarity != "no"][:15]
    # drop exact duplicates, keep order
    seen: set[str] = set()
    unique = []
    for fact in facts:
        if fact.text not in seen:
            seen.add(fact.text)
            unique.append(fact)
    nums: set[float] = set()
    strs: set[str] = set()
    for node in ast.walk(tree):
        c = const_key(node)
        if isinstance(c, (int, float)) and not isinstance(c, bool):
            nums.add(float(c))
        elif isinstance(c, str):
            strs.add(c.lower())
    return FactSheet(main.name, reader.params, unique[:60], lines, frozenset(nums), frozenset(strs),
                     problems=tuple(problems))


__all__ = ["UnreadableReferenceWarning", "extract_facts"]
