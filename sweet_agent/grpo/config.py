"""Configuration of online GRPO on ColBench (TRL style: dataclasses that are the CLI).

``sweet-agent train-grpo`` parses three dataclasses with TRL's ``TrlParser``, as TRL's own
``grpo.py`` script does: :class:`GRPOScriptArguments` (the task source and the environment —
the "dataset" of online RL), :class:`ColBenchGRPOConfig` (TRL's ``GRPOConfig`` plus the SWEET
critic reward) and TRL's ``ModelConfig`` (model, dtype, LoRA). ``--config preset.yaml`` sets
any of their fields; presets ship in ``sweet_agent/configs/grpo/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from colbench_gym.protocol import MAX_TURNS
from sweet_agent.training.arguments import MERGE_ADAPTER_HELP
from sweet_agent.training.machine import resolve_machine_defaults


@dataclass
class GRPOScriptArguments:
    """Where episodes come from: the environment, its task source and its simulated person."""

    env_id: str = field(default="ColBench-Backend-v0",
                        metadata={"help": "ColBench-Backend-v0 or ColBench-Frontend-v0"})
    tasks: str = field(default="collab:train", metadata={
        "help": "task source: embedded:train|test, generated:train|test, collab:train|test (backend) or a task JSONL"})
    num_tasks: int | None = field(default=None, metadata={
        "help": "tasks in the prompt dataset (default: all of a finite source; required for generated/collab)"})
    task_offset: int = field(default=0, metadata={"help": "index of the first task"})
    simulator: str = field(default="offline", metadata={
        "help": "the simulated person: offline (no model), openai (any OpenAI-compatible endpoint) or transformers"})
    simulator_kwargs: str | None = field(default=None, metadata={
        "help": 'JSON options of the simulator, e.g. \'{"base_url": "http://host:8000/v1", "model": "..."}\''})
    reward_mode: str = field(default="fraction", metadata={
        "help": "backend reward: fraction of hidden tests passed (dense, for small models) or success (0/1, paper)"})
    max_turns: int = field(default=MAX_TURNS, metadata={"help": "agent turns per episode (paper: 10)"})
    env_url: str | None = field(default=None, metadata={
        "help": "train against a remote `colbench serve` env, e.g. http://host:8000/backend (OpenEnv client)"})
    merge_adapter: bool = field(default=True, metadata={"help": MERGE_ADAPTER_HELP})


@dataclass
class ColBenchGRPOConfig(GRPOConfig):
    """TRL's ``GRPOConfig`` with the SWEET critic as an optional second reward.

    The environment's own reward (``get_reward`` of the tool env) always counts with weight 1;
    ``critic`` adds the trained privileged critic's score of the whole dialogue with weight
    ``critic_weight`` (TRL's ``reward_weights`` for the one extra reward function).
    """

    critic: str | None = field(default=None, metadata={
        "help": "a `sweet-agent train-critic` output dir: add its score of each rollout as a second reward"})
    critic_weight: float = field(default=0.1, metadata={"help": "λ: weight of the critic reward (env reward: 1)"})
    critic_reference: str | None = field(default=None, metadata={
        "help": "the critic's frozen reference model (default: the one named in its sweet_critic.json)"})
    critic_device: str = field(default="auto", metadata={
        "help": "where the critic reward's models run: auto (this process's GPU, the CPU without one or with "
                "--use_cpu), or cpu, cuda, cuda:N, mps"})
    # GRPOConfig defaults that suit multi-turn ColBench episodes.
    max_tool_calling_iterations: int | None = field(default=MAX_TURNS, metadata={
        "help": "tool calls per rollout; each call is one env turn, and the env ends the episode at its 10th"})
    logging_steps: float = field(default=1, metadata={"help": "log every N steps"})

    def __post_init__(self):
        if self.critic_weight < 0:
            raise ValueError(f"critic_weight must be >= 0, got {self.critic_weight}")
        # GRPOConfig turns bf16 on by default; on a machine without a bf16 GPU train in the model's dtype.
        resolve_machine_defaults(self)
        super().__post_init__()
