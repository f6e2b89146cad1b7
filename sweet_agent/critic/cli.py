"""``sweet-agent train-critic``: train SWEET-RL's privileged critic from scored trajectories.

Writes the trained critic (merged if LoRA) and ``sweet_critic.json`` (its reference model,
scoring settings and held-out pairwise accuracy) to ``--output-dir``; ``train-actor`` reads both.
"""

from __future__ import annotations

import argparse

META_FILE = "sweet_critic.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sweet_agent.critic.advantages import NORMALIZATIONS
    from sweet_agent.critic.config import CRITIC_TYPES
    from sweet_agent.training_setup import add_common_arguments

    parser.add_argument("--data", nargs="+", required=True, help="trajectory JSONL file(s) with rewards")
    c = parser.add_argument_group("critic")
    c.add_argument("--beta", type=float, default=0.1, help="Bradley–Terry β")
    c.add_argument("--nll-coef", type=float, default=0.0, help="weight of an NLL term on chosen trajectories")
    c.add_argument("--normalize", default="turn", choices=NORMALIZATIONS,
                   help="turn = paper; none = no per-turn normalisation; trajectory = the release's token mean")
    c.add_argument("--no-privileged-info", action="store_true", help="ablation: critic without the reference solution")
    c.add_argument("--critic-type", default="logratio", choices=CRITIC_TYPES, help="regression = scalar-head ablation")
    c.add_argument("--success-threshold", type=float, default=None,
                   help="reward counting as success (default: the record's success flag, else reward 1)")
    c.add_argument("--pair-rule", default="success", choices=["success", "best"],
                   help="chosen = successful trajectories (paper) or each task's best ones (small models)")
    c.add_argument("--max-pairs-per-task", type=int, default=None)
    c.add_argument("--eval-fraction", type=float, default=0.1, help="fraction of tasks held out for pairwise accuracy")
    add_common_arguments(parser, model_help="critic initialisation (the paper uses the policy's base model)",
                         default_lr=2e-7, default_epochs=4.0, default_batch=8)


def run(args: argparse.Namespace) -> int:
    from sweet_agent.critic import records as R
    from sweet_agent.critic.config import CriticConfig
    from sweet_agent.critic.pairs import build_trajectory_pairs, pairs_to_rows, split_by_task
    from sweet_agent.critic.trainer import CriticTrainer
    from sweet_agent.training_setup import (
        last_checkpoint,
        load_model,
        lora_config,
        resolve_model,
        save_final,
        training_kwargs,
        write_json,
    )

    records = R.load_records(args.data)
    pairs = build_trajectory_pairs(records, args.success_threshold, args.max_pairs_per_task, args.seed,
                                   rule=args.pair_rule)
    if not pairs:
        raise SystemExit("train-critic: no preference pairs (no task has a successful trajectory and a worse one); "
                         "collect several samples per task or lower --success-threshold")
    train, held = split_by_task(pairs, args.eval_fraction, args.seed)
    print(f"[train-critic] {len(records)} trajectories -> {len(train)} train / {len(held)} held-out pairs")
    priv = not args.no_privileged_info
    model, tok = load_model(args.model, args.dtype)
    kw = training_kwargs(args)
    if held:
        kw.update(eval_strategy="epoch")
    cfg = CriticConfig(beta=args.beta, nll_coef=args.nll_coef, normalize=args.normalize, use_privileged_info=priv,
                       critic_type=args.critic_type, max_length=args.max_length,
                       success_threshold=args.success_threshold, eval_fraction=args.eval_fraction, **kw)
    trainer = CriticTrainer(model=model, args=cfg, train_dataset=pairs_to_rows(train, priv),
                            eval_dataset=pairs_to_rows(held, priv) if held else None, processing_class=tok,
                            peft_config=lora_config(args))
    before = trainer.pairwise_accuracy() if held else None
    trainer.train(resume_from_checkpoint=last_checkpoint(args.output_dir) if args.resume else None)
    after = trainer.pairwise_accuracy() if held else None
    if args.critic_type == "regression":
        critic = trainer.accelerator.unwrap_model(trainer.model)
        if hasattr(critic.lm, "merge_and_unload"):  # LoRA: save a plain backbone + head
            critic.lm = critic.lm.merge_and_unload()
        critic.save_pretrained(args.output_dir)
        tok.save_pretrained(args.output_dir)
    else:
        save_final(trainer, tok, args.output_dir)
    meta = {"reference_model": resolve_model(args.model), "critic_type": args.critic_type,
            "normalize": args.normalize, "use_privileged_info": priv, "beta": args.beta,
            "pair_rule": args.pair_rule, "train_pairs": len(train), "heldout_pairs": len(held),
            "heldout_accuracy_before": before, "heldout_accuracy": after}
    write_json(f"{args.output_dir}/{META_FILE}", meta)
    if held:
        print(f"[train-critic] held-out pairwise accuracy: {before:.3f} -> {after:.3f} ({len(held)} pairs)")
    print(f"[train-critic] saved to {args.output_dir}")
    return 0
