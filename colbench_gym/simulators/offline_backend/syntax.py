"""Reading the reference's syntax tree: constants, tables, assigned names, if-chains, edge tags.

WHY a module of its own: every kind of fact (:mod:`.reader` and its parts) and the wording of
expressions (:mod:`.speaker`) ask the same small questions of an ``ast`` node -- is it a
constant and which, is it a literal lookup table, which names does it read or assign, what does
this condition test for (zero, empty, missing, ...). They are answered here once. Static only:
the reference is parsed, never executed.
"""

from __future__ import annotations

import ast

#: What :func:`const_key` returns for a node that is not a constant (``None`` is a constant).
NOT_CONST = object()


def const_key(node: ast.AST) -> object:
    """The value of a constant node (``-3`` included), else :data:`NOT_CONST`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    return NOT_CONST


def is_const(node: ast.AST | None) -> bool:
    return node is not None and const_key(node) is not NOT_CONST


def is_trivial_init(node: ast.AST) -> bool:
    """``0``, ``0.0``, ``[]``, ``{}``, ``''``, ``None``, ``set()``: starting values, not facts."""
    v = const_key(node)
    if v is not NOT_CONST:
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


#: A comparison with its sides swapped (``3 < x`` is ``x > 3``).
CMP_FLIP = {ast.Gt: ast.Lt, ast.Lt: ast.Gt, ast.GtE: ast.LtE, ast.LtE: ast.GtE, ast.Eq: ast.Eq,
             ast.NotEq: ast.NotEq}


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def assigned_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in assigned_names(e)]
    if isinstance(target, ast.Starred):
        return assigned_names(target.value)
    return []


def if_chain_arms(node: ast.If) -> tuple[list[tuple[ast.expr, list[ast.stmt]]], list[ast.stmt]]:
    arms: list[tuple[ast.expr, list[ast.stmt]]] = []
    cur = node
    while True:
        arms.append((cur.test, cur.body))
        if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If):
            cur = cur.orelse[0]
            continue
        return arms, cur.orelse


def condition_tags(node: ast.AST, inputs: set[str] | None = None, bools: set[str] | None = None) -> set[str]:
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
                c = const_key(right) if is_const(right) else const_key(left)
                if c is None and isinstance(op, (ast.Is, ast.IsNot, ast.Eq)):
                    tags |= {"none", "missing", "edge"}
                if isinstance(c, (int, float)) and not isinstance(c, bool):
                    if c == 0 and isinstance(op, (ast.Eq, ast.LtE, ast.NotEq)):
                        tags |= {"zero", "edge"}
                    if c <= 0 and isinstance(op, (ast.Lt, ast.LtE)):
                        tags |= {"negative", "edge"}
                    if c == 0 and isinstance(op, ast.Gt):
                        tags |= {"positive", "zero"}
                        if names_in(left) & inputs:
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


_GUARD_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_MAX_CLAUSES = 16

Guard = tuple[tuple[tuple[str, str, float], ...], ...]


def condition_guards(node: ast.AST, params: set[str]) -> Guard | None:
    """A condition on ``params`` as alternatives of conjunctions of ``(param, op, number)``;
    None when it tests anything else (other names, calls, strings, ...)."""
    if isinstance(node, ast.BoolOp):
        parts = [condition_guards(v, params) for v in node.values]
        if any(p is None for p in parts):
            return None
        if isinstance(node.op, ast.Or):
            out = tuple(c for p in parts for c in p)  # type: ignore[union-attr]
        else:
            out = ((),)
            for p in parts:
                out = tuple(a + b for a in out for b in p)  # type: ignore[union-attr]
        return out if 0 < len(out) <= _MAX_CLAUSES else None
    if isinstance(node, ast.Compare):
        items = [node.left, *node.comparators]
        clause = []
        for i, op in enumerate(node.ops):
            left, right = items[i], items[i + 1]
            if type(op) not in _GUARD_OPS:
                return None
            if isinstance(left, ast.Name) and left.id in params and _number(right) is not None:
                clause.append((left.id, _GUARD_OPS[type(op)], _number(right)))
            elif isinstance(right, ast.Name) and right.id in params and _number(left) is not None:
                clause.append((right.id, _GUARD_OPS[CMP_FLIP[type(op)]], _number(left)))
            else:
                return None
        return (tuple(clause),)
    return None


def _number(node: ast.AST) -> float | None:
    v = const_key(node)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def guard_holds(guards: Guard, values: dict[str, float]) -> bool:
    """Whether the values (of some parameters) meet one alternative of ``guards`` in full."""
    for clause in guards:
        if clause and all(p in values and _compare(values[p], op, c) for p, op, c in clause):
            return True
    return False


def _compare(x: float, op: str, c: float) -> bool:
    return {"<": x < c, "<=": x <= c, ">": x > c, ">=": x >= c, "==": x == c, "!=": x != c}[op]


def module_tables(tree: ast.Module) -> tuple[dict[str, ast.AST], list[tuple[str, ast.AST]]]:
    tables: dict[str, ast.AST] = {}
    consts: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if is_table(node.value):
                tables[node.targets[0].id] = node.value
            elif is_const(node.value):
                consts.append((node.targets[0].id, node.value))
    return tables, consts


__all__ = ["CMP_FLIP", "NOT_CONST", "Guard", "assigned_names", "condition_guards", "condition_tags", "const_key",
           "guard_holds", "if_chain_arms", "is_const", "is_table", "is_trivial_init", "module_tables", "names_in"]
