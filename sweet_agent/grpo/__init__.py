"""Online multi-turn GRPO on ColBench with TRL's ``GRPOTrainer(environment_factory=...)``.

The environments are tools (:mod:`colbench_gym.online.tool_env`); this package adds the prompt
dataset, a trainer that logs what the agent did each step, the SWEET critic as an optional
second reward, and the ``sweet-agent train-grpo`` command. Heavy modules load only when used.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ColBenchGRPOConfig": "sweet_agent.grpo.config",
    "GRPOScriptArguments": "sweet_agent.grpo.config",
    "ColBenchGRPOTrainer": "sweet_agent.grpo.trainer",
    "SweetCriticReward": "sweet_agent.grpo.critic_reward",
    "build_prompt_dataset": "sweet_agent.grpo.data",
    "tool_system_prompt": "sweet_agent.grpo.data",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sweet_agent.grpo' has no attribute {name!r}")
