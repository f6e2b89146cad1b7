"""Plain-English rendering of Python expressions, for the offline simulator's facts.

WHY a module of its own: a person states ``weight_kg <= 2`` as "weight_kg is at most 2" and
``round(base * 0.5, 2)`` as "half of the base, rounded to 2 decimals". :class:`Speaker` does
that for any expression, keeping parameter names (the agent must use them), naming locals
("the base cost"), standing in for short aliases ("the entry's 'pages'") and remembering the
numbers and values it said, so a fact knows what it mentions. Calls (``round``, ``sorted``,
``.get``, ...) are worded by :class:`.calls.CallPhrases`, conditions by
:class:`.conditions.ConditionPhrases`; both are mixed in here. Static only: nothing is executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from colbench_gym.simulators.offline_backend.calls import CallPhrases
from colbench_gym.simulators.offline_backend.conditions import ConditionPhrases
from colbench_gym.simulators.offline_backend.syntax import NOT_CONST, const_key, is_const
from colbench_gym.simulators.offline_backend.wording import (
    element_noun,
    fmt_number,
    fmt_string,
    humanise,
    join_and,
    ordinal,
    singular,
)

#: Renderings longer than this fall back to a vaguer phrase ("a calculation with x and y").
MAX_SAY = 150


#: Noted (once) on the reader's problems when an expression is too deep to put into words.
TOO_DEEP = "an expression nested too deeply to put into words (RecursionError) is called 'a calculation'"


_BINOP = {ast.Add: ("plus", 1), ast.Sub: ("minus", 1), ast.Mult: ("times", 2),
          ast.Div: ("divided by", 2), ast.FloorDiv: ("divided by (rounded down)", 2),
          ast.Mod: ("modulo", 2), ast.Pow: ("to the power of", 3)}


class Speaker(CallPhrases, ConditionPhrases):
    """Renders expressions as plain English, remembering the constants it mentioned.

    Parameters keep their own names (the agent must use them); locals become "the base cost";
    short loop variables and aliases become what they stand for ("the entry's 'pages'").
    """

    def __init__(self, params: Iterable[str], aliases: dict[str, str] | None = None,
                 expansions: dict[str, ast.AST] | None = None, key_nouns: dict[str, str] | None = None,
                 problems: list[str] | None = None):
        self.params = set(params)
        self.aliases = dict(aliases or {})
        self.expansions = dict(expansions or {})
        self.key_nouns = dict(key_nouns or {})
        self.numbers: set[float] = set()
        self.strings: set[str] = set()
        self.names: set[str] = set()
        self.expanding: set[str] = set()
        self.brief = False  # leave out ".get" defaults (used for alias phrases)
        self.item_names: tuple[str, str] | None = None
        self.in_tuple = False
        self.constants: dict[str, object] = {}  # locals set once to a constant: "the goal (30)"
        self.param_kinds: dict[str, str] = {}
        self.explain: dict[str, ast.AST] = {}  # locals set once to a short formula: "the needed (...)"
        self.cond_defs: dict[str, ast.AST] = {}  # locals that hold a condition: "night = hour >= 22"  # "a number", "text", ... (for "is empty" vs "is false")
        self.tables: set[str] = set()  # names of lookup tables ("the rate for plan", not "rates' plan")
        self.problems = problems  # where to note what could not be put into words (the reader's list)

    def start(self) -> None:
        self.numbers, self.strings, self.names = set(), set(), set()

    # -- names and constants
    def target(self, node: ast.AST) -> str:
        """An assignment target: a local's plain name, never its explanation."""
        if isinstance(node, ast.Name):
            return self.name(node.id, bare=True)
        return self.say(node)

    def name(self, ident: str, bare: bool = False) -> str:
        self.names.add(ident)
        if ident in self.aliases:
            return self.aliases[ident]
        if ident in self.params:
            return ident
        if ident in ("True", "False", "None"):
            return ident.lower()
        if ident in self.constants and not bare:
            return f"the {humanise(ident)} ({self.const(self.constants[ident])})"
        if ident in self.explain and not bare and ident not in self.expanding:
            self.expanding.add(ident)
            try:
                inner = self.say(self.explain[ident])
            finally:
                self.expanding.discard(ident)
            if len(inner) <= 70:
                return f"the {humanise(ident)} ({inner})"
        return "the " + humanise(ident)

    def const(self, value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "None"
        if isinstance(value, (int, float)):
            self.numbers.add(float(value))
            return fmt_number(value)
        if isinstance(value, str):
            self.strings.add(value.lower())
            return fmt_string(value)
        return repr(value)[:40]

    def possessive(self, phrase: str) -> str:
        return phrase + ("'" if phrase.endswith("s") and not phrase.endswith("'s") else "'s")

    # -- expressions
    def say(self, node: ast.AST, prec: int = 0) -> str:
        try:
            text = self._say(node, prec)
        except RecursionError:
            text = "a calculation"
            if self.problems is not None and TOO_DEEP not in self.problems:
                self.problems.append(TOO_DEEP)
        if prec >= 2 and ", " in text and isinstance(node, (ast.Call, ast.UnaryOp, ast.IfExp)) and \
                not (text.startswith("(") and text.endswith(")")):
            text = f"({text})"  # "(x, rounded to a whole number) divided by people"
        if len(text) > MAX_SAY:
            involved = sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                              & (self.params | set(self.aliases) | set(self.expansions)))
            text = "a calculation with " + join_and([self.name(n) for n in involved][:4]) if involved \
                else "a longer calculation"
        return text

    def _say(self, node: ast.AST, prec: int) -> str:
        if isinstance(node, ast.Constant):
            return self.const(node.value)
        if isinstance(node, ast.Name):
            if node.id in self.expansions and node.id not in self.expanding:
                self.expanding.add(node.id)
                saved = (set(self.numbers), set(self.strings), set(self.names))
                try:
                    text = self.say(self.expansions[node.id], prec)
                finally:
                    self.expanding.discard(node.id)
                if len(text) <= 90 and not text.startswith("a calculation"):
                    return text
                self.numbers, self.strings, self.names = saved  # too long to spell out: keep the name
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp):
            inner = node.operand
            if isinstance(node.op, ast.USub) and isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.FloorDiv) \
                    and isinstance(inner.left, ast.UnaryOp) and isinstance(inner.left.op, ast.USub):
                # -(-a // b): the ceiling-division idiom
                return f"{self.say(inner.left.operand, 2)} divided by {self.say(inner.right, 3)}, rounded up"
            if isinstance(node.op, ast.USub):
                if isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float)):
                    return self.const(-node.operand.value)
                return "minus " + self.say(node.operand, 4)
            if isinstance(node.op, ast.Not):
                return self.negate(node.operand)
            return self.say(node.operand, prec)
        if isinstance(node, ast.BinOp):
            return self._binop(node, prec)
        if isinstance(node, ast.BoolOp):
            word = " and " if isinstance(node.op, ast.And) else " or "
            return word.join(self.cond(v) for v in node.values)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            return f"{self.say(node.body)} if {self.cond(node.test)}, otherwise {self.say(node.orelse)}"
        if isinstance(node, ast.Call):
            return self.call_phrase(node)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "math":
                return {"pi": "pi", "e": "e", "inf": "infinity"}.get(node.attr, node.attr)
            return f"{self.possessive(self.say(node.value, 5))} {humanise(node.attr)}"
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Dict):
            if not node.keys:
                return "an empty dict"
            parts = []
            for k, v in zip(node.keys, node.values):
                if k is None:
                    parts.append(f"everything in {self.say(v)}")
                else:
                    parts.append(f"{self.say(k)} ({self.say(v)})")
            return "a dict with " + join_and(parts)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if not node.elts:
                return {ast.List: "an empty list", ast.Tuple: "an empty tuple", ast.Set: "an empty set"}[type(node)]
            if isinstance(node, ast.Tuple):
                return f"the {'pair' if len(node.elts) == 2 else 'tuple'} ({', '.join(self.say(e) for e in node.elts)})"
            kind = {ast.List: "a list of", ast.Set: "the set of"}[type(node)]
            return f"{kind} {join_and([self.say(e) for e in node.elts])}"
        if isinstance(node, ast.JoinedStr):
            return "text like " + self.template(node)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            gen = node.generators[0]
            if isinstance(gen.target, ast.Tuple) and isinstance(node.elt, ast.Name) and not gen.ifs and \
                    any(isinstance(e, ast.Name) and e.id == node.elt.id for e in gen.target.elts):
                pos = [e.id if isinstance(e, ast.Name) else "" for e in gen.target.elts].index(node.elt.id)
                return f"just the {humanise(node.elt.id)} ({ordinal(pos)} part) of each item in {self.say(gen.iter, 5)}"
            if isinstance(node.elt, ast.Name) and isinstance(gen.target, ast.Name) and node.elt.id == gen.target.id:
                noun = self.target_noun(gen.target, gen.iter)
                conds = [self.cond(c) for c in gen.ifs]
                plural = noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
                where = f" where {join_and(conds)}" if conds else ""
                head = "the distinct " if isinstance(node, ast.SetComp) else "the "
                return f"{head}{plural} of {self.say(gen.iter, 5)}{where}"
            elt = self.say(node.elt)
            src = f"each {self.target_noun(gen.target, gen.iter)} in {self.say(gen.iter, 5)}"
            conds = [self.cond(c) for c in gen.ifs]
            where = f" where {join_and(conds)}" if conds else ""
            head = {ast.ListComp: "the list of", ast.SetComp: "the distinct", ast.GeneratorExp: ""}[type(node)]
            return f"{head} {elt} for {src}{where}".strip()
        if isinstance(node, ast.DictComp):
            gen = node.generators[0]
            return (f"a dict mapping {self.say(node.key)} to {self.say(node.value)} for each "
                    f"{self.target_noun(gen.target, gen.iter)} in {self.say(gen.iter, 5)}")
        if isinstance(node, ast.Lambda):
            return self.say(node.body)
        if isinstance(node, ast.Starred):
            return self.say(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.say(node.value, prec)
        text = ast.unparse(node)
        return f"`{text}`" if len(text) <= 30 else "a calculation"

    def target_noun(self, target: ast.AST, iterable: ast.AST) -> str:
        if isinstance(target, ast.Name):
            if target.id in self.aliases:
                return self.aliases[target.id].removeprefix("the ")
            return element_noun(target.id, iterable)
        if isinstance(target, ast.Tuple):
            if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and \
                    iterable.func.attr == "items" and len(target.elts) == 2:
                return "key and value"
            return " and ".join(self.aliases.get(e.id, "the " + element_noun(e.id, iterable)).removeprefix("the ")
                                if isinstance(e, ast.Name) else "item" for e in target.elts)
        return "item"

    def _concat_parts(self, node: ast.AST) -> list[ast.AST] | None:
        """``str(x) + 's'`` / ``f"..." + 'min'``: the pieces of a text built by ``+``, else None."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._concat_parts(node.left), self._concat_parts(node.right)
            if left is not None and right is not None:
                return left + right
            if left is not None or right is not None:
                return (left or [node.left]) + (right or [node.right])
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, ast.Name) and isinstance(self.constants.get(node.id), str):
            return [ast.Constant(self.constants[node.id])]
        if isinstance(node, ast.JoinedStr):
            return list(node.values)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
            return [node]
        return None

    def _per_unit(self, node: ast.BinOp) -> str | None:
        """``2 * (visits - 12)`` -> "2 for each visit above 12": how people state tiered rates."""
        for rate, diff in ((node.left, node.right), (node.right, node.left)):
            if not (isinstance(diff, ast.BinOp) and isinstance(diff.op, ast.Sub) and is_const(diff.right)):
                continue
            if not (is_const(rate) or (isinstance(rate, ast.Name) and rate.id in self.constants)):
                continue
            amount = diff.left
            if not isinstance(amount, ast.Name) or amount.id not in self.params:
                continue  # "for each remaining above 9300" would not be English
            unit = singular(humanise(amount.id).split()[-1])
            return f"{self.say(rate)} for each {unit} above {self.say(diff.right)}"
        return None

    def _binop(self, node: ast.BinOp, prec: int) -> str:
        op = type(node.op)
        if op is ast.Add:
            parts = self._concat_parts(node)
            if parts and any(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts) and len(parts) > 1:
                return "text like " + self.template(ast.JoinedStr(values=[
                    p if isinstance(p, (ast.Constant, ast.FormattedValue)) else ast.FormattedValue(value=p, conversion=-1, format_spec=None)
                    for p in parts]))
        if op is ast.Mod and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return "text like " + fmt_string(node.left.value)
        word, p = _BINOP.get(op, ("combined with", 1))
        left_c, right_c = const_key(node.left), const_key(node.right)
        if op is ast.Add and any(isinstance(x, ast.Name) and self.param_kinds.get(x.id, "").startswith("a list")
                                 for x in (node.left, node.right)):
            return f"{self.say(node.left, 5)} followed by {self.say(node.right, 5)}"
        if op is ast.Mult:
            per = self._per_unit(node)
            if per:
                return per
        if op is ast.Mult and (right_c == 0.5 or left_c == 0.5):
            other = node.left if right_c == 0.5 else node.right
            self.numbers.add(0.5)
            text = f"half of {self.say(other, 5)}"
        elif op is ast.Div and right_c == 100 and not isinstance(right_c, bool):
            self.numbers.add(100.0)
            text = f"{self.say(node.left, p)} divided by 100"
        else:
            left = self.say(node.left, p)
            right = self.say(node.right, p + (1 if op in (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod) else 0))
            text = f"{left} {word} {right}"
            if op is ast.FloorDiv:
                text = f"{left} divided by {right} (rounded down)"
        return f"({text})" if p < prec else text

    def _subscript(self, node: ast.Subscript) -> str:
        value, index = node.value, node.slice
        owner = self.say(value, 5)
        k = const_key(index)
        if isinstance(k, str):
            self.strings.add(k.lower())
            return f"{self.possessive(owner)} {fmt_string(k)}"
        if isinstance(k, int) and not isinstance(k, bool):
            return f"the {ordinal(k)} item of {owner}"
        if isinstance(index, ast.Slice):
            lo, hi, step = (const_key(x) if x is not None else None for x in (index.lower, index.upper, index.step))
            if step == -1 and index.lower is None and index.upper is None:
                return f"{owner} reversed"
            if index.lower is None and hi is not NOT_CONST and isinstance(hi, int):
                return f"the first {hi} of {owner}" if hi >= 0 else f"{owner} without the last {-hi}"
            if index.lower is None and index.step is None and isinstance(index.upper, ast.Name):
                limit = self.constants.get(index.upper.id)
                if isinstance(limit, int) and not isinstance(limit, bool):
                    return f"the first {self.const(limit)} of {owner}"
                return f"the first {self.say(index.upper)} of {owner}"
            if index.upper is None and lo is not NOT_CONST and isinstance(lo, int):
                return f"the last {-lo} of {owner}" if lo < 0 else f"{owner} from position {lo} on"
            return f"part of {owner}"
        if isinstance(value, ast.Name) and value.id not in self.tables and value.id not in self.params:
            return f"{owner} entry for {self.say(index)}"
        noun = singular(owner.removeprefix("the ")) if isinstance(value, ast.Name) else owner
        return f"the {noun} for {self.say(index)}"

    def template(self, node: ast.JoinedStr) -> str:
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
                self.strings.add(str(part.value).lower())
            elif isinstance(part, ast.FormattedValue):
                inner = part.value
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "str" and inner.args:
                    inner = inner.args[0]
                label = self.say(inner).removeprefix("the ").replace(", rounded", " rounded")
                spec = ""
                if isinstance(part.format_spec, ast.JoinedStr):
                    spec = "".join(str(v.value) for v in part.format_spec.values if isinstance(v, ast.Constant))
                m = re.search(r"\.(\d+)f", spec)
                pad = re.fullmatch(r"0(\d+)d?", spec)
                if m:
                    self.numbers.add(float(m.group(1)))
                    label += f" with {m.group(1)} decimals"
                elif pad:
                    self.numbers.add(float(pad.group(1)))
                    label += f" as {pad.group(1)} digits with leading zeros"
                elif "%" in spec:
                    label += " as a percentage"
                elif "," in spec:
                    label += " with thousands commas"
                out.append(f"<{label}>")
        text = "".join(out).replace("\n", "\\n")
        return f"'{text}'" if out else "an empty string"


__all__ = ["MAX_SAY", "Speaker"]
