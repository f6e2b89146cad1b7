"""Every method on the same offline data and held-out tasks: zero-shot, RFT, multi-turn DPO and
SWEET-RL, then one method x success / % tests passed table (the paper's Table 1, small)."""
import argparse

from pipeline import add_arguments, run_methods, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    run_methods(settings(ap.parse_args()), ["rft", "mtdpo", "sweet"])
