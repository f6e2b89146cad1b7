"""ColBench as a Gymnasium suite.

Importing this package registers the environments (cheaply: string entry points only)::

    import gymnasium as gym
    import colbench_gym  # or gym.register_envs(colbench_gym)

    env = gym.make("ColBench-Backend-v0")

or, with no import at all, ``gym.make("colbench_gym:ColBench-Backend-v0")``.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

__version__ = "0.1.0"

#: Registered environment ids -> entry points.
ENVIRONMENTS = {
    "ColBench-Backend-v0": "colbench_gym.envs.backend:ColBenchBackendEnv",
    "ColBench-Frontend-v0": "colbench_gym.envs.frontend:ColBenchFrontendEnv",
}

for _env_id, _entry_point in ENVIRONMENTS.items():
    if _env_id not in registry:
        # The env enforces its own 10-turn limit (the last turn is graded), so no TimeLimit wrapper.
        register(id=_env_id, entry_point=_entry_point)

__all__ = ["ENVIRONMENTS", "__version__", "load_environment", "make_tool_env_factory"]


def __getattr__(name: str):
    # Lazy so `import colbench_gym` stays as cheap as registration.
    if name == "make_tool_env_factory":
        from colbench_gym.online.tool_env import make_tool_env_factory

        return make_tool_env_factory
    if name == "load_environment":  # verifiers' convention: `vf-eval colbench-gym` (the [verifiers] extra)
        from colbench_gym.integrations.verifiers_env import load_environment

        return load_environment
    raise AttributeError(f"module 'colbench_gym' has no attribute {name!r}")
