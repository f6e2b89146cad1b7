"""Multi-turn (trajectory-level) DPO baseline.

Pairs are whole trajectories of the same task (a successful one against each strictly worse
one, as for the critic). The shared prompt is the dialogue up to the first agent turn; the
"completion" is the rest of the trajectory, and — unlike plain DPO over a conversation — only
the agent's tokens count in the log-probabilities (the simulator's replies are not the
policy's actions). That is the one thing this trainer changes in TRL's ``DPOTrainer``: how rows
are tokenized (spans from the chat template) and which tokens the completion mask keeps.

``sweet-agent train-mtdpo --data trajs.jsonl --output-dir out/mtdpo``
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import torch
from trl import DPOTrainer
from trl.trainer.dpo_trainer import DataCollatorForPreference
from trl.trainer.utils import pad

from sweet_agent.critic import records as R


def mtdpo_rows(records: list[dict[str, Any]], success_threshold: float | None = None,
               system_prompt: str | None = None, rule: str = "success") -> list[dict[str, Any]]:
    """Conversational DPO rows ``{"prompt", "chosen", "rejected"}`` of trajectory pairs."""
    from sweet_agent.critic.pairs import build_trajectory_pairs

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
    from sweet_agent.critic.advantages import assistant_token_spans, spans_to_turn_ids

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
    import copy

    from datasets import Dataset

    if not rows:
        raise ValueError("no trajectory pairs: no task has a successful trajectory and a worse one; collect "
                         "more samples per task or lower --success-threshold")
    ds = rows if isinstance(rows, Dataset) else Dataset.from_list(list(rows))
    if peft_config is None and ref_model is None and not hasattr(model, "disable_adapter"):
        ref_model = copy.deepcopy(model).eval()
    return MultiTurnDPOTrainer(model, ref_model=ref_model, args=args, train_dataset=ds, processing_class=tokenizer,
                               peft_config=peft_config, **kwargs)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sweet_agent.training_setup import add_common_arguments

    parser.add_argument("--data", nargs="+", required=True, help="trajectory JSONL file(s) with rewards")
    parser.add_argument("--success-threshold", type=float, default=None,
                        help="reward counting as success (default: the record's success flag, else reward 1)")
    parser.add_argument("--pair-rule", default="success", choices=["success", "best"],
                        help="chosen = successful trajectories (paper) or each task's best ones (small models)")
    parser.add_argument("--system-prompt", default=None, help="agent system prompt used in rollouts")
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--sft-weight", type=float, default=0.01, help="weight of the NLL (sft) term")
    add_common_arguments(parser, model_help="policy to train", default_lr=2e-7, default_epochs=1.0, default_batch=8)


def run(args: argparse.Namespace) -> int:
    from trl import DPOConfig

    from sweet_agent.training_setup import (
        last_checkpoint,
        load_model,
        lora_config,
        save_final,
        training_kwargs,
    )

    records = R.load_records(args.data)
    rows = mtdpo_rows(records, args.success_threshold, args.system_prompt, args.pair_rule)
    print(f"[train-mtdpo] {len(rows)} trajectory pairs from {len(records)} trajectories")
    model, tok = load_model(args.model, args.dtype)
    cfg = DPOConfig(beta=args.beta, loss_type=["sigmoid", "sft"], loss_weights=[1.0, args.sft_weight],
                    max_length=args.max_length, **training_kwargs(args))
    trainer = make_mtdpo_trainer(model, tok, rows, cfg, peft_config=lora_config(args))
    trainer.train(resume_from_checkpoint=last_checkpoint(args.output_dir) if args.resume else None)
    save_final(trainer, tok, args.output_dir)
    print(f"[train-mtdpo] saved to {args.output_dir}")
    return 0
