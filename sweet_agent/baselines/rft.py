"""Rejection fine-tuning (RFT) baseline: SFT on the successful trajectories, agent turns only.

``sweet-agent train-rft --data trajs.jsonl --output_dir out/rft``. The loss covers only the
agent's tokens (TRL ``SFTTrainer`` with ``assistant_only_loss=True``; TRL swaps in a training
chat template with ``{% generation %}`` markers for templates that lack them). The command line
is the dataclasses: ``PreferenceDataArguments``, :class:`RFTConfig` and ``trl.ModelConfig``
(``--config cpu|paper``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from trl import SFTConfig

from sweet_agent.training.arguments import PreferenceDataArguments
from sweet_agent.training.command import TrainingCommand, no_rows_advice, nothing_to_train
from sweet_agent.training.machine import MachineDefaults
from sweet_agent.training_data import records as R

PROG = "sweet-agent train-rft"
PRESETS = "rft"


@dataclass
class RFTConfig(MachineDefaults, SFTConfig):
    """``SFTConfig`` for rejection fine-tuning: loss on the agent's turns only. The learning rate
    suits LoRA on a small model (CPU scale); the paper preset has the paper's 2e-7."""

    assistant_only_loss: bool = True
    learning_rate: float = 5e-5


def rft_rows(records: list[dict[str, Any]], success_threshold: float | None = None,
             system_prompt: str | None = None, rule: str = "success") -> list[dict[str, Any]]:
    """``{"messages": [...]}`` rows of the successful trajectories (what the policy saw + did);
    with ``rule="best"``, of each task's best trajectories when no sample of it succeeded."""
    from collections import defaultdict

    from sweet_agent.training_data.pairs import chosen_candidates

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in records:
        R.check_record(rec)
        groups[R.task_key(rec)].append(rec)
    keep = [r for g in groups.values() for r in chosen_candidates(g, success_threshold, rule)]
    rows = []
    for rec in keep:
        turns = R.agent_prompts(rec, system_prompt)
        if turns:
            prompt, output = turns[-1]
            rows.append({"messages": [*prompt, {"role": "assistant", "content": output}]})
    return rows


def make_rft_trainer(model, tokenizer, rows, args, peft_config=None, **kwargs):
    from datasets import Dataset
    from trl import SFTTrainer

    if not rows:
        raise ValueError("no successful trajectories to fine-tune on; collect more rollouts or lower "
                         "--success-threshold")
    ds = rows if isinstance(rows, Dataset) else Dataset.from_list(list(rows))
    return SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer,
                      peft_config=peft_config, **kwargs)


COMMAND = TrainingCommand(PROG, PRESETS, PreferenceDataArguments, RFTConfig, __doc__, unit="trajectories")
dataclass_types, parse_args = COMMAND.dataclass_types, COMMAND.parse_args


def run(args: SimpleNamespace) -> int:
    data, cfg, model_args, records = COMMAND.start(args)
    rows = rft_rows(records, data.success_threshold, data.system_prompt, data.pair_rule)
    if not rows:
        nothing_to_train(PROG, f"no trajectory of {len(records)} is kept under --pair_rule {data.pair_rule}",
                         no_rows_advice(data.pair_rule, records, "collect more rollouts",
                                        {"best": "each task's best samples", "top-bottom": "each task's best samples"}))
    print(f"[{COMMAND.name}] fine-tuning on {len(rows)} of {len(records)} trajectories (rule: {data.pair_rule})")
    COMMAND.train_policy(make_rft_trainer, rows, cfg, model_args, merge=data.merge_adapter)
    return 0
