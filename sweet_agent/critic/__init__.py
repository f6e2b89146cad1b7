"""SWEET-RL's privileged step-level critic (the trajectory pairs it learns from are in
:mod:`sweet_agent.training_data`, shared with the other trainers; the critic's view, advantage and
loss are steps 2-4 of :mod:`sweet_agent.sweet_rl.algorithm`).

Heavy modules (torch, transformers, trl) load only when their names are used.
"""

from __future__ import annotations

from sweet_agent.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "turn_advantages": "sweet_agent.critic.advantages",
    "CriticConfig": "sweet_agent.critic.config",
    "CriticTrainer": "sweet_agent.critic.trainer",
    "RegressionCritic": "sweet_agent.critic.regression",
})
