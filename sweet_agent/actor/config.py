"""The settings of ``sweet-agent train-actor``, in one place (TRL's shape: a config dataclass
beside the trainer; where the pairs come from, ``--data``/``--critic``/``--pairs_in``, is the
command's :class:`~sweet_agent.actor.cli.StepPairArguments`, like TRL's ``ScriptArguments``).

- :class:`StepPairConfig`: the step-pair stage (candidates, step scores, pairs: steps 5-7 of
  :mod:`sweet_agent.sweet_rl.algorithm`).
- :class:`ActorConfig`: those fields plus TRL's ``DPOConfig`` with the paper's actor defaults
  (step 8: DPO β = 0.1 plus NLL weighted 0.01, one epoch).

WHY :class:`ActorConfig` is defined on first use (PEP 562 ``__getattr__``): it subclasses
``trl.DPOConfig``, and importing trl costs seconds and is not installed on every machine that
builds step pairs (the GPU proof's machine carries it as a wheel only for training). Everything
that needs only the step-pair stage imports :class:`StepPairConfig` from here without trl;
``from sweet_agent.actor.config import ActorConfig`` works as usual and gives one class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sweet_agent.sweet_rl.algorithm import check_step_score


@dataclass
class StepPairConfig:
    """How the step-pair stage (:func:`~sweet_agent.actor.candidates.build_step_pairs`) samples,
    scores and pairs candidates (the paper's defaults). :class:`ActorConfig` is this plus TRL's
    ``DPOConfig``, so every field is a ``train-actor`` flag; the stage alone (mc-values' peers,
    scripts/gpu_proof.py, benchmarks/bench_step_pairs.py, tests) builds this one without trl."""

    num_candidates: int = field(default=16, metadata={"help": "candidate actions sampled per agent turn"})
    pairs_per_turn: int = field(default=4, metadata={
        "help": "(chosen, rejected) pairs drawn per agent turn, each a random top-half candidate against a random "
                "bottom-half one, no pair twice (the release's --num_pairs 4)"})
    turn_fraction: float = field(default=1.0, metadata={"help": "fraction of the offline agent turns to use"})
    first_turns: int = field(default=0, metadata={
        "help": "use only each trajectory's first N agent turns (0 = all, the paper's); applied before turn_fraction"})
    skip_turns: int = field(default=0, metadata={
        "help": "leave out each trajectory's first N agent turns (with first_turns: a window of turns)"})
    max_new_tokens: int = field(default=256, metadata={"help": "length cap of a sampled candidate"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of candidates"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling of candidates"})
    sampling_batch_size: int | None = field(default=None, metadata={"help": "candidates per generate call (default: all of a turn's in one call)"})
    score_batch_size: int = field(default=16, metadata={
        "help": "candidates per critic forward pass (each model's; a turn's candidates are scored in "
                "ceil(num_candidates / this) batched forwards on the critic's device)"})
    explore_candidates: float = field(default=0.0, metadata={
        "help": "fraction of a turn's num_candidates started with a question opener that the policy completes "
                "(at least one when > 0; 0 = off, the paper's): a policy that never asks gives the critic no "
                "question to prefer, so step-level DPO cannot teach asking (docs/training.md)"})
    explore_turns: int = field(default=0, metadata={
        "help": "question candidates only at the first N agent turns (0 = at every agent turn: 'ask again' against "
                "'answer' wherever that decision exists)"})
    candidate_seed: int | None = field(default=None, metadata={
        "help": "seed of the candidates' sampling and of turn_fraction's choice of turns (default: --seed). Give "
                "every training seed the same one, with --candidates_file, to score one set of base-policy samples "
                "with each seed's critic (a seed changes the critic and the pair draws, not the samples)"})
    score_shared_prefix: bool = field(default=True, metadata={
        "help": "the critic and its reference compute a turn's prompt once and score every candidate from its "
                "key/value cache (same scores to float round-off; false: each candidate's whole sequence)"})
    step_score: str = field(default="critic-ref", metadata={
        "help": "what a candidate's critic log-probability is compared with: critic-ref (ours: the critic's "
                "reference model on the same privileged sequence) or release (the paper release's: the sampling "
                "policy's token-mean log-probability on its own prompt, without the privileged info)"})

    def __post_init__(self):
        self.check_step_pairs()

    def check_step_pairs(self) -> None:
        """One-line errors for settings no sampling can use (before any model is loaded)."""
        if self.num_candidates < 2:
            raise ValueError(f"num_candidates must be >= 2 to form a top/bottom split, got {self.num_candidates}")
        if self.pairs_per_turn < 1:
            raise ValueError(f"pairs_per_turn must be >= 1, got {self.pairs_per_turn}")
        if self.sampling_batch_size is not None and self.sampling_batch_size < 1:
            raise ValueError(f"sampling_batch_size must be >= 1, got {self.sampling_batch_size}")
        if self.score_batch_size < 1:
            raise ValueError(f"score_batch_size must be >= 1, got {self.score_batch_size}")
        if not 0 < self.turn_fraction <= 1:
            raise ValueError(f"turn_fraction must be in (0, 1], got {self.turn_fraction}")
        if self.first_turns < 0:
            raise ValueError(f"first_turns must be >= 0 (0 = every agent turn), got {self.first_turns}")
        if self.skip_turns < 0:
            raise ValueError(f"skip_turns must be >= 0, got {self.skip_turns}")
        if not 0 <= self.explore_candidates <= 1:
            raise ValueError(f"explore_candidates must be in [0, 1], got {self.explore_candidates}")
        if self.explore_turns < 0:
            raise ValueError(f"explore_turns must be >= 0 (0 = every agent turn), got {self.explore_turns}")
        check_step_score(self.step_score)


def _define_actor_config() -> type:
    from trl import DPOConfig  # noqa: PLC0415 - see the module docstring

    from sweet_agent.sweet_rl.algorithm import ACTOR_BETA, ACTOR_LOSS_TYPE, ACTOR_LOSS_WEIGHTS  # noqa: PLC0415
    from sweet_agent.training.machine import MachineDefaults  # noqa: PLC0415

    @dataclass
    class ActorConfig(StepPairConfig, MachineDefaults, DPOConfig):
        """:class:`trl.DPOConfig` with the paper's actor defaults and the step-pair settings
        (:class:`StepPairConfig`: ``build_step_pairs`` reads them from this config).

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

        def __post_init__(self):
            self.check_step_pairs()  # before the trainer's own set-up: a typo costs no compute
            MachineDefaults.__post_init__(self)  # the machine's defaults, then DPOConfig's own

    ActorConfig.__module__, ActorConfig.__qualname__ = __name__, "ActorConfig"
    return ActorConfig


def __getattr__(name: str) -> Any:
    if name == "ActorConfig":
        globals()["ActorConfig"] = cls = _define_actor_config()  # defined once, then a plain attribute
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

