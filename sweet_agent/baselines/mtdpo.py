"""Multi-turn (trajectory-level) DPO baseline.

Pairs are whole trajectories of the same task (a successful one against each strictly worse
one, as for the critic). The shared prompt is the dialogue up to the first agent turn; the
"completion" is the rest of the trajectory, and — unlike plain DPO over a conversation — only
the agent's tokens count in the log-probabilities (the simulator's replies are not the
policy's actions). That is the one thing this trainer changes in TRL's ``DPOTrainer``: how rows
are tokenized (spans from the chat template) and which tokens the completion mask keeps.

``sweet-agent train-mtdpo --data trajs.jsonl --output_dir out/mtdpo``; the command line is the
dataclasses ``PreferenceDataArguments``, :class:`MTDPOConfig` and ``trl.ModelConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
from trl import DPOConfig, DPOTrainer
from trl.trainer.dpo_trainer import DataCollatorForPreference
from trl.trainer.utils import pad

from sweet_agent.training.arguments import PreferenceDataArguments
from sweet_agent.training.command import TrainingCommand, no_rows_advice, nothing_to_train
from sweet_agent.training.machine import MachineDefaults
from sweet_agent.training.models import initial_copy
from sweet_agent.training_data import records as R
from sweet_agent.training_data.pairs import build_trajectory_pairs
from sweet_agent.training_data.spans import assistant_token_spans, spans_to_turn_ids

PROG = "sweet-agent train-mtdpo"
PRESETS = "mtdpo"


@dataclass
class MTDPOConfig(MachineDefaults, DPOConfig):
    """``DPOConfig`` of the multi-turn DPO baseline: the actor's loss (sigmoid + 0.01 NLL, beta
    0.1) on whole trajectories. The learning rate suits LoRA on a small model (CPU scale)."""

    beta: float = 0.1
    loss_type: list[str] = field(default_factory=lambda: ["sigmoid", "sft"])
    loss_weights: list[float] | None = field(default_factory=lambda: [1.0, 0.01])
    learning_rate: float = 5e-5


def mtdpo_rows(records: list[dict[str, Any]], success_threshold: float | None = None,
               system_prompt: str | None = None, rule: str = "success") -> list[dict[str, Any]]:
    """Conversational DPO rows ``{"prompt", "chosen", "rejected"}`` of trajectory pairs."""
    rows = []
    for p in build_trajectory_pairs(records, success_threshold, rule=rule):
        c, r = R.dialogue_messages(p["chosen"]), R.dialogue_messages(p["rejected"])
        k = next((i for i, m in enumerate(c) if m["role"] == "assistant"), len(c))
        k_r = next((i for i, m in enumerate(r) if m["role"] == "assistant"), len(r))
        if k != k_r or c[:k] != r[:k] or k == len(c) or k_r == len(r):
            continue  # no common opening, or a trajectory without agent turns
        prompt = R.agent_prompts(p["chosen"], system_prompt)[0][0]  # what the policy saw first
        rows.append({"prompt": prompt, "chosen": c[k:], "rejected": r[k:]})
    return rows


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def tokenize_trajectory_pair(tokenizer, row: dict[str, Any]) -> dict[str, list[int]]:
    """prompt/chosen/rejected ids plus per-token agent masks for both completions."""
    c_ids, c_spans = assistant_token_spans(tokenizer, row["prompt"] + row["chosen"])
    r_ids, r_spans = assistant_token_spans(tokenizer, row["prompt"] + row["rejected"])
    n = min(_common_prefix(c_ids, r_ids), c_spans[0][0], r_spans[0][0])
    c_mask = [int(t > 0) for t in spans_to_turn_ids(len(c_ids), c_spans)]
    r_mask = [int(t > 0) for t in spans_to_turn_ids(len(r_ids), r_spans)]
    return {"prompt_ids": c_ids[:n], "chosen_ids": c_ids[n:], "rejected_ids": r_ids[n:],
            "chosen_mask": c_mask[n:], "rejected_mask": r_mask[n:]}


@dataclass
class AgentTokenPreferenceCollator(DataCollatorForPreference):
    """TRL's preference collator, with the completion mask restricted to agent tokens."""

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        out = super().torch_call(examples)
        masks = [[0] * len(e["prompt_ids"]) + list(e["chosen_mask"]) for e in examples]
        masks += [[0] * len(e["prompt_ids"]) + list(e["rejected_mask"]) for e in examples]
        if self.max_length is not None:
            masks = [m[: self.max_length] for m in masks]
        mask = pad([torch.tensor(m, dtype=torch.long) for m in masks], padding_value=0, padding_side="right",
                   pad_to_multiple_of=self.pad_to_multiple_of)
        out["completion_mask"] = mask[:, : out["input_ids"].shape[1]]
        return out


class MultiTurnDPOTrainer(DPOTrainer):
    """``DPOTrainer`` over whole trajectories, scoring only the agent's tokens."""

    def __init__(self, model, ref_model=None, args=None, train_dataset=None, processing_class=None, **kwargs):
        if processing_class is None:
            raise ValueError("MultiTurnDPOTrainer needs processing_class=<tokenizer>")
        if processing_class.pad_token is None:
            processing_class.pad_token = processing_class.eos_token
        kwargs.setdefault("data_collator", AgentTokenPreferenceCollator(
            pad_token_id=processing_class.pad_token_id, max_length=args.max_length,
            truncation_mode=args.truncation_mode, pad_to_multiple_of=args.pad_to_multiple_of))
        super().__init__(model, ref_model=ref_model, args=args, train_dataset=train_dataset,
                         processing_class=processing_class, **kwargs)

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        if "chosen_mask" in dataset.column_names:
            return dataset
        tok = self._tokenizer
        dataset = dataset.map(lambda row: tokenize_trajectory_pair(tok, row),
                              remove_columns=dataset.column_names, desc=f"Tokenizing {dataset_name} trajectories")
        if args.max_length is not None:
            dataset = dataset.filter(lambda e: len(e["prompt_ids"]) < args.max_length)
        return dataset

    def _set_signature_columns_if_needed(self):
        if self._signature_columns is None:
            self._signature_columns = ["prompt_ids", "chosen_ids", "rejected_ids", "chosen_mask", "rejected_mask",
                                       "ref_chosen_logps", "ref_rejected_logps"]


def make_mtdpo_trainer(model, tokenizer, rows, args, ref_model=None, peft_config=None, **kwargs):
    from datasets import Dataset

    if not rows:
        raise ValueError("no trajectory pairs: no task has a successful trajectory and a worse one; collect "
                         "more samples per task or lower --success-threshold")
    ds = rows if isinstance(rows, Dataset) else Dataset.from_list(list(rows))
    if peft_config is None and ref_model is None and not hasattr(model, "disable_adapter"):
        ref_model = initial_copy(model)
    return MultiTurnDPOTrainer(model, ref_model=ref_model, args=args, train_dataset=ds, processing_class=tokenizer,
                               peft_config=peft_config, **kwargs)


COMMAND = TrainingCommand(PROG, PRESETS, PreferenceDataArguments, MTDPOConfig, __doc__,
                          unit="trajectory pairs")
dataclass_types, parse_args = COMMAND.dataclass_types, COMMAND.parse_args


def run(args: SimpleNamespace) -> int:
    data, cfg, model_args, records = COMMAND.start(args)
    rows = mtdpo_rows(records, data.success_threshold, data.system_prompt, data.pair_rule)
    if not rows:
        nothing_to_train(PROG, f"no trajectory pairs under --pair_rule {data.pair_rule} in {len(records)} trajectories "
                               "(no task has a preferred trajectory and a worse one)",
                         no_rows_advice(data.pair_rule, records, "collect several samples per task",
                                        {"reward": "any reward gap", "top-bottom": "each task's best against its worst"}))
    print(f"[{COMMAND.name}] {len(rows)} trajectory pairs from {len(records)} trajectories")
    COMMAND.train_policy(make_mtdpo_trainer, rows, cfg, model_args, merge=data.merge_adapter)
    return 0
