"""Every fenced code block of README.md, CONTRIBUTING.md and docs/**/*.md runs here, or says in
its own first line why it does not and is checked another way (issue 39).

WHY: a snippet pasted as is must work (the README's GRPO snippet stopped on a CPU with "Your setup
doesn't support bf16/gpu"), and a flag renamed in the code must not live on in the docs.

The rules (CONTRIBUTING.md, "Code blocks in the docs"):

- a block names its language; ``text``, ``json``, ``bibtex``, ``yaml`` blocks are output, data or
  layout, not commands (a ``text`` line that starts with ``$ `` is a command line and is checked
  like the ones below; a ``json`` block parses once its ``...`` elisions are taken out);
- a ``python`` block with no marker runs: the unmarked blocks of one document in document order in
  one fresh interpreter (a notebook: a block may use what an earlier one imported), in a temporary
  folder, with ``HF_HUB_OFFLINE=1``;
- a ``bash``/``sh`` block with no marker runs as is (``bash -e``) in a temporary folder;
- otherwise the block's first line is ``# doc-test: KIND`` (and a reason if it helps the reader),
  KIND one of :data:`MARKERS`. Then every command line in it is checked without running it:
  ``sweet-agent``/``colbench`` lines (also under ``accelerate launch -m sweet_agent.cli``) are
  parsed in-process by the command's own parser (all of it; only flag names where the line elides
  arguments with ``...``), ``gpu`` lines as on a machine with a bf16 GPU; a ``python`` script or
  ``python -m`` module exists and each flag it is given is in its ``--help``; ``make`` targets
  exist in the Makefile; ``bash script`` files exist; ``pytest`` paths exist. Other programs
  (pip, vllm, git, ...) must be in :data:`EXTERNAL`. A marked ``python`` block compiles and every
  name it imports from ``colbench_gym``/``sweet_agent`` exists.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: Why a block does not run in the tests; each is checked by parsing its command lines instead.
MARKERS = {
    "sketch": "placeholders the reader fills in (names, `...`, `[--optional]` flags, their own files)",
    "long": "a run of minutes to hours (training, benchmarks, setup)",
    "gpu": "needs a CUDA GPU (scripts/gpu_proof.sh and `make gpu-smoke` run the GPU paths)",
    "network": "needs a server, a package index or a hosted model",
}
RUN_LANGS = {"python", "bash", "sh"}
DATA_LANGS = {"text", "json", "bibtex", "yaml"}
#: Programs that are not this project's: a line running one is not checked further.
EXTERNAL = {"pip", "vllm", "inspect", "vf-eval", "uvicorn", "twine", "git", "echo", "export", "cp", "cd", "wait",
            "for", "done", "npm", "kill", "mkdir", "trl"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
MARKER = re.compile(r"^#\s*doc-test:\s*([\w-]+)")
SEPARATORS = {";", "&&", "||", "|", "&"}
PYTHONS = {"python", "python3", ".venv/bin/python"}


@dataclass(frozen=True)
class Block:
    doc: str  #: the document, relative to the repository
    line: int  #: the line of the opening fence
    lang: str
    code: str

    @property
    def marker(self) -> str | None:
        first = self.code.lstrip().split("\n", 1)[0]
        match = MARKER.match(first)
        return match.group(1) if match else None

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}"


def doc_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of one Markdown file (a fence closes on the same fence characters)."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match:
            fence, lang, start, body = match.group(2), match.group(3).strip().split(" ")[0], i, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i][len(match.group(1)):])
                i += 1
            blocks.append(Block(str(path.relative_to(root)), start + 1, lang, "\n".join(body) + "\n"))
        i += 1
    return blocks


BLOCKS = [block for doc in DOCS for block in doc_blocks(doc)]


def test_every_block_runs_or_says_why_not():
    wrong = []
    for b in BLOCKS:
        if b.lang not in RUN_LANGS | DATA_LANGS:
            wrong.append(f"{b}: language {b.lang or '(none)'!r}: name one of {sorted(RUN_LANGS | DATA_LANGS)}")
        elif b.lang in DATA_LANGS and b.marker:
            wrong.append(f"{b}: a {b.lang} block is not run; drop its doc-test marker")
        elif b.marker is not None and b.marker not in MARKERS:
            wrong.append(f"{b}: unknown marker {b.marker!r}: use one of {sorted(MARKERS)}")
    assert not wrong, "\n".join(wrong)
    assert len(BLOCKS) > 40  # the extraction found the documents' blocks


def test_the_extraction_reads_fences_languages_and_markers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("text\n```bash\n# doc-test: long — hours\nmake demo\n```\n\n  ```python\n  x = 1\n  ```\n"
                   "````text\n```\n````\n")
    one, two, three = doc_blocks(doc, tmp_path)
    assert (one.line, one.lang, one.marker, one.code) == (2, "bash", "long", "# doc-test: long — hours\nmake demo\n")
    assert (two.lang, two.marker, two.code) == ("python", None, "x = 1\n")
    assert (three.lang, three.code) == ("text", "```\n")


# ------------------------------------------------------------------------ blocks that run
_RUNNER = """
import json, sys, traceback
namespace = {"__name__": "__main__"}
for block in json.load(open(sys.argv[1])):
    code = "\\n" * block["line"] + block["code"]  # tracebacks name the document's own lines
    try:
        exec(compile(code, block["doc"], "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"doc block {block['doc']}:{block['line']} failed")
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


PYTHON_DOCS = sorted({b.doc for b in BLOCKS if b.lang == "python" and b.marker is None})


@pytest.mark.parametrize("doc", PYTHON_DOCS)
def test_python_blocks_run(doc, tmp_path):
    blocks = [{"doc": b.doc, "line": b.line, "code": b.code} for b in BLOCKS
              if b.doc == doc and b.lang == "python" and b.marker is None]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    out = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path / "blocks.json")], cwd=tmp_path,
                         env=_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


SHELL_BLOCKS = [b for b in BLOCKS if b.lang in ("bash", "sh") and b.marker is None]


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=str)
def test_shell_blocks_run(block, tmp_path):
    out = subprocess.run(["bash", "-e", "-c", block.code], cwd=tmp_path, env=_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, f"{block}:\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}"


# ------------------------------------------------------------------------ marked python blocks
MARKED_PYTHON = [b for b in BLOCKS if b.lang == "python" and b.marker is not None]


@pytest.mark.parametrize("block", MARKED_PYTHON, ids=str)
def test_marked_python_blocks_compile_and_import_what_exists(block):
    import ast

    tree = ast.parse(block.code, str(block))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in OURS:
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{block}: {node.module} has no {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    importlib.import_module(alias.name)


OURS = {"colbench_gym", "sweet_agent"}


# ------------------------------------------------------------------------ command lines
def command_lines(code: str, lang: str = "bash") -> list[list[str]]:
    """The simple commands of a shell block: continuation lines joined, comments, redirections and
    ``$((...))`` arithmetic dropped, split at ``;``/``&&``/``||``/``|``/``&``, leading
    ``do``/``then``/``nohup`` and ``NAME=value`` assignments dropped, a command that starts with a
    variable the block set (``$ZERO3 train-critic``) expanded. ``a|b`` alternatives (documentation,
    not a pipe: ``--scorer auto|clip``) keep the first. In a ``text`` block only the lines after a
    ``$ `` prompt."""
    if lang == "text":
        code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ "))
    code = code.replace("\\\n", " ")
    variables: dict[str, str] = {}
    out: list[list[str]] = []
    for line in code.splitlines():
        line = re.sub(r"\$\(\([^)]*\)\)", "0", line)
        line = re.sub(r"(?<=[\w-])\|[\w|-]+", "", line)
        line = re.sub(r"\s\d?>>?\s*(&\d|[^\s;&|]+)", " ", line)
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        commands: list[list[str]] = [[]]
        for token in lexer:
            if set(token) <= set(";&|"):
                commands.append([])
            else:
                commands[-1].append(token)
        for words in commands:
            while words and (words[0] in ("do", "then", "nohup") or re.match(r"^[A-Za-z_]\w*=", words[0])):
                if len(words) == 1 and "=" in words[0]:
                    name, value = words[0].split("=", 1)
                    variables[name] = value
                words = words[1:]
            if words and words[0].startswith("$") and words[0].strip("${}") in variables:
                words = shlex.split(variables[words[0].strip("${}")]) + words[1:]
            if words:
                out.append(words)
    return out


def test_command_lines_are_split_as_a_shell_would():
    code = ("M=x; for i in 0 1; do CUDA_VISIBLE_DEVICES=$((4 + i)) sweet-agent train-actor ... --shard $i/4 & done; wait\n"
            "colbench render p.html --output s.png [--width 1280] [--scorer auto|clip]   # a comment\n"
            'Z="accelerate launch -m sweet_agent.cli"\n$Z train-rft --config cpu\n'
            "nohup sweet-agent rollout --episodes 2 \\\n    --output runs/x.jsonl > log 2>&1 && make demo\n")
    assert command_lines(code) == [
        ["for", "i", "in", "0", "1"], ["sweet-agent", "train-actor", "...", "--shard", "$i/4"], ["done"], ["wait"],
        ["colbench", "render", "p.html", "--output", "s.png", "[--width", "1280]", "[--scorer", "auto]"],
        ["accelerate", "launch", "-m", "sweet_agent.cli", "train-rft", "--config", "cpu"],
        ["sweet-agent", "rollout", "--episodes", "2", "--output", "runs/x.jsonl"], ["make", "demo"]]
    assert command_lines("$ colbench tasks show 1\noutput line\n", "text") == [["colbench", "tasks", "show", "1"]]


def _clean(words: list[str]) -> tuple[list[str], bool]:
    """Optional-flag brackets taken off (``[--k 3]`` is checked as ``--k 3``), the first of
    ``a|b`` alternatives kept, loop variables set; and whether arguments were elided (``...``)."""
    elided = "..." in words
    out = []
    for w in words:
        if w == "...":
            continue
        w = w.removeprefix("[").removesuffix("]").replace("$i", "0")
        if w:
            out.append(w)
    return out, elided


def _command_table(prog: str):
    if prog == "sweet-agent":
        from sweet_agent.cli import COMMANDS

        return COMMANDS
    from colbench_gym.cli import commands

    return commands()


def _parser(label: str, module) -> argparse.ArgumentParser:
    if hasattr(module, "COMMAND") and hasattr(module.COMMAND, "dataclass_types"):
        from sweet_agent.training.parser import make_parser

        return make_parser(label, module.COMMAND.dataclass_types(), preset_dir=module.COMMAND.presets)
    parser = argparse.ArgumentParser(prog=label)
    module.add_arguments(parser)
    return parser


def check_our_command(prog: str, argv: list[str], gpu: bool = False) -> str | None:
    """None when ``prog argv`` parses with the command's own parser, else why not (one line)."""
    argv, elided = _clean(argv)
    for words, module_name, help_text in sorted(_command_table(prog), key=lambda c: -len(c[0])):
        if tuple(argv[:len(words)]) != words:
            continue
        label, rest = f"{prog} {' '.join(words)}", argv[len(words):]
        module = importlib.import_module(module_name)
        if elided:  # arguments left out: every flag given exists
            parser = _parser(label, module)
            if hasattr(module, "COMMAND"):
                from sweet_agent.training.flags import translate_flags

                with contextlib.redirect_stderr(io.StringIO()):
                    rest = translate_flags(rest, label)
            unknown = [w.split("=")[0] for w in rest
                       if w.startswith("--") and w.split("=")[0] not in parser._option_string_actions]
            return f"{label}: no such flags {unknown}" if unknown else None
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()), _gpu_bf16(gpu):
                if hasattr(module, "parse_args"):
                    module.parse_args(rest, prog=label, description=help_text)
                else:
                    _parser(label, module).parse_args(rest)
        except SystemExit as exc:
            return f"{label}: {exc.code if isinstance(exc.code, str) else err.getvalue().strip().splitlines()[-1:]}"
        except (ValueError, TypeError) as exc:
            return f"{label}: {exc}"
        return None
    return f"{prog}: no command {' '.join(argv[:2])!r}"


@contextlib.contextmanager
def _gpu_bf16(gpu: bool):
    """A ``gpu`` block's line parses as on a GPU machine: TrainingArguments' bf16 check says yes."""
    if not gpu:
        yield
        return
    from unittest.mock import patch

    with patch("transformers.training_args.is_torch_bf16_gpu_available", return_value=True):
        yield


@cache
def _help_text(argv: tuple[str, ...]) -> str:
    out = subprocess.run([sys.executable, *argv, "--help"], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, f"{' '.join(argv)} --help failed: {out.stderr[-500:]}"
    return out.stdout


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.M))


def check_command(words: list[str], gpu: bool = False) -> str | None:
    """None when the command line names things that exist (see the module docstring), else why not."""
    program = words[0]
    if program in ("sweet-agent", "colbench"):
        return check_our_command(program, words[1:], gpu)
    if program == "accelerate":
        if "-m" in words and words[words.index("-m") + 1] == "sweet_agent.cli":
            return check_our_command("sweet-agent", words[words.index("-m") + 2:], gpu)
        configs = [words[k + 1] for k, w in enumerate(words[:-1]) if w == "--config_file"]
        return next((f"accelerate: no config {c}" for c in configs if not (ROOT / c).is_file()), None)
    if program == "make":
        missing = [t for t in words[1:] if not t.startswith("-") and "=" not in t and t not in _makefile_targets()]
        return f"make: no targets {missing} in the Makefile" if missing else None
    if program == "bash":
        script = next(w for w in words[1:] if not w.startswith("-"))
        return None if (ROOT / script).is_file() else f"bash: no script {script}"
    if program in PYTHONS:
        return _check_python(words[1:])
    if program in EXTERNAL:
        return None
    return f"{program}: not a command of this project and not in EXTERNAL (test_doc_blocks.py)"


def _check_python(args: list[str]) -> str | None:
    args, _ = _clean(args)
    if args[0] == "-c":
        return None
    if args[0] == "-m":
        module, rest = args[1], args[2:]
        if module == "pytest":
            missing = [a.split("::")[0] for a in rest if a.startswith("tests/") and not (ROOT / a.split("::")[0]).exists()]
            return f"pytest: no {missing}" if missing else None
        if module in ("build", "pip"):
            return None
        if importlib.util.find_spec(module) is None:
            return f"python -m {module}: no such module"
        target: tuple[str, ...] = ("-m", module)
    else:
        script, rest = args[0], args[1:]
        if not (ROOT / script).is_file():
            return f"python: no script {script}"
        target = (script,)
    flags = [w.split("=")[0] for w in rest if w.startswith("--")]
    if not flags:
        return None
    sub = [w for w in rest[:1] if not w.startswith("-")]  # a subcommand's own flags
    text = _help_text((*target, *sub))
    unknown = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    return f"{' '.join(target)}: --help names no {unknown}" if unknown else None


CHECKED = [b for b in BLOCKS if (b.lang in ("bash", "sh") and b.marker is not None) or b.lang == "text"]


def test_marked_command_lines_name_flags_targets_and_files_that_exist():
    wrong = []
    for block in CHECKED:
        for words in command_lines(block.code, block.lang):
            why = check_command(words, gpu=block.marker == "gpu")
            if why:
                wrong.append(f"{block}: {' '.join(words)[:120]}\n    {why}")
    assert not wrong, "\n".join(wrong)


def test_a_wrong_flag_target_or_command_is_found():
    assert check_command(["sweet-agent", "rollout", "--episodes", "2", "--output", "x"]) is None
    assert "--no-such-flag" in check_command(["sweet-agent", "rollout", "--no-such-flag", "--output", "x"])
    assert "no such flags ['--no-such-flag']" in check_command(["sweet-agent", "train-actor", "...", "--no-such-flag"])
    assert check_command(["sweet-agent", "train-actor", "...", "--pairs_in", "p.jsonl"]) is None
    assert "--help names no ['--no-such-flag']" in check_command(["python", "examples/trl_grpo.py", "--no-such-flag"])
    assert "no targets ['no-such-target']" in check_command(["make", "no-such-target"])
    assert "no command 'no-such'" in check_command(["colbench", "no-such"])
    assert "not a command of this project" in check_command(["curl", "x"])
    # a gpu line asks for bf16: it parses as on a GPU, and the same line unmarked is refused here (no GPU)
    line = ["sweet-agent", "train-grpo", "--config", "paper", "--output_dir", "out"]
    assert check_command(line, gpu=True) is None
    import torch

    if not torch.cuda.is_available():
        assert "bf16" in check_command(line)


def test_json_blocks_parse():
    for block in (b for b in BLOCKS if b.lang == "json"):
        text = re.sub(r',\s*"\.\.\.":\s*"\.\.\."', "", block.code)  # an elided field
        json.loads(text)
