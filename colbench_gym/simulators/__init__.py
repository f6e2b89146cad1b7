"""Human simulators: offline (no model), OpenAI-compatible endpoints, local transformers models.

Select one by name with :func:`make_simulator` (what ``gym.make(..., simulator=NAME,
simulator_kwargs={...})`` does) or pass any :class:`HumanSimulator` instance.
"""

from __future__ import annotations

import importlib
from typing import Any

from colbench_gym.simulators.base import Dialogue, HumanSimulator, SimulatorError

# name -> (env kind -> "module:Class"); imported only when asked for, so registration stays cheap
# and the base install never imports torch/transformers.
_REGISTRY: dict[str, dict[str, str]] = {
    "offline": {
        "backend": "colbench_gym.simulators.offline_backend:OfflineBackendSimulator",
        "frontend": "colbench_gym.simulators.offline_frontend:OfflineFrontendSimulator",
    },
    "openai": {
        "backend": "colbench_gym.simulators.openai_simulator:OpenAIBackendSimulator",
        "frontend": "colbench_gym.simulators.openai_frontend:OpenAIFrontendSimulator",
    },
    "transformers": {
        "backend": "colbench_gym.simulators.transformers_simulator:TransformersBackendSimulator",
    },
}


def available_simulators(kind: str) -> list[str]:
    return sorted(name for name, kinds in _REGISTRY.items() if kind in kinds)


def make_simulator(spec: str | HumanSimulator | None, kind: str, **kwargs: Any) -> HumanSimulator:
    """Build the simulator named ``spec`` for an environment of ``kind`` (backend/frontend)."""
    if spec is None:
        spec = "offline"
    if isinstance(spec, HumanSimulator):
        if kwargs:
            raise ValueError("simulator_kwargs are only used with a simulator name, not an instance")
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"simulator must be a name or a HumanSimulator, got {type(spec).__name__}")
    kinds = _REGISTRY.get(spec)
    if kinds is None or kind not in kinds:
        raise ValueError(
            f"unknown {kind} simulator {spec!r}; choose one of {available_simulators(kind)} "
            "or pass a HumanSimulator instance"
        )
    module_name, cls_name = kinds[kind].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(**kwargs)


__all__ = ["Dialogue", "HumanSimulator", "SimulatorError", "available_simulators", "make_simulator"]
