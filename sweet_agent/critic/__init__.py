"""SWEET-RL's privileged step-level critic (the trajectory pairs it learns from are in
:mod:`sweet_agent.training_data`, shared with the other trainers).

Heavy modules (torch, transformers, trl) load only when their names are used.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "turn_advantages": "sweet_agent.critic.advantages",
    "with_privileged": "sweet_agent.critic.advantages",
    "NORMALIZATIONS": "sweet_agent.critic.advantages",
    "CriticConfig": "sweet_agent.critic.config",
    "CriticTrainer": "sweet_agent.critic.trainer",
    "bradley_terry_loss": "sweet_agent.critic.trainer",
    "RegressionCritic": "sweet_agent.critic.regression",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweet_agent.critic' has no attribute {name!r}")
