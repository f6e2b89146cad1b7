"""Online multi-turn GRPO on ColBench with TRL's ``GRPOTrainer(environment_factory=...)``.

The environments are tools (:mod:`colbench_gym.online.tool_env`); this package adds the prompt
dataset, a trainer that logs what the agent did each step, the SWEET critic as an optional
second reward, and the ``sweet-agent train-grpo`` command. Heavy modules load only when used.
"""

from __future__ import annotations

from sweet_agent.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "ColBenchGRPOConfig": "sweet_agent.grpo.config",
    "GRPOScriptArguments": "sweet_agent.grpo.config",
    "ColBenchGRPOTrainer": "sweet_agent.grpo.trainer",
    "SweetCriticReward": "sweet_agent.grpo.critic_reward",
    "build_prompt_dataset": "sweet_agent.grpo.data",
    "tool_system_prompt": "sweet_agent.grpo.data",
})
