"""Run trusted reference functions on their test calls in a separate process.

Why a subprocess: the outputs must be deterministic across interpreter runs (e.g. no set order
leaking into a list), so each check runs in fresh interpreters with different hash seeds. The
references are OUR trusted code, so a plain subprocess is enough (untrusted code is the grader's job).

Run as a script it reads ``[{"source": str, "tests": {name: call}}, ...]`` as JSON on stdin and
prints, per task, the encoded outcome of every call and the reference lines that ran.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from typing import Any

PLAIN = (type(None), bool, int, float, str, list, tuple, dict, set, frozenset)
FILENAME = "<reference>"


class NotPlainData(TypeError):
    pass


def encode(value: Any) -> Any:
    """A JSON-able, order-normalised form of plain data; anything else raises NotPlainData."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, list):
        return {"list": [encode(v) for v in value]}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        items = [encode(v) for v in value]
        return {"set": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    if isinstance(value, dict):
        items = [[encode(k), encode(v)] for k, v in value.items()]
        return {"dict": sorted(items, key=lambda x: json.dumps(x, sort_keys=True))}
    raise NotPlainData(f"not plain data: {type(value).__name__}")


def _run_one(source: str, tests: dict[str, str]) -> dict[str, Any]:
    lines: set[int] = set()

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != FILENAME:
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    namespace: dict[str, Any] = {"__name__": "reference"}
    try:
        exec(compile(source, FILENAME, "exec"), namespace)  # noqa: S102 - trusted reference
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    outcomes = {}
    for name, call in tests.items():
        sys.settrace(tracer)
        try:
            value = eval(compile(call, "<test>", "eval"), dict(namespace))
            outcome = {"value": encode(value)}
        except NotPlainData as exc:
            outcome = {"not_plain": str(exc)}
        except Exception as exc:  # noqa: BLE001
            outcome = {"raises": type(exc).__name__}
        finally:
            sys.settrace(None)
        outcomes[name] = outcome
    return {"outcomes": outcomes, "lines": sorted(lines)}


def run_references(items: list[dict[str, Any]], hash_seed: int = 0, timeout: float = 120) -> list[dict[str, Any]]:
    """Evaluate every item's test calls in one fresh interpreter (PYTHONHASHSEED=hash_seed)."""
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    proc = subprocess.run([sys.executable, __file__], input=json.dumps(items), capture_output=True,
                          text=True, env=env, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"reference runner failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def body_lines(source: str) -> set[int]:
    """Line numbers of the statements inside function bodies (what the tests should execute)."""
    tree = ast.parse(source)
    out: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.stmt) and node is not fn and not isinstance(node, ast.FunctionDef):
                    out.add(node.lineno)
    return out


def _mutable_constants(tree: ast.AST) -> list[ast.Constant]:
    """Numeric and string literals that carry a hidden detail (not error messages or format specs)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.JoinedStr)):
            skip.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Subscript):  # dict keys read from the input, e.g. item["name"]
            skip.update(id(n) for n in ast.walk(node.slice))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in skip or isinstance(node.value, bool):
            continue
        if isinstance(node.value, (int, float)) or (isinstance(node.value, str) and node.value):
            out.append(node)
    return out


def mutants(source: str) -> list[tuple[str, str]]:
    """``(description, mutated_source)`` per literal: the "naive guess" with one detail changed."""
    out = []
    count = len(_mutable_constants(ast.parse(source)))
    for i in range(count):
        tree = ast.parse(source)
        node = _mutable_constants(tree)[i]
        old = node.value
        if isinstance(old, int):  # one unit, or a tenth for big numbers (a plausible wrong guess)
            node.value = old + max(1, abs(old) // 10)
        elif isinstance(old, float):
            node.value = round(old * 1.5 + 0.5, 6)
        else:
            node.value = old + "_x"
        out.append((f"line {node.lineno}: {old!r} -> {node.value!r}", ast.unparse(tree)))
    return out


class _Tie(Exception):
    pass


def _tie_round(number: Any, ndigits: int | None = None) -> Any:
    if isinstance(number, float):
        scaled = abs(number) * 10 ** (ndigits or 0)
        if abs(scaled - int(scaled) - 0.5) < 1e-6:
            raise _Tie(f"round({number!r}, {ndigits!r})")
    return round(number) if ndigits is None else round(number, ndigits)


def rounding_ties(records: list[dict[str, Any]]) -> list[str]:
    """Test calls whose expected value rounds an exact half (unfair: float order decides it).

    Runs in this process: the references are our own trusted code.
    """
    found = []
    for record in records:
        namespace: dict[str, Any] = {"round": _tie_round}
        exec(compile(record["ground_truth"], FILENAME, "exec"), namespace)  # noqa: S102
        for call in record["test_cases"].values():
            try:
                eval(compile(call, "<test>", "eval"), namespace)
            except _Tie as tie:
                found.append(f"{call}: {tie}")
            except Exception:  # noqa: BLE001, S110 - expected errors are fine here
                pass
    return found


def function_name(source: str) -> str:
    """Name of the last top-level function (the one the task asks for)."""
    names = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    if not names:
        raise ValueError("reference defines no function")
    return names[-1]


def audit(records: list[dict[str, Any]], max_raising: int = 3) -> tuple[dict[int, list[str]], list[float]]:
    """Check trusted task records the way a task author should.

    Returns ``(problems, detection)``: problems per record index (empty when all is well) and,
    per record, the share of one-literal mutants of the reference that fail at least one test.
    """
    items = [{"source": r["ground_truth"], "tests": r["test_cases"]} for r in records]
    first, second = run_references(items, hash_seed=0), run_references(items, hash_seed=4242)
    problems: dict[int, list[str]] = {}
    mutant_items, owners = [], []
    for i, (record, run_a, run_b) in enumerate(zip(records, first, second)):
        found = []
        source = record["ground_truth"]
        if "error" in run_a:
            found.append(f"reference does not load: {run_a['error']}")
        else:
            if run_a["outcomes"] != run_b["outcomes"]:
                found.append("outputs differ between interpreter runs")
            for name, outcome in run_a["outcomes"].items():
                if "not_plain" in outcome:
                    found.append(f"{name}: {outcome['not_plain']}")
            raising = sum("raises" in o for o in run_a["outcomes"].values())
            if raising > max_raising:
                found.append(f"{raising} tests expect an exception (at most {max_raising})")
            if len({json.dumps(o, sort_keys=True) for o in run_a["outcomes"].values()}) < 2:
                found.append("every test expects the same output")
            missed = body_lines(source) - set(run_a["lines"])
            if missed:
                found.append(f"reference lines never run by a test: {sorted(missed)}")
        if len(source.splitlines()) > 50:
            found.append(f"reference has {len(source.splitlines())} lines (max 50)")
        tests = record["test_cases"]
        if sorted(tests) != sorted(f"test{k}" for k in range(1, 11)):
            found.append(f"test names are {sorted(tests)}, expected test1..test10")
        if len(set(tests.values())) != len(tests):
            found.append("duplicate test calls")
        fn = function_name(source)
        if f"{fn}(" not in record["problem_description"]:
            found.append(f"description does not name {fn}(...)")
        if any(not call.strip().startswith(f"{fn}(") for call in tests.values()):
            found.append(f"a test does not call {fn}")
        if found:
            problems[i] = found
        for _, mutated in mutants(source):
            mutant_items.append({"source": mutated, "tests": tests})
            owners.append(i)
    totals, caught = [0] * len(records), [0] * len(records)
    for i, outcome in zip(owners, run_references(mutant_items, hash_seed=0)):
        totals[i] += 1
        caught[i] += outcome.get("outcomes") != first[i].get("outcomes")
    detection = [c / t if t else 1.0 for c, t in zip(caught, totals)]
    return problems, detection


if __name__ == "__main__":
    data = json.load(sys.stdin)
    json.dump([_run_one(item["source"], item["tests"]) for item in data], sys.stdout)
