"""Online RL interfaces: ColBench as TRL tool environments and as OpenEnv servers.

* :mod:`colbench_gym.online.tool_env` — plain Python adapters for TRL's
  ``GRPOTrainer(environment_factory=...)`` (no torch, transformers or trl imported).
* :mod:`colbench_gym.online.server` / :mod:`colbench_gym.online.client` — OpenEnv server and
  client (``pip install colbench-gym[serve]``), imported only when used.
"""

from __future__ import annotations

from colbench_gym.online.tool_env import (
    CONVERSATION_OVER,
    ColBenchFrontendToolEnv,
    ColBenchToolEnv,
    ToolEnvError,
    ToolEnvFactory,
    make_tool_env_factory,
    tool_env_class,
)

__all__ = [
    "CONVERSATION_OVER",
    "ColBenchFrontendToolEnv",
    "ColBenchToolEnv",
    "ToolEnvError",
    "ToolEnvFactory",
    "make_tool_env_factory",
    "tool_env_class",
]
