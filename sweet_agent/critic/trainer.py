"""SWEET-RL's critic trainer: Bradley–Terry on trajectory pairs, scored by per-turn advantages
(steps 2-4 of :mod:`sweet_agent.sweet_rl.algorithm`, which this batches and runs).

Loss per pair: −log σ(β Σ_t A(τ⁺_t) − β Σ_t A(τ⁻_t)) (+ optional NLL on τ⁺'s agent tokens).
A batch of P pairs is one padded ``[2P, T]`` batch (chosen rows first), so the critic and the
reference each run one forward per step at any batch size — the public release only works at 1.

WHY subclass ``transformers.Trainer`` rather than ``trl.DPOTrainer``: DPO sums token log-ratios
of one completion, whereas this loss needs a per-turn mean inside a multi-turn sequence (and a
scalar-head variant), so only ``compute_loss`` and data preparation differ; everything else
(accelerate, DeepSpeed, checkpoints and resume, logging) is the Trainer's own.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerBase, Trainer, set_seed
from transformers.utils import logging

from sweet_agent.critic.config import CriticConfig
from sweet_agent.critic.regression import RegressionCritic
from sweet_agent.sweet_rl.algorithm import aggregate_turns, bradley_terry_loss, reference_of, with_privileged
from sweet_agent.sweet_rl.logprobs import token_logprobs
from sweet_agent.training.models import initial_copy
from sweet_agent.training_data.spans import assistant_token_spans, spans_to_turn_ids

#: Two scores closer than this count as a tie (neither correct nor wrong) in accuracy.
TIE_TOLERANCE = 1e-6
#: A run whose held-out margins all stay below this in magnitude has not separated any pair.
NEAR_ZERO_MARGIN = 1e-3

logger = logging.get_logger(__name__)


def encode_trajectory(tokenizer, messages, privileged_info, max_length: int | None, return_cut: bool = False):
    """Token ids and per-token turn numbers of one trajectory (privileged info first). With
    ``return_cut``, also how many agent turns ``max_length`` cut (partly or wholly)."""
    ids, spans = assistant_token_spans(tokenizer, with_privileged(messages, privileged_info))
    turn_ids = spans_to_turn_ids(len(ids), spans)
    cut = 0
    if max_length is not None:
        cut = sum(e > max_length for _, e in spans)
        ids, turn_ids = ids[:max_length], turn_ids[:max_length]
    return (ids, turn_ids, cut) if return_cut else (ids, turn_ids)


def pair_stats(chosen: torch.Tensor, rejected: torch.Tensor) -> dict[str, float]:
    """Accuracy (ties count as not correct), tie rate and margins of scored pairs."""
    margin = (chosen - rejected).float()
    n = max(margin.numel(), 1)
    return {"accuracy": float((margin > TIE_TOLERANCE).sum()) / n,
            "tie_rate": float((margin.abs() <= TIE_TOLERANCE).sum()) / n,
            "mean_margin": float(margin.mean()) if margin.numel() else 0.0,
            "max_abs_margin": float(margin.abs().max()) if margin.numel() else 0.0,
            "pairs": int(margin.numel())}


class CriticCollator:
    """Pads a list of encoded pairs into one ``[2P, T]`` batch: chosen rows, then rejected rows."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        seqs = [e["chosen_input_ids"] for e in examples] + [e["rejected_input_ids"] for e in examples]
        turns = [e["chosen_turn_ids"] for e in examples] + [e["rejected_turn_ids"] for e in examples]
        T = max(len(s) for s in seqs)
        input_ids = torch.full((len(seqs), T), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(seqs), T), dtype=torch.long)
        turn_ids = torch.zeros((len(seqs), T), dtype=torch.long)
        for i, (s, t) in enumerate(zip(seqs, turns)):
            input_ids[i, : len(s)] = torch.tensor(s)
            attention[i, : len(s)] = 1
            turn_ids[i, : len(t)] = torch.tensor(t)
        return {"input_ids": input_ids, "attention_mask": attention, "turn_ids": turn_ids}


class CriticTrainer(Trainer):
    """Trains a step-level critic from trajectory preference pairs.

    ``train_dataset`` / ``eval_dataset``: rows ``{"chosen": messages, "rejected": messages,
    "privileged_info": str | None}`` (see :func:`sweet_agent.training_data.pairs.pairs_to_rows`), as a
    ``datasets.Dataset`` or a list. ``ref_model``: the frozen reference; by default a frozen copy
    of the initial critic (or, for a PEFT critic, its base with adapters disabled).
    """

    loss_is_scaled_for_ga = False

    def __init__(self, model, args: CriticConfig, train_dataset=None, eval_dataset=None,
                 processing_class: PreTrainedTokenizerBase | None = None, ref_model=None,
                 peft_config=None, **kwargs):
        if processing_class is None:
            raise ValueError("CriticTrainer needs processing_class=<tokenizer> (its chat template locates turns)")
        if not isinstance(args, CriticConfig):
            raise TypeError(f"args must be a CriticConfig, got {type(args).__name__}")
        tok = processing_class
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        # A LoRA adapter and the regression head start from random weights: seeded here, before they
        # are made, as TRL's trainers do (the Trainer seeds only later), so --seed decides them too.
        set_seed(args.seed)
        if args.critic_type == "regression" and not isinstance(model, RegressionCritic):
            model = RegressionCritic(model)
        if peft_config is not None:
            from peft import get_peft_model

            if isinstance(model, RegressionCritic):
                model.lm = get_peft_model(model.lm, peft_config)
                for p in model.value_head.parameters():
                    p.requires_grad_(True)
            else:
                model = get_peft_model(model, peft_config)
        if args.critic_type == "logratio" and ref_model is None and not hasattr(model, "disable_adapter"):
            ref_model = initial_copy(model)
        if ref_model is not None:
            ref_model.eval()
            for p in ref_model.parameters():
                p.requires_grad_(False)
        self.ref_model = ref_model
        self.beta = args.beta
        self._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        train_dataset = self._prepare(train_dataset, tok, args)
        if isinstance(eval_dataset, dict):
            eval_dataset = {k: self._prepare(v, tok, args) for k, v in eval_dataset.items()}
        else:
            eval_dataset = self._prepare(eval_dataset, tok, args)
        kwargs.setdefault("data_collator", CriticCollator(tok.pad_token_id))
        super().__init__(model=model, args=args, train_dataset=train_dataset, eval_dataset=eval_dataset,
                         processing_class=tok, **kwargs)
        if self.ref_model is not None:
            if self.is_deepspeed_enabled:
                from trl.models.utils import prepare_deepspeed

                self.ref_model = prepare_deepspeed(self.ref_model, self.accelerator)
            else:
                self.ref_model = self.accelerator.prepare_model(self.ref_model, evaluation_mode=True)

    @staticmethod
    def _prepare(dataset, tok, args: CriticConfig):
        if dataset is None:
            return None
        rows = dataset.to_list() if isinstance(dataset, Dataset) else list(dataset)
        if not rows:
            raise ValueError("the critic dataset is empty: no task had a successful trajectory and a worse one; "
                         "collect more samples per task or lower success_threshold")
        out = []
        cut_turns = cut_rows = 0
        for i, row in enumerate(rows):
            if "chosen_input_ids" in row:
                out.append(row)
                continue
            for key in ("chosen", "rejected"):
                if key not in row:
                    raise ValueError(f"critic dataset row {i} lacks {key!r}; rows need chosen/rejected message lists")
            priv = row.get("privileged_info") if args.use_privileged_info else None
            c_ids, c_turns, c_cut = encode_trajectory(tok, row["chosen"], priv, args.max_length, return_cut=True)
            r_ids, r_turns, r_cut = encode_trajectory(tok, row["rejected"], priv, args.max_length, return_cut=True)
            cut_turns += c_cut + r_cut
            cut_rows += bool(c_cut) + bool(r_cut)
            out.append({"chosen_input_ids": c_ids, "chosen_turn_ids": c_turns,
                        "rejected_input_ids": r_ids, "rejected_turn_ids": r_turns})
        if cut_turns:
            logger.warning(f"max_length={args.max_length} cut {cut_turns} agent turns in {cut_rows} of "
                           f"{2 * len(out)} trajectories; raise --max_length to score them whole")
        return Dataset.from_list(out)

    # The collator's keys are not model.forward arguments; keep them all.
    def _set_signature_columns_if_needed(self):
        if self._signature_columns is None:
            self._signature_columns = ["chosen_input_ids", "chosen_turn_ids", "rejected_input_ids", "rejected_turn_ids"]

    def trajectory_scores(self, model, inputs) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Scores ``[2P]`` of every row and, when an NLL term is on, the mean NLL of chosen rows."""
        ids, attn, turns = inputs["input_ids"], inputs["attention_mask"], inputs["turn_ids"]
        K = int(turns.max().item()) if turns.numel() else 0
        unwrapped = self.accelerator.unwrap_model(model)
        if isinstance(unwrapped, RegressionCritic):
            return model(input_ids=ids, attention_mask=attn, turn_ids=turns, num_turns=K).sum(dim=1), None
        mask = turns > 0
        chunk = self.args.logprob_chunk_size
        # the LM head's pieces run outside the model's forward: under the same mixed precision
        # as the forward that accelerate wraps in autocast (else the check sees fp32 != bf16)
        with self.accelerator.autocast():
            policy = token_logprobs(model, ids, attn, mask, chunk_size=chunk)
            with torch.no_grad(), reference_of(unwrapped, self.ref_model) as ref:
                reference = token_logprobs(ref, ids, attn, mask, chunk_size=chunk)
        _, scores = aggregate_turns(policy - reference, turns, K, self.args.normalize)
        nll = None
        if self.args.nll_coef:
            P = ids.shape[0] // 2
            nll = -(policy[:P].sum() / mask[:P].sum().clamp(min=1))
        return scores, nll

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if model.training else "eval"
        scores, nll = self.trajectory_scores(model, inputs)
        chosen, rejected = scores.chunk(2)
        loss = bradley_terry_loss(chosen, rejected, self.beta)
        if nll is not None:
            loss = loss + self.args.nll_coef * nll
            self._metrics[mode]["nll"].append(float(nll.detach()))
        c = self.accelerator.gather_for_metrics(chosen.detach())
        r = self.accelerator.gather_for_metrics(rejected.detach())
        self._metrics[mode]["accuracy"].extend(((c - r) > TIE_TOLERANCE).float().tolist())
        self._metrics[mode]["tie_rate"].extend(((c - r).abs() <= TIE_TOLERANCE).float().tolist())
        self._metrics[mode]["margin"].extend((c - r).tolist())
        self._metrics[mode]["chosen_score"].extend(c.tolist())
        self._metrics[mode]["rejected_score"].extend(r.tolist())
        if return_outputs:
            return loss, {"chosen_scores": chosen, "rejected_scores": rejected}
        return loss

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad(), self.compute_loss_context_manager():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "train" if self.model.training else "eval"
        metrics = {k: sum(v) / len(v) for k, v in self._metrics[mode].items() if v}
        if mode == "eval":
            metrics = {f"eval_{k}": v for k, v in metrics.items()}
        logs.update(metrics)
        super().log(logs, start_time)
        self._metrics[mode].clear()

    def pairwise_stats(self, dataset=None) -> dict[str, float]:
        """Held-out ``accuracy`` (chosen outscores rejected by more than :data:`TIE_TOLERANCE`;
        ties are not correct), ``tie_rate``, ``mean_margin``, ``max_abs_margin`` and ``pairs``."""
        ds = self._prepare(dataset, self.processing_class, self.args) if dataset is not None else self.eval_dataset
        if ds is None:
            raise ValueError("no held-out pairs: pass a dataset or build the trainer with eval_dataset")
        loader = self.get_eval_dataloader(ds)
        model = self.model
        was_training = model.training
        model.eval()
        chosen, rejected = [], []
        try:
            # the trainer's own arithmetic, before training as after it: accelerate wraps the model's forward
            # in its mixed-precision autocast only when training starts, so the "before" accuracy of a bf16
            # run would otherwise be scored in fp32 and the "after" one in bf16
            with torch.no_grad(), self._whole_weights(model), self.accelerator.autocast():
                for batch in loader:
                    batch = self._prepare_inputs(batch)
                    scores, _ = self.trajectory_scores(model, batch)
                    c, r = scores.chunk(2)
                    # every process scores its shard; gather so each sees all held-out pairs
                    chosen.append(self.accelerator.gather_for_metrics(c.float()).cpu())
                    rejected.append(self.accelerator.gather_for_metrics(r.float()).cpu())
        finally:
            model.train(was_training)
        return pair_stats(torch.cat(chosen), torch.cat(rejected))

    def _whole_weights(self, model):
        """Under ZeRO-3 the weights are partitioned across processes as the model loads, and the
        hooks that gather a layer's weights for its forward exist only once the trainer has built
        its DeepSpeed engine (in ``train``). Scoring before that (the "before" accuracy of
        ``train-critic``) gathers the whole model on every process for the call; otherwise (no
        DeepSpeed, or after ``train``) nothing to do."""
        if self.is_deepspeed_enabled and self.deepspeed is None and any(
                hasattr(p, "ds_id") for p in model.parameters()):
            import deepspeed

            return deepspeed.zero.GatheredParameters(list(model.parameters()))
        return contextlib.nullcontext()

    def pairwise_accuracy(self, dataset=None) -> float:
        """Fraction of pairs whose chosen trajectory outscores the rejected one (ties: not correct)."""
        return self.pairwise_stats(dataset)["accuracy"]

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        model = self.accelerator.unwrap_model(self.model)
        if isinstance(model, RegressionCritic):
            output_dir = output_dir or self.args.output_dir
            model.save_pretrained(output_dir)
            if self.processing_class is not None:
                self.processing_class.save_pretrained(output_dir)
            return
        super()._save(output_dir, state_dict)
