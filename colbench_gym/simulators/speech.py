"""Plain-English rendering of Python expressions, for the offline simulator's facts.

WHY a module of its own: a person states ``weight_kg <= 2`` as "weight_kg is at most 2" and
``round(base * 0.5, 2)`` as "half of the base, rounded to 2 decimals". :class:`Speaker` does
that for any expression, keeping parameter names (the agent must use them), naming locals
("the base cost"), standing in for short aliases ("the entry's 'pages'") and remembering the
numbers and values it said, so a fact knows what it mentions. Static only: nothing is executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from colbench_gym.simulators.question import split_identifier

#: Renderings longer than this fall back to a vaguer phrase ("a calculation with x and y").
MAX_SAY = 150


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
                saved = (set(self.numbers), set(self.strings), set(self.names))
                try:
                    text = self.say(self.expansions[node.id], prec)
                finally:
                    self._expanding.discard(node.id)
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
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and _const_key(left.right) == 2 \
                and _const_key(right) == 1 and op in (ast.Eq, ast.NotEq):
            return f"{self.say(left.left, 5)} is {'odd' if op is ast.Eq else 'even'}"
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
                said = [self.say(e) for e in right.elts]
                if not neg:
                    return f"{lhs} is {join_and(said, 'or')}"
                if len(said) == 1:
                    return f"{lhs} is not {said[0]}"
                if len(said) == 2:
                    return f"{lhs} is neither {said[0]} nor {said[1]}"
                return f"{lhs} is none of {join_and(said, 'or')}"
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


__all__ = ["MAX_SAY", "Speaker", "capitalise", "element_noun", "fmt_number", "fmt_string", "humanise", "is_const",
           "is_table", "is_trivial_init", "join_and", "ordinal", "sentence", "singular"]
