"""Configuration of the SWEET-RL critic trainer (TRL style: a TrainingArguments dataclass)."""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import TrainingArguments

from sweet_agent.sweet_rl.algorithm import NORMALIZATIONS
from sweet_agent.sweet_rl.logprobs import LM_HEAD_CHUNK
from sweet_agent.training.machine import resolve_machine_defaults

CRITIC_TYPES = ("logratio", "regression")


@dataclass
class CriticConfig(TrainingArguments):
    """Arguments of :class:`~sweet_agent.critic.trainer.CriticTrainer`.

    The paper's 8B run: ``learning_rate=2e-7``, effective batch 8, ``num_train_epochs=4``,
    ``beta=0.1`` (``sweet_agent/configs/critic/paper.yaml``). Ablations are switches here: ``use_privileged_info=False`` (critic without the
    reference solution), ``normalize="none"`` (no per-turn normalisation), ``normalize="trajectory"``
    (the public release's token mean over all turns), ``critic_type="regression"`` (scalar head).
    """

    beta: float = field(default=0.1, metadata={"help": "Bradley–Terry temperature on trajectory sums"})
    nll_coef: float = field(default=0.0, metadata={"help": "weight of an NLL term on the chosen trajectory's agent tokens"})
    normalize: str = field(default="turn", metadata={"help": f"one of {NORMALIZATIONS}"})
    use_privileged_info: bool = field(default=True, metadata={"help": "condition the critic on the reference solution"})
    critic_type: str = field(default="logratio", metadata={"help": f"one of {CRITIC_TYPES}"})
    max_length: int | None = field(default=4096, metadata={"help": "truncate trajectories to this many tokens (keep start)"})
    logprob_chunk_size: int = field(default=LM_HEAD_CHUNK, metadata={
        "help": "scored positions per piece of the LM head, recomputed in the backward pass: peak memory holds one "
                "piece's logits (rows x pieces x vocabulary); 0 runs the head on every scored position at once"})
    # Trainer defaults that suit this trainer. The learning rate suits LoRA on a small model (CPU
    # scale); the paper's 2e-7 is for full fine-tuning of an 8B model (the ``paper`` preset) and
    # gives LoRA margins of ~1e-6.
    learning_rate: float = 1e-4
    num_train_epochs: float = 4.0
    per_device_train_batch_size: int = 2
    per_device_eval_batch_size: int = 2
    logging_steps: float = 10
    remove_unused_columns: bool = False
    save_strategy: str = "epoch"
    # bf16 mixed precision wherever a GPU supports it (as TRL's configs), full precision elsewhere.
    bf16: bool | None = None

    def __post_init__(self):
        if self.normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {self.normalize!r}")
        if self.critic_type not in CRITIC_TYPES:
            raise ValueError(f"critic_type must be one of {CRITIC_TYPES}, got {self.critic_type!r}")
        if self.logprob_chunk_size < 0:
            raise ValueError(f"logprob_chunk_size must be >= 0 (0: one piece), got {self.logprob_chunk_size}")
        if self.beta <= 0:
            raise ValueError(f"beta must be > 0, got {self.beta}")
        resolve_machine_defaults(self)
        super().__post_init__()
