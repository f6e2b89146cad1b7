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

from colbench_gym.simulators.question import keywords
from colbench_gym.simulators.speech import (
    _CMP_FLIP,
    _CMP_WORDS,
    _NOT_CONST,
    Speaker,
    _const_key,
    capitalise,
    element_noun,
    fmt_number,
    fmt_string,
    humanise,
    is_const,
    is_table,
    is_trivial_init,
    join_and,
    ordinal,
    sentence,
    singular,
)

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
            sub = node.targets[0]  # pages[title] = ...: the dict is keyed by titles
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and isinstance(sub.slice, ast.Name):
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
        if kind in ("result", "shape") or (kind == "branch" and low.startswith("if") and "otherwise the result is" in low):
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
            self.speaker.param_kinds.clear()  # wording then falls back to "is empty or missing"
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
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Yield) and st.value.value is not None:
            self.add("accumulate", f"{lead}{sp.say(st.value.value)} is handed out", "what it hands out",
                     tags={"how", "output"}, priority=5)
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            call = st.value
            if isinstance(call.func, ast.Name) and call.func.id == "print" and call.args:
                self.add("accumulate", f"{lead}{join_and([sp.say(a) for a in call.args])} is printed",
                         "what it prints", tags={"how", "output"}, priority=5)
            elif isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "add", "extend") and call.args:
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
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Yield) and st.value.value is not None:
                parts.append(f"{sp.say(st.value.value)} is handed out")
            elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                call = st.value
                if isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "add", "extend") and call.args:
                    parts.append(f"{sp.say(call.args[0])} is added to {sp.say(call.func.value, 5)}")
                elif isinstance(call.func, ast.Name) and call.func.id == "print" and call.args:
                    parts.append(f"{join_and([sp.say(a) for a in call.args])} is printed")
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
        if ladder and len(sentence(lead + ladder)) > MAX_FACT:
            ladder = None  # too many steps for one sentence: told arm by arm below
            sp.start()
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
                for i, (test, body) in enumerate(arms):
                    out = self._outcome(body)
                    if out:
                        t = _cond_tags(test, self._inputs(), self._bools())
                        # an elif only applies when the earlier cases did not
                        cond = f"if {sp.cond(test)}" if i == 0 else f"otherwise, if {sp.cond(test)}"
                        self.add("branch", f"{lead}{cond}, {out}", topic, tags=t,
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
            bare_name = isinstance(final.value, ast.Name) and content == f"the {humanise(final.value.id)}"
            if not content.startswith("a calculation") and not bare_name:  # "the result is the scaled" says nothing
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
        elif any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(ast.Module(body=self.body, type_ignores=[]))):
            self.add("shape", "it hands out its values one at a time (a generator)", "what it should give back",
                     tags={"output", "type"}, priority=7.5)
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
                        if is_p(left) and isinstance(op, (ast.Gt, ast.GtE, ast.Lt, ast.LtE)) and \
                                not isinstance(_const_key(right), str):
                            numeric = True  # compared by size with anything: a number
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

__all__ = ["Fact", "FactSheet", "Speaker", "capitalise", "element_noun", "extract_facts", "fmt_number",
           "fmt_string", "humanise", "join_and", "keywords", "sentence", "singular"]
