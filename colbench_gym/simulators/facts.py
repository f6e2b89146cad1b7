"""Facts a person knows about the function they want, read from the hidden reference with ``ast``.

WHY: the offline simulator stands in for the person who "wrote" the reference. A person does
not recite code; they know that basic costs 20, that someone who never came pays half, that the
result is rounded to 2 decimals. This module turns the reference into such facts -- one plain
sentence each, never a line of source -- plus the words, numbers and quoted values that make a
fact relevant to a question. :mod:`colbench_gym.simulators.offline_backend` picks among them.

Everything here is static analysis: the reference is parsed, never executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from colbench_gym.simulators.question import keywords, split_identifier

#: Renderings longer than this fall back to a vaguer phrase ("a calculation with x and y").
MAX_SAY = 150
#: Facts longer than this are split or shortened; replies are capped at 400 characters.
MAX_FACT = 300


@dataclass(frozen=True)
class Fact:
    """One thing the person knows, as one plain-language sentence."""

    kind: str  # signature | param | table | case | branch | assign | accumulate | result |
    #            round | raise | sort | tie | constant | doc
    text: str
    topic: str  # a few words naming what the fact is about, for nudges ("the plan prices")
    keywords: frozenset[str] = frozenset()
    numbers: frozenset[float] = frozenset()
    strings: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    priority: float = 1.0
    polarity: str = ""  # "no" when the fact is a negative ("no rounding needed")


@dataclass
class FactSheet:
    """Everything the simulator knows about one reference: the function's name, its
    parameters, the facts, and the reference's own lines (to make sure none is ever echoed)."""

    func_name: str | None
    params: list[str]
    facts: list[Fact]
    source_lines: list[str] = field(default_factory=list)
    numbers: frozenset[float] = frozenset()
    strings: frozenset[str] = frozenset()
    parse_error: str | None = None


# ----------------------------------------------------------------------------- wording helpers

def humanise(name: str) -> str:
    return " ".join(split_identifier(name)) or name


def singular(noun: str) -> str:
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return noun[:-2]
    if noun.endswith("s") and not noun.endswith(("ss", "us", "is")) and len(noun) > 3:
        return noun[:-1]
    return noun


def fmt_number(value: float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0" if abs(value) < 1e6 else str(int(value))
    text = repr(value)
    if "e" in text:
        text = f"{value:.10f}".rstrip("0")
    return text


def fmt_string(value: str) -> str:
    if value == "":
        return "an empty string"
    if value.isspace():
        return "a space" if value == " " else "whitespace"
    shown = value if len(value) <= 60 else value[:57] + "..."
    shown = shown.replace("\n", "\\n")
    return f"'{shown}'"


def join_and(items: list[str], word: str = "and") -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text and not text.startswith(("'", "`")) else text


def sentence(text: str) -> str:
    text = text.strip()
    text = re.sub(r"\s+", " ", text)
    if not text.endswith((".", "!", "?")):
        text += "."
    return capitalise(text)


def ordinal(n: int) -> str:
    names = {0: "first", 1: "second", 2: "third", 3: "fourth", 4: "fifth", -1: "last",
             -2: "second-to-last"}
    return names.get(n, f"item {n}")


_CMP_WORDS = {ast.Gt: "more than", ast.GtE: "at least", ast.Lt: "less than", ast.LtE: "at most",
              ast.Eq: "", ast.NotEq: "not", ast.In: "one of", ast.NotIn: "not one of"}
_CMP_FLIP = {ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.GtE: ast.LtE, ast.LtE: ast.GtE, ast.Eq: ast.Eq,
             ast.NotEq: ast.NotEq}
_CMP_NEG = {ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
            ast.IsNot: ast.Is}
_BINOP = {ast.Add: ("plus", 1), ast.Sub: ("minus", 1), ast.Mult: ("times", 2),
          ast.Div: ("divided by", 2), ast.FloorDiv: ("divided by (rounded down)", 2),
          ast.Mod: ("modulo", 2), ast.Pow: ("to the power of", 3)}
_TYPE_WORDS = {"int": "a whole number", "float": "a number", "str": "text", "list": "a list",
               "dict": "a dict", "tuple": "a tuple", "bool": "true or false", "set": "a set"}
_STR_METHODS = {"lower": "{x} in lowercase", "upper": "{x} in uppercase", "strip": "{x} trimmed",
                "title": "{x} in title case", "capitalize": "{x} capitalised",
                "isdigit": "{x} is all digits", "isalpha": "{x} is all letters",
                "isnumeric": "{x} is numeric", "isalnum": "{x} is letters and digits",
                "isupper": "{x} is uppercase", "islower": "{x} is lowercase",
                "isspace": "{x} is blank", "keys": "the keys of {x}", "values": "the values of {x}",
                "items": "the entries of {x}", "copy": "a copy of {x}",
                "lstrip": "{x} trimmed on the left", "rstrip": "{x} trimmed on the right",
                "swapcase": "{x} with letter case swapped"}


def _const_key(node: ast.AST) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    return _NOT_CONST


_NOT_CONST = object()


def is_const(node: ast.AST | None) -> bool:
    return node is not None and _const_key(node) is not _NOT_CONST


def is_trivial_init(node: ast.AST) -> bool:
    """``0``, ``0.0``, ``[]``, ``{}``, ``''``, ``None``, ``set()``: starting values, not facts."""
    v = _const_key(node)
    if v is not _NOT_CONST:
        return v in (0, "", None) and not isinstance(v, bool)
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.Tuple)):
        return not (getattr(node, "elts", None) or getattr(node, "keys", None))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("set", "list", "dict") and not node.args


def is_table(node: ast.AST) -> bool:
    """A literal lookup table: a dict/list/tuple/set of at least two constant-keyed entries."""
    if isinstance(node, ast.Dict):
        return len(node.keys) >= 2 and all(k is not None and is_const(k) for k in node.keys)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return len(node.elts) >= 2 and all(is_const(e) for e in node.elts)
    return False


# ----------------------------------------------------------------------------- the renderer

class Speaker:
    """Renders expressions as plain English, remembering the constants it mentioned.

    Parameters keep their own names (the agent must use them); locals become "the base cost";
    short loop variables and aliases become what they stand for ("the entry's 'pages'").
    """

    def __init__(self, params: Iterable[str], aliases: dict[str, str] | None = None,
                 expansions: dict[str, ast.AST] | None = None, key_nouns: dict[str, str] | None = None):
        self.params = set(params)
        self.aliases = dict(aliases or {})
        self.expansions = dict(expansions or {})
        self.key_nouns = dict(key_nouns or {})
        self.numbers: set[float] = set()
        self.strings: set[str] = set()
        self.names: set[str] = set()
        self._expanding: set[str] = set()
        self.brief = False  # leave out ".get" defaults (used for alias phrases)
        self._item_names: tuple[str, str] | None = None
        self._in_tuple = False
        self.constants: dict[str, object] = {}  # locals set once to a constant: "the goal (30)"
        self.param_kinds: dict[str, str] = {}
        self.explain: dict[str, ast.AST] = {}  # locals set once to a short formula: "the needed (...)"
        self.cond_defs: dict[str, ast.AST] = {}  # locals that hold a condition: "night = hour >= 22"  # "a number", "text", ... (for "is empty" vs "is false")
        self.tables: set[str] = set()  # names of lookup tables ("the rate for plan", not "rates' plan")

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
        if ident in self.explain and not bare and ident not in self._expanding:
            self._expanding.add(ident)
            try:
                inner = self.say(self.explain[ident])
            finally:
                self._expanding.discard(ident)
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
            if node.id in self.expansions and node.id not in self._expanding:
                self._expanding.add(node.id)
                try:
                    return self.say(self.expansions[node.id], prec)
                finally:
                    self._expanding.discard(node.id)
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
            return self._call(node)
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
                noun = self._target_noun(gen.target, gen.iter)
                conds = [self.cond(c) for c in gen.ifs]
                plural = noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
                where = f" where {join_and(conds)}" if conds else ""
                head = "the distinct " if isinstance(node, ast.SetComp) else "the "
                return f"{head}{plural} of {self.say(gen.iter, 5)}{where}"
            elt = self.say(node.elt)
            src = f"each {self._target_noun(gen.target, gen.iter)} in {self.say(gen.iter, 5)}"
            conds = [self.cond(c) for c in gen.ifs]
            where = f" where {join_and(conds)}" if conds else ""
            head = {ast.ListComp: "the list of", ast.SetComp: "the distinct", ast.GeneratorExp: ""}[type(node)]
            return f"{head} {elt} for {src}{where}".strip()
        if isinstance(node, ast.DictComp):
            gen = node.generators[0]
            return (f"a dict mapping {self.say(node.key)} to {self.say(node.value)} for each "
                    f"{self._target_noun(gen.target, gen.iter)} in {self.say(gen.iter, 5)}")
        if isinstance(node, ast.Lambda):
            return self.say(node.body)
        if isinstance(node, ast.Starred):
            return self.say(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.say(node.value, prec)
        text = ast.unparse(node)
        return f"`{text}`" if len(text) <= 30 else "a calculation"

    def _target_noun(self, target: ast.AST, iterable: ast.AST) -> str:
        if isinstance(target, ast.Name):
            if target.id in self.aliases:
                return self.aliases[target.id].removeprefix("the ")
            return element_noun(target.id, iterable)
        if isinstance(target, ast.Tuple):
            return " and ".join(element_noun(e.id, iterable) if isinstance(e, ast.Name) else "item"
                                for e in target.elts)
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
        left_c, right_c = _const_key(node.left), _const_key(node.right)
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

    def _call(self, node: ast.Call) -> str:
        func, args = node.func, node.args
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Name):
            f = func.id
            a = [self.say(x, 5) for x in args]
            if f == "len" and args:
                return f"the length of {a[0]}"
            if f == "sum" and args:
                return f"the sum of {a[0]}"
            if f in ("max", "min") and args:
                return self._extreme(f, node)
            if f == "round" and args:
                digits = _const_key(args[1]) if len(args) > 1 else kw.get("ndigits") and _const_key(kw["ndigits"])
                inner = self.say(args[0])
                if isinstance(digits, int) and not isinstance(digits, bool):
                    self.numbers.add(float(digits))
                    return f"{inner}, rounded to {digits} decimal{'s' if digits != 1 else ''}"
                return f"{inner}, rounded to a whole number"
            if f == "abs" and args:
                return f"the absolute value of {a[0]}"
            if f in ("int",) and args:
                if isinstance(args[0], ast.Call) and isinstance(args[0].func, ast.Name) and args[0].func.id == "round":
                    return self.say(args[0], 5)
                if isinstance(args[0], ast.Constant) or (isinstance(args[0], ast.Call) and isinstance(args[0].func, ast.Name)
                                                         and args[0].func.id in ("round", "len")):
                    return f"{a[0]} as a whole number"
                return f"{a[0]} with the decimals dropped"
            if f == "float" and args:
                if isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                    return {"inf": "infinity", "-inf": "minus infinity"}.get(args[0].value.lower(), a[0])
                return f"{a[0]} as a decimal number"
            if f == "str" and args:
                return f"{a[0]} as text"
            if f == "bool" and args:
                return f"whether {a[0]} is non-empty"
            if f == "sorted" and args:
                return self._sorted_phrase(node)
            if f in ("list", "tuple") and args:
                return a[0] if f == "list" else f"{a[0]} as a tuple"
            if f == "set" and args:
                return f"the distinct {a[0]}"
            if f == "reversed" and args:
                return f"{a[0]} reversed"
            if f == "enumerate" and args:
                return f"{a[0]} with positions"
            if f == "zip" and args:
                return join_and(a) + " side by side"
            if f == "range" and args:
                if len(args) == 1:
                    return f"0 up to {a[0]} (not included)"
                return f"{a[0]} up to {a[1]} (not included)"
            if f in ("any", "all") and args:
                return f"{'any' if f == 'any' else 'all'} of {a[0]}"
            if f == "isinstance" and len(args) == 2:
                return f"{a[0]} is {self._type_phrase(args[1])}"
            if f == "dict" and args:
                return f"{a[0]} as a dict"
            if f == "dict" and not args and kw:
                return "a dict with " + join_and([f"'{k}' ({self.say(v)})" for k, v in kw.items()])
            if f in _TYPE_WORDS and not args:
                return {"list": "an empty list", "dict": "an empty dict", "set": "an empty set",
                        "str": "an empty string", "int": "0", "float": "0.0"}.get(f, f)
            return f"{humanise(f)} of {join_and(a)}" if a else f"{humanise(f)}"
        if isinstance(func, ast.Attribute):
            m = func.attr
            base = func.value
            if isinstance(base, ast.Name) and base.id == "math" and args:
                x = self.say(args[0], 5)
                return {"sqrt": f"the square root of {x}", "floor": f"{x} rounded down",
                        "ceil": f"{x} rounded up", "log": f"the logarithm of {x}",
                        "exp": f"e to the power of {x}", "fabs": f"the absolute value of {x}",
                        "pow": f"{x} to the power of {self.say(args[1]) if len(args) > 1 else '?'}",
                        "isclose": f"{x} is close to {self.say(args[1]) if len(args) > 1 else '?'}",
                        }.get(m, f"math {m} of {x}")
            if m == "get" and args:
                owner = self.say(base, 5)
                key = args[0]
                if isinstance(base, ast.Dict) or (isinstance(base, ast.Name) and (base.id in self.key_nouns
                                                  or base.id in self.tables) and not isinstance(key, ast.Constant)):
                    what = f"the value for {self.say(key)}"
                    if isinstance(base, ast.Name):
                        what = f"the {singular(humanise(base.id))} for {self.say(key)}"
                else:
                    what = f"{self.possessive(owner)} {self.say(key)}"
                default = self.say(args[1]) if len(args) > 1 else "None"
                return what if self.brief else f"{what} ({default} if missing)"
            if m == "join" and args and isinstance(base, ast.Constant):
                if base.value == "":
                    return f"{self.say(args[0], 5)}, joined together"
                return f"{self.say(args[0], 5)} joined with {self.say(base)}"
            if m == "split":
                x = self.say(base, 5)
                return f"the parts of {x} split on {self.say(args[0])}" if args else f"the words of {x}"
            if m in ("startswith", "endswith") and args:
                return f"{self.say(base, 5)} {'starts' if m == 'startswith' else 'ends'} with {self.say(args[0])}"
            if m == "replace" and len(args) >= 2:
                return f"{self.say(base, 5)} with {self.say(args[0])} replaced by {self.say(args[1])}"
            if m == "count" and args:
                return f"how many times {self.say(args[0])} appears in {self.say(base, 5)}"
            if m in ("find", "index") and args:
                return f"the position of {self.say(args[0])} in {self.say(base, 5)}"
            if m == "format" and isinstance(base, ast.Constant) and isinstance(base.value, str):
                return "text like " + fmt_string(re.sub(r"\{[^}]*\}", "<...>", base.value))
            if m in ("append", "add") and args:
                return f"{self.say(args[0])} added to {self.say(base, 5)}"
            if m in _STR_METHODS:
                if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr in _STR_METHODS \
                        and _STR_METHODS[m].startswith("{x} "):
                    return f"{self.say(base, 5)} and {_STR_METHODS[m][4:]}"
                return _STR_METHODS[m].format(x=self.say(base, 5))
            args_text = join_and([self.say(x) for x in args])
            return f"{humanise(m)} of {self.say(base, 5)}" + (f" with {args_text}" if args_text else "")
        text = ast.unparse(node)
        return f"`{text}`" if len(text) <= 30 else "a calculation"

    def _type_phrase(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return _TYPE_WORDS.get(node.id, f"a {humanise(node.id)}")
        if isinstance(node, ast.Tuple):
            words = {_TYPE_WORDS.get(e.id, e.id) for e in node.elts if isinstance(e, ast.Name)}
            if {"a whole number", "a number"} >= words:
                return "a number"
            return " or ".join(sorted(words))
        return "of the right type"

    def _key_phrase(self, key: ast.AST | None) -> str:
        if key is None:
            return ""
        if isinstance(key, ast.Lambda):
            body, arg = key.body, key.args.args[0].arg if key.args.args else "_"
            if isinstance(body, ast.Tuple):
                self._in_tuple = True
                try:
                    parts = [self._key_part(e, arg) for e in body.elts]
                finally:
                    self._in_tuple = False
                return join_and(parts[:1]) + (", then by " + join_and(parts[1:]) if parts[1:] else "")
            return self._key_part(body, arg)
        if isinstance(key, ast.Attribute) and key.attr == "get" and isinstance(key.value, ast.Name):
            return f"{humanise(key.value.id)} value"
        if isinstance(key, ast.Name):
            return {"len": "length", "abs": "size", "str.lower": "name"}.get(key.id, humanise(key.id))
        return "a key"

    def _key_part(self, node: ast.AST, arg: str) -> str:
        desc = ""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            saved = dict(self.aliases)
            self.aliases[arg] = "the item"
            try:
                return f"the ones where {self.say(node.operand)} is true first"
            finally:
                self.aliases = saved
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            node, desc = node.operand, " (largest first)"
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            k = _const_key(node.slice)
            if node.value.id == arg and isinstance(k, int) and not isinstance(k, bool):
                if self._item_names and k in (0, 1):
                    return f"the {self._item_names[k]}{desc or (' (smallest first)' if self._in_tuple else '')}"
                return f"the {ordinal(k)} value{desc or (' (smallest first)' if self._in_tuple else '')}"
            if node.value.id == arg and isinstance(k, str):
                self.strings.add(k.lower())
                return f"{fmt_string(k)}{desc}"
            if node.value.id != arg:
                return f"the {humanise(node.value.id)} value{desc}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
            return f"length{desc}"
        if isinstance(node, ast.Name) and node.id == arg:
            return f"the item itself{desc}"
        saved = dict(self.aliases)
        self.aliases[arg] = "the item"
        try:
            return self.say(node) + desc
        finally:
            self.aliases = saved

    def _sorted_phrase(self, node: ast.Call, imperative: bool = False) -> str:
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        src = node.args[0]
        what = self.say(src, 5)
        rev = _const_key(kw["reverse"]) is True if "reverse" in kw else False
        saved = self._item_names
        if isinstance(src, ast.Call) and isinstance(src.func, ast.Attribute) and src.func.attr == "items":
            self._item_names = ("key", "value")
        try:
            key_node = kw.get("key")
            key = self._key_phrase(key_node)
        finally:
            self._item_names = saved
        by = f" by {key}" if key else ""
        multi = isinstance(key_node, ast.Lambda) and isinstance(key_node.body, ast.Tuple)
        order = "" if multi else f", {'largest' if rev else 'smallest'} first"
        if imperative:
            return f"sort {what}{by}{order}"
        return f"{what} sorted{by}{order}"

    def _extreme(self, f: str, node: ast.Call) -> str:
        word = "largest" if f == "max" else "smallest"
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if len(node.args) >= 2:
            return f"the {'larger' if f == 'max' else 'smaller'} of {join_and([self.say(a) for a in node.args], 'and')}"
        src = node.args[0]
        if "key" not in kw:
            return f"the {word} of {self.say(src, 5)}"
        inner = src.args[0] if (isinstance(src, ast.Call) and isinstance(src.func, ast.Name)
                                and src.func.id in ("sorted", "list") and src.args) else src
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "keys":
            inner = inner.func.value
        key = kw["key"]
        table = None
        if isinstance(key, ast.Lambda) and isinstance(key.body, ast.Subscript) and isinstance(key.body.value, ast.Name):
            table = key.body.value.id
        elif isinstance(key, ast.Attribute) and key.attr == "get" and isinstance(key.value, ast.Name):
            table = key.value.id
        if table and isinstance(inner, ast.Name) and inner.id == table:
            noun = self.key_nouns.get(table, "key")
            return f"the {noun} with the {word} {humanise(table)}"
        noun = element_noun("", inner) if isinstance(inner, ast.Name) else "item"
        return f"the {noun} of {self.say(inner, 5)} with the {word} {self._key_phrase(key)}"

    def _subscript(self, node: ast.Subscript) -> str:
        value, index = node.value, node.slice
        owner = self.say(value, 5)
        k = _const_key(index)
        if isinstance(k, str):
            self.strings.add(k.lower())
            return f"{self.possessive(owner)} {fmt_string(k)}"
        if isinstance(k, int) and not isinstance(k, bool):
            return f"the {ordinal(k)} item of {owner}"
        if isinstance(index, ast.Slice):
            lo, hi, step = (_const_key(x) if x is not None else None for x in (index.lower, index.upper, index.step))
            if step == -1 and index.lower is None and index.upper is None:
                return f"{owner} reversed"
            if index.lower is None and hi is not _NOT_CONST and isinstance(hi, int):
                return f"the first {hi} of {owner}" if hi >= 0 else f"{owner} without the last {-hi}"
            if index.lower is None and index.step is None and isinstance(index.upper, ast.Name):
                limit = self.constants.get(index.upper.id)
                if isinstance(limit, int) and not isinstance(limit, bool):
                    return f"the first {self.const(limit)} of {owner}"
                return f"the first {self.say(index.upper)} of {owner}"
            if index.upper is None and lo is not _NOT_CONST and isinstance(lo, int):
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

    # -- conditions
    def cond(self, node: ast.AST) -> str:
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.negate(node.operand)
        if isinstance(node, ast.BoolOp):
            word = " and " if isinstance(node.op, ast.And) else " or "
            return word.join(self.cond(v) for v in node.values)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            text = self.say(node)
            fname = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if fname in ("isinstance", "startswith", "endswith", "any", "all") or fname.startswith("is"):
                return text
            return f"{text} holds"
        if isinstance(node, ast.Name) and node.id in self.cond_defs and node.id not in self._expanding:
            self._expanding.add(node.id)
            try:
                return self.cond(self.cond_defs[node.id])
            finally:
                self._expanding.discard(node.id)
        if isinstance(node, ast.Name) and self.param_kinds.get(node.id) == "true or false":
            return f"{node.id} is true"
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return f"{self.say(node)} is set"
        return self.say(node)

    def negate(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name) and node.id in self.cond_defs and node.id not in self._expanding:
            self._expanding.add(node.id)
            try:
                return self.negate(self.cond_defs[node.id])
            finally:
                self._expanding.discard(node.id)
        if isinstance(node, ast.BoolOp):
            word = " or " if isinstance(node.op, ast.And) else " and "
            return word.join(self.negate(v) for v in node.values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.cond(node.operand)
        if isinstance(node, ast.Compare) and len(node.ops) == 2 and is_const(node.left) and is_const(node.comparators[1]) \
                and all(isinstance(o, (ast.Lt, ast.LtE)) for o in node.ops):
            return (f"{self.say(node.comparators[0], 2)} is not between {self.say(node.left)} and "
                    f"{self.say(node.comparators[1])}")
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_NEG:
            flipped = ast.Compare(left=node.left, ops=[_CMP_NEG[type(node.ops[0])]()], comparators=node.comparators)
            return self.compare(flipped)
        if isinstance(node, ast.Name) and node.id not in self.params and node.id not in self.aliases:
            noun = humanise(node.id)
            return f"there are no {noun}" if singular(noun) != noun else f"there is no {noun}"
        if isinstance(node, ast.Name) and node.id in self.param_kinds:
            kind = self.param_kinds[node.id]
            if kind == "true or false":
                return f"{node.id} is false"
            if kind in ("a number", "a whole number"):
                return f"{node.id} is 0"
            return f"{node.id} is empty"
        if isinstance(node, (ast.Name, ast.Subscript, ast.Attribute)):
            return f"{self.say(node)} is empty or missing"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance":
            return f"{self.say(node.args[0])} is not {self._type_phrase(node.args[1])}"
        return f"it is not the case that {self.cond(node)}"

    def compare(self, node: ast.Compare) -> str:
        items = [node.left, *node.comparators]
        if len(node.ops) == 2 and is_const(items[0]) and is_const(items[2]) and not is_const(items[1]):
            lo_op = _CMP_FLIP.get(type(node.ops[0]), type(node.ops[0]))
            first = self._cmp(items[1], lo_op, items[0])
            second = self._cmp(items[1], type(node.ops[1]), items[2])
            return f"{first} and {second.split(' is ', 1)[-1] if ' is ' in second else second}"
        parts = [self._cmp(items[i], type(op), items[i + 1]) for i, op in enumerate(node.ops)]
        return " and ".join(parts)

    def _cmp(self, left: ast.AST, op: type, right: ast.AST) -> str:
        if is_const(left) and not is_const(right) and op in _CMP_FLIP:
            left, right, op = right, left, _CMP_FLIP[op]
        # x % 2 == 0 -> even
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and _const_key(right) == 0 \
                and op in (ast.Eq, ast.NotEq):
            d = _const_key(left.right)
            x = self.say(left.left, 5)
            if d == 2:
                return f"{x} is {'even' if op is ast.Eq else 'odd'}"
            return f"{x} is {'' if op is ast.Eq else 'not '}divisible by {self.say(left.right)}"
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
                and _const_key(right) == 0 and op in (ast.Eq, ast.LtE, ast.Lt, ast.Gt, ast.NotEq):
            x = self.say(left.args[0], 5)
            self.numbers.add(0.0)
            return f"{x} is {'empty' if op in (ast.Eq, ast.LtE, ast.Lt) else 'not empty'}"
        lhs = self.say(left, 2)
        if op is ast.Is or op is ast.IsNot:
            if _const_key(right) is None:
                return f"{lhs} is {'missing (None)' if op is ast.Is else 'given (not None)'}"
            return f"{lhs} is {'' if op is ast.Is else 'not '}{self.say(right)}"
        if op in (ast.In, ast.NotIn):
            neg = op is ast.NotIn
            if isinstance(right, (ast.List, ast.Tuple, ast.Set)) and all(is_const(e) for e in right.elts):
                opts = join_and([self.say(e) for e in right.elts], "or")
                return f"{lhs} is {'not ' if neg else ''}{opts}"
            rhs = self.say(right, 5)
            if isinstance(left, ast.Constant) and isinstance(left.value, str):
                return f"{rhs} {'does not contain' if neg else 'contains'} {lhs}"
            return f"{lhs} is {'not ' if neg else ''}in {rhs}"
        rhs = self.say(right, 2)
        if op is ast.Eq:
            if isinstance(right, (ast.List, ast.Dict)) and not getattr(right, "elts", getattr(right, "keys", [1])):
                return f"{lhs} is empty"
            return f"{lhs} is {rhs}"
        if op is ast.NotEq:
            return f"{lhs} is not {rhs}"
        return f"{lhs} is {_CMP_WORDS.get(op, '?')} {rhs}"


def element_noun(var: str, iterable: ast.AST) -> str:
    """What one item of a loop is called: the loop variable if it is a word, else the
    collection's name made singular ("scores" -> "score")."""
    if var in ("ch", "c", "char", "chr", "letter", "character"):
        return "character"
    if var and len(var) >= 3 and var not in ("idx", "val", "elem", "obj", "tmp"):
        return humanise(var)
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range":
        return "number" if var not in ("i", "j", "k", "idx") else "position"
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
        if iterable.func.attr == "items":
            return "entry"
        if iterable.func.attr == "keys":
            return "key"
        if iterable.func.attr == "values":
            return "value"
        if iterable.func.attr == "split":
            return "word"
        iterable = iterable.func.value
    if isinstance(iterable, ast.Name):
        noun = singular(humanise(iterable.id))
        if noun != humanise(iterable.id):
            return noun
        return f"{noun} item"
    return "item"


__all__ = ["Fact", "FactSheet", "Speaker", "capitalise", "element_noun", "extract_facts", "fmt_number",
           "fmt_string", "humanise", "join_and", "keywords", "sentence", "singular"]



# ----------------------------------------------------------------------------- extraction

# words every other fact uses ("a number", "text like"): they say nothing about the topic
_FACT_GENERIC = frozenset(keywords("number numbers text decimal decimals whole true false pair tuple string "
                                   "normal otherwise worked becomes times minus plus divided goes gets "
                                   "list lists dict dicts"))

# phrases in a fact's text -> extra (stemmed) words a person might use when asking about it
_SYNONYMS: list[tuple[str, frozenset[str]]] = [
    (phrase, frozenset(keywords(words))) for phrase, words in [
        ("goes up by", "extra increase add more surcharge charge additional bonus raise"),
        ("goes down by", "discount decrease less reduce subtract deduct lower"),
        ("is multiplied by", "multiply factor scale times"),
        ("half of", "half discount divide"),
        ("more than", "above over exceed greater beyond threshold limit"),
        ("at least", "above over minimum threshold limit greater"),
        ("less than", "below under smaller threshold limit fewer"),
        ("at most", "below under maximum threshold limit"),
        ("any other", "other unknown default else unrecognized invalid anything"),
        ("otherwise", "other default else"),
        ("anything else", "other unknown default else"),
        ("may be missing", "missing absent optional default lack"),
        ("rounded", "round decimal precision"),
        ("sorted", "sort order arrange"),
        ("sort ", "sort order arrange sorted"),
        ("raise", "error exception invalid"),
        ("is empty", "empty nothing blank"),
        ("there are no", "empty nothing none"),
        ("the result is", "output return"),
        ("give back", "output return"),
        ("percentage", "percent"),
        ("the larger of", "minimum least floor limit cap clamp threshold"),
        ("the smaller of", "maximum most cap limit clamp threshold ceiling"),
    ]
]

_AUG_WORDS = {ast.Add: "goes up by", ast.Sub: "goes down by", ast.Mult: "is multiplied by",
              ast.Div: "is divided by", ast.FloorDiv: "is divided (rounded down) by", ast.Mod: "is taken modulo"}
_GENERIC_VARS = {"x", "y", "z", "n", "m", "v", "i", "j", "k", "s", "t", "a", "b", "c", "d", "e", "p",
                 "q", "r", "w", "val", "res", "tmp", "num", "item", "elem", "el"}


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _assigned_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _assigned_names(e)]
    if isinstance(target, ast.Starred):
        return _assigned_names(target.value)
    return []


def _chain(node: ast.If) -> tuple[list[tuple[ast.expr, list[ast.stmt]]], list[ast.stmt]]:
    arms: list[tuple[ast.expr, list[ast.stmt]]] = []
    cur = node
    while True:
        arms.append((cur.test, cur.body))
        if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
            cur = cur.orelse[0]
            continue
        return arms, cur.orelse


def _cond_tags(node: ast.AST, inputs: set[str] | None = None, bools: set[str] | None = None) -> set[str]:
    """Topic tags of a condition: which edge cases (zero, empty, negative, ...) it is about.

    ``inputs`` are names that stand for the caller's data (parameters, their items): only a
    test like ``pages > 0`` on those says something about negative input. ``bools`` are
    true/false parameters: ``not rush`` is not about emptiness.
    """
    inputs = inputs or set()
    bools = bools or set()
    tags: set[str] = {"condition"}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Compare):
            items = [sub.left, *sub.comparators]
            for i, op in enumerate(sub.ops):
                left, right = items[i], items[i + 1]
                c = _const_key(right) if is_const(right) else _const_key(left)
                if c is None and isinstance(op, (ast.Is, ast.IsNot, ast.Eq)):
                    tags |= {"none", "missing", "edge"}
                if isinstance(c, (int, float)) and not isinstance(c, bool):
                    if c == 0 and isinstance(op, (ast.Eq, ast.LtE, ast.NotEq)):
                        tags |= {"zero", "edge"}
                    if c <= 0 and isinstance(op, (ast.Lt, ast.LtE)):
                        tags |= {"negative", "edge"}
                    if c == 0 and isinstance(op, ast.Gt):
                        tags |= {"positive", "zero"}
                        if _names_in(left) & inputs:
                            tags |= {"negative", "edge"}
                    if isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
                        tags |= {"threshold"}
                if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
                        and c in (0, 1):
                    tags |= {"empty", "edge"}
                if isinstance(right, (ast.List, ast.Dict, ast.Tuple)) and not getattr(right, "elts", getattr(right, "keys", [1])):
                    tags |= {"empty", "edge"}
                if c == "":
                    tags |= {"empty", "edge"}
                if isinstance(op, ast.NotIn):
                    tags |= {"unknown", "invalid", "edge"}
        if isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not) and \
                isinstance(sub.operand, (ast.Name, ast.Subscript, ast.Attribute)) and \
                not (isinstance(sub.operand, ast.Name) and sub.operand.id in bools):
            tags |= {"empty", "missing", "edge"}
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "isinstance":
            tags |= {"type", "invalid", "edge"}
    return tags


class _FunctionReader:
    """Reads one function definition into facts."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, module_tables: dict[str, ast.AST],
                 main: bool, module_consts: dict[str, object] | None = None):
        self.module_consts = dict(module_consts or {})
        self.fn = fn
        self.main = main
        a = fn.args
        self.params = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        if self.params and self.params[0] in ("self", "cls"):
            self.params = self.params[1:]
        self.varargs = a.vararg.arg if a.vararg else None
        self.kwargs = a.kwarg.arg if a.kwarg else None
        self.module_tables = module_tables
        self.facts: list[Fact] = []
        self.counts: dict[str, int] = {}
        self.fallthrough: dict[int, ast.Return] = {}  # if-chain -> the return right after it
        self.consumed: set[int] = set()  # returns reported as an if-chain's "otherwise"
        self.body = list(fn.body)
        if self.body and isinstance(self.body[0], ast.Expr) and isinstance(self.body[0].value, ast.Constant) \
                and isinstance(self.body[0].value.value, str):
            self.doc: str | None = self.body[0].value.value
            self.body = self.body[1:]
        else:
            self.doc = None
        self._prepass()

    # -- pre-pass: who is assigned how often, loop aliases, value aliases, tables, key nouns
    def _prepass(self) -> None:
        all_params = set(self.params) | {p for p in (self.varargs, self.kwargs) if p}
        self.all_params = all_params
        self.loop_of: dict[str, ast.AST] = {}  # loop variable -> iterable
        aliases: dict[str, str] = {}
        self.tables: dict[str, ast.AST] = dict(self.module_tables)
        self.key_nouns: dict[str, str] = {}
        self.top_assigns: dict[str, ast.AST] = {}
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for n in _assigned_names(t):
                        self.counts[n] = self.counts.get(n, 0) + 1
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
                self.counts[node.target.id] = self.counts.get(node.target.id, 0) + 1
            elif isinstance(node, (ast.For, ast.comprehension)):
                self._loop_aliases(node.target, node.iter, aliases)
                for n in _assigned_names(node.target):
                    self.counts[n] = self.counts.get(n, 0) + 1
        self.constants: dict[str, object] = dict(self.module_consts)
        for node in self.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if self.counts.get(name) == 1 and is_const(node.value) and not isinstance(_const_key(node.value), bool) \
                        and _const_key(node.value) is not None and name not in self.all_params:
                    self.constants[name] = _const_key(node.value)
                if self.counts.get(name) == 1:
                    self.top_assigns[name] = node.value
                    if is_table(node.value):
                        self.tables[name] = node.value
        speaker = Speaker(self.params, aliases)
        speaker.brief = True
        # value aliases: n = entry.get('pages', 0) -> "the entry's 'pages'"
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0], node.value
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(target, ast.Name):
                pairs = [(target, value)]
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                pairs = list(zip(target.elts, value.elts))
            for t, v in pairs:
                if isinstance(t, ast.Name) and self.counts.get(t.id) == 1 and self._is_accessor(v) and \
                        (t.id in _GENERIC_VARS or len(t.id) <= 2):
                    aliases[t.id] = speaker.say(v)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and isinstance(sub.slice, ast.Name):
                    if sub in [node.targets[0]]:
                        self.key_nouns.setdefault(sub.value.id, speaker.say(sub.slice).removeprefix("the "))
        self.aliases = aliases
        self.speaker = Speaker(self.params, aliases, key_nouns=self.key_nouns)
        self.speaker.tables = set(self.tables)
        self.speaker.constants = dict(self.constants)
        for name, value in self.top_assigns.items():
            if name in self.aliases or name in self.constants or is_trivial_init(value) or is_table(value):
                continue
            predicate = isinstance(value, ast.Call) and (
                (isinstance(value.func, ast.Attribute) and (value.func.attr in ("startswith", "endswith")
                                                            or value.func.attr.startswith("is")))
                or (isinstance(value.func, ast.Name) and value.func.id in ("isinstance", "any", "all", "bool")))
            if isinstance(value, (ast.Compare, ast.BoolOp)) or predicate or \
                    (isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)):
                self.speaker.cond_defs[name] = value
            elif isinstance(value, (ast.BinOp, ast.Call)):
                self.speaker.explain[name] = value

    def _inputs(self) -> set[str]:
        from_params = {v for v, src in self.loop_of.items() if isinstance(src, ast.Name) and src.id in self.all_params}
        accessors = {n for n in self.aliases if n not in self.loop_of}
        return set(self.all_params) | from_params | accessors

    def _bools(self) -> set[str]:
        return {p for p, k in self.speaker.param_kinds.items() if k == "true or false"}

    def _topic_name(self, name: str) -> str:
        if name in self.all_params:
            return name
        src = self.loop_of.get(name)
        if isinstance(src, ast.Name) and src.id in self.all_params:
            return src.id
        alias = self.aliases.get(name)
        if alias:
            quoted = re.findall(r"(?<![A-Za-z])'([^']+)'", alias)
            return quoted[-1] if quoted else alias.removeprefix("the ")
        return humanise(name)

    def _is_accessor(self, node: ast.AST) -> bool:
        base = node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            base = node.func.value
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            base = node.value
        else:
            return False
        return isinstance(base, ast.Name) and (base.id in self.all_params or base.id in self.loop_of)

    def _loop_aliases(self, target: ast.AST, iterable: ast.AST, aliases: dict[str, str]) -> None:
        def put(t: ast.AST, noun: str, src: ast.AST) -> None:
            if isinstance(t, ast.Name):
                aliases.setdefault(t.id, "the " + noun)
                self.loop_of.setdefault(t.id, src)
        if isinstance(target, ast.Name):
            put(target, element_noun(target.id, iterable), iterable)
            return
        if not isinstance(target, ast.Tuple):
            return
        elts = target.elts
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
            if iterable.func.id == "enumerate" and len(elts) == 2 and iterable.args:
                put(elts[0], "position", iterable.args[0])
                if isinstance(elts[1], ast.Name):
                    put(elts[1], element_noun(elts[1].id, iterable.args[0]), iterable.args[0])
                return
            if iterable.func.id == "zip":
                for t, src in zip(elts, iterable.args):
                    if isinstance(t, ast.Name):
                        put(t, element_noun(t.id, src), src)
                return
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and iterable.func.attr == "items":
            owner = iterable.func.value
            for t, default in zip(elts, ("key", "value")):
                if isinstance(t, ast.Name):
                    put(t, humanise(t.id) if len(t.id) >= 3 and t.id not in _GENERIC_VARS else default, owner)
            return
        for t in elts:
            if isinstance(t, ast.Name):
                put(t, humanise(t.id) if len(t.id) >= 3 else "item", iterable)

    # -- fact construction
    def add(self, kind: str, text: str, topic: str, *, tags: Iterable[str] = (), priority: float = 1.0,
            extra: Iterable[str] = (), polarity: str = "", speaker: Speaker | None = None) -> None:
        sp = speaker or self.speaker
        first = re.split(r"[\s,;:']", text, maxsplit=1)[0]
        text = sentence(text)
        if first in self.all_params or first == self.fn.name:
            text = first + text[len(first):]
        if len(text) > MAX_FACT:
            return
        kw = set(keywords(text)) - _FACT_GENERIC
        low = text.lower()
        for phrase, syns in _SYNONYMS:
            if phrase in low:
                kw |= syns
        if "the result is" in low or "give back" in low:
            extra = [*extra, self.fn.name]  # "the name tag" in a question names the output
        for n in (*sp.names, *extra):
            kw |= keywords(n)
        for s in sp.strings:
            kw |= keywords(s)
        if not self.main:
            priority -= 2
        tags = set(tags)
        if sp.numbers - {0.0, 1.0} and kind not in ("round", "signature"):
            tags.add("values")
        if re.search(r"the (larger|smaller) of .*\d", text):
            tags |= {"edge", "threshold"}
        self.facts.append(Fact(kind=kind, text=text, topic=topic, keywords=frozenset(kw),
                               numbers=frozenset(sp.numbers), strings=frozenset(sp.strings),
                               tags=frozenset(tags), priority=priority, polarity=polarity))
        sp.start()

    def read(self) -> list[Fact]:
        """All facts; a step that trips over unusual code is skipped, never fatal."""
        steps = [self._signature, self._tables, lambda: self._walk(self.body, [], []), self._results,
                 self._rounding, self._raises, self._sorting, self._params, self._docstring]
        try:
            self._param_kinds()
        except Exception:  # noqa: BLE001 - a reader of arbitrary code must not crash the episode
            pass
        for step in steps:
            try:
                step()
            except Exception:  # noqa: BLE001
                self.speaker.start()
                continue
        return self.facts

    def _param_kinds(self) -> None:
        scratch = Speaker(self.params, self.aliases)
        scratch.constants = dict(self.constants)
        for p in self.params:
            try:
                text = self._param_text(p, scratch) or ""
            except (RecursionError, ValueError, AttributeError):
                text = ""
            if text.startswith(f"{p} is "):
                self.speaker.param_kinds[p] = text[len(p) + 4:].split(";")[0]

    def _signature(self) -> None:
        sp = self.speaker
        sp.start()
        defaults = self.fn.args.defaults
        pos = [*self.fn.args.posonlyargs, *self.fn.args.args]
        if pos and pos[0].arg in ("self", "cls"):
            pos = pos[1:]
        with_default = {a.arg: d for a, d in zip(pos[len(pos) - len(defaults):], defaults)}
        for a, d in zip(self.fn.args.kwonlyargs, self.fn.args.kw_defaults):
            if d is not None:
                with_default[a.arg] = d
        names = list(self.params)
        if len(names) > 8:
            names = names[:8] + [f"{len(self.params) - 8} more"]
            with_default = {}
        if self.varargs:
            names.append(f"any number of extra values ({self.varargs})")
        if self.kwargs:
            names.append(f"optional keyword options ({self.kwargs})")
        if not names:
            takes = "takes no inputs"
        elif len(names) == 1:
            takes = f"takes {names[0]}"
        else:
            takes = f"takes {join_and(names)}, in that order"
        opt = [f"{p} defaults to {sp.say(d)}" for p, d in with_default.items()]
        text = f"The function is {self.fn.name} and it {takes}"
        if opt:
            text += "; " + join_and(opt)
        self.add("signature", text, "what to call the function and what it takes",
                 tags={"signature", "input", "name"}, priority=9, extra=[self.fn.name, *self.params])
        if not self.facts or self.facts[-1].kind != "signature":
            return
        fact = self.facts[-1]
        generic = keywords("name call parameter argument input signature order function takes")
        self.facts[-1] = Fact(fact.kind, fact.text, fact.topic, frozenset(keywords(self.fn.name) | generic),
                              fact.numbers, fact.strings, fact.tags, fact.priority, fact.polarity)

    def _tables(self) -> None:
        seen: set[int] = set()
        # named tables: used as lookups somewhere
        for name, table in self.tables.items():
            lookup = self._lookup_of(name)
            self._table_fact(table, humanise(name), lookup, extra=[name])
            seen.add(id(table))
        # inline dicts: base = {'basic': 20}.get(plan, 25)
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                tname = target.id if isinstance(target, ast.Name) else None
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Dict) and is_table(sub) and id(sub) not in seen:
                        seen.add(id(sub))
                        self._table_fact(sub, humanise(tname) if tname else "value", self._inline_lookup(node.value, sub),
                                         extra=[tname] if tname else [])
            elif isinstance(node, ast.Return) and node.value is not None:
                for sub in ast.walk(node.value):
                    if isinstance(sub, ast.Dict) and is_table(sub) and id(sub) not in seen and \
                            self._inline_lookup(node.value, sub)[0] is not None:
                        seen.add(id(sub))
                        self._table_fact(sub, "result", self._inline_lookup(node.value, sub))

    def _inline_lookup(self, expr: ast.AST, table: ast.AST) -> tuple[ast.AST | None, ast.AST | None]:
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "get" \
                    and sub.func.value is table and sub.args:
                return sub.args[0], (sub.args[1] if len(sub.args) > 1 else None)
            if isinstance(sub, ast.Subscript) and sub.value is table:
                return sub.slice, None
        return None, None

    def _lookup_of(self, name: str) -> tuple[ast.AST | None, ast.AST | None]:
        for sub in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "get" \
                    and isinstance(sub.func.value, ast.Name) and sub.func.value.id == name and sub.args:
                return sub.args[0], (sub.args[1] if len(sub.args) > 1 else None)
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == name \
                    and not is_const(sub.slice):
                return sub.slice, None
            if isinstance(sub, ast.Compare) and any(isinstance(c, ast.Name) and c.id == name for c in sub.comparators) \
                    and any(isinstance(o, (ast.In, ast.NotIn)) for o in sub.ops):
                return sub.left, None
        return None, None

    def _table_fact(self, table: ast.AST, name: str, lookup: tuple[ast.AST | None, ast.AST | None],
                    extra: list[str]) -> None:
        sp = self.speaker
        sp.start()
        key, default = lookup
        key_text = sp.say(key) if key is not None else ""
        plural = name.endswith("s") and not name.endswith("ss")
        extra = [*extra] + ([key_text] if key_text else [])
        tags = {"values", "table"}
        if isinstance(table, ast.Dict):
            entries = [f"{sp.say(v)} for {sp.say(k)}" for k, v in zip(table.keys, table.values) if k is not None]
            if any(isinstance(_const_key(v), (int, float)) for v in table.values):
                tags.add("money")
            tail = ""
            if default is not None:
                other = f"any other {key_text.removeprefix('the ')}" if key_text and len(key_text) < 30 else "anything else"
                tags |= {"unknown", "edge", "default"}
                tail = f"; {other} gets {sp.say(default)}"
            elif key is not None and isinstance(key, ast.AST):
                tail = ""
            verb = "are" if plural else "is"
            subject = f"the {name}" if name not in ("value", "result") else (
                f"the {name} depends on {key_text}:" if key_text else f"the {name}s are")
            if name in ("value", "result"):
                verb = ""
            chunks = _chunk(entries, 230 - len(tail))
            for i, chunk in enumerate(chunks):
                head = subject if i == 0 else f"more {name}"
                text = f"{head} {verb} {join_and(chunk)}".replace("  ", " ")
                if i == len(chunks) - 1:
                    text += tail
                nums, strs = set(sp.numbers), set(sp.strings)
                sp.numbers, sp.strings = nums, strs
                topic = f"the {name} for each {key_text}" if key is not None and isinstance(key, ast.Name) \
                    and key.id in self.all_params else f"the {name}"
                self.add("table", text, topic, tags=tags, priority=8, extra=extra)
                sp.numbers, sp.strings = nums, strs
            sp.start()
        else:
            items = [sp.say(e) for e in table.elts]  # type: ignore[attr-defined]
            use = ""
            if key_text:
                use = f" ({key_text} is checked against them)"
            text = f"the {name} {'are' if plural else 'is made of'} {join_and(items)}{use}"
            self.add("table", text, f"the {name}", tags=tags, priority=7.5, extra=extra)

    # -- statements
    def _loop_text(self, node: ast.AST) -> str:
        sp = self.speaker
        if isinstance(node, ast.For):
            return f"for each {sp._target_noun(node.target, node.iter)} in {sp.say(node.iter, 5)}"
        if isinstance(node, ast.While):
            return f"while {sp.cond(node.test)}"
        return ""

    def _prefix(self, path: list[str], loops: list[str]) -> str:
        parts = list(loops)
        if path:
            parts.append("when " + " and ".join(path))
        return ", ".join(parts)

    def _walk(self, stmts: list[ast.stmt], path: list[str], loops: list[str]) -> None:
        for i, st in enumerate(stmts):
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            if isinstance(st, ast.If) and isinstance(nxt, ast.Return) and nxt.value is not None:
                arms, orelse = _chain(st)
                if not orelse and all(b and isinstance(b[-1], (ast.Return, ast.Raise)) for _, b in arms):
                    self.fallthrough[id(st)] = nxt
            if id(st) in self.consumed:
                continue
            try:
                self._statement(st, path, loops)
            except (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError):
                continue

    def _statement(self, st: ast.stmt, path: list[str], loops: list[str]) -> None:
        if isinstance(st, ast.If):
            self._if_chain(st, path, loops)
        elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            self._walk(st.body, path, loops + [self._loop_text(st)])
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            self._walk(st.body, path, loops)
        elif isinstance(st, ast.Try):
            self._walk(st.body, path, loops)
            for h in st.handlers:
                if isinstance(h.type, ast.Name):
                    exc = h.type.id
                elif isinstance(h.type, ast.Attribute):
                    exc = h.type.attr
                elif isinstance(h.type, ast.Tuple):
                    exc = " or ".join(e.id if isinstance(e, ast.Name) else getattr(e, "attr", "error") for e in h.type.elts)
                else:
                    exc = "error"
                out = self._outcome(h.body)
                if out:
                    pre = self._prefix(path, loops)
                    article = "an" if exc[:1].lower() in "aeiou" else "a"
                    self.add("raise", f"{pre + ', ' if pre else ''}if that fails with {article} {exc}, {out}",
                             "what happens when something fails", tags={"error", "invalid", "edge"}, priority=6)
            self._walk(st.orelse, path, loops)
            self._walk(st.finalbody, path, loops)
        elif not path:
            self._plain(st, loops)

    def _plain(self, st: ast.stmt, loops: list[str]) -> None:
        """A statement outside any condition: a definition, accumulation or append."""
        sp = self.speaker
        sp.start()
        pre = ", ".join(loops)
        lead = f"{pre}, " if pre else ""
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            target, value = st.targets[0], st.value
            names = _assigned_names(target)
            if any(n in self.aliases for n in names) and all(n in self.aliases for n in names):
                return
            if is_table(value) or is_trivial_init(value):
                return
            values = value.elts if isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple) else [value]
            if all(self._is_accessor(v) or isinstance(v, ast.Name) for v in values):
                return  # "title = entry['title']": the parameter facts say which keys exist
            if any(isinstance(s, ast.Dict) and is_table(s) for s in ast.walk(value)):
                return  # the table fact covers it
            if is_const(value) and isinstance(target, ast.Name):
                verb = "starts at" if self.counts.get(target.id, 0) > 1 else "is"
                self.add("constant", f"{lead}the {humanise(target.id)} {verb} {sp.say(value)}",
                         f"the {humanise(target.id)}", tags={"values", "money"}, priority=6, extra=[target.id])
                return
            acc = self._accumulation(target, value)
            if acc:
                self.add("accumulate", lead + acc, f"how {sp.say(target.value if isinstance(target, ast.Subscript) else target)} is built",
                         tags={"how"}, priority=5, extra=names)
                return
            tname = sp.target(target)
            vtext = sp.say(value)
            if vtext.startswith("a calculation") or vtext == tname:
                return
            verb = "is worked out as" if isinstance(value, (ast.BinOp, ast.Call)) else "is"
            if isinstance(target, ast.Name) and target.id in _names_in(value):
                verb = "becomes"
            self.add("assign", f"{lead}{tname} {verb} {vtext}", f"how {tname} is worked out",
                     tags={"how"}, priority=4.5, extra=names)
        elif isinstance(st, ast.AugAssign):
            tname = sp.target(st.target)
            word = _AUG_WORDS.get(type(st.op), "is updated by")
            if isinstance(st.op, ast.Add) and (isinstance(st.value, (ast.List, ast.JoinedStr)) or
                                               (isinstance(st.value, ast.Constant) and isinstance(st.value.value, str))):
                text = f"{lead}{sp.say(st.value)} is added to the end of {tname}"
            else:
                text = f"{lead}{tname} {word} {sp.say(st.value)}"
            self.add("accumulate", text, f"how {tname} is built", tags={"how"}, priority=5,
                     extra=_assigned_names(st.target))
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            call = st.value
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "add", "extend") and call.args:
                self.add("accumulate", f"{lead}{sp.say(call.args[0])} is added to {sp.say(call.func.value, 5)}",
                         f"what goes into {sp.say(call.func.value, 5)}", tags={"how"}, priority=4.5)
            elif isinstance(call.func, ast.Attribute) and call.func.attr == "sort":
                pass  # covered by _sorting
        elif isinstance(st, ast.Raise):
            pass  # covered by _raises

    def _accumulation(self, target: ast.AST, value: ast.AST) -> str | None:
        """``d[k] = d.get(k, 0) + v`` -> "the pages for the title goes up by the entry's 'pages'"."""
        sp = self.speaker
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and isinstance(value, ast.BinOp)):
            return None
        left = value.left
        owner = target.value.id
        same = (isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "get"
                and isinstance(left.func.value, ast.Name) and left.func.value.id == owner) or \
               (isinstance(left, ast.Subscript) and isinstance(left.value, ast.Name) and left.value.id == owner)
        if not same:
            return None
        word = _AUG_WORDS.get(type(value.op), "is updated by")
        start = ""
        if isinstance(left, ast.Call) and len(left.args) > 1 and not is_trivial_init(left.args[1]):
            start = f" (starting from {sp.say(left.args[1])})"
        key = sp.say(target.slice)
        return f"the {humanise(owner)} total for {key} {word} {sp.say(value.right)}{start}"

    def _outcome(self, body: list[ast.stmt]) -> str | None:
        sp = self.speaker
        parts: list[str] = []
        for st in body:
            if isinstance(st, ast.Return):
                parts.append("the result is None" if st.value is None else f"the result is {self._value(st.value)}")
                break
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                acc = self._accumulation(st.targets[0], st.value)
                parts.append(acc or f"{sp.target(st.targets[0])} is {sp.say(st.value)}")
            elif isinstance(st, ast.AugAssign):
                parts.append(f"{sp.target(st.target)} {_AUG_WORDS.get(type(st.op), 'is updated by')} {sp.say(st.value)}")
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                call = st.value
                if isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "add", "extend") and call.args:
                    parts.append(f"{sp.say(call.args[0])} is added to {sp.say(call.func.value, 5)}")
            elif isinstance(st, ast.Raise):
                parts.append(f"it should raise {self._exc_phrase(st)}")
                break
            elif isinstance(st, ast.Continue):
                parts.append("skip it")
                break
            elif isinstance(st, ast.Break):
                parts.append("stop there")
                break
            elif isinstance(st, ast.Pass):
                parts.append("nothing special happens")
        if not parts:
            return None
        return join_and(parts[:3])

    def _value(self, node: ast.AST, speaker: Speaker | None = None) -> str:
        """A value as a person says it; a condition used as a value reads "true when ..."."""
        sp = speaker or self.speaker
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and \
                not any(isinstance(v, (ast.Compare, ast.BoolOp, ast.UnaryOp)) for v in node.values):
            # "slug or 'untitled'": a value with a fallback, not a true/false answer
            first, *rest = node.values
            return f"{sp.say(first)}, or {join_and([sp.say(v) for v in rest], 'or')} if that is empty"
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return f"true when {sp.cond(node)}, otherwise false"
        return sp.say(node)

    def _exc_phrase(self, st: ast.Raise) -> str:
        exc = st.exc
        if exc is None:
            return "the error again"
        name = exc.func if isinstance(exc, ast.Call) else exc
        ename = name.id if isinstance(name, ast.Name) else (name.attr if isinstance(name, ast.Attribute) else "an error")
        article = "an" if ename[:1].lower() in "aeiou" else "a"
        text = f"{article} {ename}"
        if isinstance(exc, ast.Call) and exc.args:
            msg = exc.args[0]
            if isinstance(msg, ast.Constant) and isinstance(msg.value, str) and len(msg.value) <= 70:
                text += f" saying {fmt_string(msg.value)}"
            elif isinstance(msg, ast.JoinedStr):
                text += f" with a message like {self.speaker.template(msg)}"
        return text

    def _if_chain(self, node: ast.If, path: list[str], loops: list[str]) -> None:
        sp = self.speaker
        arms, orelse = _chain(node)
        last_chain = node
        while len(last_chain.orelse) == 1 and isinstance(last_chain.orelse[0], ast.If):
            last_chain = last_chain.orelse[0]
        if not orelse and id(node) in self.fallthrough:
            nxt = self.fallthrough[id(node)]
            orelse = [nxt]
            self.consumed.add(id(nxt))
        tags: set[str] = set()
        for test, _ in arms:
            tags |= _cond_tags(test, self._inputs(), self._bools())
        if any(isinstance(s, ast.Raise) for _, b in arms for s in b):
            tags |= {"error", "invalid"}
        pre = self._prefix(path, loops)
        lead = f"{pre}, " if pre else ""
        subject_names = sorted(set().union(*(_names_in(t) for t, _ in arms)) & (self.all_params | set(self.aliases) | set(self.top_assigns)))
        inputs = [n for n in subject_names if n in self._inputs() or n in self.loop_of]
        named = inputs or subject_names
        topic = "the rules for " + join_and(list(dict.fromkeys(self._topic_name(n) for n in named))[:2], "and") \
            if named else "the special cases"
        sp.start()
        ladder = self._ladder(arms, orelse)
        if ladder:
            out_tags = {"output", "how"} if any(isinstance(b[-1], ast.Return) for _, b in arms if b) else set()
            self.add("case", lead + ladder, topic, tags=tags | {"values"} | out_tags, priority=8, extra=subject_names)
        else:
            pieces = []
            for test, body in arms:
                out = self._outcome(body)
                if out:
                    pieces.append((sp.cond(test), out))
            else_out = self._outcome(orelse) if orelse else None
            text = "; ".join(f"if {c}, {o}" for c, o in pieces)
            if else_out and pieces:
                text += f"; otherwise {else_out}"
            elif else_out and not pieces and len(arms) == 1:
                text = f"if {sp.negate(arms[0][0])}, {else_out}"
            if text and len(lead + text) <= MAX_FACT - 20:
                if "the result is" in text:
                    tags = tags | {"output"}
                self.add("branch", lead + text, topic, tags=tags, priority=7 if "edge" in tags else 6.5,
                         extra=subject_names)
            elif pieces:
                sp.start()
                for test, body in arms:
                    out = self._outcome(body)
                    if out:
                        t = _cond_tags(test, self._inputs(), self._bools())
                        self.add("branch", f"{lead}if {sp.cond(test)}, {out}", topic, tags=t,
                                 priority=7 if "edge" in t else 6.5, extra=subject_names)
                if else_out:
                    self.add("branch", f"{lead}in any other case, {self._outcome(orelse)}", topic, tags=tags,
                             priority=6, extra=subject_names)
        # nested statements, with the arm's condition on the path
        for test, body in arms:
            self._walk([s for s in body if not isinstance(s, (ast.Return, ast.Raise))],
                       path + [sp.cond(test)], loops)
        if orelse and not (len(orelse) == 1 and id(orelse[0]) in self.consumed):
            neg = sp.negate(arms[0][0]) if len(arms) == 1 else "none of those apply"
            self._walk(orelse, path + [neg], loops)
        sp.start()

    def _ladder(self, arms: list[tuple[ast.expr, list[ast.stmt]]], orelse: list[ast.stmt]) -> str | None:
        """An if/elif chain testing one subject against constants, each arm setting the same
        thing: "Depending on tier, the rate is 0.1 for 'gold', 0.05 for 'silver' and 0 otherwise"."""
        if len(arms) < 2:
            return None
        sp = self.speaker
        subject = None
        kind = None
        target_dump = None
        outs = []
        for test, body in arms:
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
                return None
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if is_const(left) and not is_const(right):
                left, right = right, left
                op = _CMP_FLIP.get(type(op), type(op))()
            dump = ast.dump(left)
            if subject is None:
                subject = dump
            elif dump != subject:
                return None
            if not (is_const(right) or (isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(is_const(e) for e in right.elts))):
                return None
            if len(body) != 1:
                return None
            st = body[0]
            if isinstance(st, ast.Return) and st.value is not None:
                k, td = "return", None
                val = st.value
            elif isinstance(st, ast.Assign) and len(st.targets) == 1:
                k, td = "assign", ast.dump(st.targets[0])
                val = st.value
            else:
                return None
            if kind is None:
                kind, target_dump = k, td
            elif (kind, target_dump) != (k, td):
                return None
            outs.append((op, right, val, st))
        else_val = None
        if orelse:
            if len(orelse) != 1:
                return None
            st = orelse[0]
            if kind == "return" and isinstance(st, ast.Return) and st.value is not None or kind == "assign" and isinstance(st, ast.Assign) and ast.dump(st.targets[0]) == target_dump:
                else_val = st.value
            else:
                return None
        first = arms[0][0]
        subj_node = first.left if not is_const(first.left) else first.comparators[0]
        subj = sp.say(subj_node)
        pieces = []
        for op, right, val, _ in outs:
            v = self._value(val)
            if isinstance(op, (ast.Eq, ast.In)):
                cond = sp.say(right) if is_const(right) else join_and([sp.say(e) for e in right.elts], "or")
                pieces.append(f"{v} for {cond}")
            elif isinstance(op, ast.Is):
                pieces.append(f"{v} when it is {sp.say(right)}")
            else:
                word = _CMP_WORDS.get(type(op))
                if word is None:
                    return None
                pieces.append(f"{v} when it is {word} {sp.say(right)}".replace("is  ", "is "))
        if else_val is not None:
            pieces.append(f"{self._value(else_val)} otherwise")
        what = "the result" if kind == "return" else sp.target(outs[0][3].targets[0])
        return f"depending on {subj}, {what} is {join_and(pieces)}"

    # -- whole-function facts
    def _returns(self) -> list[ast.Return]:
        out = []
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Return):
                out.append(node)
        return sorted(out, key=lambda r: (r.lineno, r.col_offset))

    def _results(self) -> None:
        returns = self._returns()
        final = self.body[-1] if self.body and isinstance(self.body[-1], ast.Return) else None
        expansions = {n: v for n, v in self.top_assigns.items()
                      if n not in self.aliases and not is_trivial_init(v) and not is_table(v) and not is_const(v)}
        rsp = Speaker(self.params, self.aliases, expansions=expansions, key_nouns=self.key_nouns)
        rsp.tables = set(self.tables)
        rsp.constants = dict(self.constants)
        if final is not None and id(final) in self.consumed:
            final = None
        if final is not None and final.value is not None:
            rsp.start()
            content = self._value(final.value, rsp)
            if content.startswith("a calculation") or len(content) > 200:
                rsp.expansions = {}
                rsp.start()
                content = self._value(final.value, rsp)
            lead = "the result is" if len(returns) == 1 else "in the normal case, the result is"
            if not content.startswith("a calculation"):
                self.add("result", f"{lead} {content}", "what it should give back",
                         tags={"output", "how"}, priority=8.5, speaker=rsp, extra=[self.fn.name])
        consts = [_const_key(r.value) for r in returns if r.value is not None]
        if len(consts) >= 2 and len(consts) == len(returns) and all(isinstance(c, str) for c in consts):
            rsp.start()
            values = list(dict.fromkeys(rsp.say(r.value) for r in returns if r.value is not None))
            self.add("shape", f"it should give back one of these texts: {join_and(values, 'or')}",
                     "what it should give back", tags={"output", "type", "values"}, priority=8.6, speaker=rsp,
                     extra=[self.fn.name])
            return
        shapes = []
        for r in returns:
            s = self._shape(r.value) if r.value is not None else "None"
            if s and s not in shapes:
                shapes.append(s)
        bare = final is not None and isinstance(final.value, ast.Name) and final.value.id not in self.top_assigns
        if len(shapes) > 1 and all(x.startswith(("a number", "a whole number")) for x in shapes):
            shapes = [max(shapes, key=len)]  # 0.0 in one branch, round(x, 1) in another: a number
        has_content = (any(f.kind == "result" for f in self.facts) and not bare) or bool(self.consumed)
        if has_content and len(shapes) == 1 and shapes[0] in ("text", "a number", "a list", "a whole number"):
            return  # "the result is the cost, rounded to 2 decimals" already says it is a number
        if shapes:
            rsp.start()
            if len(shapes) == 1:
                text = f"it should give back {shapes[0]}"
            else:
                text = f"it gives back {shapes[0]} in the normal case, or {join_and(shapes[1:], 'or')} in special cases" \
                    if final is not None and final.value is not None and self._shape(final.value) == shapes[0] else \
                    f"it gives back {join_and(shapes, 'or')}, depending on the case"
            self.add("shape", text, "what it should give back", tags={"output", "type"}, priority=7.5,
                     extra=[self.fn.name])
        elif not returns:
            self.add("shape", "it doesn't give anything back (the result is None)", "what it should give back",
                     tags={"output", "type"}, priority=7.5)

    def _shape(self, node: ast.AST | None, depth: int = 0) -> str | None:
        if node is None or depth > 3:
            return None
        c = _const_key(node)
        if c is not _NOT_CONST:
            if c is None:
                return "None"
            if isinstance(c, bool):
                return "true or false"
            if isinstance(c, str):
                return "text"
            if isinstance(c, (int, float)):
                return "a number"
        if isinstance(node, ast.Dict):
            keys = [self.speaker.say(k) for k in node.keys if k is not None]
            self.speaker.start()
            if keys and all(is_const(k) for k in node.keys if k is not None):
                return f"a dict with the keys {join_and(keys)}"
            return "a dict"
        if isinstance(node, (ast.List, ast.ListComp)):
            return "a list"
        if isinstance(node, ast.Tuple):
            n = len(node.elts)
            return "a pair of values" if n == 2 else f"a tuple of {n} values"
        if isinstance(node, (ast.JoinedStr,)):
            return "text"
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return "true or false"
        if isinstance(node, ast.IfExp):
            a, b = self._shape(node.body, depth + 1), self._shape(node.orelse, depth + 1)
            return a if a == b else (a or b)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div):
                return "a number"
            a, b = self._shape(node.left, depth + 1), self._shape(node.right, depth + 1)
            if "text" in (a, b) and isinstance(node.op, (ast.Add, ast.Mod)):
                return "text"
            if isinstance(node.op, ast.Add) and "a list" in (a, b):
                return "a list"
            if a and a.startswith("a number") or b and b.startswith("a number") or \
                    isinstance(node.op, (ast.Mult, ast.Sub, ast.Pow, ast.FloorDiv)):
                return "a number"
            return a or b
        if isinstance(node, ast.Call):
            f = node.func
            fname = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
            if fname == "round":
                digits = _const_key(node.args[1]) if len(node.args) > 1 else None
                if isinstance(digits, int) and not isinstance(digits, bool):
                    return f"a number rounded to {digits} decimal{'s' if digits != 1 else ''}"
                return "a whole number (rounded)"
            if fname in ("int", "len", "floor", "ceil", "count", "find", "index"):
                return "a whole number"
            if fname in ("float", "sum", "abs", "sqrt", "max", "min", "mean", "median", "pow", "fsum"):
                if fname in ("max", "min") and node.keywords:
                    return None
                return "a number"
            if fname in ("str", "join", "format", "upper", "lower", "strip", "title", "capitalize", "replace"):
                return "text"
            if fname in ("sorted", "list", "split"):
                return "a list"
            if fname in ("dict",):
                return "a dict"
            if fname in ("set",):
                return "a set"
            if fname in ("tuple",):
                return "a tuple"
            if fname in ("bool", "isinstance", "any", "all", "startswith", "endswith") or fname.startswith("is"):
                return "true or false"
            return None
        if isinstance(node, ast.Name):
            if node.id in self.top_assigns:
                return self._shape(self.top_assigns[node.id], depth + 1)
            for sub in ast.walk(ast.Module(body=self.body, type_ignores=[])):
                if isinstance(sub, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in sub.targets):
                    s = self._shape(sub.value, depth + 1)
                    if s:
                        return s.split(" with the keys")[0] if s.startswith("a dict") else s
            if node.id in self.all_params:
                return None
        return None

    def _rounding(self) -> None:
        sp = self.speaker
        found = False
        floor_div_seen = False
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" and node.args:
                found = True
                sp.start()
                digits = _const_key(node.args[1]) if len(node.args) > 1 else None
                what = sp.say(node.args[0])
                if len(what) > 80 or what.startswith("a calculation"):
                    what = "the result"
                sp.start()
                if isinstance(digits, int) and not isinstance(digits, bool):
                    sp.numbers.add(float(digits))
                    text = f"{what} is rounded to {digits} decimal place{'s' if digits != 1 else ''}"
                else:
                    text = f"{what} is rounded to a whole number"
                self.add("round", text, "rounding", tags={"round", "output"}, priority=7,
                         extra=list(_names_in(node.args[0])))
            elif isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
                spec = "".join(str(v.value) for v in node.format_spec.values if isinstance(v, ast.Constant))
                m = re.search(r"\.(\d+)([f%])", spec)
                if m:
                    found = True
                    sp.start()
                    what = sp.say(node.value)
                    sp.numbers.add(float(m.group(1)))
                    pct = " as a percentage" if m.group(2) == "%" else ""
                    self.add("round", f"in the text, {what} is shown{pct} with {m.group(1)} decimals",
                             "rounding", tags={"round", "output", "format"}, priority=7)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int" and node.args \
                    and not isinstance(node.args[0], (ast.Constant, ast.Name)) and not (
                        isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Name)
                        and node.args[0].func.id in ("round", "len")) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "int" and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id not in self.all_params):
                found = True
                sp.start()
                what = sp.say(node.args[0])
                if len(what) > 80 or what.startswith("a calculation"):
                    what = "the result"
                self.add("round", f"{what} is cut to a whole number (the decimals are dropped, not rounded)",
                         "rounding", tags={"round"}, priority=7)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and not floor_div_seen:
                floor_div_seen = True
                found = True
                sp.start()
                ceil = isinstance(node.left, ast.UnaryOp) and isinstance(node.left.op, ast.USub)
                what = sp.say(node.left.operand if ceil else node.left, 2)  # type: ignore[attr-defined]
                if len(what) > 80 or what.startswith("a calculation"):
                    what = "the value"
                self.add("round", f"{what} divided by {sp.say(node.right, 3)} is rounded "
                         f"{'up' if ceil else 'down'} to a whole number", "rounding", tags={"round"}, priority=6.5)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("floor", "ceil") \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "math" and node.args:
                found = True
                sp.start()
                self.add("round", f"{sp.say(node.args[0])} is rounded {'down' if node.func.attr == 'floor' else 'up'} "
                         "to a whole number", "rounding", tags={"round"}, priority=7)
        if not found and self.main:
            sp.start()
            self.add("round", "I don't need anything rounded; keep the exact value", "rounding",
                     tags={"round"}, priority=0.5, polarity="no")

    def _raises(self) -> None:
        any_raise = False
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Raise):
                any_raise = True
        # conditional raises are reported by the branch facts; unconditional ones here
        for st in self.body:
            if isinstance(st, ast.Raise):
                self.speaker.start()
                self.add("raise", f"it should raise {self._exc_phrase(st)}", "errors",
                         tags={"error"}, priority=6)
        if not any_raise and self.main:
            self.speaker.start()
            self.add("raise", "it doesn't need to raise any errors", "errors",
                     tags={"error", "invalid"}, priority=0.5, polarity="no")

    def _sorting(self) -> None:
        sp = self.speaker
        module = ast.Module(body=self.body, type_ignores=[])
        inner_sorts = {id(n.args[0]) for n in ast.walk(module) if isinstance(n, ast.Call)
                       and isinstance(n.func, ast.Name) and n.func.id in ("max", "min") and n.args}
        for node in ast.walk(module):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id == "sorted" and node.args and id(node) not in inner_sorts:
                sp.start()
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                text = sp._sorted_phrase(node, imperative=True)
                self.add("sort", text, "the order", tags={"order", "sort"}, priority=6.5)
                key = kw.get("key")
                self._tie_fact(key, node.args[0])
            elif isinstance(f, ast.Attribute) and f.attr == "sort":
                sp.start()
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                rev = "reverse" in kw and _const_key(kw["reverse"]) is True
                key = sp._key_phrase(kw.get("key"))
                k = kw.get("key")
                multi = isinstance(k, ast.Lambda) and isinstance(k.body, ast.Tuple)
                order = "" if multi else f", {'largest' if rev else 'smallest'} first"
                self.add("sort", f"sort {sp.say(f.value, 5)}{' by ' + key if key else ''}{order}", "the order",
                         tags={"order", "sort"}, priority=6.5)
                self._tie_fact(kw.get("key"), f.value)
            elif isinstance(f, ast.Name) and f.id in ("max", "min") and len(node.args) == 1 and node.keywords:
                src = node.args[0]
                sp.start()
                word = "highest" if f.id == "max" else "lowest"
                if isinstance(src, ast.Call) and isinstance(src.func, ast.Name) and src.func.id == "sorted":
                    text = f"if several tie for the {word}, pick the one that comes first alphabetically"
                else:
                    text = f"if several tie for the {word}, pick the first one"
                self.add("tie", text, "ties", tags={"tie", "order"}, priority=6)

    def _tie_fact(self, key: ast.AST | None, source: ast.AST) -> None:
        sp = self.speaker
        if key is None:
            return
        sp.start()
        if isinstance(key, ast.Lambda) and isinstance(key.body, ast.Tuple) and len(key.body.elts) >= 2:
            arg = key.args.args[0].arg if key.args.args else "_"
            saved = sp._item_names
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "items":
                sp._item_names = ("key", "value")
            sp._in_tuple = True
            try:
                first = sp._key_part(key.body.elts[0], arg).split(" (")[0]
                rest = join_and([sp._key_part(e, arg) for e in key.body.elts[1:]])
            finally:
                sp._in_tuple = False
                sp._item_names = saved
            text = f"{first}; after that, order them by {rest}" if first.startswith("the ones where") else \
                f"when two have the same {first.removeprefix('the ')}, order them by {rest}"
            self.add("tie", text, "ties",
                     tags={"tie", "order"}, priority=6)
        else:
            self.add("tie", "when two are equal, they keep the order they came in", "ties",
                     tags={"tie", "order"}, priority=4)

    def _params(self) -> None:
        kinds: list[str] = []
        for p in self.params + [x for x in (self.varargs,) if x]:
            try:
                text = self._param_text(p)
            except (RecursionError, ValueError, AttributeError):
                continue
            if text and text.startswith(f"{p} is ") and not text.startswith(f"{p} is optional"):
                kinds.append(text.split(";")[0])
            if text:
                elems = [self.aliases.get(v, v) for v, src in self.loop_of.items()
                         if isinstance(src, ast.Name) and src.id == p]
                tags = {"input", "type"} | ({"missing", "none", "default"} if "may be missing" in text else set())
                self.add("param", text, f"what {p} looks like", tags=tags, priority=5.5,
                         extra=[p, *elems, *( ["item", "element", "entry"] if elems else [])])
        if len(kinds) >= 2 and len(self.params) >= 2:
            self.speaker.start()
            descs = [k.split(" is ", 1)[1] for k in kinds]
            plural = {"a number": "numbers", "text": "text", "a list": "lists", "a dict": "dicts",
                      "true or false": "true or false", "a whole number": "whole numbers"}
            if len(set(descs)) == 1 and descs[0] in plural and len(kinds) == len(self.params):
                text = f"{join_and(list(self.params))} are {'both' if len(self.params) == 2 else 'all'} {plural[descs[0]]}"
            else:
                text = "; ".join(kinds)
            self.add("params", text, "what the inputs look like", tags={"input", "type"}, priority=5.8,
                     extra=list(self.params))

    def _param_text(self, p: str, speaker: Speaker | None = None) -> str | None:
        sp = speaker or self.speaker
        sp.start()
        boolish = False
        compare_keys: dict[str, float] = {}
        elems = {v for v, src in self.loop_of.items() if isinstance(src, ast.Name) and src.id == p}
        compares: list[str] = []
        str_values: list[str] = []
        keys: dict[str, ast.AST | None] = {}
        elem_keys: dict[str, ast.AST | None] = {}
        methods: set[str] = set()
        numeric = textual = iterated = items = False
        tuple_elems: list[str] = []
        table_keys: list[str] = []
        elem_methods: set[str] = set()
        elem_names: list[str] = []  # table keys the items are looked up by
        module = ast.Module(body=self.body, type_ignores=[])

        def is_p(n: ast.AST) -> bool:
            return isinstance(n, ast.Name) and n.id == p

        def is_e(n: ast.AST) -> bool:
            return isinstance(n, ast.Name) and n.id in elems

        for node in ast.walk(module):
            test = getattr(node, "test", None) if isinstance(node, (ast.If, ast.While, ast.IfExp)) else None
            if test is not None and is_p(test) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) \
                    and is_p(node.operand) or isinstance(node, ast.BoolOp) and any(is_p(v) for v in node.values):
                boolish = True
            if isinstance(node, ast.Compare):
                items_ = [node.left, *node.comparators]
                for i, op in enumerate(node.ops):
                    left, right = items_[i], items_[i + 1]
                    if is_const(left) and not is_const(right):
                        left, right = right, left
                        op = _CMP_FLIP.get(type(op), type(op))()
                    if is_p(left) or (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
                                      and left.func.id in ("len", "abs") and left.args and is_p(left.args[0])):
                        prefix = "it is " if is_p(left) else ("its length is " if left.func.id == "len" else "its size is ")  # type: ignore[union-attr]
                        if isinstance(right, ast.Name) and right.id in self.constants and is_p(left):
                            c = self.constants[right.id]
                            if isinstance(c, (int, float)) and not isinstance(c, bool):
                                numeric = True
                                word = _CMP_WORDS.get(type(op), "")
                                phrase = f"it is {word + ' ' if word and 'one of' not in word else ''}{sp.say(right)}"
                                if phrase not in compares:
                                    compares.append(phrase)
                                    compare_keys[phrase] = float(c)
                        if is_const(right):
                            c = _const_key(right)
                            if isinstance(c, str):
                                textual = True
                                v = sp.say(right)
                                if isinstance(op, (ast.Eq, ast.NotEq)) and v not in str_values:
                                    str_values.append(v)
                            elif isinstance(c, (int, float)) and not isinstance(c, bool):
                                if is_p(left):
                                    numeric = True
                                word = _CMP_WORDS.get(type(op), "")
                                phrase = f"{prefix}{word + ' ' if word and word not in ('one of', 'not one of') else ''}{sp.say(right)}"
                                if isinstance(op, ast.NotEq):
                                    phrase = f"{prefix}{sp.say(right)}"
                                if phrase not in compares:
                                    compares.append(phrase)
                                    compare_keys[phrase] = float(c)
                        elif isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(is_const(e) for e in right.elts):
                            for e in right.elts:
                                v = sp.say(e)
                                if isinstance(_const_key(e), str):
                                    textual = True
                                if v not in str_values:
                                    str_values.append(v)
                        elif isinstance(right, ast.Name) and right.id in self.tables:
                            t = self.tables[right.id]
                            ks = t.keys if isinstance(t, ast.Dict) else t.elts  # type: ignore[attr-defined]
                            for k in ks[:8]:
                                if k is not None and isinstance(_const_key(k), str):
                                    textual = True
                                    table_keys.append(sp.say(k))
            elif isinstance(node, ast.Subscript):
                k = _const_key(node.slice)
                if isinstance(k, str):
                    if is_p(node.value):
                        keys.setdefault(k, None)
                    elif is_e(node.value):
                        elem_keys.setdefault(k, None)
                elif is_p(node.slice) or (isinstance(node.slice, ast.Name) and node.slice.id == p):
                    table = self.tables.get(node.value.id) if isinstance(node.value, ast.Name) else None
                    if isinstance(table, ast.Dict):
                        for key in table.keys[:8]:
                            if key is not None and isinstance(_const_key(key), str):
                                textual = True
                                table_keys.append(sp.say(key))
                    elif isinstance(node.value, ast.Dict):
                        for key in node.value.keys[:8]:
                            if key is not None and isinstance(_const_key(key), str):
                                textual = True
                                table_keys.append(sp.say(key))
                elif isinstance(k, int) and is_e(node.value) and not isinstance(k, bool):
                    tuple_elems.append(ordinal(k))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                m = node.func.attr
                if m == "get" and node.args and (is_p(owner) or is_e(owner)):
                    k = _const_key(node.args[0])
                    if isinstance(k, str):
                        target = keys if is_p(owner) else elem_keys
                        target[k] = node.args[1] if len(node.args) > 1 else ast.Constant(None)
                elif m == "get" and node.args and (is_p(node.args[0]) or is_e(node.args[0])):
                    table = owner if isinstance(owner, ast.Dict) else self.tables.get(getattr(owner, "id", ""))
                    if isinstance(table, ast.Dict):
                        for key in table.keys[:8]:
                            if key is not None and isinstance(_const_key(key), str):
                                if is_p(node.args[0]):
                                    textual = True
                                    table_keys.append(sp.say(key))
                                else:
                                    elem_names.append(sp.say(key))
                elif is_p(owner):
                    methods.add(m)
                    if m == "items":
                        items = True
                elif is_e(owner):
                    elem_methods.add(m)
            elif isinstance(node, ast.BinOp) and (is_p(node.left) or is_p(node.right)):
                other = node.right if is_p(node.left) else node.left
                oc = _const_key(other)
                if isinstance(oc, str) or isinstance(other, ast.JoinedStr):
                    textual = True
                elif not isinstance(node.op, ast.Mod) or not isinstance(_const_key(node.left), str):
                    numeric = True
            elif isinstance(node, (ast.For, ast.comprehension)) and is_p(node.iter):
                iterated = True
                if isinstance(node.target, ast.Tuple):
                    tuple_elems = [self.aliases.get(e.id, "the " + humanise(e.id)).removeprefix("the ")
                                   for e in node.target.elts if isinstance(e, ast.Name)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and is_p(node.args[0]):
                if node.func.id in ("sum", "max", "min", "sorted", "len", "enumerate", "zip", "set", "list"):
                    iterated = iterated or node.func.id != "len"
                    if node.func.id == "sum":
                        numeric = False
                        methods.add("sum")
                elif node.func.id in ("abs", "round", "int", "float"):
                    numeric = True
        str_methods = {"lower", "upper", "strip", "split", "startswith", "endswith", "replace", "isdigit",
                       "isalpha", "title", "find", "count", "capitalize", "lstrip", "rstrip", "isupper", "islower"}
        if methods & str_methods:
            textual = True
        default = None
        pos = [*self.fn.args.posonlyargs, *self.fn.args.args]
        defaults = self.fn.args.defaults
        for a, d in zip(pos[len(pos) - len(defaults):], defaults):
            if a.arg == p:
                default = d
        for a, d in zip(self.fn.args.kwonlyargs, self.fn.args.kw_defaults):
            if a.arg == p and d is not None:
                default = d

        def key_list(ks: dict[str, ast.AST | None]) -> tuple[str, list[str]]:
            names = [fmt_string(k) for k in ks]
            for k in ks:
                sp.strings.add(k.lower())
            notes = [f"{fmt_string(k)} may be missing (then count it as {sp.say(d)})"
                     for k, d in ks.items() if d is not None and not (isinstance(d, ast.Constant) and d.value is None)]
            notes += [f"{fmt_string(k)} may be missing" for k, d in ks.items()
                      if isinstance(d, ast.Constant) and d.value is None]
            return join_and(names), notes

        notes: list[str] = []
        if methods & str_methods and not elem_keys:
            desc = "text"
        elif items or (keys and not iterated):
            desc = "a dict"
            if keys:
                names, notes = key_list(keys)
                desc += f" with {names}"
        elif iterated or elem_keys:
            if elem_keys:
                names, notes = key_list(elem_keys)
                desc = f"a list of dicts, each with {names}"
            elif tuple_elems and len(tuple_elems) >= 2 and not tuple_elems[0].startswith(("first", "second")):
                desc = f"a list of ({', '.join(tuple_elems)}) pairs" if len(tuple_elems) == 2 else \
                    f"a list of ({', '.join(tuple_elems)}) tuples"
            elif (textual and not elems) or (elem_methods & {"isalnum", "isalpha", "isdigit", "isupper", "islower",
                                                             "isspace"} and any(len(e) <= 2 or e in ("char", "letter", "character")
                                                                               for e in elems)):
                desc = "text"
            elif elem_methods & {"lower", "upper", "strip", "split", "startswith", "endswith", "isdigit", "isalpha",
                                 "replace", "title"}:
                desc = "a list of strings"
            elif "sum" in methods:
                desc = "a list of numbers"
            elif elem_names:
                desc = f"a list of names like {join_and(list(dict.fromkeys(elem_names))[:6], 'or')}"
            else:
                desc = "a list"
        elif textual:
            desc = "text"
        elif numeric or compares:
            desc = "a number"
        elif boolish and not (isinstance(default, ast.Constant) and default.value is None):
            desc = "true or false"
        else:
            desc = ""
        compares.sort(key=lambda c: (c.startswith("its "), compare_keys.get(c, 0.0)))
        compares = [c if i == 0 or not c.startswith("it is ") else c[6:] for i, c in enumerate(compares)] \
            if all(c.startswith("it is ") for c in compares) else compares
        annotated = _annotation_phrase(self._annotation(p))
        if annotated and (not desc or desc in ("a list", "a number", "a dict") and annotated.startswith(desc)):
            desc = annotated  # the reference's type hints say it outright
        values = list(dict.fromkeys(str_values + table_keys))
        extras = []
        if values:
            shown = values[:6]
            extras.append(f"the ones that matter are {join_and(shown, 'and')}" if len(shown) > 1
                          else f"the one that matters is {shown[0]}")
        if compares:
            extras.append("what matters is whether " + join_and(compares[:4], "or"))
        if default is not None:
            extras.append(f"it is optional and defaults to {sp.say(default)}")
        extras += notes[:2]
        if not desc and not extras:
            return None
        if desc:
            return f"{p} is {desc}" + ("; " + "; ".join(extras) if extras else "")
        if extras[0].startswith("it is optional"):
            extras[0] = extras[0].removeprefix("it ")
            return f"{p} " + "; ".join(extras)
        return f"for {p}, " + "; ".join(extras)

    def _annotation(self, p: str) -> ast.AST | None:
        a = self.fn.args
        for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)):
            if arg.arg == p:
                return arg.annotation
        return None

    def _docstring(self) -> None:
        if not self.doc:
            return
        first = self.doc.strip().split("\n\n")[0].replace("\n", " ")
        first = re.split(r"(?<=[.!?])\s", first)[0].strip()
        if 10 <= len(first) <= 200 and ">>>" not in first and "(" not in first:
            self.speaker.start()
            self.add("doc", f"in short: {first[0].lower() + first[1:]}", "what it is for",
                     tags={"purpose"}, priority=2)


_ANNOTATION_WORDS = {"int": "a whole number", "float": "a number", "str": "text", "bool": "true or false",
                     "list": "a list", "List": "a list", "Sequence": "a list", "Iterable": "a list",
                     "dict": "a dict", "Dict": "a dict", "Mapping": "a dict", "tuple": "a tuple", "Tuple": "a tuple",
                     "set": "a set", "Set": "a set"}
_ANNOTATION_PLURALS = {"a whole number": "whole numbers", "a number": "numbers", "text": "strings",
                       "true or false": "true/false values", "a list": "lists", "a dict": "dicts", "a tuple": "tuples"}


def _annotation_phrase(node: ast.AST | None, depth: int = 0) -> str | None:
    """A type hint in words: ``List[str]`` -> "a list of strings", ``Optional[int]`` -> "a whole
    number or None"."""
    if node is None or depth > 2:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _annotation_phrase(ast.parse(node.value, mode="eval").body, depth + 1)
        except SyntaxError:
            return None
    if isinstance(node, ast.Name):
        return _ANNOTATION_WORDS.get(node.id)
    if isinstance(node, ast.Attribute):
        return _ANNOTATION_WORDS.get(node.attr)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _annotation_phrase(node.left, depth + 1), _annotation_phrase(node.right, depth + 1)
        if isinstance(node.right, ast.Constant) and node.right.value is None and left:
            return f"{left} or None"
        return f"{left} or {right}" if left and right else None
    if isinstance(node, ast.Subscript):
        outer = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        inner = node.slice
        if outer == "Optional":
            base = _annotation_phrase(inner, depth + 1)
            return f"{base}, or None" if base else None
        head = _ANNOTATION_WORDS.get(outer)
        if head in ("a list", "a set"):
            item = _annotation_phrase(inner, depth + 1)
            return f"{head} of {_ANNOTATION_PLURALS.get(item, item)}" if item else head
        if head == "a dict" and isinstance(inner, ast.Tuple) and len(inner.elts) == 2:
            k, v = (_annotation_phrase(e, depth + 1) for e in inner.elts)
            return f"a dict from {k} to {_ANNOTATION_PLURALS.get(v, v)}" if k and v else head
        return head
    return None


def _chunk(entries: list[str], limit: int) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    size = 0
    for e in entries:
        if chunks[-1] and size + len(e) + 2 > limit:
            chunks.append([])
            size = 0
        chunks[-1].append(e)
        size += len(e) + 2
    return chunks


def _module_tables(tree: ast.Module) -> tuple[dict[str, ast.AST], list[tuple[str, ast.AST]]]:
    tables: dict[str, ast.AST] = {}
    consts: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if is_table(node.value):
                tables[node.targets[0].id] = node.value
            elif is_const(node.value):
                consts.append((node.targets[0].id, node.value))
    return tables, consts


def _called_names(calls: Iterable[str]) -> list[str]:
    names = []
    for call in calls:
        m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", call or "")
        if m and m.group(1) not in names:
            names.append(m.group(1))
    return names


def extract_facts(source: str, problem: str = "", test_calls: Iterable[str] = ()) -> FactSheet:
    """Read a reference function into a :class:`FactSheet`; never raises (see :func:`_extract`)."""
    try:
        return _extract(source, problem, test_calls)
    except Exception as exc:  # noqa: BLE001 - odd references must degrade to "I don't know", not crash
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
    tables, consts = _module_tables(tree)
    facts: list[Fact] = []
    module_consts = {name: _const_key(value) for name, value in consts
                     if _const_key(value) is not None and not isinstance(_const_key(value), bool)}
    reader = _FunctionReader(main, tables, main=True, module_consts=module_consts)
    facts += reader.read()
    sp = Speaker(reader.params)
    for name, value in consts:
        sp.start()
        text = sentence(f"the {humanise(name)} is {sp.say(value)}")
        facts.append(Fact("constant", text, f"the {humanise(name)}", frozenset(keywords(text) | keywords(name)),
                          frozenset(sp.numbers), frozenset(sp.strings), frozenset({"values", "money"}), 6.0))
    for f in funcs:
        if f is main:
            continue
        try:
            helper = _FunctionReader(f, tables, main=False, module_consts=module_consts).read()
        except (RecursionError, ValueError, AttributeError, TypeError):
            continue
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
        c = _const_key(node)
        if isinstance(c, (int, float)) and not isinstance(c, bool):
            nums.add(float(c))
        elif isinstance(c, str):
            strs.add(c.lower())
    return FactSheet(main.name, reader.params, unique[:60], lines, frozenset(nums), frozenset(strs))
