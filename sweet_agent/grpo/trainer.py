"""TRL's ``GRPOTrainer`` with ColBench episode statistics logged every step.

Overrides one method: after the rewards of a batch are computed (the tool envs then hold the
finished episodes), it logs per-episode means of what the agent did — ``colbench/questions``
(``ask_user`` calls), ``colbench/drafts`` (``show_draft`` calls), ``colbench/turns``,
``colbench/submitted`` and ``colbench/success`` (over the episodes that have a score) and
``colbench/infrastructure_failures`` (the fraction whose simulator, grader or renderer failed:
TRL gives them no reward) — next to TRL's own ``reward``, ``rewards/<EnvClass>/mean`` (the
env-owned reward) and ``tools/call_frequency``.
"""

from __future__ import annotations

import torch
from trl import GRPOTrainer

#: Logged per step: metric name -> episode attribute of the tool env.
EPISODE_STATS = {"questions": "questions", "drafts": "drafts", "turns": "turns",
                 "submitted": "submitted", "success": "success", "infrastructure_failures": "infrastructure_failure"}


def _episode_row(env) -> list[float]:
    """One tool env's statistics; its success is NaN (left out of the mean) when the episode
    failed for infrastructure reasons, since it has no score."""
    failed = bool(getattr(env, "infrastructure_failure", None))
    row = []
    for name, attr in EPISODE_STATS.items():
        if name == "infrastructure_failures":
            row.append(float(failed))
        elif name == "success" and failed:
            row.append(float("nan"))
        else:
            row.append(float(getattr(env, attr, 0.0)))
    return row


class ColBenchGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` that also logs the ColBench episode statistics of each batch."""

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.environments:
            stats = torch.tensor([_episode_row(env) for env in self.environments], device=self.accelerator.device)
            stats = self.accelerator.gather(stats).nanmean(dim=0)
            mode = "train" if self.model.training else "eval"
            for name, value in zip(EPISODE_STATS, stats.tolist()):
                self._metrics[mode][f"colbench/{name}"].append(value)
        return rewards
