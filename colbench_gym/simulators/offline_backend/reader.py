"""Reading one function of the reference into facts.

WHY: a person does not recite code; they know that basic costs 20, that someone who never came
pays half, that the result is rounded to 2 decimals. :class:`FunctionReader` walks one function
definition and states such facts, one plain sentence each (never a line of source), with the
words, numbers and quoted values that make a fact relevant to a question. Each kind of fact has
its own module, mixed in here: the signature and parameters (:mod:`.inputs`), branches, loops
and assignments (:mod:`.statements`), the result, rounding, errors and order (:mod:`.outputs`);
lookup tables are read here. A part that trips over unusual code is skipped and recorded in
:attr:`FunctionReader.problems`, never fatal and never silent.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from colbench_gym.simulators.offline_backend.inputs import ParameterFacts
from colbench_gym.simulators.offline_backend.outputs import OutputFacts
from colbench_gym.simulators.offline_backend.sheet import MAX_FACT, Fact
from colbench_gym.simulators.offline_backend.speaker import Speaker
from colbench_gym.simulators.offline_backend.statements import StatementFacts
from colbench_gym.simulators.offline_backend.syntax import (
    assigned_names,
    const_key,
    is_const,
    is_table,
    is_trivial_init,
)
from colbench_gym.simulators.offline_backend.wording import element_noun, humanise, join_and, sentence
from colbench_gym.simulators.offline_backend.words import keywords

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


_GENERIC_VARS = {"x", "y", "z", "n", "m", "v", "i", "j", "k", "s", "t", "a", "b", "c", "d", "e", "p",
                 "q", "r", "w", "val", "res", "tmp", "num", "item", "elem", "el"}


class FunctionReader(ParameterFacts, StatementFacts, OutputFacts):
    """Reads one function definition into facts (:meth:`read`)."""

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
        #: what could not be read, one line each (reported on the fact sheet, never silent)
        self.problems: list[str] = []
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
                    for n in assigned_names(t):
                        self.counts[n] = self.counts.get(n, 0) + 1
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
                self.counts[node.target.id] = self.counts.get(node.target.id, 0) + 1
            elif isinstance(node, (ast.For, ast.comprehension)):
                self._loop_aliases(node.target, node.iter, aliases)
                for n in assigned_names(node.target):
                    self.counts[n] = self.counts.get(n, 0) + 1
        self.constants: dict[str, object] = dict(self.module_consts)
        for node in self.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if self.counts.get(name) == 1 and is_const(node.value) and not isinstance(const_key(node.value), bool) \
                        and const_key(node.value) is not None and name not in self.all_params:
                    self.constants[name] = const_key(node.value)
                if self.counts.get(name) == 1:
                    self.top_assigns[name] = node.value
                    if is_table(node.value):
                        self.tables[name] = node.value
        speaker = Speaker(self.params, aliases, problems=self.problems)
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
                if isinstance(t, ast.Name) and self.counts.get(t.id) == 1 and self.is_accessor(v) and \
                        (t.id in _GENERIC_VARS or len(t.id) <= 2):
                    aliases[t.id] = speaker.say(v)
            sub = node.targets[0]  # pages[title] = ...: the dict is keyed by titles
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and isinstance(sub.slice, ast.Name):
                self.key_nouns.setdefault(sub.value.id, speaker.say(sub.slice).removeprefix("the "))
        self.aliases = aliases
        self.speaker = Speaker(self.params, aliases, key_nouns=self.key_nouns, problems=self.problems)
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

    def input_names(self) -> set[str]:
        from_params = {v for v, src in self.loop_of.items() if isinstance(src, ast.Name) and src.id in self.all_params}
        accessors = {n for n in self.aliases if n not in self.loop_of}
        return set(self.all_params) | from_params | accessors

    def bool_params(self) -> set[str]:
        return {p for p, k in self.speaker.param_kinds.items() if k == "true or false"}

    def is_accessor(self, node: ast.AST) -> bool:
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
            extra: Iterable[str] = (), polarity: str = "", speaker: Speaker | None = None,
            guards: tuple = ()) -> None:
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
                               tags=frozenset(tags), priority=priority, polarity=polarity, guards=guards))
        sp.start()

    def read(self) -> list[Fact]:
        """All facts. A part that trips over unusual code is skipped and noted in
        :attr:`problems`, the rest is still read: a reader of arbitrary code must neither crash
        the episode nor hide what it could not read."""
        steps = [("the signature", self.signature_fact), ("the lookup tables", self.table_facts),
                 ("the statements", lambda: self.walk_statements(self.body, [], [])),
                 ("the result", self.result_facts), ("the rounding", self.rounding_facts),
                 ("the errors", self.raise_facts), ("the order", self.sorting_facts),
                 ("the parameters", self.param_facts), ("the docstring", self.docstring_fact)]
        try:
            self.read_param_kinds()
        except Exception as exc:  # noqa: BLE001 - noted; a reader of arbitrary code must not crash the episode
            self.speaker.param_kinds.clear()  # wording then falls back to "is empty or missing"
            self.note("the parameter kinds", exc)
        for what, step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - noted, the other steps still run
                self.speaker.start()
                self.note(what, exc)
        return self.facts

    def note(self, what: str, exc: BaseException) -> None:
        """Record that ``what`` could not be read (it is skipped; see :attr:`problems`)."""
        self.problems.append(f"{what} of {self.fn.name}: {type(exc).__name__}: {exc}"[:200])

    # -- lookup tables
    def table_facts(self) -> None:
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
            if any(isinstance(const_key(v), (int, float)) for v in table.values):
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


__all__ = ["FunctionReader"]
