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
                        op = CMP_FLIP.get(type(op), type(op))()
                    if is_p(left) or (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
                                      and left.func.id in ("len", "abs") and left.args and is_p(left.args[0])):
                        prefix = "it is " if is_p(left) else ("its length is " if left.func.id == "len" else "its size is ")  # type: ignore[union-attr]
                        if is_p(left) and isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) and \
                                not isinstance(const_key(right), str):
                            numeric = True  # compared by size with anything: a number
                        if isinstance(right, ast.Name) and right.id in self.constants and is_p(left):
                            c = self.constants[right.id]
                            if isinstance(c, (int, float)) and not isinstance(c, bool):
                                numeric = True
                                word = CMP_WORDS.get(type(op), "")
                                phrase = f"it is {word + ' ' if word and 'one of' not in word else ''}{sp.say(right)}"
                                if phrase not in compares:
                                    compares.append(phrase)
                                    compare_keys[phrase] = float(c)
                        if is_const(right):
                            c = const_key(right)
                            if isinstance(c, str):
                                textual = True
                                v = sp.say(right)
                                if isinstance(op, (ast.Eq, ast.NotEq)) and v not in str_values:
                                    str_values.append(v)
                            elif isinstance(c, (int, float)) and not isinstance(c, bool):
                                if is_p(left):
                                    numeric = True
                                word = CMP_WORDS.get(type(op), "")
                                phrase = f"{prefix}{word + ' ' if word and word not in ('one of', 'not one of') else ''}{sp.say(right)}"
                                if isinstance(op, ast.NotEq):
                                    phrase = f"{prefix}{sp.say(right)}"
                                if phrase not in compares:
                                    compares.append(phrase)
                                    compare_keys[phrase] = float(c)
                        elif isinstance(right, (ast.Tuple, ast.List, ast.Set)) and all(is_const(e) for e in right.elts):
                            for e in right.elts:
                                v = sp.say(e)
                                if isinstance(const_key(e), str):
                                    textual = True
                                if v not in str_values:
                                    str_values.append(v)
                        elif isinstance(right, ast.Name) and right.id in self.tables:
                            t = self.tables[right.id]
                            ks = t.keys if isinstance(t, ast.Dict) else t.elts  # type: ignore[attr-defined]
                            for k in ks[:8]:
                                if k is not None and isinstance(const_key(k), str):
                                    textual = True
                                    table_keys.append(sp.say(k))
            elif isinstance(node, ast.Subscript):
                k = const_key(node.slice)
                if isinstance(k, str):
                    if is_p(node.value):
                        keys.setdefault(k, None)
                    elif is_e(node.value):
                        elem_keys.setdefault(k, None)
                elif is_p(node.slice) or (isinstance(node.slice, ast.Name) and node.slice.id == p):
                    table = self.tables.get(node.value.id) if isinstance(node.value, ast.Name) else None
                    if isinstance(table, ast.Dict):
                        for key in table.keys[:8]:
                            if key is not None and isinstance(const_key(key), str):
                                textual = True
                                table_keys.append(sp.say(key))
                    elif isinstance(node.value, ast.Dict):
                        for key in node.value.keys[:8]:
                            if key is not None and isinstance(const_key(key), str):
                                textual = True
                                table_keys.append(sp.say(key))
                elif isinstance(k, int) and is_e(node.value) and not isinstance(k, bool):
                    tuple_elems.append(ordinal(k))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                m = node.func.attr
                if m == "get" and node.args and (is_p(owner) or is_e(owner)):
                    k = const_key(node.args[0])
                    if isinstance(k, str):
                        target = keys if is_p(owner) else elem_keys
                        target[k] = node.args[1] if len(node.args) > 1 else ast.Constant(None)
                elif m == "get" and node.args and (is_p(node.args[0]) or is_e(node.args[0])):
                    table = owner if isinstance(owner, ast.Dict) else self.tables.get(getattr(owner, "id", ""))
                    if isinstance(table, ast.Dict):
                        for key in table.keys[:8]:
                            if key is not None and isinstance(const_key(key), str):
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
                oc = const_key(other)
                if isinstance(oc, str) or isinstance(other, ast.JoinedStr):
                    textual = True
                elif not isinstance(node.op, ast.Mod) or not isinstance(const_key(node.left), str):
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
        iterated = iterated or bool(elems)  # zip(answers, key) iterates both
        if methods & {"values", "keys", "items"}:
            items = True
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

    def docstring_fact(self) -> None:
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
