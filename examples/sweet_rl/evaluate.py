"""Stage 5: evaluate trained policies on held-out tasks and print method x success / % tests passed.

    python examples/sweet_rl/evaluate.py                 # every method trained in --workdir
    python examples/sweet_rl/evaluate.py --policy sweet=path/to/checkpoint
"""
import argparse

from pipeline import METHODS, add_arguments, evaluate, settings, table

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap)
    ap.add_argument("--policy", action="append", default=[], metavar="NAME=PATH", help="evaluate these instead")
    s = settings(ap.parse_args())
    targets = dict(p.split("=", 1) for p in ap.parse_args().policy)
    if not targets:
        targets = {"zero-shot": s["model"]}
        targets.update({m: s["workdir"] / m for m in METHODS[1:] if (s["workdir"] / m / "config.json").exists()})
    print(table([evaluate(s, name, path) for name, path in targets.items()]))
