"""The offline backend simulator stays readable: small modules, nothing private shared.

Each module of ``colbench_gym/simulators/offline_backend/`` holds one concern and must stay
small enough to read top to bottom; what one module shares with another is public (no
underscore name is imported from, or called on an object of, another module). These rules were
broken once (a 1.6k-line module importing another's private helpers); this keeps them.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "colbench_gym" / "simulators" / "offline_backend"
MAX_LINES = 600


def modules() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.glob("*.py"))}


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_package_has_its_modules():
    assert {"simulator.py", "reference.py", "reader.py", "speaker.py", "question.py", "matching.py",
            "phrasing.py", "sheet.py"} <= set(modules())


def test_no_module_is_too_long_to_read():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")}
    assert max(sizes.values()) <= MAX_LINES, sizes


def test_no_private_name_is_imported_across_modules():
    bad = []
    for name, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("colbench_gym")):
                bad += [f"{name}: {node.module}.{a.name}" for a in node.names if private(a.name)]
    assert not bad, bad


def test_no_private_attribute_is_used_outside_the_module_that_defines_it():
    defined: dict[str, set[str]] = {}
    used: dict[str, set[str]] = {}
    for name, tree in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and private(node.name):
                defined.setdefault(node.name, set()).add(name)
            elif isinstance(node, ast.Attribute) and private(node.attr):
                used.setdefault(node.attr, set()).add(name)
                if isinstance(node.ctx, ast.Store):
                    defined.setdefault(node.attr, set()).add(name)
    crossing = {attr: (sorted(where), sorted(defined.get(attr, ())))
                for attr, where in used.items() if where | defined.get(attr, set()) != defined.get(attr, set())
                or len(defined.get(attr, set())) > 1}
    assert not crossing, crossing
