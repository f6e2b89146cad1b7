"""Fault-injection soak of `sweet-agent rollout`: nothing lost, nothing duplicated, ever.

A fake OpenAI-compatible server on 127.0.0.1 (``tests/reliability/fault_server.py``) plays both
the policy (model ``agent``: one clarifying question, then an answer) and the LLM simulator (model
``sim``), injecting faults at set rates: HTTP 500/503, garbage bodies, timeouts (the reply comes
after the client gave up), dropped connections, slow replies. A rollout of many short episodes
runs against it at high concurrency while this harness SIGKILLs the rollout's whole process group
at random moments (each time after it made progress) and restarts it with ``--resume``, several
times, then lets it finish. Afterwards it checks and prints:

- every requested episode appears exactly once (played, or recorded as failed with its error):
  requested / recorded / failed-with-error / lost (goal 0) / duplicated (goal 0);
- no torn or unparsable line, and the file loads with ``datasets``;
- throughput (episodes/s) of the same rollout with and without faults, measured side by side.

    python benchmarks/soak_rollouts.py            # >= 500 episodes at concurrency 32, 5 kills (make soak)
    python benchmarks/soak_rollouts.py --quick    # ~1 min version (run by the test suite)

Exit status 1 if any episode is lost or duplicated or a line is torn.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.fault_server import FaultServer  # noqa: E402

FAULT_RATES = {"500": 0.03, "503": 0.02, "garbage": 0.02, "timeout": 0.02, "drop": 0.01, "slow": 0.05}


def responder(body: dict) -> str:
    if body.get("model") == "sim":
        return "It should return the total, rounded to 2 decimals."
    if sum(m.get("role") == "assistant" for m in body.get("messages", [])) == 0:
        return "OUTPUT: What should it return for an empty input?"
    return "I WANT TO ANSWER:\n```python\ndef f(*args, **kwargs):\n    return None\n```"


def rollout_argv(base_url: str, out: Path, tasks: int, k: int, concurrency: int, timeout: float) -> list[str]:
    sim = {"model": "sim", "base_url": base_url, "timeout": timeout, "max_retries": 3}
    return [sys.executable, "-m", "sweet_agent.cli", "rollout", "--policy", "openai:agent", "--base-url", base_url,
            "--tasks", "embedded:train", "--episodes", str(tasks), "--k", str(k), "--max-turns", "3",
            "--simulator", "openai", "--simulator-kwargs", json.dumps(sim), "--concurrency", str(concurrency),
            "--request-timeout", str(timeout), "--max-retries", "3", "--max-new-tokens", "64",
            "--output", str(out), "--no-progress", "--resume"]


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def run_once(argv: list[str], env: dict, kill_after_progress: float | None, rng: random.Random,
             out: Path, total: int | None = None) -> tuple[str, float, str]:
    """Start the rollout in its own process group; SIGKILL it ``kill_after_progress`` (random
    fraction applied) seconds after it wrote a new line, or let it finish. With ``total`` (the
    episodes requested) the kill comes at the latest once half of the episodes left at the start
    are on disk, so a fast (or idle) machine cannot finish the run before it: every kill happens,
    at a random moment, whatever the machine's speed."""
    start_lines = count_lines(out)
    latest = None if total is None else start_lines + max(1, (total - start_lines) // 2)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    if kill_after_progress is None:
        stdout, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"final rollout failed ({proc.returncode}): {err.decode()[-2000:]}")
        return "finished", time.perf_counter() - t0, stdout.decode()
    while count_lines(out) <= start_lines and proc.poll() is None:
        time.sleep(0.02)
    if proc.poll() is not None:
        proc.communicate()
        return "finished before the kill", time.perf_counter() - t0, ""
    deadline = time.perf_counter() + rng.uniform(0.0, kill_after_progress)
    while time.perf_counter() < deadline and (latest is None or count_lines(out) < latest):
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    return "killed", time.perf_counter() - t0, ""


def check(out: Path, requested: set[str]) -> dict:
    raw = out.read_bytes()
    torn = 0 if raw.endswith(b"\n") or not raw else 1
    ids: collections.Counter[str] = collections.Counter()
    failed = unparsable = 0
    errors: collections.Counter[str] = collections.Counter()
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            unparsable += 1
            continue
        ids[rec["meta"]["episode_id"]] += 1
        if rec.get("error"):
            failed += 1
            errors[rec["error"].split(":")[0]] += 1
            assert rec.get("reward") is None, "a failed record must not carry a reward"
    from sweet_agent.trajectories import to_hf_dataset

    rows = to_hf_dataset(out).num_rows
    return {"requested": len(requested), "recorded": sum(ids.values()), "distinct": len(ids),
            "failed_with_error": failed, "failed_by": dict(errors),
            "lost": len(requested - set(ids)), "duplicated": sum(c - 1 for c in ids.values() if c > 1),
            "unexpected": len(set(ids) - requested), "torn_lines": torn + unparsable, "datasets_rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=25, help="tasks of embedded:train (default: %(default)s)")
    ap.add_argument("--k", type=int, default=20, help="samples per task (default: %(default)s -> 500 episodes)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--kills", type=int, default=5, help="SIGKILLs before the final run (default: %(default)s)")
    ap.add_argument("--kill-window", type=float, default=4.0,
                    help="kill at a random moment up to this many seconds after the run made progress")
    ap.add_argument("--timeout", type=float, default=1.5, help="client request timeout; injected hangs last 2x")
    ap.add_argument("--throughput-episodes", type=int, default=200, help="episodes of each throughput run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="~1 min: 60 episodes, concurrency 16, 2 kills")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON line at the end")
    args = ap.parse_args()
    if args.quick:
        args.tasks, args.k, args.concurrency, args.kills, args.kill_window = 20, 3, 16, 2, 1.5
        args.throughput_episodes = 0
    rng = random.Random(args.seed)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    requested = {f"{i}:{k}" for i in range(args.tasks) for k in range(args.k)}
    result: dict = {"concurrency": args.concurrency, "fault_rates": FAULT_RATES,
                    "load_average_at_start": os.getloadavg()[0], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="colbench-soak-") as tmp, \
            FaultServer(responder, rates=FAULT_RATES, seed=args.seed, hang=2 * args.timeout, slow=0.3,
                        retry_after=0.2, latency=0.01) as server:
        out = Path(tmp) / "soak.jsonl"
        argv = rollout_argv(server.base_url, out, args.tasks, args.k, args.concurrency, args.timeout)
        kills, t0 = 0, time.perf_counter()
        for _ in range(args.kills):
            what, secs, _ = run_once(argv, env, args.kill_window, rng, out, total=len(requested))
            kills += what == "killed"
            print(f"run {kills}: {what} after {secs:.1f} s with {count_lines(out)} lines on disk", flush=True)
        what, secs, _ = run_once(argv, env, None, rng, out)
        print(f"final run: {what} after {secs:.1f} s", flush=True)
        result.update(check(out, requested), kills_survived=kills, soak_wall_s=round(time.perf_counter() - t0, 1),
                      requests=len(server.requests), injected=dict(server.injected))
        if args.throughput_episodes:
            n_tasks = min(25, args.throughput_episodes)  # embedded:train holds 30 tasks
            k = max(1, args.throughput_episodes // n_tasks)
            for label, rates in (("faults", FAULT_RATES), ("clean", {})):
                server.set_rates(rates)
                tp_out = Path(tmp) / f"tp-{label}.jsonl"
                tp_argv = rollout_argv(server.base_url, tp_out, n_tasks, k, args.concurrency, args.timeout)
                _, _, stdout = run_once(tp_argv, env, None, rng, tp_out)
                # the rollout's own wall time (printed by the CLI): process start-up excluded
                secs = float(re.search(r"played \d+ episodes .*? in ([\d.]+) s", stdout).group(1))
                result[f"episodes_per_s_{label}"] = round(n_tasks * k / secs, 2)
    result["load_average_at_end"] = os.getloadavg()[0]
    ok = result["lost"] == 0 and result["duplicated"] == 0 and result["torn_lines"] == 0 \
        and result["unexpected"] == 0 and result["datasets_rows"] == result["recorded"]
    print("\n| measure | value |\n|---|---|")
    for key in ("requested", "recorded", "failed_with_error", "lost", "duplicated", "torn_lines", "datasets_rows",
                "kills_survived", "requests", "injected", "failed_by", "soak_wall_s", "episodes_per_s_faults",
                "episodes_per_s_clean", "concurrency", "load_average_at_start", "load_average_at_end"):
        if key in result:
            print(f"| {key} | {result[key]} |")
    print("OK: every requested episode exactly once" if ok else "FAILED: episodes lost, duplicated or torn")
    if args.json:
        print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
