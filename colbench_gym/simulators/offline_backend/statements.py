"""Facts from the function's statements: branches, if/elif ladders, loops, assignments, ``try``.

WHY a module of its own: most of what a person knows about their function is a rule ("if plan
is 'basic' and visits is more than 12, the base goes up by 2 for each visit above 12"); this
walks the body with the conditions and loops on the way to each statement.
:class:`StatementFacts` is mixed into :class:`.reader.FunctionReader`, whose state (``add``,
``speaker``, ``aliases``, ``loop_of``, ...) it uses.
"""

from __future__ import annotations

import ast
import re

from colbench_gym.simulators.offline_backend.sheet import MAX_FACT
from colbench_gym.simulators.offline_backend.speaker import Speaker
from colbench_gym.simulators.offline_backend.syntax import (
    CMP_FLIP,
    assigned_names,
    condition_guards,
    condition_tags,
    if_chain_arms,
    is_const,
    is_table,
    is_trivial_init,
    names_in,
)
from colbench_gym.simulators.offline_backend.wording import CMP_WORDS, fmt_string, humanise, join_and, sentence

_AUG_WORDS = {ast.Add: "goes up by", ast.Sub: "goes down by", ast.Mult: "is multiplied by",
              ast.Div: "is divided by", ast.FloorDiv: "is divided (rounded down) by", ast.Mod: "is taken modulo"}


class StatementFacts:
    """Branch, case, assignment and accumulation facts; a part of :class:`.reader.FunctionReader`."""

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

    def _loop_text(self, node: ast.AST) -> str:
        sp = self.speaker
        if isinstance(node, ast.For):
            return f"for each {sp.target_noun(node.target, node.iter)} in {sp.say(node.iter, 5)}"
        if isinstance(node, ast.While):
            return f"while {sp.cond(node.test)}"
        return ""

    def _prefix(self, path: list[str], loops: list[str]) -> str:
        parts = list(loops)
        if path:
            parts.append("when " + " and ".join(path))
        return ", ".join(parts)

    def walk_statements(self, stmts: list[ast.stmt], path: list[str], loops: list[str]) -> None:
        for i, st in enumerate(stmts):
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            if isinstance(st, ast.If) and isinstance(nxt, ast.Return) and nxt.value is not None:
                arms, orelse = if_chain_arms(st)
                if not orelse and all(b and isinstance(b[-1], (ast.Return, ast.Raise)) for _, b in arms):
                    self.fallthrough[id(st)] = nxt
            if id(st) in self.consumed:
                continue
            try:
                self._statement(st, path, loops)
            except (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
                # skipped and noted (inline: this may run deep in the stack)
                self.problems.append(f"the statement on line {st.lineno} of {self.fn.name}: "
                                     f"{type(exc).__name__}: {exc}"[:200])
                continue

    def _statement(self, st: ast.stmt, path: list[str], loops: list[str]) -> None:
        if isinstance(st, ast.If):
            self._if_chain(st, path, loops)
        elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            self.walk_statements(st.body, path, loops + [self._loop_text(st)])
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            self.walk_statements(st.body, path, loops)
        elif isinstance(st, ast.Try):
            self.walk_statements(st.body, path, loops)
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
            self.walk_statements(st.orelse, path, loops)
            self.walk_statements(st.finalbody, path, loops)
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
            names = assigned_names(target)
            if any(n in self.aliases for n in names) and all(n in self.aliases for n in names):
                return
            if is_table(value) or is_trivial_init(value):
                return
            values = value.elts if isinstance(value, ast.Tuple) and isinstance(target, ast.Tuple) else [value]
            if all(self.is_accessor(v) or isinstance(v, ast.Name) for v in values):
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
            if isinstance(target, ast.Name) and target.id in names_in(value):
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
                     extra=assigned_names(st.target))
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
                pass  # covered by sorting_facts
        elif isinstance(st, ast.Raise):
            pass  # covered by raise_facts

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
                parts.append("the result is None" if st.value is None else f"the result is {self.value_phrase(st.value)}")
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
                parts.append(f"it should raise {self.exception_phrase(st)}")
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

    def value_phrase(self, node: ast.AST, speaker: Speaker | None = None) -> str:
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

    def exception_phrase(self, st: ast.Raise) -> str:
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
        arms, orelse = if_chain_arms(node)
        last_chain = node
        while len(last_chain.orelse) == 1 and isinstance(last_chain.orelse[0], ast.If):
            last_chain = last_chain.orelse[0]
        if not orelse and id(node) in self.fallthrough:
            nxt = self.fallthrough[id(node)]
            orelse = [nxt]
            self.consumed.add(id(nxt))
        tags: set[str] = set()
        for test, _ in arms:
            tags |= condition_tags(test, self.input_names(), self.bool_params())
        if any(isinstance(s, ast.Raise) for _, b in arms for s in b):
            tags |= {"error", "invalid"}
        pre = self._prefix(path, loops)
        lead = f"{pre}, " if pre else ""
        arm_guards = self._arm_guards(node, arms) if not path and not loops else [None] * len(arms)
        any_guard = tuple(c for g in arm_guards if g for c in g) if all(arm_guards) else ()
        subject_names = sorted(set().union(*(names_in(t) for t, _ in arms)) & (self.all_params | set(self.aliases) | set(self.top_assigns)))
        inputs = [n for n in subject_names if n in self.input_names() or n in self.loop_of]
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
            self.add("case", lead + ladder, topic, tags=tags | {"values"} | out_tags, priority=8, extra=subject_names,
                     guards=any_guard)
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
                         extra=subject_names, guards=any_guard)
            elif pieces:
                sp.start()
                for i, (test, body) in enumerate(arms):
                    out = self._outcome(body)
                    if out:
                        t = condition_tags(test, self.input_names(), self.bool_params())
                        # an elif only applies when the earlier cases did not
                        cond = f"if {sp.cond(test)}" if i == 0 else f"otherwise, if {sp.cond(test)}"
                        self.add("branch", f"{lead}{cond}, {out}", topic, tags=t,
                                 priority=7 if "edge" in t else 6.5, extra=subject_names, guards=arm_guards[i] or ())
                if else_out:
                    self.add("branch", f"{lead}in any other case, {self._outcome(orelse)}", topic, tags=tags,
                             priority=6, extra=subject_names)
        # nested statements, with the arm's condition on the path
        for test, body in arms:
            self.walk_statements([s for s in body if not isinstance(s, (ast.Return, ast.Raise))],
                       path + [sp.cond(test)], loops)
        if orelse and not (len(orelse) == 1 and id(orelse[0]) in self.consumed):
            neg = sp.negate(arms[0][0]) if len(arms) == 1 else "none of those apply"
            self.walk_statements(orelse, path + [neg], loops)
        sp.start()

    def _arm_guards(self, node: ast.If, arms: list[tuple[ast.expr, list[ast.stmt]]]) -> list:
        """Each arm's condition as :attr:`.sheet.Fact.guards` when it is a plain test of parameters
        against numbers *and* the if-chain is reached for every input (a top-level statement after
        which nothing but such guarded chains can return or raise); else None per arm."""
        none = [None] * len(arms)
        if not any(st is node for st in self.body):
            return none
        params = set(self.params) - self._reassigned()
        for st in self.body:
            if st is node:
                break
            exits = any(isinstance(sub, (ast.Return, ast.Raise)) for sub in ast.walk(st))
            if exits and not (isinstance(st, ast.If) and all(condition_guards(t, params) for t, _ in if_chain_arms(st)[0])):
                return none  # an earlier exit on a condition we cannot evaluate: this chain may not be reached
        return [condition_guards(test, params) for test, _ in arms]

    def _reassigned(self) -> set[str]:
        """Names the function assigns anywhere (a parameter assigned is no longer the caller's value)."""
        out: set[str] = set()
        for sub in ast.walk(ast.Module(body=self.body, type_ignores=[])):
            if isinstance(sub, ast.Assign):
                for t in sub.targets:
                    out.update(assigned_names(t))
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
                out.update(assigned_names(sub.target))
            elif isinstance(sub, ast.NamedExpr):
                out.update(assigned_names(sub.target))
            elif isinstance(sub, (ast.With, ast.AsyncWith)):
                for item in sub.items:
                    if item.optional_vars is not None:
                        out.update(assigned_names(item.optional_vars))
        return out

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
                op = CMP_FLIP.get(type(op), type(op))()
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
            v = self.value_phrase(val)
            if isinstance(op, (ast.Eq, ast.In)):
                cond = sp.say(right) if is_const(right) else join_and([sp.say(e) for e in right.elts], "or")
                pieces.append(f"{v} for {cond}")
            elif isinstance(op, ast.Is):
                pieces.append(f"{v} when it is {sp.say(right)}")
            else:
                word = CMP_WORDS.get(type(op))
                if word is None:
                    return None
                pieces.append(f"{v} when it is {word} {sp.say(right)}".replace("is  ", "is "))
        if else_val is not None:
            pieces.append(f"{self.value_phrase(else_val)} otherwise")
        what = "the result" if kind == "return" else sp.target(outs[0][3].targets[0])
        return f"depending on {subj}, {what} is {join_and(pieces)}"


__all__ = ["StatementFacts"]
