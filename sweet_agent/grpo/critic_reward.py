"""The SWEET critic as an online reward: its score of each finished rollout.

The critic scores the rollout's dialogue exactly as offline scoring does (``turn_advantages``
in :mod:`sweet_agent.critic.advantages`): the dialogue in ColBench text form (the env's own
``messages``: the person's messages and the agent's turns as the env received them), the task's
reference solution as privileged information when the critic was trained with it, and the
critic's own normalisation; the trajectory score is the sum of its per-turn values. A rollout
without any env turn scores 0. Passed to ``GRPOTrainer`` as a reward function; its weight is
``critic_weight`` while the env's reward keeps weight 1.
"""

from __future__ import annotations

from typing import Any


class SweetCriticReward:
    """Reward function ``(environments, **kwargs) -> list[float]`` from a trained critic.

    Args:
        critic: a ``sweet-agent train-critic`` output directory, or an already loaded critic
            (:class:`~sweet_agent.critic.loading.LoadedCritic`).
        dtype: dtype to load the critic in.
        reference: the critic's frozen reference model (default: from its metadata).
        device: where the critic and its reference run (:func:`sweet_agent.devices.resolve_device`:
            ``auto`` is this process's GPU under ``accelerate launch``, the CPU without one).
    """

    __name__ = "sweet_critic"  # TRL logs the reward as rewards/sweet_critic/mean

    def __init__(self, critic: Any, dtype: str = "float32", reference: str | None = None,
                 device: str | None = "auto") -> None:
        if isinstance(critic, str):
            from sweet_agent.critic.loading import load_critic

            critic = load_critic(critic, dtype, reference, device=device)
        self.critic = critic

    def score(self, messages: list[dict[str, str]], privileged_info: str | None) -> float:
        """The critic's trajectory score of one dialogue (sum of its per-turn values)."""
        from sweet_agent.critic.advantages import turn_advantages

        if not any(m["role"] == "assistant" for m in messages):
            return 0.0
        priv = privileged_info if self.critic.use_privileged_info else None
        values = turn_advantages(self.critic.model, self.critic.ref, self.critic.tokenizer, messages, priv,
                                 normalize=self.critic.normalize)
        return float(sum(values))

    def __call__(self, environments: list[Any] | None = None, **kwargs: Any) -> list[float | None]:
        if environments is None:
            raise ValueError("the SWEET critic reward needs ColBench tool environments (environment_factory)")
        # an episode that failed for infrastructure reasons has no score from the env (None); the
        # critic gives none either, so TRL leaves it out instead of nansum-ing a missing env reward to 0
        return [None if getattr(env, "infrastructure_failure", None) else self.score(env.messages, _reference_solution(env))
                for env in environments]


def _reference_solution(tool_env: Any) -> str | None:
    """The task's reference solution held by the tool env's (local) Gymnasium env."""
    task = getattr(getattr(tool_env.env, "unwrapped", None), "task", None)
    if task is None:
        raise ValueError("the SWEET critic reward needs the task's reference solution, which only a local env "
                         "holds; train against a local env (no --env_url) to use --critic")
    return task.ground_truth
