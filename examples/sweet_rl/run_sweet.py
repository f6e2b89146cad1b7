"""SWEET-RL end to end: collect -> train critic -> step pairs -> train actor -> evaluate,
then print method x success / % tests passed (zero-shot vs SWEET-RL)."""
import argparse

from pipeline import add_arguments, run_methods, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    run_methods(settings(ap.parse_args()), ["sweet"])
