"""Facts about what goes in: the signature, each parameter's shape, the docstring's summary.

WHY a module of its own: an agent must call the function right, so a person says its name and
parameters, and what each parameter is (a number, text, a list of dicts with which keys, which
values matter, which keys may be missing and count as what), from how the body uses it and
from its type hints. :class:`ParameterFacts` is mixed into :class:`.reader.FunctionReader`,
whose state (``add``, ``speaker``, ``fn``, ``params``, ...) it uses.
"""

from __future__ import annotations

import ast
import re

from colbench_gym.simulators.offline_backend.sheet import Fact
from colbench_gym.simulators.offline_backend.speaker import Speaker
from colbench_gym.simulators.offline_backend.syntax import CMP_FLIP, const_key, is_const
from colbench_gym.simulators.offline_backend.wording import CMP_WORDS, fmt_string, humanise, join_and, ordinal
from colbench_gym.simulators.offline_backend.words import keywords


class ParameterFacts:
    """Signature, parameter and docstring facts; a part of :class:`.reader.FunctionReader`."""

    def read_param_kinds(self) -> None:
        scratch = Speaker(self.params, self.aliases, problems=self.problems)
        scratch.constants = dict(self.constants)
        for p in self.params:
            try:
                text = self.param_text(p, scratch) or ""
            except (RecursionError, ValueError, AttributeError) as exc:
                self.note(f"the kind of parameter {p}", exc)
                text = ""
            if text.startswith(f"{p} is "):
                self.speaker.param_kinds[p] = text[len(p) + 4:].split(";")[0]

    def signature_fact(self) -> None:
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

    def param_facts(self) -> None:
        kinds: list[str] = []
        for p in self.params + [x for x in (self.varargs,) if x]:
            try:
                text = self.param_text(p)
            except (RecursionError, ValueError, AttributeError) as exc:
                self.note(f"parameter {p}", exc)
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

    def param_text(self, p: str, speaker: Speaker | None = None) -> str | None:
        """One sentence on parameter ``p`` ("weights is a dict with 'a' and 'b'; ..."), or None
        when the body says nothing about it: what it is (from how the body uses it, else its type
        hint), the values that matter, and whether it is optional."""
        sp = speaker or self.speaker
        sp.start()
        use = _ParameterUse(p, {v for v, src in self.loop_of.items() if isinstance(src, ast.Name) and src.id == p},
                            sp, self.constants, self.tables, self.aliases)
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            use.see(node)
        default = self._default(p)
        desc, notes = use.shape(default)
        annotated = _annotation_phrase(self._annotation(p))
        if annotated and (not desc or desc in ("a list", "a number", "a dict") and annotated.startswith(desc)):
            desc = annotated  # the reference's type hints say it outright
        return _param_sentence(p, desc, use.extras(default, notes))

    def _default(self, p: str) -> ast.AST | None:
        """``p``'s default value in the signature (None when it has none)."""
        default = None
        pos = [*self.fn.args.posonlyargs, *self.fn.args.args]
        defaults = self.fn.args.defaults
        for a, d in zip(pos[len(pos) - len(defaults):], defaults):
            if a.arg == p:
                default = d
        for a, d in zip(self.fn.args.kwonlyargs, self.fn.args.kw_defaults):
            if a.arg == p and d is not None:
                default = d
        return default

    def _annotation(self, p: str) -> ast.AST | None:
        a = self.fn.args
        for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)):
            if arg.arg == p:
                return arg.annotation
        return None

    def docstring_fact(self) -> None:
        if not self.doc:
            return
        first = self.doc.strip().split("\n\n")[0].replace("\n", " ")
        first = re.split(r"(?<=[.!?])\s", first)[0].strip()
        if 10 <= len(first) <= 200 and ">>>" not in first and "(" not in first:
            self.speaker.start()
            self.add("doc", f"in short: {first[0].lower() + first[1:]}", "what it is for",
                     tags={"purpose"}, priority=2)


#: Methods of ``str``: a parameter they are called on is text.
_STR_METHODS = frozenset({"lower", "upper", "strip", "split", "startswith", "endswith", "replace", "isdigit",
                          "isalpha", "title", "find", "count", "capitalize", "lstrip", "rstrip", "isupper", "islower"})
#: Character tests: a loop item they are called on is a character, so the parameter is text.
_CHAR_TESTS = frozenset({"isalnum", "isalpha", "isdigit", "isupper", "islower", "isspace"})
#: String methods called on a loop item: the parameter is a list of strings.
_ITEM_STR_METHODS = frozenset({"lower", "upper", "strip", "split", "startswith", "endswith", "isdigit", "isalpha",
                               "replace", "title"})
#: Built-ins that walk a collection passed to them (``len`` only measures it).
_WALKERS = ("sum", "max", "min", "sorted", "len", "enumerate", "zip", "set", "list")


class _ParameterUse:
    """What a function body does with one parameter ``p`` and with the items of loops over it
    (``elems``): collected node by node by :meth:`see`, then put in words by :meth:`shape` and
    :meth:`extras`. Every value is said through the speaker in the order the body shows it."""

    def __init__(self, p: str, elems: set[str], speaker: Speaker, constants: dict, tables: dict, aliases: dict):
        self.p, self.elems, self.sp = p, elems, speaker
        self.constants, self.tables, self.aliases = constants, tables, aliases
        self.boolish = self.numeric = self.textual = self.iterated = self.items = False
        self.compares: list[str] = []  # "it is above 10", "its length is 3"
        self.compare_keys: dict[str, float] = {}  # a compare phrase -> its number, for ordering
        self.str_values: list[str] = []  # values it is compared with
        self.table_keys: list[str] = []  # keys of the tables it is looked up in
        self.keys: dict[str, ast.AST | None] = {}  # its keys -> default when read with .get
        self.elem_keys: dict[str, ast.AST | None] = {}  # its items' keys -> default
        self.methods: set[str] = set()
        self.elem_methods: set[str] = set()
        self.tuple_elems: list[str] = []  # names (or ordinals) of its items' parts
        self.elem_names: list[str] = []  # table keys the items are looked up by

    def is_p(self, n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == self.p

    def is_e(self, n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id in self.elems

    # ------------------------------------------------------------------ reading the body
    def see(self, node: ast.AST) -> None:
        """Note what ``node`` tells about the parameter."""
        test = getattr(node, "test", None) if isinstance(node, (ast.If, ast.While, ast.IfExp)) else None
        if test is not None and self.is_p(test) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) \
                and self.is_p(node.operand) or isinstance(node, ast.BoolOp) and any(self.is_p(v) for v in node.values):
            self.boolish = True
        if isinstance(node, ast.Compare):
            self.see_compare(node)
        elif isinstance(node, ast.Subscript):
            self.see_subscript(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            self.see_method_call(node, node.func.value, node.func.attr)
        elif isinstance(node, ast.BinOp) and (self.is_p(node.left) or self.is_p(node.right)):
            self.see_arithmetic(node)
        elif isinstance(node, (ast.For, ast.comprehension)) and self.is_p(node.iter):
            self.see_loop(node.target)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args and self.is_p(node.args[0]):
            self.see_builtin(node.func.id)

    def string_keys(self, keys: list[ast.AST | None]) -> list[str]:
        """A table's string keys (its first eight) in words."""
        return [self.sp.say(k) for k in keys[:8] if k is not None and isinstance(const_key(k), str)]

    def see_table(self, keys: list[ast.AST | None]) -> None:
        """``p`` is looked up in (or compared against) a table: its string keys are the values that matter."""
        names = self.string_keys(keys)
        if names:
            self.textual = True
        self.table_keys += names

    def see_compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            left, right = sides[i], sides[i + 1]
            if is_const(left) and not is_const(right):
                left, right = right, left
                op = CMP_FLIP.get(type(op), type(op))()
            if self.is_p(left) or (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
                                   and left.func.id in ("len", "abs") and left.args and self.is_p(left.args[0])):
                self.see_comparison(left, op, right)

    def see_comparison(self, left: ast.AST, op: ast.cmpop, right: ast.AST) -> None:
        """``p`` (or its ``len``/``abs``) compared with ``right``."""
        direct = self.is_p(left)
        prefix = "it is " if direct else ("its length is " if left.func.id == "len" else "its size is ")  # type: ignore[attr-defined]
        if direct and isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) and not isinstance(const_key(right), str):
            self.numeric = True  # compared by size with anything: a number
        if isinstance(right, ast.Name) and right.id in self.constants and direct:
            c = self.constants[right.id]
            if isinstance(c, (int, float)) and not isinstance(c, bool):
                self.numeric = True
                word = CMP_WORDS.get(type(op), "")
                self.add_compare(f"it is {word + ' ' if word and 'one of' not in word else ''}{self.sp.say(right)}", c)
        if is_const(right):
            self.see_constant_comparison(prefix, direct, op, right)
        elif isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(is_const(e) for e in right.elts):
            for e in right.elts:
                v = self.sp.say(e)
                if isinstance(const_key(e), str):
                    self.textual = True
                if v not in self.str_values:
                    self.str_values.append(v)
        elif isinstance(right, ast.Name) and right.id in self.tables:
            t = self.tables[right.id]
            self.see_table(t.keys if isinstance(t, ast.Dict) else t.elts)  # type: ignore[attr-defined]

    def see_constant_comparison(self, prefix: str, direct: bool, op: ast.cmpop, right: ast.AST) -> None:
        c = const_key(right)
        if isinstance(c, str):
            self.textual = True
            v = self.sp.say(right)
            if isinstance(op, (ast.Eq, ast.NotEq)) and v not in self.str_values:
                self.str_values.append(v)
        elif isinstance(c, (int, float)) and not isinstance(c, bool):
            if direct:
                self.numeric = True
            word = CMP_WORDS.get(type(op), "")
            phrase = f"{prefix}{word + ' ' if word and word not in ('one of', 'not one of') else ''}{self.sp.say(right)}"
            if isinstance(op, ast.NotEq):
                phrase = f"{prefix}{self.sp.say(right)}"
            self.add_compare(phrase, c)

    def add_compare(self, phrase: str, number: float) -> None:
        if phrase not in self.compares:
            self.compares.append(phrase)
            self.compare_keys[phrase] = float(number)

    def see_subscript(self, node: ast.Subscript) -> None:
        k = const_key(node.slice)
        if isinstance(k, str):  # p["key"] / item["key"]
            if self.is_p(node.value):
                self.keys.setdefault(k, None)
            elif self.is_e(node.value):
                self.elem_keys.setdefault(k, None)
        elif self.is_p(node.slice):  # TABLE[p] / {...}[p]
            table = self.tables.get(node.value.id) if isinstance(node.value, ast.Name) else None
            if isinstance(table, ast.Dict):
                self.see_table(table.keys)
            elif isinstance(node.value, ast.Dict):
                self.see_table(node.value.keys)
        elif isinstance(k, int) and self.is_e(node.value) and not isinstance(k, bool):
            self.tuple_elems.append(ordinal(k))  # item[0]

    def see_method_call(self, node: ast.Call, owner: ast.AST, m: str) -> None:
        if m == "get" and node.args and (self.is_p(owner) or self.is_e(owner)):  # p.get("key", default)
            k = const_key(node.args[0])
            if isinstance(k, str):
                target = self.keys if self.is_p(owner) else self.elem_keys
                target[k] = node.args[1] if len(node.args) > 1 else ast.Constant(None)
        elif m == "get" and node.args and (self.is_p(node.args[0]) or self.is_e(node.args[0])):  # TABLE.get(p)
            table = owner if isinstance(owner, ast.Dict) else self.tables.get(getattr(owner, "id", ""))
            if isinstance(table, ast.Dict):
                if self.is_p(node.args[0]):
                    self.see_table(table.keys)
                else:
                    self.elem_names += self.string_keys(table.keys)
        elif self.is_p(owner):
            self.methods.add(m)
            if m == "items":
                self.items = True
        elif self.is_e(owner):
            self.elem_methods.add(m)

    def see_arithmetic(self, node: ast.BinOp) -> None:
        other = node.right if self.is_p(node.left) else node.left
        if isinstance(const_key(other), str) or isinstance(other, ast.JoinedStr):
            self.textual = True
        elif not isinstance(node.op, ast.Mod) or not isinstance(const_key(node.left), str):
            self.numeric = True  # not "%s" % p

    def see_loop(self, target: ast.AST) -> None:
        self.iterated = True
        if isinstance(target, ast.Tuple):  # for name, price in p
            self.tuple_elems = [self.aliases.get(e.id, "the " + humanise(e.id)).removeprefix("the ")
                                for e in target.elts if isinstance(e, ast.Name)]

    def see_builtin(self, name: str) -> None:
        if name in _WALKERS:
            self.iterated = self.iterated or name != "len"
            if name == "sum":
                self.numeric = False
                self.methods.add("sum")
        elif name in ("abs", "round", "int", "float"):
            self.numeric = True

    # ------------------------------------------------------------------ in words
    def shape(self, default: ast.AST | None) -> tuple[str, list[str]]:
        """What ``p`` is ("text", "a dict with 'a' and 'b'", "a list of numbers", "" when unknown)
        and notes on the keys that may be missing."""
        if self.methods & _STR_METHODS:
            self.textual = True
        iterated = self.iterated or bool(self.elems)  # zip(answers, key) iterates both
        items = self.items or bool(self.methods & {"values", "keys", "items"})
        if self.methods & _STR_METHODS and not self.elem_keys:
            return "text", []
        if items or (self.keys and not iterated):
            if not self.keys:
                return "a dict", []
            names, notes = self.key_list(self.keys)
            return f"a dict with {names}", notes
        if iterated or self.elem_keys:
            return self.list_shape()
        if self.textual:
            return "text", []
        if self.numeric or self.compares:
            return "a number", []
        if self.boolish and not (isinstance(default, ast.Constant) and default.value is None):
            return "true or false", []
        return "", []

    def list_shape(self) -> tuple[str, list[str]]:
        """What an iterated ``p`` is, from what is done with its items."""
        if self.elem_keys:
            names, notes = self.key_list(self.elem_keys)
            return f"a list of dicts, each with {names}", notes
        parts = self.tuple_elems
        if parts and len(parts) >= 2 and not parts[0].startswith(("first", "second")):
            return (f"a list of ({', '.join(parts)}) pairs" if len(parts) == 2 else
                    f"a list of ({', '.join(parts)}) tuples"), []
        if (self.textual and not self.elems) or (self.elem_methods & _CHAR_TESTS and any(
                len(e) <= 2 or e in ("char", "letter", "character") for e in self.elems)):
            return "text", []
        if self.elem_methods & _ITEM_STR_METHODS:
            return "a list of strings", []
        if "sum" in self.methods:
            return "a list of numbers", []
        if self.elem_names:
            return f"a list of names like {join_and(list(dict.fromkeys(self.elem_names))[:6], 'or')}", []
        return "a list", []

    def key_list(self, ks: dict[str, ast.AST | None]) -> tuple[str, list[str]]:
        """The keys in words, and a note per key that may be missing (with what it then counts as)."""
        names = [fmt_string(k) for k in ks]
        for k in ks:
            self.sp.strings.add(k.lower())
        notes = [f"{fmt_string(k)} may be missing (then count it as {self.sp.say(d)})"
                 for k, d in ks.items() if d is not None and not (isinstance(d, ast.Constant) and d.value is None)]
        notes += [f"{fmt_string(k)} may be missing" for k, d in ks.items()
                  if isinstance(d, ast.Constant) and d.value is None]
        return join_and(names), notes

    def compare_phrases(self) -> list[str]:
        """The comparisons, smallest number first; "it is " said once ("it is 1, 2 or 3")."""
        compares = sorted(self.compares, key=lambda c: (c.startswith("its "), self.compare_keys.get(c, 0.0)))
        if all(c.startswith("it is ") for c in compares):
            return [c if i == 0 else c[6:] for i, c in enumerate(compares)]
        return compares

    def extras(self, default: ast.AST | None, notes: list[str]) -> list[str]:
        """The clauses after what ``p`` is: values that matter, comparisons, its default, missing keys."""
        values = list(dict.fromkeys(self.str_values + self.table_keys))
        extras = []
        if values:
            shown = values[:6]
            extras.append(f"the ones that matter are {join_and(shown, 'and')}" if len(shown) > 1
                          else f"the one that matters is {shown[0]}")
        compares = self.compare_phrases()
        if compares:
            extras.append("what matters is whether " + join_and(compares[:4], "or"))
        if default is not None:
            extras.append(f"it is optional and defaults to {self.sp.say(default)}")
        return extras + notes[:2]


def _param_sentence(p: str, desc: str, extras: list[str]) -> str | None:
    """"p is DESC; EXTRA; ...", "p is optional and ...", "for p, EXTRA; ..." or None."""
    if not desc and not extras:
        return None
    if desc:
        return f"{p} is {desc}" + ("; " + "; ".join(extras) if extras else "")
    if extras[0].startswith("it is optional"):
        extras[0] = extras[0].removeprefix("it ")
        return f"{p} " + "; ".join(extras)
    return f"for {p}, " + "; ".join(extras)


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
            return None  # a string hint may be any prose ("price list"): not a type, so no type from it
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


__all__ = ["ParameterFacts"]
