"""Wording of calls: ``round``, ``sorted``, ``max(..., key=...)``, ``.get``, string methods, ...

WHY a module of its own: calls are most of what a reference does, and each common one has its
own plain phrase ("the sum of", "sort by ..., largest first", "the rate for plan (25 if
missing)"). :class:`CallPhrases` is mixed into :class:`.speaker.Speaker`, whose state
(``say``, ``numbers``, ``strings``, ``aliases``, ...) it uses.
"""

from __future__ import annotations

import ast
import re

from colbench_gym.simulators.offline_backend.syntax import const_key
from colbench_gym.simulators.offline_backend.wording import (
    element_noun,
    fmt_string,
    humanise,
    join_and,
    ordinal,
    singular,
)

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

#: Builtins called with an argument that read as a phrase around it ({x}: the first argument).
_ONE_ARG_CALLS = {"len": "the length of {x}", "sum": "the sum of {x}", "abs": "the absolute value of {x}",
                  "str": "{x} as text", "bool": "whether {x} is non-empty", "list": "{x}", "tuple": "{x} as a tuple",
                  "set": "the distinct {x}", "reversed": "{x} reversed", "enumerate": "{x} with positions",
                  "any": "any of {x}", "all": "all of {x}", "dict": "{x} as a dict"}


class CallPhrases:
    """Calls, sort keys and type checks in words; a part of :class:`.speaker.Speaker`."""

    def call_phrase(self, node: ast.Call) -> str:
        func, args = node.func, node.args
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Name):
            f = func.id
            a = [self.say(x, 5) for x in args]
            if f in _ONE_ARG_CALLS and args:
                return _ONE_ARG_CALLS[f].format(x=a[0])
            if f in ("max", "min") and args:
                return self._extreme(f, node)
            if f == "round" and args:
                digits = const_key(args[1]) if len(args) > 1 else kw.get("ndigits") and const_key(kw["ndigits"])
                inner = self.say(args[0])
                if isinstance(digits, int) and not isinstance(digits, bool):
                    self.numbers.add(float(digits))
                    return f"{inner}, rounded to {digits} decimal{'s' if digits != 1 else ''}"
                return f"{inner}, rounded to a whole number"
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
            if f == "sorted" and args:
                return self.sorted_phrase(node)
            if f == "zip" and args:
                return join_and(a) + " side by side"
            if f == "range" and args:
                if len(args) == 1:
                    return f"0 up to {a[0]} (not included)"
                return f"{a[0]} up to {a[1]} (not included)"
            if f == "isinstance" and len(args) == 2:
                return f"{a[0]} is {self.type_phrase(args[1])}"
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

    def type_phrase(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return _TYPE_WORDS.get(node.id, f"a {humanise(node.id)}")
        if isinstance(node, ast.Tuple):
            words = {_TYPE_WORDS.get(e.id, e.id) for e in node.elts if isinstance(e, ast.Name)}
            if {"a whole number", "a number"} >= words:
                return "a number"
            return " or ".join(sorted(words))
        return "of the right type"

    def key_phrase(self, key: ast.AST | None) -> str:
        if key is None:
            return ""
        if isinstance(key, ast.Lambda):
            body, arg = key.body, key.args.args[0].arg if key.args.args else "_"
            if isinstance(body, ast.Tuple):
                self.in_tuple = True
                try:
                    parts = [self.key_part(e, arg) for e in body.elts]
                finally:
                    self.in_tuple = False
                return join_and(parts[:1]) + (", then by " + join_and(parts[1:]) if parts[1:] else "")
            return self.key_part(body, arg)
        if isinstance(key, ast.Attribute) and key.attr == "get" and isinstance(key.value, ast.Name):
            return f"{humanise(key.value.id)} value"
        if isinstance(key, ast.Name):
            return {"len": "length", "abs": "size", "str.lower": "name"}.get(key.id, humanise(key.id))
        return "a key"

    def key_part(self, node: ast.AST, arg: str) -> str:
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
            k = const_key(node.slice)
            if node.value.id == arg and isinstance(k, int) and not isinstance(k, bool):
                if self.item_names and k in (0, 1):
                    return f"the {self.item_names[k]}{desc or (' (smallest first)' if self.in_tuple else '')}"
                return f"the {ordinal(k)} value{desc or (' (smallest first)' if self.in_tuple else '')}"
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

    def sorted_phrase(self, node: ast.Call, imperative: bool = False) -> str:
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        src = node.args[0]
        what = self.say(src, 5)
        rev = const_key(kw["reverse"]) is True if "reverse" in kw else False
        saved = self.item_names
        if isinstance(src, ast.Call) and isinstance(src.func, ast.Attribute) and src.func.attr == "items":
            self.item_names = ("key", "value")
        try:
            key_node = kw.get("key")
            key = self.key_phrase(key_node)
        finally:
            self.item_names = saved
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
        return f"the {noun} of {self.say(inner, 5)} with the {word} {self.key_phrase(key)}"


__all__ = ["CallPhrases"]
