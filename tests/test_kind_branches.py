"""The kinds table is the one place that tells backend from frontend (issue 35): outside
colbench_gym/tasks/kinds.py (and the kinds' own modules: their envs, simulators, evaluators,
score entries), no code compares a kind's name or table entry with a fixed kind. The files below
still do and are the known debt, each with its count: a new comparison anywhere fails, and a file
that drops some must lower its count here (so the list only shrinks). `make lint` runs this."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAMES = {"backend", "frontend"}
ENTRIES = {"BACKEND", "FRONTEND"}
#: A kind's own modules: they are the kind (their branches are not about which kind they serve).
OWN = ("colbench_gym/tasks/kinds.py", "colbench_gym/envs/", "colbench_gym/simulators/offline_backend/",
       "colbench_gym/simulators/offline_frontend.py", "colbench_gym/simulators/openai_", "colbench_gym/evaluation/backend.py",
       "colbench_gym/evaluation/frontend.py", "colbench_gym/verdicts/")
#: Known remaining branches on a kind's name (file: count). Lower a count when you remove one.
DEBT = {
    "sweet_agent/evaluation/report.py": 6,
    "sweet_agent/viewer/episodes.py": 6,
    "colbench_gym/integrations/verifiers_env.py": 1,
    "sweet_agent/rollout/collector.py": 1,
    "sweet_agent/evaluation/metrics.py": 1,
    "sweet_agent/interop/release.py": 1,
    "colbench_gym/tasks/cli.py": 1,
    "colbench_gym/simulators/leak_guard.py": 1,
}


def _is_kind(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_kind(e) for e in node.elts)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name in ENTRIES


def kind_branches(root: Path = ROOT) -> Counter:
    found: Counter = Counter()
    for package in ("colbench_gym", "sweet_agent", "hub"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(OWN):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Compare) and any(_is_kind(n) for n in [node.left, *node.comparators]):
                    found[rel] += 1
    return found


def test_no_new_branch_on_a_kinds_name():
    found = kind_branches()
    grown = {f: (n, DEBT.get(f, 0)) for f, n in found.items() if n > DEBT.get(f, 0)}
    assert not grown, ("compares a kind's name outside the kinds table (ask the table: colbench_gym/tasks/kinds.py, "
                       f"or the kind's score entry: colbench_gym/verdicts/); found vs allowed: {grown}")
    shrunk = {f: (found.get(f, 0), n) for f, n in DEBT.items() if found.get(f, 0) < n}
    assert not shrunk, f"fewer branches than DEBT says (good): lower these counts in tests/test_kind_branches.py: {shrunk}"


def test_the_check_finds_a_branch(tmp_path):
    pkg = tmp_path / "sweet_agent"
    pkg.mkdir()
    (pkg / "x.py").write_text('def f(kind):\n    return 1 if kind == "frontend" else kind in ("backend",)\n')
    (tmp_path / "colbench_gym").mkdir()
    (tmp_path / "hub").mkdir()
    assert kind_branches(tmp_path) == Counter({"sweet_agent/x.py": 2})
