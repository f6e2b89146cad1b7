"""``sweet-agent train-critic``: train SWEET-RL's privileged critic from scored trajectories.

The command line is the dataclasses (TRL's script pattern): :class:`CriticDataArguments`,
:class:`~sweet_agent.critic.config.CriticConfig` and ``trl.ModelConfig``; ``--config cpu`` /
``--config paper`` (or any YAML file) presets them. Writes the trained critic (merged if LoRA)
and ``sweet_critic.json`` (its reference model, scoring settings and held-out pairwise accuracy,
tie rate and margins) to ``--output_dir``; ``train-actor`` reads both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from sweet_agent.critic.loading import META_FILE
from sweet_agent.training.arguments import PreferenceDataArguments
from sweet_agent.training.command import TrainingCommand

PROG = "sweet-agent train-critic"
PRESETS = "critic"


@dataclass
class CriticDataArguments(PreferenceDataArguments):
    """Which trajectory pairs the critic learns from and which tasks are held out."""

    max_pairs_per_task: int | None = field(default=None, metadata={"help": "sample at most this many pairs per task"})
    eval_fraction: float = field(default=0.1, metadata={"help": "fraction of tasks held out for pairwise accuracy"})

    def __post_init__(self):
        if not 0 <= self.eval_fraction < 1:
            raise ValueError(f"--eval_fraction must be in [0, 1), got {self.eval_fraction}")


COMMAND = TrainingCommand(PROG, PRESETS, CriticDataArguments, "sweet_agent.critic.config:CriticConfig", __doc__,
                          unit="trajectory pairs")
dataclass_types, parse_args = COMMAND.dataclass_types, COMMAND.parse_args


def run(args: SimpleNamespace) -> int:
    from sweet_agent.critic.trainer import NEAR_ZERO_MARGIN, CriticTrainer
    from sweet_agent.training.budget import record_budget
    from sweet_agent.training.command import no_rows_advice, nothing_to_train
    from sweet_agent.training.files import write_json
    from sweet_agent.training.models import load_model, peft_config, resolve_model
    from sweet_agent.training.saving import resume_checkpoint, save_final
    from sweet_agent.training_data.pairs import build_trajectory_pairs, pairs_to_rows, split_by_task

    data_args, cfg, model_args, records = COMMAND.start(args)
    pairs = build_trajectory_pairs(records, data_args.success_threshold, data_args.max_pairs_per_task, cfg.seed,
                                   rule=data_args.pair_rule)
    if not pairs:
        nothing_to_train(PROG, f"no preference pairs under --pair_rule {data_args.pair_rule} in {len(records)} "
                               "trajectories (no task has a preferred trajectory and a worse one)",
                         no_rows_advice(data_args.pair_rule, records, "collect several samples per task",
                                        {"reward": "any reward gap",
                                         "top-bottom": "continuous rewards such as the frontend's"}))
    train, held = split_by_task(pairs, data_args.eval_fraction, cfg.seed)
    print(f"[train-critic] {len(records)} trajectories -> {len(train)} train / {len(held)} held-out pairs "
          f"(rule: {data_args.pair_rule})")
    priv = cfg.use_privileged_info
    model, tok = load_model(model_args)
    if held and cfg.eval_strategy == "no":
        cfg.eval_strategy = cfg.save_strategy if cfg.save_strategy in ("steps", "epoch") else "epoch"
        cfg.eval_steps = cfg.save_steps
    trainer = CriticTrainer(model=model, args=cfg, train_dataset=pairs_to_rows(train, priv, data_args.system_prompt),
                            eval_dataset=pairs_to_rows(held, priv, data_args.system_prompt) if held else None,
                            processing_class=tok, peft_config=peft_config(model_args))
    before = trainer.pairwise_stats() if held else None
    trainer.train(resume_from_checkpoint=resume_checkpoint(cfg))
    after = trainer.pairwise_stats() if held else None
    if cfg.critic_type == "regression":
        critic = trainer.accelerator.unwrap_model(trainer.model)
        if hasattr(critic.lm, "merge_and_unload"):  # LoRA: save a plain backbone + head
            critic.lm = critic.lm.merge_and_unload()
        if trainer.accelerator.is_main_process:
            critic.save_pretrained(cfg.output_dir)
            tok.save_pretrained(cfg.output_dir)
    else:
        save_final(trainer, tok, cfg.output_dir, model_args, merge=data_args.merge_adapter)
    meta = {"reference_model": resolve_model(model_args.model_name_or_path), "critic_type": cfg.critic_type,
            "normalize": cfg.normalize, "use_privileged_info": priv, "beta": cfg.beta,
            "pair_rule": data_args.pair_rule, "system_prompt": data_args.system_prompt,
            "train_pairs": len(train), "heldout_pairs": len(held),
            "heldout_accuracy_before": before and before["accuracy"], "heldout_accuracy": after and after["accuracy"],
            "heldout_tie_rate": after and after["tie_rate"], "heldout_mean_margin": after and after["mean_margin"],
            "heldout_max_abs_margin": after and after["max_abs_margin"],
            "heldout_pairs_scored": after and after["pairs"],
            # which tasks it learned from: `sweet-agent critic-report` scores it on the others only
            "train_task_keys": sorted({p["task_key"] for p in train}),
            "heldout_task_keys": sorted({p["task_key"] for p in held})}
    meta["budget"] = record_budget(trainer, COMMAND.name, COMMAND.unit, cfg.output_dir)
    if not trainer.accelerator.is_main_process:
        return 0
    write_json(f"{cfg.output_dir}/{META_FILE}", meta)
    meta_n = after["pairs"] if after else 0
    if held:
        print(f"[train-critic] held-out pairwise accuracy: {before['accuracy']:.3f} -> {after['accuracy']:.3f} "
              f"(ties {after['tie_rate']:.0%} counted as not correct; mean margin {after['mean_margin']:.3g}; "
              f"{meta_n} pairs)")
        if after["max_abs_margin"] < NEAR_ZERO_MARGIN:
            print(f"[train-critic] warning: every held-out margin is ~0 (max |margin| {after['max_abs_margin']:.2g}): "
                  "the critic has not separated any pair; raise --learning_rate (LoRA on a small model: ~1e-4) "
                  "or train longer")
    print(f"[train-critic] saved to {cfg.output_dir}")
    return 0
