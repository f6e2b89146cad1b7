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
   ``file://``: transcripts, per-test verdicts, metrics with confidence intervals);
5. what training does: the same held-out tasks of the family the adapter was trained and tested
   on (the shipped one: ``collab-multi:test``, hidden details decide the answer; a guess earns
   little) played greedily, up to 2 agent turns (``--trained-turns``; at most its protocol's
   limit), by the untrained model and by the model
   with the SWEET-RL LoRA adapter shipped in ``examples/adapters/`` (trained by the learning
   benchmark; its ``PROVENANCE.json`` names the command, commit and episode settings), side by
   side, and the viewer's paired comparison of the two runs in ``runs/demo/trained/viewer/index.html``.

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

#: The SWEET-RL LoRA adapter the learning benchmark trained (see its PROVENANCE.json).
TRAINED = Path(__file__).resolve().parent / "adapters" / "sweet-collab-qwen2.5-coder-0.5b"


def _score(rec: dict) -> str:
    """The reward, or why there is none (an infrastructure failure: its error)."""
    return f"{rec['reward']:.2f}" if rec.get("reward") is not None else f"none ({rec.get('error') or 'not graded'})"


def _show_episode(rec: dict, width: int = 100) -> None:
    meta = rec.get("meta", {})
    print(f"\n-- episode {meta.get('episode_id')} (task {meta.get('task_index')}): reward {_score(rec)}, "
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
    ap.add_argument("--trained", default=None,
                    help="a trained checkpoint or LoRA adapter to compare with the untrained model on held-out "
                         "tasks (those its PROVENANCE.json's run tested on, else collab:test; default: the shipped "
                         "SWEET-RL adapter; 'none' skips the comparison)")
    ap.add_argument("--trained-tasks", type=int, default=4, help="held-out tasks for the comparison "
                                                                  "(default: %(default)s)")
    ap.add_argument("--trained-turns", type=int, default=2,
                    help="agent-turn limit of the comparison's episodes (enough to ask once and answer), at most "
                         "the adapter's run's (the shipped one's: 6); more turns take the demo well past its minute "
                         "(default: %(default)s)")
    args = ap.parse_args(argv)
    if args.trained_turns < 1:
        ap.error(f"--trained-turns {args.trained_turns}: the comparison needs at least 1 agent turn; pass 1 or more")

    from transformers.utils import logging as hf_logging

    from sweet_agent.evaluation.report import format_summary, summarize
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
    # part 5's trained side: --trained, else the shipped adapter if there is one; "none" skips it
    trained = None if args.trained == "none" else args.trained or (str(TRAINED) if TRAINED.exists() else None)
    if trained is None:
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
    if trained is None:
        if args.trained is None:
            print(f"[demo] no trained adapter is shipped yet ({TRAINED}: the learning benchmark's run produces it); "
                  "pass --trained PATH to compare one")
        return 0
    args.trained = trained
    try:  # the loaded model plays the untrained side too (one load fewer)
        return compare_trained(args, out.parent / "trained", untrained=policy)
    finally:
        policy.close()


#: Part 5's episodes for a checkpoint whose PROVENANCE.json names no run settings: protocol v1's test
#: episodes (held-out collab:test tasks from 1000, 3 agent turns of up to 128 tokens, seed 1000).
V1_EPISODES = {"test_tasks": "collab:test", "test_start": 1000, "max_turns": 3, "max_new_tokens": 128,
               "eval_seed": 1000}


def _run_episodes(settings: dict, n: int) -> dict:
    """Part 5's episode settings from a run's ``settings`` (``V1_EPISODES`` for what it does not
    name); settings the backend environment cannot play here (another kind of task, a task range
    past the family's end, a non-integer) fall back to ``V1_EPISODES`` whole, with a note."""
    from colbench_gym.tasks.sources import resolve_task_source

    episodes = dict(V1_EPISODES, **{k: v for k, v in settings.items() if k in V1_EPISODES})
    try:
        if not all(isinstance(episodes[k], int) and episodes[k] >= (1 if k.startswith("max") else 0)
                   for k in V1_EPISODES if k != "test_tasks"):
            raise ValueError("non-integer turn limit, tokens, first task or seed")
        if len(resolve_task_source(episodes["test_tasks"], "backend")) < episodes["test_start"] + n:
            raise ValueError(f"fewer than {episodes['test_start'] + n} tasks")
    except Exception as exc:  # noqa: BLE001 - any unplayable setting: the demo still runs, on v1's episodes
        print(f"[demo] the adapter's run settings cannot be played here ({exc}); using collab:test's", file=sys.stderr)
        return dict(V1_EPISODES)
    return episodes


def compare_trained(args: argparse.Namespace, out_dir: Path, untrained=None) -> int:
    """Part 5: the untrained and the trained policy on the same held-out tasks, greedy, with the
    episode settings of the learning-benchmark run that trained it (its PROVENANCE.json's
    ``settings``: test family, first test task, turn limit, tokens a turn, seed; ``V1_EPISODES``
    where it names none): an adapter is shown on the tasks its own run tested it on. The turn limit
    is the smaller of the run's and ``--trained-turns`` (2 by default: ask once, then answer): an
    untrained model that opens in prose would otherwise play more of the run's turns, 128 tokens
    each, and take the demo well past its minute (the README's `make demo` timings).
    ``untrained``: an already loaded policy of ``args.policy`` to play the untrained side (the
    caller closes it)."""
    from sweet_agent.evaluation.metrics import episode_metrics
    from sweet_agent.policies import SamplingParams, load_policy
    from sweet_agent.policies.default_model import ModelNotAvailableError
    from sweet_agent.rollout.collector import RolloutConfig, collect
    from sweet_agent.viewer import ViewConfig, build_site

    trained = Path(args.trained)
    if not trained.exists():
        print(f"[demo] --trained {trained}: no such checkpoint or adapter; pass one, or --trained none", file=sys.stderr)
        return 2
    provenance = trained / "PROVENANCE.json"
    about = ""
    episodes, settings = dict(V1_EPISODES), {}
    if provenance.is_file():
        import json

        info = json.loads(provenance.read_text(encoding="utf-8"))
        settings = info.get("settings") or {}
        episodes = _run_episodes(settings, args.trained_tasks)
        method, summary = info.get("method") or "", info.get("summary") or ""
        parts = [summary] if method and summary.startswith(method) else [method, summary]  # no "X, X, ..."
        about = f" ({', '.join(x for x in parts if x)})"
    n, family = args.trained_tasks, episodes["test_tasks"]
    indices = list(range(episodes["test_start"], episodes["test_start"] + n))
    run_turns = episodes["max_turns"]
    episodes["max_turns"] = min(run_turns, args.trained_turns)
    allowed = "its run allowed" if settings.get("max_turns") == run_turns else "v1's episodes allow"
    turns = f"up to {episodes['max_turns']} agent turns" + (
        f" ({allowed} {run_turns}; --trained-turns {run_turns} plays them all)"
        if episodes["max_turns"] < run_turns else "")
    print(f"\n[demo] what training does: {n} held-out {family} tasks (indices {indices[0]}-{indices[-1]}), "
          f"greedy, {turns}, untrained vs {trained}{about}", flush=True)
    runs = {}
    for name, spec in (("untrained", args.policy), ("trained", str(trained))):
        given = untrained if name == "untrained" else None
        try:
            policy = given or load_policy(spec, dtype="bfloat16", max_batch_size=n)
        except ModelNotAvailableError as exc:
            print(f"[demo] {exc}", file=sys.stderr)
            return 1
        cfg = RolloutConfig(env_id="ColBench-Backend-v0", tasks=family, simulator="offline",
                            task_indices=indices, seed=episodes["eval_seed"], concurrency=n,
                            max_turns=episodes["max_turns"],
                            sampling=SamplingParams(max_new_tokens=episodes["max_new_tokens"], temperature=0.0))
        runs[name] = out_dir / f"{name}.jsonl"
        result = collect(policy, cfg, runs[name], overwrite=True)
        if given is None:
            policy.close()
        print(f"[demo] {name}: {len(result.records)} episodes in {result.wall_time:.0f} s -> {runs[name]}", flush=True)

    from sweet_agent.trajectories import read_trajectories

    by_task = {name: {r["meta"]["task_index"]: r for r in read_trajectories(path)} for name, path in runs.items()}
    print(f"\n  {'task':>5}  {'untrained: first agent turn':<44} {'trained: first agent turn':<44}")
    for i in indices:
        cells = []
        for name in runs:
            rec = by_task[name].get(i)
            if rec is None:
                cells.append("(episode failed)")
                continue
            m = episode_metrics(rec)
            first = next((t.get("output", t["content"]) for t in rec["dialogue_history"] if t["role"] == "assistant"), "")
            text = " ".join(first.split())
            cells.append(f"[{100 * (m.tests_passed or 0):3.0f}% tests] {text[:30]}{'…' if len(text) > 30 else ''}")
        print(f"  {i:>5}  {cells[0]:<44} {cells[1]:<44}")
    for name in runs:
        ms = [episode_metrics(r) for r in by_task[name].values()]
        asked = sum(m.questions > 0 for m in ms)
        tests = sum(m.tests_passed or 0 for m in ms) / max(1, len(ms))
        wins = sum(bool(m.success) for m in ms)
        print(f"[demo] {name:>9}: asked a question in {asked}/{len(ms)} episodes, solved {wins}/{len(ms)}, "
              f"{100 * tests:.0f}% of tests passed")
    index = build_site(ViewConfig(runs=[str(runs["untrained"]), str(runs["trained"])], output=str(out_dir / "viewer"),
                                  names=["untrained", "trained"]), progress=False)
    print(f"[demo] paired comparison (same tasks, untrained vs trained): file://{index.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
