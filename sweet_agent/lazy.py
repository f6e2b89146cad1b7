"""Lazy exports of a package: names importable from the package whose modules load on first use.

WHY: ``sweet_agent.critic``, ``sweet_agent.actor`` and ``sweet_agent.grpo`` offer their public
names at package level (``from sweet_agent.critic import CriticTrainer``), but the modules behind
them import torch, transformers and trl; a command that only needs one light module (a config, a
data function) must not pay for the rest. One function gives each package its ``__all__`` and
its module-level ``__getattr__`` (PEP 562) from a table ``name -> module``.

Why module names as strings, not imports (issue 35 asked for imports wherever import cost allows):
here it does not: importing ``sweet_agent.critic.trainer`` or ``sweet_agent.grpo.trainer`` loads
torch, transformers and trl (seconds to tens of seconds on a 2-core machine) for a command that
wanted a config. What static tools lose, ``tests/agent/test_lazy_exports.py`` checks instead:
every name of every table resolves, and importing a package loads no trainer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[list[str], Callable[[str], Any]]:
    """``(__all__, __getattr__)`` for ``package`` exporting each name of ``exports`` from its
    module, imported when the name is first used; any other name is an AttributeError."""
    table = dict(exports)

    def __getattr__(name: str) -> Any:
        if name in table:
            return getattr(importlib.import_module(table[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return list(table), __getattr__


__all__ = ["lazy_exports"]
