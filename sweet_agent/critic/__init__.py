"""SWEET-RL's privileged step-level critic.

Heavy modules (torch, transformers, trl) load only when their names are used.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "turn_advantages": "sweet_agent.critic.advantages",
    "assistant_token_spans": "sweet_agent.critic.advantages",
    "with_privileged": "sweet_agent.critic.advantages",
    "NORMALIZATIONS": "sweet_agent.critic.advantages",
    "CriticConfig": "sweet_agent.critic.config",
    "CriticTrainer": "sweet_agent.critic.trainer",
    "bradley_terry_loss": "sweet_agent.critic.trainer",
    "RegressionCritic": "sweet_agent.critic.regression",
    "build_trajectory_pairs": "sweet_agent.critic.pairs",
    "split_by_task": "sweet_agent.critic.pairs",
    "pairs_to_rows": "sweet_agent.critic.pairs",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweet_agent.critic' has no attribute {name!r}")
