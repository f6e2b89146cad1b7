"""Online multi-turn GRPO on ColBench with TRL: the agent asks the simulated person through tools.

CPU defaults (2 cores): the embedded Qwen2.5-Coder-0.5B-Instruct with LoRA, backend tasks where
one hidden detail decides the answer, 4 rollouts of one task per step, a handful of steps::

    python examples/online_grpo.py                       # local envs (gym.make in this process)
    python examples/online_grpo.py --steps 2 --max-completion-length 128

Against a remote `colbench serve` (grading sandboxes / browsers on another machine), through
OpenEnv's WebSocket client — one server session per rollout::

    colbench serve --port 8000 --max-sessions 16 --reward-mode fraction --backend-tasks collab:train
    python examples/online_grpo.py --env-url http://127.0.0.1:8000/backend

With the SWEET critic as a second reward (weight λ; the env's reward keeps weight 1)::

    python examples/online_grpo.py --critic runs/critic --critic-weight 0.1

The same run as a command: `sweet-agent train-grpo --config cpu` (see docs/training.md).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default", help="policy: checkpoint dir, cached hub id or `default` (0.5B)")
    ap.add_argument("--env-url", default=None, help="remote env, e.g. http://127.0.0.1:8000/backend")
    ap.add_argument("--tasks", default="collab:train", help="task source (remote: the server's, for the count)")
    ap.add_argument("--num-tasks", type=int, default=16)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--num-generations", type=int, default=4, help="rollouts per task (one GRPO group)")
    ap.add_argument("--max-completion-length", type=int, default=320, help="tokens per whole episode")
    ap.add_argument("--max-tool-calls", type=int, default=3, help="tool calls per episode (env limit: 10 turns)")
    ap.add_argument("--critic", default=None, help="a `sweet-agent train-critic` output dir")
    ap.add_argument("--critic-weight", type=float, default=0.1)
    ap.add_argument("--output-dir", default="runs/online-grpo")
    args = ap.parse_args()

    from peft import LoraConfig
    from transformers import AutoTokenizer

    from colbench_gym import make_tool_env_factory
    from sweet_agent.grpo import ColBenchGRPOConfig, ColBenchGRPOTrainer, SweetCriticReward, build_prompt_dataset
    from sweet_agent.policies.checkpoints import load_causal_lm, tokenizer_dir
    from sweet_agent.training.models import resolve_model

    # 1. The environment: one ColBench tool env per rollout (tools ask_user / submit_answer).
    if args.env_url:
        from colbench_gym.online.client import make_remote_tool_env_factory

        factory = make_remote_tool_env_factory(args.env_url)
    else:
        factory = make_tool_env_factory("ColBench-Backend-v0", tasks=args.tasks, reward_mode="fraction")

    # 2. The prompts: one row per task; TRL repeats each row num_generations times (a GRPO group).
    dataset = build_prompt_dataset("backend", args.tasks, num_tasks=args.num_tasks)

    # 3. The policy, with a LoRA adapter.
    #    A LoRA adapter folder (a SWEET-RL or RFT run with --merge_adapter false) is merged into its base.
    path = resolve_model(args.model)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(path))
    model = load_causal_lm(path, dtype="float32")
    lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")

    # 4. GRPO: the env's reward (fraction of hidden tests passed) plus, optionally, λ × critic score.
    reward_funcs = [SweetCriticReward(args.critic)] if args.critic else None
    config = ColBenchGRPOConfig(
        output_dir=args.output_dir, max_steps=args.steps, num_generations=args.num_generations,
        per_device_train_batch_size=args.num_generations, max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls, learning_rate=1e-5, temperature=1.0, beta=0.0,
        gradient_checkpointing=False, use_cpu=True, bf16=False, save_strategy="no", report_to="none",
        reward_weights=[args.critic_weight] if args.critic else None)
    trainer = ColBenchGRPOTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer,
                                  reward_funcs=reward_funcs, environment_factory=factory, peft_config=lora)
    trainer.train()
    trainer.save_model(args.output_dir)

    for log in trainer.state.log_history:
        if "reward" in log:
            print(f"step {log['step']}: env reward {log['rewards/ColBenchToolEnv/mean']:.3f}, "
                  f"questions {log['colbench/questions']:.2f}, turns {log['colbench/turns']:.2f}, "
                  f"submitted {log['colbench/submitted']:.2f}, success {log['colbench/success']:.2f}, "
                  f"step time {log['step_time']:.0f} s")


if __name__ == "__main__":
    main()
