"""Wording of conditions: comparisons, negations, ``and``/``or``, truthiness tests.

WHY a module of its own: a branch's fact is only as good as its condition ("if plan is 'basic'
and visits is more than 12"), and saying the opposite of a condition ("otherwise" arms,
``not``) needs care. :class:`ConditionPhrases` is mixed into :class:`.speaker.Speaker`, whose
state (``say``, ``cond_defs``, ``param_kinds``, ...) it uses.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from colbench_gym.simulators.offline_backend.syntax import CMP_FLIP, const_key, is_const
from colbench_gym.simulators.offline_backend.wording import CMP_WORDS, humanise, join_and, singular

_CMP_NEG = {ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
            ast.IsNot: ast.Is}


class ConditionPhrases:
    """Conditions in words; a part of :class:`.speaker.Speaker`."""

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
        defined = self._through_definition(node, self.cond)
        if defined is not None:
            return defined
        if isinstance(node, ast.Name) and self.param_kinds.get(node.id) == "true or false":
            return f"{node.id} is true"
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
            return f"{self.say(node)} is set"
        return self.say(node)

    def negate(self, node: ast.AST) -> str:
        defined = self._through_definition(node, self.negate)
        if defined is not None:
            return defined
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
            return f"{self.say(node.args[0])} is not {self.type_phrase(node.args[1])}"
        return f"it is not the case that {self.cond(node)}"

    def _through_definition(self, node: ast.AST, say: Callable[[ast.AST], str]) -> str | None:
        """A local that holds a condition (``night = hour >= 22``) said through its definition
        ("hour is at least 22"), once per local (a definition that refers to itself is not
        followed again); None for anything else."""
        if not (isinstance(node, ast.Name) and node.id in self.cond_defs and node.id not in self.expanding):
            return None
        self.expanding.add(node.id)
        try:
            return say(self.cond_defs[node.id])
        finally:
            self.expanding.discard(node.id)

    def compare(self, node: ast.Compare) -> str:
        items = [node.left, *node.comparators]
        if len(node.ops) == 2 and is_const(items[0]) and is_const(items[2]) and not is_const(items[1]):
            lo_op = CMP_FLIP.get(type(node.ops[0]), type(node.ops[0]))
            first = self._cmp(items[1], lo_op, items[0])
            second = self._cmp(items[1], type(node.ops[1]), items[2])
            return f"{first} and {second.split(' is ', 1)[-1] if ' is ' in second else second}"
        parts = [self._cmp(items[i], type(op), items[i + 1]) for i, op in enumerate(node.ops)]
        return " and ".join(parts)

    def _cmp(self, left: ast.AST, op: type, right: ast.AST) -> str:
        if is_const(left) and not is_const(right) and op in CMP_FLIP:
            left, right, op = right, left, CMP_FLIP[op]
        # x % 2 == 0 -> even
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and const_key(left.right) == 2 \
                and const_key(right) == 1 and op in (ast.Eq, ast.NotEq):
            return f"{self.say(left.left, 5)} is {'odd' if op is ast.Eq else 'even'}"
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) and const_key(right) == 0 \
                and op in (ast.Eq, ast.NotEq):
            d = const_key(left.right)
            x = self.say(left.left, 5)
            if d == 2:
                return f"{x} is {'even' if op is ast.Eq else 'odd'}"
            return f"{x} is {'' if op is ast.Eq else 'not '}divisible by {self.say(left.right)}"
        if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
                and const_key(right) == 0 and op in (ast.Eq, ast.LtE, ast.Lt, ast.Gt, ast.NotEq):
            x = self.say(left.args[0], 5)
            self.numbers.add(0.0)
            return f"{x} is {'empty' if op in (ast.Eq, ast.LtE, ast.Lt) else 'not empty'}"
        lhs = self.say(left, 2)
        if op is ast.Is or op is ast.IsNot:
            if const_key(right) is None:
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
        return f"{lhs} is {CMP_WORDS.get(op, '?')} {rhs}"


__all__ = ["ConditionPhrases"]
