"""Every method on the same offline data and held-out tasks: zero-shot, RFT, multi-turn DPO and
SWEET-RL, then one method x success / % tests passed table (the paper's Table 1, small).

``--ablations`` adds the paper's three critic ablations (no privileged information, regression
head, no per-turn normalisation), each end to end: critic -> step pairs -> actor -> evaluation."""
import argparse

from pipeline import ABLATIONS, add_arguments, run_methods, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--ablations", nargs="*", choices=sorted(ABLATIONS), default=None, metavar="NAME",
                    help=f"also run these critic ablations end to end (no names = all: {', '.join(ABLATIONS)})")
    args = ap.parse_args()
    ablations = None if args.ablations is None else (args.ablations or list(ABLATIONS))
    run_methods(settings(args), ["rft", "mtdpo", "sweet"], ablations)
