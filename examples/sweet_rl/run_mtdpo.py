"""Multi-turn (trajectory-level) DPO baseline end to end: collect -> DPO -> evaluate -> table."""
import argparse

from pipeline import add_arguments, run_methods, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    run_methods(settings(ap.parse_args()), ["mtdpo"])
