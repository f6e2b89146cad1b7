"""Configuration of SWEET-RL's actor stage: step-level candidate pairs + DPO (TRL style)."""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import DPOConfig

from sweet_agent.actor.candidates import check_step_score
from sweet_agent.training_setup import resolve_ddp_backend, resolve_precision


@dataclass
class ActorConfig(DPOConfig):
    """:class:`trl.DPOConfig` with the paper's actor defaults and the candidate-pair settings.

    Paper: 16 candidates per agent turn, chosen at random from the critic's top half, rejected
    from the bottom half, DPO with β = 0.1 plus an NLL (``sft``) term weighted 0.01, one epoch;
    the 8B run used ``learning_rate=2e-7`` and batch 8.
    """

    num_candidates: int = field(default=16, metadata={"help": "candidate actions sampled per agent turn"})
    pairs_per_turn: int = field(default=1, metadata={"help": "(chosen, rejected) pairs drawn per agent turn"})
    turn_fraction: float = field(default=1.0, metadata={"help": "fraction of the offline agent turns to use"})
    first_turns: int = field(default=0, metadata={
        "help": "use only each trajectory's first N agent turns (0 = all, the paper's); applied before turn_fraction"})
    skip_turns: int = field(default=0, metadata={
        "help": "leave out each trajectory's first N agent turns (with first_turns: a window of turns)"})
    max_new_tokens: int = field(default=256, metadata={"help": "length cap of a sampled candidate"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of candidates"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling of candidates"})
    sampling_batch_size: int | None = field(default=None, metadata={"help": "candidates per generate call (default: all of a turn's in one call)"})
    explore_candidates: float = field(default=0.0, metadata={
        "help": "fraction of a turn's num_candidates started with a question opener that the policy completes "
                "(at least one when > 0; 0 = off, the paper's): a policy that never asks gives the critic no "
                "question to prefer, so step-level DPO cannot teach asking (docs/training.md)"})
    explore_turns: int = field(default=1, metadata={"help": "question candidates only at the first N agent turns"})
    step_score: str = field(default="critic-ref", metadata={
        "help": "what a candidate's critic log-probability is compared with: critic-ref (ours: the critic's "
                "reference model on the same privileged sequence) or release (the paper release's: the sampling "
                "policy's token-mean log-probability on its own prompt, without the privileged info)"})
    # How the critic reads a candidate (normalisation, privileged info) is read from the critic's
    # sweet_critic.json, and the system prompt from the data arguments: not settings of this stage.
    # DPOConfig defaults changed to the paper's.
    beta: float = 0.1
    loss_type: list[str] = field(default_factory=lambda: ["sigmoid", "sft"])
    loss_weights: list[float] | None = field(default_factory=lambda: [1.0, 0.01])
    num_train_epochs: float = 1.0
    # Suits LoRA on a small model (CPU scale); the paper's 2e-7 (full fine-tuning of 8B) is in
    # sweet_agent/configs/actor/paper.yaml.
    learning_rate: float = 5e-5
    per_device_train_batch_size: int = 8
    # TRL turns activation checkpointing on by default; at CPU scale it only costs time (the
    # paper preset turns it on with activation_checkpointing: true).
    gradient_checkpointing: bool | None = None

    def __post_init__(self):
        if self.num_candidates < 2:
            raise ValueError(f"num_candidates must be >= 2 to form a top/bottom split, got {self.num_candidates}")
        if self.pairs_per_turn < 1:
            raise ValueError(f"pairs_per_turn must be >= 1, got {self.pairs_per_turn}")
        if self.sampling_batch_size is not None and self.sampling_batch_size < 1:
            raise ValueError(f"sampling_batch_size must be >= 1, got {self.sampling_batch_size}")
        if not 0 < self.turn_fraction <= 1:
            raise ValueError(f"turn_fraction must be in (0, 1], got {self.turn_fraction}")
        if self.first_turns < 0:
            raise ValueError(f"first_turns must be >= 0 (0 = every agent turn), got {self.first_turns}")
        if self.skip_turns < 0:
            raise ValueError(f"skip_turns must be >= 0, got {self.skip_turns}")
        if not 0 <= self.explore_candidates <= 1:
            raise ValueError(f"explore_candidates must be in [0, 1], got {self.explore_candidates}")
        if self.explore_turns < 1:
            raise ValueError(f"explore_turns must be >= 1, got {self.explore_turns}")
        check_step_score(self.step_score)
        resolve_precision(self)
        resolve_ddp_backend(self)
        super().__post_init__()
