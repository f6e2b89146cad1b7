"""SWEET-RL's actor: step-level candidate pairs scored by the critic, trained with TRL's DPO."""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ActorConfig": "sweet_agent.actor.config",
    "sample_candidates": "sweet_agent.actor.candidates",
    "score_candidates": "sweet_agent.actor.candidates",
    "select_pairs": "sweet_agent.actor.candidates",
    "build_step_pairs": "sweet_agent.actor.candidates",
    "make_dpo_trainer": "sweet_agent.actor.trainer",
    "train_actor": "sweet_agent.actor.trainer",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweet_agent.actor' has no attribute {name!r}")
