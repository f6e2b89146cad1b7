"""The one loader of a benchmark script as a module for tests (benchmarks/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark(script: str, module_name: str | None = None) -> ModuleType:
    """``benchmarks/<script>.py`` imported as ``module_name`` (default: the script's name),
    registered in ``sys.modules`` first: its dataclasses look their module up."""
    name = module_name or script
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{script}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
