"""`make demo`: the embedded default policy plays embedded ColBench backend tasks offline.

What it shows, end to end on CPU with no network and no GPU:

1. the default policy (Qwen2.5-Coder-0.5B-Instruct, prepared offline by `make setup`) is
   loaded in bfloat16;
2. it plays a few tasks of ``embedded:test`` in ``ColBench-Backend-v0`` against the offline
   human simulator, all episodes batched together;
3. every finished episode is appended to ``runs/demo/trajectories.jsonl`` in the official
   offline record shape, then the file is graded again in the sandbox and summarised with the
   paper's metrics, and read back as a Hugging Face dataset;
4. the static trajectory viewer is written to ``runs/demo/viewer/index.html`` (open it from
   ``file://``: transcripts, per-test verdicts, metrics with confidence intervals).

Run ``python -m examples.demo --help`` for the knobs (more tasks, samples, tokens).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _show_episode(rec: dict, width: int = 100) -> None:
    meta = rec.get("meta", {})
    print(f"\n-- episode {meta.get('episode_id')} (task {meta.get('task_index')}): reward {rec['reward']:.2f}, "
          f"success {rec['success']}, {meta.get('turns')} agent turn(s), ended by {meta.get('ended_by')}")
    for turn in rec["dialogue_history"]:
        who = "PERSON" if turn["role"] == "user" else "AGENT "
        text = turn.get("output", turn["content"]).strip().replace("\n", "\n         ")
        if len(text) > 600:
            text = text[:600] + " [...]"
        print(f"  {who} {text}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m examples.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=4, help="embedded test tasks to play (default: %(default)s)")
    ap.add_argument("--k", type=int, default=1, help="samples per task (default: %(default)s)")
    ap.add_argument("--max-new-tokens", type=int, default=256, help="per agent turn (default: %(default)s)")
    ap.add_argument("--temperature", type=float, default=0.3, help="(default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default="runs/demo/trajectories.jsonl")
    ap.add_argument("--policy", default="default", help="policy spec (see `sweet-agent rollout --help`)")
    args = ap.parse_args(argv)

    from transformers.utils import logging as hf_logging

    from sweet_agent.evaluation import format_summary, summarize
    from sweet_agent.policies import SamplingParams, load_policy
    from sweet_agent.policies.default_model import ModelNotAvailableError
    from sweet_agent.rollout.collector import RolloutConfig, collect
    from sweet_agent.trajectories import read_trajectories, to_hf_dataset

    hf_logging.disable_progress_bar()
    print("[demo] loading the policy ...", flush=True)
    t0 = time.perf_counter()
    try:
        policy = load_policy(args.policy, dtype="bfloat16", max_batch_size=args.tasks * args.k)
    except ModelNotAvailableError as exc:
        print(f"[demo] {exc}", file=sys.stderr)
        return 1
    print(f"[demo] {policy.name} ready in {time.perf_counter() - t0:.1f} s; playing {args.tasks} embedded backend "
          f"task(s) x {args.k} sample(s) against the offline simulator", flush=True)

    cfg = RolloutConfig(env_id="ColBench-Backend-v0", tasks="embedded:test", simulator="offline",
                        num_tasks=args.tasks, samples_per_task=args.k, seed=args.seed,
                        concurrency=args.tasks * args.k,
                        sampling=SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature))
    out = Path(args.output)
    result = collect(policy, cfg, out, overwrite=True)
    policy.close()
    rate = result.completion_tokens / result.wall_time if result.wall_time else 0.0
    print(f"[demo] {len(result.records)} episodes in {result.wall_time:.0f} s "
          f"({result.completion_tokens} tokens generated, {rate:.1f} tok/s) -> {out}")

    records = read_trajectories(out)
    for rec in sorted(records, key=lambda r: r["meta"]["episode_id"])[:2]:
        _show_episode(rec)
    print()
    print(format_summary(summarize(records, regrade=True), title=f"{out} (regraded in the sandbox)"))
    ds = to_hf_dataset(out)
    print(f"\n[demo] as a Hugging Face dataset: {ds.num_rows} rows, columns {ds.column_names}")
    print(f"[demo] evaluate again any time with: sweet-agent evaluate {out}")

    from sweet_agent.viewer import ViewConfig, build_site

    index = build_site(ViewConfig(runs=[str(out)], output=str(out.parent / "viewer"), names=["demo"]), progress=False)
    print(f"[demo] trajectory viewer: file://{index.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
