"""Concurrent, resumable rollouts of ColBench episodes (see :mod:`.collector`)."""

from sweet_agent.rollout.collector import (
    EpisodeSpec,
    RolloutConfig,
    RolloutError,
    RolloutResult,
    collect,
    plan_episodes,
)

__all__ = ["EpisodeSpec", "RolloutConfig", "RolloutError", "RolloutResult", "collect", "plan_episodes"]
