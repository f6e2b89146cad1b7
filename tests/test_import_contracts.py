"""The dependency contracts of ``[tool.importlinter]`` hold, and they catch what they promise to.

``lint-imports`` reads the source without importing it; each test runs it in a subprocess (about
half a second). The failing cases copy both packages into a temporary folder, add one forbidden
import, and check that the matching contract breaks, so a contract that could never fail would
fail here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
#: Installed with the ``dev`` extra; the whole module needs it.
pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed (pip install -e .[dev])")
HEAVY = ("torch", "torchvision", "transformers", "trl", "peft", "accelerate", "datasets", "open_clip")


def _lint(cwd: Path, *extra: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath) if pythonpath else os.environ.get("PYTHONPATH", "")}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", *extra], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_every_contract_is_kept() -> None:
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in out.stdout


def test_the_contracts_say_what_the_issue_asks() -> None:
    by_id = {c["id"]: c for c in _contracts()}
    layers = by_id["colbench-layers"]
    row = {name.strip(): i for i, layer in enumerate(layers["layers"]) for name in layer.split("|")}
    assert layers["exhaustive"] and row["envs"] < row["tasks"]
    assert "simulators | grading | rendering | scoring" in layers["layers"]
    assert by_id["colbench-standalone"]["forbidden_modules"] == ["sweet_agent"]
    assert {"torch", "transformers", "trl"} <= set(by_id["colbench-no-ml-stack"]["forbidden_modules"])
    assert "actor | baselines | critic" in by_id["sweet-agent-layers"]["layers"] and by_id["sweet-agent-layers"]["exhaustive"]
    # The trainers share training_data (below them); the one arrow between trainers is SWEET's own.
    assert by_id["sweet-agent-layers"]["ignore_imports"] == ["sweet_agent.actor.** -> sweet_agent.critic.**"]


def test_contributing_maps_every_layer() -> None:
    """CONTRIBUTING.md's dependency map names every module the layer contracts place."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for contract in _contracts():
        for container in contract.get("containers", []) if contract["type"] == "layers" else []:
            base = container.replace(".", "/")  # a container may be a subpackage (sweet_agent.evaluation)
            for layer in contract["layers"]:
                for name in (part.strip().strip("()") for part in layer.split("|")):
                    folder = ROOT / base / name
                    shown = f"`{base}/{name}/`" if folder.is_dir() else f"`{base}/{name}.py`"
                    assert shown in text, f"CONTRIBUTING.md's dependency map does not name {shown}"


def _tree_with(tmp_path: Path, path: str, line: str) -> Path:
    """Both packages and the project file, copied, with ``line`` added to ``path``."""
    for pkg in ("colbench_gym", "sweet_agent"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.jsonl", "assets"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / path
    target.write_text((target.read_text() if target.exists() else "") + f"\n{line}\n")
    return tmp_path


@pytest.mark.parametrize(("path", "line", "contract"), [
    ("colbench_gym/protocol.py", "import colbench_gym.envs.base", "colbench_gym is layered"),
    ("colbench_gym/tasks/records.py", "from colbench_gym.simulators import base", "colbench_gym is layered"),
    ("colbench_gym/brand_new.py", "X = 1", "colbench_gym is layered"),  # exhaustive: every module placed
    ("colbench_gym/grading/compare.py", "import sweet_agent.prompts", "never imports sweet_agent"),
    ("colbench_gym/spaces.py", "import torch", "imports the ML stack only lazily"),
    ("sweet_agent/critic/trainer.py", "from sweet_agent.baselines import rft", "sweet_agent is layered"),
    ("sweet_agent/baselines/rft.py", "from sweet_agent.critic import trainer", "sweet_agent is layered"),
    ("sweet_agent/critic/trainer.py", "from sweet_agent.actor import config", "sweet_agent is layered"),
    ("sweet_agent/training_data/pairs.py", "import sweet_agent.training.command", "sweet_agent is layered"),
    ("sweet_agent/trajectories.py", "import sweet_agent.rollout", "sweet_agent is layered"),
    ("sweet_agent/trajectories.py", "import sweet_agent.evaluation.metrics", "sweet_agent is layered"),
    ("sweet_agent/evaluation/metrics.py", "from sweet_agent.evaluation import report", "the report is built on"),
    ("sweet_agent/brand_new.py", "X = 1", "sweet_agent is layered"),  # exhaustive too
])
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, path: str, line: str, contract: str) -> None:
    tree = _tree_with(tmp_path, path, line)
    out = _lint(tree, pythonpath=tree)
    assert out.returncode == 1, out.stdout + out.stderr
    text = " ".join(out.stdout.split())  # contract names wrap in the report
    assert _status(text, contract) == "BROKEN", out.stdout
    # ... because of the injected import (test_every_contract_is_kept holds the tree itself clean).
    module = path.removesuffix(".py").replace("/", ".")
    assert module in text.split("Broken contracts", 1)[1], out.stdout


def _status(report: str, contract: str) -> str:
    """``KEPT`` or ``BROKEN``: the verdict printed after the contract's name in the summary."""
    rest = report[report.index(contract):]
    return re.search(r"\b(KEPT|BROKEN)\b", rest).group(1)

def test_importing_every_colbench_module_loads_no_ml_stack() -> None:
    """The ignored imports of ``colbench-no-ml-stack`` really are lazy (function-level)."""
    code = (
        "import importlib, json, pkgutil, sys\n"
        "import colbench_gym\n"
        "names = [m.name for m in pkgutil.walk_packages(colbench_gym.__path__, 'colbench_gym.')]\n"
        "for n in names: importlib.import_module(n)\n"
        f"print(json.dumps({{'n': len(names), 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["n"] > 30 and result["heavy"] == []
