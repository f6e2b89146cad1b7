"""How a learning-benchmark stage starts: a fresh ``python -m sweet_agent.cli`` against one forked
from the fork server (``sweet_agent.forkserver``), side by side in one run.

Each round starts the same command both ways, alternating, so a change of machine load hits both
alike; the command is a real stage's entry (``sweet-agent <command> --help``: the dispatch imports
the command's module, torch / transformers / TRL with it, then prints its help), i.e. the part of
every stage that does not depend on its data. The fork server's own start (its one-time imports)
is timed apart. Printed: seconds per start each way, the ratio, the server's start, how many
stages repay it, and the load average before and after.

    python benchmarks/bench_stage_start.py                 # 4 rounds of train-rft, train-critic, rollout
    python benchmarks/bench_stage_start.py --rounds 2 --commands train-actor
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sweet_agent.forkserver import ForkedCommand, ensure_running  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4, help="starts of each command each way (default: %(default)s)")
    ap.add_argument("--commands", default="train-rft,train-critic,rollout",
                    help="sweet-agent commands whose --help is started (default: %(default)s)")
    args = ap.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    os.environ.update({k: env[k] for k in ("HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM")})
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    ensure_running()
    probe = ForkedCommand([sys.executable, "-m", "sweet_agent.cli", "--help"], log=os.devnull, cwd=ROOT, env=env)
    probe.wait()  # the first fork waits for the server's imports
    server_s = time.perf_counter() - t0
    times: dict[str, list[float]] = {"fresh": [], "forked": []}
    with tempfile.TemporaryDirectory(prefix="bench_stage_start.") as tmp:
        for r in range(args.rounds):
            for command in args.commands.split(","):
                cmd = [sys.executable, "-m", "sweet_agent.cli", command, "--help"]
                log = Path(tmp) / f"{command}-{r}.log"
                t = time.perf_counter()
                with open(log, "a", encoding="utf-8") as fh:
                    code = subprocess.run(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
                times["fresh"].append(time.perf_counter() - t)
                fresh_out = log.read_text()
                log.unlink()
                t = time.perf_counter()
                forked_code = ForkedCommand(cmd, log=log, cwd=ROOT, env=env).wait()
                times["forked"].append(time.perf_counter() - t)
                if (code, fresh_out) != (forked_code, log.read_text()):
                    print(f"error: `sweet-agent {command} --help` differs forked and fresh", file=sys.stderr)
                    return 1
    fresh, forked = statistics.median(times["fresh"]), statistics.median(times["forked"])
    load1 = os.getloadavg()
    print(f"{len(times['fresh'])} starts each way ({args.commands}, {args.rounds} rounds, alternating)")
    print(f"  fresh python -m sweet_agent.cli: median {fresh:.2f} s (min {min(times['fresh']):.2f}, "
          f"max {max(times['fresh']):.2f})")
    print(f"  forked from the fork server:     median {forked:.2f} s (min {min(times['forked']):.2f}, "
          f"max {max(times['forked']):.2f})")
    print(f"  ratio fresh / forked: {fresh / forked:.0f}x; the server's own start (its imports, once): {server_s:.1f} s, "
          f"repaid after {server_s / max(fresh - forked, 1e-9):.1f} stages")
    print(f"  load average before {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}, after {load1[0]:.1f} / "
          f"{load1[1]:.1f} / {load1[2]:.1f} ({os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
