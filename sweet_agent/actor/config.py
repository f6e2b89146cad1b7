"""Configuration of SWEET-RL's actor stage: step-level candidate pairs + DPO (TRL style)."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import DPOConfig

from sweet_agent.actor.candidates import StepPairConfig
from sweet_agent.sweet_rl.algorithm import ACTOR_BETA, ACTOR_LOSS_TYPE, ACTOR_LOSS_WEIGHTS
from sweet_agent.training.machine import resolve_machine_defaults


@dataclass
class ActorConfig(StepPairConfig, DPOConfig):
    """:class:`trl.DPOConfig` with the paper's actor defaults and the candidate-pair settings
    (:class:`~sweet_agent.actor.candidates.StepPairConfig`: ``build_step_pairs`` reads them from
    this config).

    Paper: 16 candidates per agent turn, chosen at random from the critic's top half, rejected
    from the bottom half, DPO with β = 0.1 plus an NLL (``sft``) term weighted 0.01, one epoch;
    the 8B run used ``learning_rate=2e-7`` and batch 8.
    """

    # How the critic reads a candidate (normalisation, privileged info) is read from the critic's
    # sweet_critic.json, and the system prompt from the data arguments: not settings of this stage.
    # DPOConfig defaults changed to the paper's (sweet_agent.sweet_rl.algorithm, step 8).
    beta: float = ACTOR_BETA
    loss_type: list[str] = field(default_factory=lambda: list(ACTOR_LOSS_TYPE))
    loss_weights: list[float] | None = field(default_factory=lambda: list(ACTOR_LOSS_WEIGHTS))
    num_train_epochs: float = 1.0
    # Suits LoRA on a small model (CPU scale); the paper's 2e-7 (full fine-tuning of 8B) is in
    # sweet_agent/configs/actor/paper.yaml.
    learning_rate: float = 5e-5
    per_device_train_batch_size: int = 8
    # TRL turns activation checkpointing on by default; at CPU scale it only costs time (the
    # paper preset turns it on with activation_checkpointing: true).
    gradient_checkpointing: bool | None = None

    def __post_init__(self):
        self.check_step_pairs()  # before the trainer's own set-up: a typo costs no compute
        resolve_machine_defaults(self)
        DPOConfig.__post_init__(self)
