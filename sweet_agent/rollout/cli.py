"""``sweet-agent rollout``: play episodes with a policy and write trajectory records.

Example::

    sweet-agent rollout --env ColBench-Backend-v0 --policy default --episodes 10 --k 2 \\
        --max-new-tokens 384 --seed 0 --output runs/zero_shot.jsonl

``--episodes N`` takes the first N tasks of ``--tasks`` (or ``--task-indices``), ``--k`` samples
of each: N x K episodes, ids ``"<task_index>:<sample>"``. ``--resume`` continues an interrupted
output file (made with the same settings); ``--overwrite`` replaces it once the new run is complete
(until then the new records go to ``OUTPUT.partial``), and never with a run in which every episode
failed. An episode whose endpoint fails for good is written as a failed record (``error`` set,
reward null) and the run goes on; a run in which every episode failed exits with status 1.
``--resume`` plays such infrastructure failures again (their records move to ``OUTPUT.replaced``).
"""

from __future__ import annotations

import argparse
import json
import sys

from sweet_agent.devices import DEVICE_HELP, resolve_device
from sweet_agent.policies.base import SamplingParams


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser, output_required: bool = True) -> None:
    """The rollout's options; ``sweet-agent evaluate`` adds them too (``output_required=False``)
    to play best-of-N episodes before reporting on them."""
    g = parser.add_argument_group("what to play")
    g.add_argument("--env", default="ColBench-Backend-v0", help="Gymnasium id (default: %(default)s)")
    g.add_argument("--tasks", default="embedded:test",
                   help="task source: embedded:test, embedded:train, generated:train, generated:test or a JSONL file "
                        "(default: %(default)s)")
    g.add_argument("--episodes", type=_positive_int, default=None, metavar="N",
                   help="number of tasks, taken from index 0 (default: every task of the source)")
    g.add_argument("--task-indices", default=None, metavar="I,J,...", help="play exactly these task indices instead")
    g.add_argument("--k", type=_positive_int, default=1, metavar="K", help="samples per task (default: %(default)s)")
    g.add_argument("--simulator", default="offline", help="offline | openai | transformers (default: %(default)s)")
    g.add_argument("--simulator-kwargs", default=None, metavar="JSON",
                   help='options for the simulator, e.g. \'{"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:8000/v1"}\'')
    g.add_argument("--max-turns", type=_positive_int, default=10, help="agent turns per episode (default: %(default)s, as in the paper)")

    g = parser.add_argument_group("policy")
    g.add_argument("--policy", default="default",
                   help="default (Qwen2.5-Coder-0.5B-Instruct, offline), a checkpoint path, a .gguf file, a cached hub id, "
                        "or openai:MODEL for an OpenAI-compatible endpoint (default: %(default)s)")
    g.add_argument("--base-url", default=None, help="endpoint for openai:MODEL (default: $OPENAI_BASE_URL)")
    g.add_argument("--api-key", default=None, help="API key for openai:MODEL (default: $OPENAI_API_KEY or 'EMPTY')")
    g.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16", "auto"],
                   help="local model dtype; bfloat16 is ~2x faster on CPU (default: %(default)s)")
    g.add_argument("--device", default="auto", help=f"{DEVICE_HELP} (default: %(default)s); the --critic of "
                                                    "--best-of runs there too")
    g.add_argument("--max-new-tokens", type=_positive_int, default=512, metavar="K", help="per agent turn (default: %(default)s)")
    g.add_argument("--temperature", type=float, default=0.7, help="0 = greedy (default: %(default)s)")
    g.add_argument("--top-p", type=float, default=0.95, help="(default: %(default)s)")
    g.add_argument("--top-k", type=int, default=0, help="0 = off (default: %(default)s)")
    g.add_argument("--seed", type=int, default=0, help="base seed; episode and turn seeds derive from it (default: %(default)s)")
    g.add_argument("--explore-rate", type=float, default=0.0, metavar="P",
                   help="behaviour policy for offline data: prefill this fraction of the first --explore-turns agent "
                        "turns with a question opener that the model completes (sweet_agent.policies.exploration; "
                        "recorded in meta.exploration). 0 = off (default: %(default)s)")
    g.add_argument("--explore-turns", type=int, default=1, metavar="N",
                   help="agent turns eligible for --explore-rate, from the first; 0 = every agent turn "
                        "(default: %(default)s)")
    g.add_argument("--explore-rates", default=None, metavar="P1,P2,...",
                   help="per-turn exploration instead: agent turn 1 is prefilled with probability P1, turn 2 with P2, "
                        "... (later turns never), each drawn on its own, so the offline data holds episodes that "
                        "answer at once, ask once and answer, and ask twice (recorded per agent turn in "
                        "meta.exploration: openers and rates)")
    g.add_argument("--best-of", type=int, default=1, metavar="N",
                   help="critic-guided decoding: sample N candidates per turn, keep the one --critic scores highest "
                        "(sweet_agent.best_of_n; needs a critic trained with --no_use_privileged_info) (default: 1 = off)")
    g.add_argument("--critic", default=None, metavar="DIR", help="train-critic output directory for --best-of")

    g = parser.add_argument_group("execution and output")
    g.add_argument("--output", "-o", required=output_required, help="trajectory JSONL to write")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue an interrupted output: skip episodes already in it, play again those that "
                                                                  "failed for infrastructure reasons")
    mode.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    g.add_argument("--concurrency", type=_positive_int, default=None,
                   help="episodes in flight (default: 8 for local models = generation batch; for endpoints up to 32, "
                        "starting at 4 and adapting to what the server sustains: halved on 429/503/timeouts). "
                        "An explicit value is the most requests in flight (still halved on overload)")
    g.add_argument("--request-timeout", type=_positive_float, default=120.0, metavar="SECONDS",
                   help="endpoint policy: seconds per request before it is retried (default: %(default)s)")
    g.add_argument("--max-retries", type=int, default=3, metavar="N",
                   help="endpoint policy: retries of a failed request (429/5xx, dropped connection, timeout, garbage "
                        "body) with exponential backoff, Retry-After honoured (default: %(default)s)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def _parse_indices(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise SystemExit(f"--task-indices must be comma-separated integers, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    """Errors propagate to the CLI's one error boundary (colbench_gym.cli.dispatch): one line each."""
    from sweet_agent.evaluation.report import format_summary, summarize
    from sweet_agent.trajectories import read_trajectories

    play(args)
    print(format_summary(summarize(read_trajectories(args.output)), title=str(args.output)))
    return 0


def play(args: argparse.Namespace) -> None:
    """Play the episodes ``args`` describe into ``args.output`` and print what was played (the
    rollout without its summary; ``sweet-agent evaluate --best-of`` reports on the file itself)."""
    from sweet_agent.policies import load_policy
    from sweet_agent.rollout.collector import (
        RolloutConfig,
        RolloutError,
        check_output_writable,
        collect,
        make_env,
        partial_path,
    )

    try:
        sim_kwargs = json.loads(args.simulator_kwargs) if args.simulator_kwargs else None
    except json.JSONDecodeError as exc:
        raise ValueError(f"--simulator-kwargs is not JSON: {exc}") from None
    if sim_kwargs is not None and not isinstance(sim_kwargs, dict):
        raise ValueError(f"--simulator-kwargs must be a JSON object, got {type(sim_kwargs).__name__}")
    is_endpoint = args.policy.startswith("openai:")
    concurrency = args.concurrency or (32 if is_endpoint else 8)
    sampling = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                              top_p=args.top_p, top_k=args.top_k)
    cfg = RolloutConfig(env_id=args.env, tasks=args.tasks, simulator=args.simulator, simulator_kwargs=sim_kwargs,
                        num_tasks=args.episodes, task_indices=_parse_indices(args.task_indices),
                        samples_per_task=args.k, seed=args.seed, sampling=sampling, concurrency=concurrency,
                        max_turns=args.max_turns)
    # Everything that can be checked without a model is checked before one is loaded or called.
    check_output_writable(args.output)
    exploration = _exploration(args)
    try:
        make_env(cfg).close()  # unknown --env / --tasks / --simulator fail here, naming the choices
    except ValueError as exc:  # refused before any work: a usage error (status 2, colbench_gym.cli.dispatch)
        raise SystemExit(" ".join(str(exc).split())) from exc
    if args.best_of > 1:
        from sweet_agent.best_of_n import BestOfNPolicy

        if not args.critic:
            raise SystemExit("error: --best-of needs --critic DIR (a train-critic output)")
        BestOfNPolicy.check_dir(args.critic)  # a missing or privileged critic: before the policy loads
    extra = {}
    if is_endpoint:  # default: adaptive from 4 up to 32 in flight; explicit: start at (and never pass) N
        extra = {"initial_concurrency": args.concurrency, "timeout": args.request_timeout,
                 "max_retries": args.max_retries}
    device = resolve_device(args.device) if not is_endpoint or args.best_of > 1 else args.device
    policy = load_policy(args.policy, base_url=args.base_url, api_key=args.api_key, dtype=args.dtype,
                         device=device, max_batch_size=concurrency, concurrency=concurrency, **extra)
    if exploration is not None:
        from sweet_agent.policies.exploration import ExploringPolicy

        policy = ExploringPolicy(policy, exploration)
    if args.best_of > 1:
        policy = BestOfNPolicy.from_dir(policy, args.critic, args.best_of, device=device)
    try:
        result = collect(policy, cfg, args.output, resume=args.resume, overwrite=args.overwrite,
                         progress=not args.no_progress)
    except BaseException:
        if args.overwrite and partial_path(args.output).exists():
            print(f"note: {args.output} is untouched; the interrupted new run's episodes are in "
                  f"{partial_path(args.output)}", file=sys.stderr)
        raise
    finally:
        policy.close()
    from sweet_agent.trajectories import MAX_REPLAYS, replaced_path

    rate = result.completion_tokens / result.wall_time if result.wall_time > 0 else 0.0
    failed = len(result.failed)
    again = (f", {len(result.replayed)} played again after an infrastructure failure (the failed records are in "
             f"{replaced_path(args.output)})") if result.replayed else ""
    if result.kept_failures:
        again += (f", {len(result.kept_failures)} kept as infrastructure failures after {MAX_REPLAYS} replays "
                  f"(episodes {', '.join(result.kept_failures[:5])}): see their error field")
    print(f"played {len(result.records)} episodes ({result.skipped} already in {args.output}{again}"
          f"{f', {failed} failed: see their error field' if failed else ''}) in "
          f"{result.wall_time:.1f} s, {result.completion_tokens} generated tokens ({rate:.1f} tok/s)")
    # nothing succeeded and nothing else is in the file: not a usable run (exit 1). A resume that
    # only replayed earlier failures, beside finished episodes, is judged with them.
    if result.records and failed == len(result.records) and not result.skipped:
        first = " ".join(str(result.failed[0].get("error", "")).split())[:300]
        raise RolloutError(f"every one of the {failed} episodes failed (the first with: {first}); "
                           f"their records in {args.output} say why")


def _exploration(args):
    """The behaviour policy's :class:`ExplorationConfig` of ``--explore-rate`` / ``--explore-turns``
    or ``--explore-rates`` (None: no exploration); a bad value is a one-line error."""
    from sweet_agent.policies.exploration import ExplorationConfig

    try:
        if args.explore_rates is not None:
            if args.explore_rate > 0:
                raise ValueError("give --explore-rate (with --explore-turns) or --explore-rates, not both")
            return ExplorationConfig(rates=args.explore_rates)
        if args.explore_rate > 0:
            return ExplorationConfig(rate=args.explore_rate, turns=args.explore_turns)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    return None
