"""SWEET-RL's actor: step-level candidate pairs scored by the critic, trained with TRL's DPO (the
algorithm's steps themselves, e.g. ``score_candidates`` and ``select_pairs``, are exported by
:mod:`sweet_agent.sweet_rl.algorithm`, their one home)."""

from __future__ import annotations

from sweet_agent.lazy import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "ActorConfig": "sweet_agent.actor.config",
    "sample_candidates": "sweet_agent.actor.candidates",
    "build_step_pairs": "sweet_agent.actor.candidates",
    "make_dpo_trainer": "sweet_agent.actor.trainer",
    "train_actor": "sweet_agent.actor.trainer",
})
