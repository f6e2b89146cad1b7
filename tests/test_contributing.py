"""CONTRIBUTING.md says where things are, so it has to stay true as the tree changes (issue 35):

- its layout block lists every package folder of ``colbench_gym/`` and ``sweet_agent/`` and every
  data folder directly inside a package (``tasks/data/``, ``configs/``, ``viewer/assets/``), and
  names nothing that does not exist (a renamed module fails here until its line is updated);
- "Where does my change go" has a row for each common change;
- the new kind checklist names every file a shipped kind's table entry points to, every file that
  holds a per-kind table (a literal naming every kind or every env id: a new kind must be added
  to it), and every file that still branches on a kind's name (``DEBT`` of test_kind_branches.py).
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
from pathlib import Path

import pytest

from colbench_gym.tasks.kinds import KINDS
from tests.test_docs import TRACKED  # the repository's files (git ls-files), the one listing

ROOT = Path(__file__).resolve().parents[1]
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
PACKAGES = ("colbench_gym", "sweet_agent")
#: Where a description starts in the layout block; a line indented this far continues the one above.
DESCRIPTION_COLUMN = 20


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line) up to the next heading of its level or above."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines))
                if re.match(rf"^#{{1,{level}}}\s", lines[i])), len(lines))
    return "\n".join(lines[start:end])


def layout_paths(text: str) -> set[str]:
    """Every path the layout block names: a top-level line (``colbench_gym/``) opens a folder, a line
    indented two more spaces names something inside the folder above it; several names may share
    a line (``critic/ actor/``); folders end with ``/``."""
    block = section(text, "## Layout").split("```")[1].split("\n", 1)[1]  # after the fence's language (```text)
    paths: set[str] = set()
    parents: list[str] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent >= DESCRIPTION_COLUMN:
            continue
        depth = indent // 2
        names = re.split(r"\s{2,}", line.strip())[0].split()
        parents = parents[:depth]
        prefix = "".join(parents)
        for name in names:
            paths.add(prefix + name)
        if names[-1].endswith("/"):
            parents.append(names[-1])
    return paths


def required_folders(tracked: list[str]) -> set[str]:
    """The folders the layout must list: the packages, every package folder under them, and every
    folder of tracked files directly inside a package (its data folders)."""
    packages = {str(Path(f).parent) for f in tracked if f.endswith("__init__.py") and f.split("/")[0] in PACKAGES}
    folders = {str(Path(f).parent) for f in tracked if f.split("/")[0] in PACKAGES}
    return {f + "/" for f in folders if f in packages or str(Path(f).parent) in packages}


def test_layout_lists_every_package_folder() -> None:
    listed = layout_paths(CONTRIBUTING.read_text(encoding="utf-8"))
    missing = sorted(required_folders(TRACKED) - listed)
    assert not missing, ("CONTRIBUTING.md's layout leaves out these folders; give each its line "
                         "(what it holds): " + ", ".join(missing))


def test_layout_names_only_what_exists() -> None:
    listed = layout_paths(CONTRIBUTING.read_text(encoding="utf-8"))
    gone = sorted(p for p in listed if not (ROOT / p).exists())
    assert not gone, "CONTRIBUTING.md's layout names paths that do not exist (renamed?): " + ", ".join(gone)


def test_the_layout_reader_follows_nesting_and_reports_a_missing_folder() -> None:
    text = ("## Layout\n\n```\npkg/                     the package\n  a.py                   a module\n"
            "  sub/ other/            two folders\n                         a continued description\n"
            "    deep/                inside sub\nsweet_agent/             second\n```\n\n## Next\n")
    assert layout_paths(text) == {"pkg/", "pkg/a.py", "pkg/sub/", "pkg/other/", "pkg/other/deep/", "sweet_agent/"}
    tracked = ["colbench_gym/__init__.py", "colbench_gym/envs/__init__.py", "colbench_gym/tasks/__init__.py",
               "colbench_gym/tasks/data/x.jsonl", "colbench_gym/tasks/data/deeper/y.jsonl",
               "sweet_agent/__init__.py", "sweet_agent/configs/a/cpu.yaml"]
    # a data folder inside a data folder (tasks/data/deeper/, configs/a/) is its parent's business
    assert required_folders(tracked) == {"colbench_gym/", "colbench_gym/envs/", "colbench_gym/tasks/",
                                         "colbench_gym/tasks/data/", "sweet_agent/"}


def test_where_does_my_change_go_covers_the_common_changes() -> None:
    table = section(CONTRIBUTING.read_text(encoding="utf-8"), "## Where does my change go")
    changes = [row.split("|")[1].strip().lower() for row in table.splitlines() if row.startswith("| ")]
    for topic in ("environment kind", "simulator", "scoring rule", "training flag", "algorithm", "measurement"):
        assert any(topic in change for change in changes), f"no 'where does my change go' row for: {topic}"


# -- the new kind checklist


def checklist_paths(text: str) -> list[str]:
    """The repository paths (backticked, with a ``/``) the numbered items of the checklist name."""
    items = section(text, "### New kind checklist")
    return [tok for tok in re.findall(r"`([^`\s]+)`", items) if "/" in tok]


def covered(path: str, entries: list[str]) -> bool:
    """Whether a checklist entry names ``path``: a folder (``x/``) covers what is inside it, NAME
    stands for any name (``colbench_gym/envs/NAME.py``)."""
    return any(path.startswith(e) if e.endswith("/") else fnmatch.fnmatch(path, e.replace("NAME", "*"))
               for e in entries)


def module_file(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    return str(Path(spec.origin).resolve().relative_to(ROOT))


def kind_files() -> set[str]:
    """Every file a shipped kind's table entry points to."""
    files = set()
    for kind in KINDS.values():
        targets = [kind.env, kind.score, kind.tool_env, kind.evaluator, *kind.simulators.values(),
                   *kind.generators.values()]
        files.update(module_file(t.partition(":")[0]) for t in targets)
        files.add(module_file(kind.task_cls.__module__))
    return files


def per_kind_tables(paths: list[str], root: Path = ROOT) -> dict[str, int]:
    """``file: line`` of every literal (dict keys, list, tuple, set) naming every kind or every env
    id: a table a new kind has to join."""
    names = set(KINDS)
    ids = {kind.env_id for kind in KINDS.values()}
    found: dict[str, int] = {}
    for path in paths:
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else None
            if elts is None:
                continue
            values = {e.value for e in elts if isinstance(e, ast.Constant)}
            if names <= values or ids <= values:
                found.setdefault(path, node.lineno)
    return found


def _entries() -> list[str]:
    return checklist_paths(CONTRIBUTING.read_text(encoding="utf-8"))


def test_the_checklist_names_every_file_a_kind_entry_points_to() -> None:
    entries = _entries()
    missing = sorted(f for f in kind_files() if not covered(f, entries))
    assert not missing, "the new kind checklist leaves out files the kinds table points to: " + ", ".join(missing)


def test_the_checklist_names_every_file_with_a_per_kind_table() -> None:
    entries = _entries()
    sources = [p for p in TRACKED if p.endswith(".py") and p.split("/")[0] in (*PACKAGES, "hub", "tests")]
    missing = [f"{path}:{line}" for path, line in sorted(per_kind_tables(sources).items()) if not covered(path, entries)]
    assert not missing, ("files hold a table with every kind (or env id) that the new kind checklist "
                         "does not name; add each to the checklist: " + ", ".join(missing))


def test_the_checklist_names_every_file_that_still_branches_on_a_kind() -> None:
    from tests.test_kind_branches import DEBT

    entries = _entries()
    missing = sorted(f for f in DEBT if not covered(f, entries))
    assert not missing, "the new kind checklist leaves out files that branch on a kind's name: " + ", ".join(missing)


def test_the_checklist_reader_sees_folders_placeholders_and_tables(tmp_path: Path) -> None:
    text = ("### New kind checklist\n\n1. `colbench_gym/envs/NAME.py`: the env.\n2. `colbench_gym/simulators/`: people.\n"
            "3. `hub/x.py` and the `kind = \"NAME\"` attribute.\n\n## Next\n\n`colbench_gym/cli.py`\n")
    entries = checklist_paths(text)
    assert entries == ["colbench_gym/envs/NAME.py", "colbench_gym/simulators/", "hub/x.py"]
    assert covered("colbench_gym/envs/backend.py", entries)
    assert covered("colbench_gym/simulators/offline_backend/__init__.py", entries)
    assert not covered("colbench_gym/envs/base/extra.txt", ["colbench_gym/envs/NAME.py"])
    assert not covered("colbench_gym/cli.py", entries)
    names = list(KINDS)
    (tmp_path / "t.py").write_text(f"A = {{{names[0]!r}: 1, {names[1]!r}: 2}}\nB = ({names[0]!r},)\n"
                                   f"def f():\n    return [{', '.join(repr(k.env_id) for k in KINDS.values())}]\n")
    assert per_kind_tables(["t.py"], tmp_path) == {"t.py": 1}
    (tmp_path / "t.py").write_text(f"B = ({names[0]!r},)\ndef f():\n"
                                   f"    return [{', '.join(repr(k.env_id) for k in KINDS.values())}]\n")
    assert per_kind_tables(["t.py"], tmp_path) == {"t.py": 3}
    (tmp_path / "t.py").write_text(f"B = ({names[0]!r}, 'other')\n")
    assert per_kind_tables(["t.py"], tmp_path) == {}


@pytest.mark.parametrize("path", sorted(kind_files()))
def test_every_file_a_kind_entry_points_to_exists(path: str) -> None:
    # the checklist's check above is only as good as this list: the table's targets resolve to files
    assert (ROOT / path).is_file()
