"""Human simulators: offline (no model), OpenAI-compatible endpoints, local transformers models.

Select one by name with :func:`make_simulator` (what ``gym.make(..., simulator=NAME,
simulator_kwargs={...})`` does) or pass any :class:`HumanSimulator` instance. Which names serve
which environment kind is the kind's ``simulators`` in :mod:`colbench_gym.tasks.kinds`
(``"module:Class"`` strings, imported only when asked for, so registration stays cheap and the
base install never imports torch/transformers).
"""

from __future__ import annotations

from typing import Any

from colbench_gym.simulators.base import Dialogue, HumanSimulator, SimulatorError
from colbench_gym.tasks.kinds import env_kind, load


def available_simulators(kind: str) -> list[str]:
    """The simulator names an environment of ``kind`` can be made with."""
    return sorted(env_kind(kind).simulators)


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
    simulators = env_kind(kind).simulators
    if spec not in simulators:
        raise ValueError(
            f"unknown {kind} simulator {spec!r}; choose one of {available_simulators(kind)} "
            "or pass a HumanSimulator instance"
        )
    return load(simulators[spec])(**kwargs)


__all__ = ["Dialogue", "HumanSimulator", "SimulatorError", "available_simulators", "make_simulator"]
