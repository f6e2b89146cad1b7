"""``sweet-agent rollout``: play episodes with a policy and write trajectory records.

Example::

    sweet-agent rollout --env ColBench-Backend-v0 --policy default --episodes 10 --k 2 \\
        --max-new-tokens 384 --seed 0 --output runs/zero_shot.jsonl

``--episodes N`` takes the first N tasks of ``--tasks`` (or ``--task-indices``), ``--k`` samples
of each: N x K episodes, ids ``"<task_index>:<sample>"``. ``--resume`` continues an interrupted
output file; ``--overwrite`` replaces it.
"""

from __future__ import annotations

import argparse
import json
import sys

from sweet_agent.policies.base import SamplingParams


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to play")
    g.add_argument("--env", default="ColBench-Backend-v0", help="Gymnasium id (default: %(default)s)")
    g.add_argument("--tasks", default="embedded:test",
                   help="task source: embedded:test, embedded:train, generated:train, generated:test or a JSONL file "
                        "(default: %(default)s)")
    g.add_argument("--episodes", type=int, default=None, metavar="N",
                   help="number of tasks, taken from index 0 (default: every task of the source)")
    g.add_argument("--task-indices", default=None, metavar="I,J,...", help="play exactly these task indices instead")
    g.add_argument("--k", type=int, default=1, metavar="K", help="samples per task (default: %(default)s)")
    g.add_argument("--simulator", default="offline", help="offline | openai | transformers (default: %(default)s)")
    g.add_argument("--simulator-kwargs", default=None, metavar="JSON",
                   help='options for the simulator, e.g. \'{"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:8000/v1"}\'')
    g.add_argument("--max-turns", type=int, default=10, help="agent turns per episode (default: %(default)s, as in the paper)")

    g = parser.add_argument_group("policy")
    g.add_argument("--policy", default="default",
                   help="default (Qwen2.5-Coder-0.5B-Instruct, offline), a checkpoint path, a .gguf file, a cached hub id, "
                        "or openai:MODEL for an OpenAI-compatible endpoint (default: %(default)s)")
    g.add_argument("--base-url", default=None, help="endpoint for openai:MODEL (default: $OPENAI_BASE_URL)")
    g.add_argument("--api-key", default=None, help="API key for openai:MODEL (default: $OPENAI_API_KEY or 'EMPTY')")
    g.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16", "auto"],
                   help="local model dtype; bfloat16 is ~2x faster on CPU (default: %(default)s)")
    g.add_argument("--device", default="cpu", help="torch device for local models (default: %(default)s)")
    g.add_argument("--max-new-tokens", type=int, default=512, metavar="K", help="per agent turn (default: %(default)s)")
    g.add_argument("--temperature", type=float, default=0.7, help="0 = greedy (default: %(default)s)")
    g.add_argument("--top-p", type=float, default=0.95, help="(default: %(default)s)")
    g.add_argument("--top-k", type=int, default=0, help="0 = off (default: %(default)s)")
    g.add_argument("--seed", type=int, default=0, help="base seed; episode and turn seeds derive from it (default: %(default)s)")

    g = parser.add_argument_group("execution and output")
    g.add_argument("--output", "-o", required=True, help="trajectory JSONL to write")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue an interrupted output: skip episodes already in it")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    g.add_argument("--concurrency", type=int, default=None,
                   help="episodes in flight (default: 8 for local models = generation batch, 32 for endpoints)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def _parse_indices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise SystemExit(f"--task-indices must be comma-separated integers, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from sweet_agent.evaluation import format_summary, summarize
    from sweet_agent.policies import load_policy
    from sweet_agent.policies.base import PolicyError
    from sweet_agent.policies.default_model import ModelNotAvailableError
    from sweet_agent.rollout.collector import RolloutConfig, RolloutError, collect
    from sweet_agent.trajectories import read_trajectories

    try:
        sim_kwargs = json.loads(args.simulator_kwargs) if args.simulator_kwargs else None
    except json.JSONDecodeError as exc:
        print(f"error: --simulator-kwargs is not JSON: {exc}", file=sys.stderr)
        return 2
    is_endpoint = args.policy.startswith("openai:")
    concurrency = args.concurrency or (32 if is_endpoint else 8)
    try:
        sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                  top_p=args.top_p, top_k=args.top_k)
        cfg = RolloutConfig(env_id=args.env, tasks=args.tasks, simulator=args.simulator, simulator_kwargs=sim_kwargs,
                            num_tasks=args.episodes, task_indices=_parse_indices(args.task_indices),
                            samples_per_task=args.k, seed=args.seed, sampling=sampling, concurrency=concurrency,
                            max_turns=args.max_turns)
        policy = load_policy(args.policy, base_url=args.base_url, api_key=args.api_key, dtype=args.dtype,
                             device=args.device, max_batch_size=concurrency, concurrency=concurrency)
    except (ValueError, PolicyError, ModelNotAvailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        result = collect(policy, cfg, args.output, resume=args.resume, overwrite=args.overwrite,
                         progress=not args.no_progress)
    except (FileExistsError, RolloutError, PolicyError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        policy.close()
    rate = result.completion_tokens / result.wall_time if result.wall_time > 0 else 0.0
    print(f"played {len(result.records)} episodes ({result.skipped} already in {args.output}) in "
          f"{result.wall_time:.1f} s, {result.completion_tokens} generated tokens ({rate:.1f} tok/s)")
    print(format_summary(summarize(read_trajectories(args.output)), title=str(args.output)))
    return 0
