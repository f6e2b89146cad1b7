"""Backend grading speed: warm sandboxed grader vs one cold ``pytest`` process per submission.

Measured side by side in one run on this machine:
* median ms per 10-test submission (one thread, one sandboxed worker)      target <= 10 ms
* submissions/s, sequential and with 2 threads x 2 workers                 target >= 150/s
* ratio against a cold ``python -m pytest`` process per submission          target >= 30x
  (the cold baseline writes the answer and a 10-test file and runs pytest on them, without any
  sandbox; plugin autoload disabled, which is the *faster* baseline, so the ratio is conservative)

    .venv/bin/python benchmarks/bench_grading.py [--n 300] [--cold 8] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colbench_gym.grading import BackendGrader  # noqa: E402
from colbench_gym.tasks import BackendTask  # noqa: E402

REFERENCE = """\
def monthly_fee(visits, plan):
    base = {'basic': 20, 'plus': 35, 'pro': 50}.get(plan, 25)
    if plan == 'basic' and visits > 12:
        base += 2 * (visits - 12)
    if visits == 0:
        return round(base * 0.5, 2)
    return float(base)
"""
ANSWERS = [
    REFERENCE,
    "PRICES = {'basic': 20, 'plus': 35, 'pro': 50}\n\ndef _extra(v):\n    return 2 * max(0, v - 12)\n\n"
    "def monthly_fee(visits, plan):\n    base = PRICES.get(plan, 25) + (_extra(visits) if plan == 'basic' else 0)\n"
    "    return base / 2 if visits == 0 else float(base)\n",
    "def monthly_fee(visits, plan):\n    return 20.0\n",
    "def monthly_fee(visits, plan):\n    raise NotImplementedError\n",
]
CALLS = ["monthly_fee(0, 'basic')", "monthly_fee(5, 'basic')", "monthly_fee(15, 'basic')", "monthly_fee(20, 'plus')",
         "monthly_fee(0, 'pro')", "monthly_fee(30, 'pro')", "monthly_fee(3, 'trial')", "monthly_fee(12, 'basic')",
         "monthly_fee(13, 'basic')", "monthly_fee(0, 'trial')"]
TASK = BackendTask("gym fee", REFERENCE, {f"test{i + 1}": c for i, c in enumerate(CALLS)})


def bench_warm(n: int) -> tuple[list[float], float]:
    with BackendGrader() as grader:
        print(grader.describe().replace("\n", "\n    "), "\n")
        for a in ANSWERS:  # warm up: worker started, reference cached, pytest session built
            grader.grade(a, TASK)
        times = []
        t_all = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter()
            grader.grade(ANSWERS[i % len(ANSWERS)], TASK)
            times.append((time.perf_counter() - t0) * 1000)
        return times, n / (time.perf_counter() - t_all)


def bench_parallel(n: int, threads: int = 2) -> float:
    with BackendGrader(workers=threads) as grader:
        for a in ANSWERS:
            grader.grade(a, TASK)
        per = n // threads

        def work(k: int) -> None:
            for i in range(per):
                grader.grade(ANSWERS[(i + k) % len(ANSWERS)], TASK)

        pool = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        t0 = time.perf_counter()
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        return per * threads / (time.perf_counter() - t0)


def bench_forged_frames(reps: int = 5) -> tuple[float, float]:
    """ms for the trusted side to refuse two forged result frames (bounded work, no exception):
    20 000 ints built to collide in hashing (quadratic if decoded naively), 250 000 elements."""
    from colbench_gym.grading.wire import READY, parse_segments  # noqa: PLC0415

    p = 2**61 - 1
    flood = json.dumps({"t": "r", "i": 0, "v": ["S", [["i", format(k * p, "x")] for k in range(1, 20_001)]]})
    wide = json.dumps({"t": "r", "i": 0, "v": ["l", [["n"]] * 250_000]})
    out = []
    for line in (flood, wide):
        t0 = time.perf_counter()
        for _ in range(reps):
            outs, err = parse_segments([{"start": 0, "lines": [READY, line], "end": "done"}], 1)
            assert outs[0].kind == "missing" and err
        out.append((time.perf_counter() - t0) / reps * 1000)
    return out[0], out[1]


def bench_escaping_flood(reps: int = 3) -> float:
    """Trusted-process CPU ms for a submission whose one result line is 4 MiB of invalid UTF-8
    (24 MB once the worker escapes it as U+FFFD): the response must be read in linear time."""
    forged = ("import os\n"
              "data = b'{\"t\":\"ready\"}\\n' + b'\\xff' * (4 * 1024 * 1024 - 4096) + b'\\n'\n"
              "view = memoryview(data)\n"
              "while view:\n    view = view[os.write(3, view):]\n"
              "os._exit(0)\n")
    with BackendGrader() as grader:
        grader.grade(ANSWERS[0], TASK)
        t0 = time.process_time()
        for _ in range(reps):
            assert "malformed" in (grader.grade(forged, TASK).error or "")
        return (time.process_time() - t0) / reps * 1000


def bench_cold(runs: int, autoload: bool) -> list[float]:
    """One ``python -m pytest`` process per submission on a generated 10-test file."""
    expected = {}
    ns: dict = {}
    exec(REFERENCE, ns)  # noqa: S102 - our own reference, for the baseline only
    for c in CALLS:
        expected[c] = eval(c, ns)  # noqa: S307
    times = []
    env = dict(os.environ)
    if autoload:
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    else:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            d = Path(tmp) / f"s{i}"
            d.mkdir()
            (d / "answer.py").write_text(ANSWERS[i % len(ANSWERS)])
            tests = ["from answer import *\n"]
            for k, c in enumerate(CALLS):
                tests.append(f"def test_{k}():\n    assert {c} == {expected[c]!r}\n")
            (d / "test_answer.py").write_text("\n".join(tests))
            (d / "pytest.ini").write_text("[pytest]\n")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_answer.py"],
                           cwd=d, env=env, capture_output=True, check=False)
            times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="warm submissions to time")
    ap.add_argument("--cold", type=int, default=8, help="cold pytest processes to time")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()

    print("== backend grading benchmark (10 hidden tests per submission)")
    load0 = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load0:.1f} at start "
          "(other work on the machine slows both sides alike)\n")
    warm, seq_rate = bench_warm(args.n)
    par_rate = bench_parallel(args.n)
    cold = bench_cold(args.cold, autoload=False)
    cold_auto = bench_cold(max(2, args.cold // 4), autoload=True)
    flood_ms, wide_ms = bench_forged_frames()
    escape_ms = bench_escaping_flood()
    med, p90 = statistics.median(warm), statistics.quantiles(warm, n=10)[-1]
    cold_med, cold_auto_med = statistics.median(cold), statistics.median(cold_auto)
    ratio = cold_med / med
    rate = max(seq_rate, par_rate)
    rows = [
        ("warm sandboxed grader, median ms / submission", f"{med:8.2f}", f"(p90 {p90:.2f}; target <= 10)"),
        ("warm sandboxed grader, submissions/s, 1 thread", f"{seq_rate:8.1f}", ""),
        ("warm sandboxed grader, submissions/s, 2 threads x 2 workers", f"{par_rate:8.1f}", "(target >= 150)"),
        ("cold pytest process per submission, median ms", f"{cold_med:8.1f}", "(no sandbox, autoload off)"),
        ("cold pytest process per submission, median ms", f"{cold_auto_med:8.1f}", "(no sandbox, autoload on)"),
        ("speed-up, warm vs cold (autoload off)", f"{ratio:7.1f}x", "(target >= 30x)"),
        ("speed-up, warm vs cold (autoload on)", f"{cold_auto_med / med:7.1f}x", ""),
        ("forged frame: 20 000 hash-colliding ints, ms to refuse", f"{flood_ms:8.1f}", "(bounded, no exception)"),
        ("forged frame: 250 000 elements, ms to refuse", f"{wide_ms:8.1f}", "(bounded, no exception)"),
        ("forged 4 MiB invalid-UTF-8 line (24 MB response), trusted CPU ms", f"{escape_ms:8.1f}", "(linear read)"),
    ]
    for name, value, note in rows:
        print(f"{name:<62}{value}  {note}")
    print(f"{'load average at end':<62}{os.getloadavg()[0]:8.1f}")
    ok = med <= 10 and rate >= 150 and ratio >= 30
    print(f"\ntargets: {'all met' if ok else 'MISSED'} (<= 10 ms: {med <= 10}, >= 150/s: {rate >= 150}, "
          f">= 30x: {ratio >= 30})")
    return 0 if ok or not args.strict else 1


if __name__ == "__main__":
    sys.exit(main())
