"""Feedback on code the agent shows: what a person would say about a draft of their function.

WHY a module of its own: agents often show a draft and ask whether it is right. The person
checks it against what they know (:mod:`.sheet`): a wrong name or too few parameters gets the
signature, a parameter the draft never reads gets the rule about it, then the first important
fact whose numbers or values are missing, a missing ``raise`` or missing rounding. The draft is
only parsed, never run; one that does not parse gets "I can't make sense of that code".
"""

from __future__ import annotations

import ast
import math
import random
import re

from colbench_gym.simulators.offline_backend.phrasing import lower_first
from colbench_gym.simulators.offline_backend.sheet import FactSheet

_CODE_OK = ("That looks like what I had in mind, as far as I can tell.",
            "As far as I can tell, that matches what I want.")


_CODE_FIX = ("Almost, but {fact}", "Not quite: {fact}", "One thing is off: {fact}")


_CODE_BAD = ("I can't make sense of that code; could you show the whole function?",)


def code_feedback(sheet: FactSheet, code: str, rng: random.Random) -> str:
    """What the person says about a draft: the first thing it gets wrong, or that it looks right."""
    tree = _parse_lenient(code)
    if tree is None:
        return rng.choice(_CODE_BAD)
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    signature = next((f for f in sheet.facts if f.kind == "signature"), None)
    if sheet.func_name and signature is not None:
        mine = next((d for d in defs if d.name == sheet.func_name), None)
        n_args = len(mine.args.posonlyargs) + len(mine.args.args) if mine else -1
        if mine is None or (n_args < len(sheet.params) and not mine.args.vararg):
            return rng.choice(_CODE_FIX).format(fact=lower_first(signature.text, sheet))
    nums: set[float] = set()
    strs: set[str] = set()
    calls: set[str] = set()
    names: set[str] = set()
    raises = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Raise):
            raises = True
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                v = float(node.value)
                nums.add(v)
                if 0 < abs(v) < 1:
                    nums.add(v * 100)  # 0.08 in the code for "8%"
                elif abs(v) > 1:
                    nums.add(v / 100)
            elif isinstance(node.value, str):
                strs.add(node.value.lower())
        elif isinstance(node, ast.Call):
            f = node.func
            calls.add(f.id if isinstance(f, ast.Name) else getattr(f, "attr", ""))
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            calls.add("round")
    ranked = sorted(sheet.facts, key=lambda f: -f.priority)
    # a parameter the reference relies on but the draft never reads: its rule is missing
    mine_fn = next((d for d in defs if d.name == sheet.func_name), None)
    used = {n.id for n in ast.walk(mine_fn) if isinstance(n, ast.Name)} if mine_fn else names
    for p in sheet.params:
        if p in used:
            continue
        about = [f for f in ranked if f.polarity != "no" and f.kind not in ("signature", "param", "params", "doc")
                 and re.search(rf"(?<![\w']){re.escape(p)}(?![\w'])", f.text)]
        if about:
            return rng.choice(_CODE_FIX).format(fact=lower_first(about[0].text, sheet))
    for fact in ranked:
        if fact.polarity == "no" or fact.kind in ("signature", "doc"):
            continue
        if fact.kind == "round" and not ({"round", "floor", "ceil", "int"} & calls):
            return rng.choice(_CODE_FIX).format(fact=lower_first(fact.text, sheet))
        if "it should raise" in fact.text and not raises:
            return rng.choice(_CODE_FIX).format(fact=lower_first(fact.text, sheet))
        missing_n = [x for x in fact.numbers if x not in (0.0, 1.0) and not any(math.isclose(x, y) for y in nums)]
        missing_s = [s for s in fact.strings if s.strip() and s not in strs and len(s) <= 40]
        if fact.kind in ("param", "shape", "round"):
            missing_n = []
        if missing_n or missing_s:
            return rng.choice(_CODE_FIX).format(fact=lower_first(fact.text, sheet))
    return rng.choice(_CODE_OK)


def _parse_lenient(code: str) -> ast.Module | None:
    """Parse the code an agent shows the way a reader would: ignore stray ``` markers and any
    trailing prose that is not Python. Only parsed, never run."""
    lines = [ln for ln in code[:50000].splitlines() if not re.fullmatch(r"\s*```[\w+-]*\s*", ln)]
    for end in range(len(lines), max(len(lines) - 60, 0), -1):
        try:
            return ast.parse("\n".join(lines[:end]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # try without the last line; if nothing parses, the reply says so
    return None


__all__ = ["code_feedback"]
