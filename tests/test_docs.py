"""No document names a repository file, folder, module or test that does not exist.

Checked: README.md, CONTRIBUTING.md and docs/**/*.md (the results pages in docs/results/ too). What counts as a reference to the repository:

- a backticked path whose first part is tracked at the top of the repository (``colbench_gym/…``,
  ``tests/…``, ``scripts/…``, ``Makefile``; globs such as ``benchmarks/bench_*.py``, and the
  placeholder NAME as in ``colbench_gym/envs/NAME.py``, must match);
- a backticked bare test file name (``test_semantics.py``): some tracked file has that name
  (other bare names such as TRL's ``grpo.py`` may name another project's files);
- a backticked dotted name under ``colbench_gym.``/``sweet_agent.``: a module, or a module plus one
  name the module defines;
- a pytest node id (``tests/x.py::test_name``): the file defines that test;
- a relative Markdown link (``[text](docs/agent.md)``), resolved from the document's folder; with an
  anchor (``[text](training.md#online-rl)``, ``[text](#results)``) the target document has a heading
  whose GitHub anchor that is: a section that moved to another page leaves no dead link.

Paths outside the repository (``~/.cache/…``, ``/etc/passwd``, ``runs/…`` outputs) are not claims
about the tree and are left alone. What a reader of the repository cannot open is not cited, though:
no document, docstring or comment (of any tracked Python file) names a Markdown document that is
not in the repository (a design note kept elsewhere), or a ``../`` path that leaves the repository
(a folder beside the checkout) or leads nowhere; a relative link must stay inside the repository.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
TICKED = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOTTED = re.compile(r"^(colbench_gym|sweet_agent)(\.[A-Za-z_]\w*)+$")
TEST_NAME = re.compile(r"^test_\w+\.py$")
#: A Markdown document named in prose (``README.md``, ``docs/agent.md``, ``../README.md``).
DOC_NAME = re.compile(r"(?<![\w/.-])((?:\.\./|[\w-]+/)*[\w.-]*\w\.md)\b")
#: A relative path that climbs out of the file's folder (``../README.md``, ``../scripts``).
CLIMB = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.-][\w./-]*)")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.split()
    return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts]


TRACKED = _tracked()
TOP = {path.split("/")[0] for path in TRACKED}
NAMES = {path.rsplit("/", 1)[-1] for path in TRACKED}
SOURCES = [ROOT / path for path in TRACKED if path.endswith(".py") and (ROOT / path).is_file()]


def _inside(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT)


def _exists(rel: str) -> bool:
    rel = rel.rstrip("/").replace("NAME", "*")  # a placeholder (`colbench_gym/envs/NAME.py`): some file matches
    if "::" in rel:  # a pytest node id: the file exists and defines every named test/class
        path, *names = rel.split("::")
        source = ROOT / path
        return source.is_file() and all(
            re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(n.split('[')[0])}\b", source.read_text(), re.M)
            for n in names)
    if any(ch in rel for ch in "*?[{"):
        return any(ROOT.glob(rel.replace("{", "[").replace("}", "]")) if "{" in rel else ROOT.glob(rel))
    return (ROOT / rel).exists()


def _module_exists(dotted: str) -> bool:
    """A module (file or package), or a module plus one name it defines."""
    parts = dotted.split(".")
    for cut, attr in ((len(parts), None), (len(parts) - 1, parts[-1])):
        base = ROOT.joinpath(*parts[:cut])
        for source in (base.with_suffix(".py"), base / "__init__.py"):
            if source.exists():
                return attr is None or re.search(rf"\b{attr}\b", source.read_text()) is not None
    return False


def references(doc: Path) -> list[tuple[int, str, bool]]:
    """``(line, reference, exists)`` for every repository reference in ``doc``."""
    found = []
    for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for tok in TICKED.findall(line):
            tok = tok.strip("'\",;:")
            if DOTTED.match(tok):
                found.append((lineno, tok, _module_exists(tok)))
            elif "/" in tok and tok.split("/")[0] in TOP:
                found.append((lineno, tok, _exists(tok.rstrip("…").removesuffix("..."))))  # `tests/x/…`: the folder
            elif tok in TOP or TEST_NAME.match(tok):
                found.append((lineno, tok, tok in TOP or tok in NAMES))
        for target in LINK.findall(line):
            target = target.split("#")[0]
            if target and "://" not in target and not target.startswith("mailto:"):
                found.append((lineno, target, (doc.parent / target).exists() and _inside(doc.parent / target)))
    return found


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of what a reader reads: every line of a Markdown document; the docstrings
    and comments of a Python file (its code's strings may hold any path on purpose)."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(source.splitlines(), 1)
        return
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                yield from enumerate(first.value.value.splitlines(), first.lineno)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def outside_references(path: Path, folder: Path | None = None) -> list[tuple[int, str]]:
    """``(line, reference)`` for every file ``path`` names that is not in the repository: a
    Markdown document no tracked file is, a ``../`` path (from ``folder``, default the file's own)
    that leaves the repository or leads nowhere."""
    folder = path.parent if folder is None else folder
    found = []
    for lineno, text in prose(path):
        for name in DOC_NAME.findall(text):
            if not (name in NAMES or (ROOT / name).is_file() or ((folder / name).is_file() and _inside(folder / name))):
                found.append((lineno, name))
        for rel in CLIMB.findall(text):
            target = folder / rel.rstrip(".,;:")
            if not (_inside(target) and target.exists()):
                found.append((lineno, rel))
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_document_names_a_file_outside_the_repository(doc: Path) -> None:
    outside = [f"{doc.relative_to(ROOT)}:{n}: {ref}" for n, ref in outside_references(doc)]
    assert not outside, "documents name files a reader of the repository cannot open:\n" + "\n".join(outside)


def test_no_docstring_or_comment_names_a_file_outside_the_repository() -> None:
    outside = [f"{path.relative_to(ROOT)}:{n}: {ref}" for path in SOURCES for n, ref in outside_references(path)]
    assert not outside, "docstrings/comments name files a reader of the repository cannot open:\n" + "\n".join(outside)


def test_the_outside_check_catches_design_notes_and_folders_beside_the_checkout(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("Measured (DESIGN.md); see ../shared/data and [the notes](../../NOTES.md).\n"
                   "Fine: README.md, `docs/agent.md`, ../README.md, ../colbench_gym/protocol.py.\n")
    assert outside_references(doc, ROOT / "docs") == [(1, "DESIGN.md"), (1, "../../NOTES.md"), (1, "../shared/data")]
    code = tmp_path / "m.py"
    code.write_text('"""Chosen by measurement (DESIGN.md)."""\n\n'
                    'PATH = "../shared/x"  # a string of code is not prose\n'
                    '# read ../shared/y first\n')
    assert outside_references(code, ROOT / "colbench_gym") == [(1, "DESIGN.md"), (4, "../shared/y")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_path_exists(doc: Path) -> None:
    missing = [f"{doc.relative_to(ROOT)}:{n}: {ref}" for n, ref, ok in references(doc) if not ok]
    assert not missing, "documents name files that do not exist:\n" + "\n".join(missing)


def test_the_checker_sees_references_and_catches_a_missing_one(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("See `colbench_gym/protocol.py`, `colbench_gym.tasks.load_tasks`, `benchmarks/bench_*.py`,\n"
                   "`colbench_gym/envs/NAME.py`, `colbench_gym/nothing/NAME.py`,\n"
                   "`tests/env/…`, `test_docs.py`, TRL's `grpo.py`, `test_gone.py`, `colbench_gym/nope.py`,\n"
                   "`sweet_agent.no_such_module`, [gone](missing.md) and `~/.cache/x`.\n")
    refs = {ref: ok for _, ref, ok in references(doc)}
    assert refs == {"colbench_gym/protocol.py": True, "colbench_gym.tasks.load_tasks": True,
                    "colbench_gym/envs/NAME.py": True, "colbench_gym/nothing/NAME.py": False,
                    "benchmarks/bench_*.py": True, "tests/env/…": True, "test_docs.py": True,
                    "test_gone.py": False, "colbench_gym/nope.py": False,
                    "sweet_agent.no_such_module": False, "missing.md": False}


FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: inline code and link markup dropped, lower case, every
    character but letters, digits, ``_``, ``-`` and spaces removed, spaces to ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Every anchor a link into ``doc`` may name: its headings' (outside code blocks; a repeated
    heading gets ``-1``, ``-2``, ... as on GitHub) and explicit ``<a id=...>`` ones."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(HTML_ANCHOR.findall(line))
        if m := HEADING.match(line):
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def dead_anchors(doc: Path) -> list[tuple[int, str]]:
    """``(line, link)`` for every relative link of ``doc`` with an anchor its target document lacks."""
    dead = []
    for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        for target in LINK.findall(line):
            if "#" not in target or "://" in target or target.startswith("mailto:"):
                continue
            path, anchor = target.split("#", 1)
            file = (doc.parent / path) if path else doc
            if file.suffix == ".md" and file.is_file() and anchor not in anchors(file):
                dead.append((lineno, target))
    return dead


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_anchor_exists(doc: Path) -> None:
    dead = [f"{doc.relative_to(ROOT)}:{n}: {link}" for n, link in dead_anchors(doc)]
    assert not dead, ("links name a section their document does not have (moved? "
                      "link to the page it moved to):\n" + "\n".join(dead))


def test_the_anchor_check_follows_headings_and_catches_a_moved_section(tmp_path: Path) -> None:
    (tmp_path / "ref.md").write_text("# Training: SWEET-RL\n\n## Speed (`benchmarks/bench_critic.py`)\n\n"
                                     "```bash\n# not a heading\n```\n\n## Notes\n\n## Notes\n\n<a id=\"kept\"></a>\n")
    assert anchors(tmp_path / "ref.md") == {"training-sweet-rl", "speed-benchmarksbench_criticpy", "notes",
                                            "notes-1", "kept"}
    doc = tmp_path / "x.md"
    doc.write_text("[a](ref.md#speed-benchmarksbench_criticpy) [b](ref.md#notes-1) [c](#here) [d](ref.md#kept)\n"
                   "## Here\n[gone](ref.md#measured-on-a-gpu) [e](https://example.org/#x) [f](ref.md)\n"
                   "[self](#not-here)\n")
    assert dead_anchors(doc) == [(3, "ref.md#measured-on-a-gpu"), (4, "#not-here")]
