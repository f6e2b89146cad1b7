"""Whole-function facts about what comes out: the result and its shape, rounding, errors, order.

WHY a module of its own: "what should it return?" is the question every agent asks first; its
answer (a dict with which keys, one of which texts, a number rounded to 2 decimals), the
rounding, the errors raised and the sort order with its tie-break each get a fact here.
:class:`OutputFacts` is mixed into :class:`.reader.FunctionReader`, whose state (``add``,
``speaker``, ``body``, ``top_assigns``, ...) it uses.
"""

from __future__ import annotations

import ast
import re

from colbench_gym.simulators.offline_backend.speaker import Speaker
from colbench_gym.simulators.offline_backend.syntax import (
    NOT_CONST,
    const_key,
    is_const,
    is_table,
    is_trivial_init,
    names_in,
)
from colbench_gym.simulators.offline_backend.wording import humanise, join_and


class OutputFacts:
    """Result, shape, rounding, error, sort and tie facts; a part of :class:`.reader.FunctionReader`."""

    def _returns(self) -> list[ast.Return]:
        out = []
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Return):
                out.append(node)
        return sorted(out, key=lambda r: (r.lineno, r.col_offset))

    def result_facts(self) -> None:
        returns = self._returns()
        final = self.body[-1] if self.body and isinstance(self.body[-1], ast.Return) else None
        expansions = {n: v for n, v in self.top_assigns.items()
                      if n not in self.aliases and not is_trivial_init(v) and not is_table(v) and not is_const(v)}
        rsp = Speaker(self.params, self.aliases, expansions=expansions, key_nouns=self.key_nouns,
                      problems=self.problems)
        rsp.tables = set(self.tables)
        rsp.constants = dict(self.constants)
        if final is not None and id(final) in self.consumed:
            final = None
        if final is not None and final.value is not None:
            rsp.start()
            content = self.value_phrase(final.value, rsp)
            if content.startswith("a calculation") or len(content) > 200:
                rsp.expansions = {}
                rsp.start()
                content = self.value_phrase(final.value, rsp)
            lead = "the result is" if len(returns) == 1 else "in the normal case, the result is"
            bare_name = isinstance(final.value, ast.Name) and content == f"the {humanise(final.value.id)}"
            if not content.startswith("a calculation") and not bare_name:  # "the result is the scaled" says nothing
                self.add("result", f"{lead} {content}", "what it should give back",
                         tags={"output", "how"}, priority=8.5, speaker=rsp, extra=[self.fn.name])
        consts = [const_key(r.value) for r in returns if r.value is not None]
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
        c = const_key(node)
        if c is not NOT_CONST:
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
                digits = const_key(node.args[1]) if len(node.args) > 1 else None
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

    def rounding_facts(self) -> None:
        sp = self.speaker
        found = False
        floor_div_seen = False
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" and node.args:
                found = True
                sp.start()
                digits = const_key(node.args[1]) if len(node.args) > 1 else None
                what = sp.say(node.args[0])
                if len(what) > 80 or what.startswith("a calculation"):
                    what = self.rounded_subject(node)
                sp.start()
                if isinstance(digits, int) and not isinstance(digits, bool):
                    sp.numbers.add(float(digits))
                    text = f"{what} is rounded to {digits} decimal place{'s' if digits != 1 else ''}"
                else:
                    text = f"{what} is rounded to a whole number"
                self.add("round", text, "rounding", tags={"round", "output"}, priority=7,
                         extra=list(names_in(node.args[0])))
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
                    what = self.rounded_subject(node)
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

    def rounded_subject(self, node: ast.Call) -> str:
        """What a rounding call rounds, named shortly when its argument is too long to say.

        "the result" only when the rounded value *is* what the function gives back (returned as
        it is, or assigned to a name that is returned as it is); a value rounded on the way (e.g.
        ``total_cents = round(total * 1.12 * 100)`` before ``return share_cents / 100``) is named
        by the variable it is stored in, never passed off as the result.
        """
        parents: dict[int, ast.AST] = {}
        for parent in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            for child in ast.iter_child_nodes(parent):
                parents[id(child)] = parent
        cur: ast.AST = node
        changed = False  # arithmetic or another call applied to the rounded value on the way up
        while id(cur) in parents and not isinstance(parents[id(cur)], ast.stmt):
            parent = parents[id(cur)]
            if isinstance(parent, (ast.BinOp, ast.Call, ast.Subscript, ast.Compare, ast.BoolOp)) and \
                    not (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                         and parent.func.id in ("max", "min", "float", "int", "abs")):
                changed = True
            cur = parent
        stmt = parents.get(id(cur))
        if isinstance(stmt, ast.Return) and not changed:
            return "the result"
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            returned = any(isinstance(r.value, ast.Name) and r.value.id == name for r in self._returns())
            if returned and not changed:
                return "the result"
            said = self.speaker.say(stmt.targets[0])
            return said if not changed else f"a part of {said}"
        return "a value on the way to the result"

    def raise_facts(self) -> None:
        any_raise = False
        for node in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(node, ast.Raise):
                any_raise = True
        # conditional raises are reported by the branch facts; unconditional ones here
        for st in self.body:
            if isinstance(st, ast.Raise):
                self.speaker.start()
                self.add("raise", f"it should raise {self.exception_phrase(st)}", "errors",
                         tags={"error"}, priority=6)
        if not any_raise and self.main:
            self.speaker.start()
            self.add("raise", "it doesn't need to raise any errors", "errors",
                     tags={"error", "invalid"}, priority=0.5, polarity="no")

    def sorting_facts(self) -> None:
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
                text = sp.sorted_phrase(node, imperative=True)
                self.add("sort", text, "the order", tags={"order", "sort"}, priority=6.5)
                key = kw.get("key")
                self._tie_fact(key, node.args[0])
            elif isinstance(f, ast.Attribute) and f.attr == "sort":
                sp.start()
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                rev = "reverse" in kw and const_key(kw["reverse"]) is True
                key = sp.key_phrase(kw.get("key"))
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
            saved = sp.item_names
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr == "items":
                sp.item_names = ("key", "value")
            sp.in_tuple = True
            try:
                first = sp.key_part(key.body.elts[0], arg).split(" (")[0]
                rest = join_and([sp.key_part(e, arg) for e in key.body.elts[1:]])
            finally:
                sp.in_tuple = False
                sp.item_names = saved
            text = f"{first}; after that, order them by {rest}" if first.startswith("the ones where") else \
                f"when two have the same {first.removeprefix('the ')}, order them by {rest}"
            self.add("tie", text, "ties",
                     tags={"tie", "order"}, priority=6)
        else:
            self.add("tie", "when two are equal, they keep the order they came in", "ties",
                     tags={"tie", "order"}, priority=4)


__all__ = ["OutputFacts"]
