"""The data arguments the training commands share (the role of TRL's ``ScriptArguments``).

WHY a module of its own: the configs (``grpo/config.py``) and the commands declare fields with
these helps and bases; none of them needs the parser or the ML stack to do so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sweet_agent.training_data.pairs import PAIR_RULES

#: ``--merge_adapter``, an option of every training command that saves a model (train-grpo too).
MERGE_ADAPTER_HELP = ("with LoRA (--use_peft): also save the adapter merged into a copy of the base model, a plain "
                      "checkpoint any tool loads (default); false: save only the adapter (OUTPUT_DIR/adapter, ~17 MB "
                      "for the default model at r 8 instead of ~2 GB), which every sweet-agent loader merges into "
                      "its base")


@dataclass
class TrainingDataArguments:
    """What a training command reads (the role of TRL's ``ScriptArguments``)."""

    data: list[str] | None = field(default=None, metadata={"help": "trajectory JSONL file(s) with rewards"})
    system_prompt: str | None = field(
        default=None, metadata={"help": "agent system prompt of the rollouts (default: the one each record's "
                                        "meta carries)"})
    merge_adapter: bool = field(default=True, metadata={"help": MERGE_ADAPTER_HELP})


@dataclass
class PreferenceDataArguments(TrainingDataArguments):
    """Data options of the commands that compare trajectories of the same task."""

    success_threshold: float | None = field(
        default=None, metadata={"help": "reward counting as success (default: the record's success flag, "
                                        "else reward 1)"})
    pair_rule: str = field(default="success", metadata={"help": "which trajectories are preferred: "
                                                                  + ", ".join(PAIR_RULES),
                                                          "choices": list(PAIR_RULES)})
