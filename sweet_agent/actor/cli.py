"""``sweet-agent train-actor``: step-level pairs from the critic, then DPO on the policy.

Stages (each skippable): sample ``--num-candidates`` actions per agent turn of ``--data`` from the
policy, score them with the critic from ``train-critic``, write pairs to ``--pairs-out``
(``--only-pairs`` stops there); or ``--pairs-in`` reuses pairs; then train with TRL's DPO.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sweet_agent.training_setup import add_common_arguments

    parser.add_argument("--data", nargs="+", help="offline trajectory JSONL file(s) (the turns to improve)")
    parser.add_argument("--critic", help="directory written by `sweet-agent train-critic`")
    parser.add_argument("--critic-ref", default=None, help="the critic's reference model (default: from sweet_critic.json)")
    p = parser.add_argument_group("step pairs")
    p.add_argument("--num-candidates", type=int, default=16)
    p.add_argument("--pairs-per-turn", type=int, default=1)
    p.add_argument("--turn-fraction", type=float, default=1.0, help="fraction of offline agent turns to use")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--system-prompt", default=None, help="agent system prompt used in rollouts")
    p.add_argument("--pairs-out", default=None, help="write step pairs here (default OUTPUT_DIR/step_pairs.jsonl)")
    p.add_argument("--pairs-in", default=None, help="train on these step pairs instead of building them")
    p.add_argument("--only-pairs", action="store_true", help="build and write the pairs, do not train")
    d = parser.add_argument_group("DPO")
    d.add_argument("--beta", type=float, default=0.1)
    d.add_argument("--sft-weight", type=float, default=0.01, help="weight of the NLL (sft) term")
    add_common_arguments(parser, model_help="policy to improve", default_lr=2e-7, default_epochs=1.0, default_batch=8)


def _load_critic(args):
    from sweet_agent.critic.cli import META_FILE
    from sweet_agent.training_setup import load_model

    meta_path = Path(args.critic) / META_FILE
    if not meta_path.is_file():
        raise SystemExit(f"train-actor: {meta_path} not found; --critic must be a `sweet-agent train-critic` output")
    meta = json.loads(meta_path.read_text())
    if meta["critic_type"] == "regression":
        from transformers import AutoTokenizer

        from sweet_agent.critic.regression import RegressionCritic

        return RegressionCritic.from_pretrained(args.critic).eval(), None, AutoTokenizer.from_pretrained(args.critic), meta
    critic, tok = load_model(args.critic, args.dtype)
    ref, _ = load_model(args.critic_ref or meta["reference_model"], args.dtype)
    return critic.eval(), ref.eval(), tok, meta


def run(args: argparse.Namespace) -> int:
    from sweet_agent.actor.candidates import build_step_pairs
    from sweet_agent.actor.config import ActorConfig
    from sweet_agent.actor.trainer import make_dpo_trainer
    from sweet_agent.critic import records as R
    from sweet_agent.training_setup import (
        last_checkpoint,
        load_model,
        lora_config,
        read_jsonl,
        save_final,
        training_kwargs,
        write_jsonl,
    )

    step = dict(num_candidates=args.num_candidates, pairs_per_turn=args.pairs_per_turn,  # noqa: C408 - keyword form reads as a settings table
                turn_fraction=args.turn_fraction, max_new_tokens=args.max_new_tokens,
                temperature=args.temperature, top_p=args.top_p, system_prompt=args.system_prompt)
    policy, tok = load_model(args.model, args.dtype)
    if args.pairs_in:
        rows = read_jsonl(args.pairs_in)
    else:
        if not args.data or not args.critic:
            raise SystemExit("train-actor: pass --data and --critic to build step pairs, or --pairs-in")
        records = R.load_records(args.data)
        critic, critic_ref, critic_tok, meta = _load_critic(args)
        rows = build_step_pairs(records, policy, tok, critic, critic_ref, critic_tok,
                                sampling_batch_size=args.num_candidates, normalize=meta["normalize"],
                                use_privileged_info=meta["use_privileged_info"], seed=args.seed, progress=True,
                                **step)
        del critic, critic_ref
        out = args.pairs_out or f"{args.output_dir}/step_pairs.jsonl"
        write_jsonl(out, rows)
        print(f"[train-actor] {len(rows)} step pairs from {len(records)} trajectories -> {out}")
        if args.only_pairs:
            return 0
    cfg = ActorConfig(beta=args.beta, loss_weights=[1.0, args.sft_weight], max_length=args.max_length,
                      **step, **training_kwargs(args))
    trainer = make_dpo_trainer(policy, tok, rows, cfg, peft_config=lora_config(args))
    trainer.train(resume_from_checkpoint=last_checkpoint(args.output_dir) if args.resume else None)
    save_final(trainer, tok, args.output_dir)
    print(f"[train-actor] saved to {args.output_dir}")
    return 0
