"""SWEET-RL end to end: collect -> train critic -> step pairs -> train actor -> evaluate,
then print method x success / % tests passed (zero-shot vs SWEET-RL). ``--ablations`` adds the
paper's critic ablations, each end to end."""
import argparse

from pipeline import ABLATIONS, add_arguments, run_methods, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--ablations", nargs="*", choices=sorted(ABLATIONS), default=None, metavar="NAME",
                    help=f"also run these critic ablations end to end (no names = all: {', '.join(ABLATIONS)})")
    args = ap.parse_args()
    ablations = None if args.ablations is None else (args.ablations or list(ABLATIONS))
    run_methods(settings(args), ["sweet"], ablations)
