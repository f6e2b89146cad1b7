"""The similarity ordering suite (issue 24, item 6): how each scorer ranks page pairs.

For every reference page of a task set, renders the suite's variants (identical, recoloured,
retexted, unrelated, blank: :mod:`colbench_gym.scoring.suite`) and prints, per scorer, the mean
score of each variant and on how many tasks each required ordering held
(identical > recoloured > retexted > unrelated > blank; >= 90 % required).

    python benchmarks/bench_similarity_suite.py [--split test|train] [--scorer fallback --scorer clip ...]

``--scorer clip`` needs cached CLIP weights (it is skipped with a note when they are missing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colbench_gym.rendering import Renderer  # noqa: E402
from colbench_gym.scoring import make_scorer  # noqa: E402
from colbench_gym.scoring.suite import REQUIRED_HOLD_RATE, embedded_references, render_suite, score_suite  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="test", help="embedded frontend split (test: 30 tasks, train: 90)")
    parser.add_argument("--tasks", type=int, default=0, help="only the first N tasks (0: all)")
    parser.add_argument("--scorer", action="append", default=None, help="fallback (default), clip, clip-random")
    parser.add_argument("--pool-size", type=int, default=2)
    args = parser.parse_args(argv)
    refs = embedded_references(args.split)
    if args.tasks:
        refs = refs[: args.tasks]
    t0 = time.perf_counter()
    with Renderer(pool_size=args.pool_size, timeout=30.0) as renderer:
        ref_images, variants = render_suite(renderer.render_many, refs)
    print(f"rendered the suite of {len(refs)} embedded:{args.split} tasks in {time.perf_counter() - t0:.0f} s "
          f"(load {os.getloadavg()[0]:.1f})\n")
    ok = True
    for spec in args.scorer or ["fallback"]:
        try:
            scorer = make_scorer(spec)
        except Exception as exc:  # noqa: BLE001 - e.g. no CLIP weights here: say so and go on
            print(f"{spec}: unavailable ({exc})\n")
            continue
        t0 = time.perf_counter()
        report = score_suite(scorer, ref_images, variants)
        per_pair = (time.perf_counter() - t0) / (5 * len(refs)) * 1000
        print(report.table())
        print(f"\nscoring: {per_pair:.1f} ms per pair (features included); "
              f"passes (each ordering >= {REQUIRED_HOLD_RATE:.0%}): {report.passes()}\n")
        ok &= report.passes() or scorer.is_clip  # the suite is the fallback's contract; CLIP is reported
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
