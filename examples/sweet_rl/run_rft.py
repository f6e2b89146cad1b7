"""Rejection fine-tuning baseline end to end: collect -> SFT on successes -> evaluate -> table."""
import argparse

from pipeline import add_arguments, run_methods, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    run_methods(settings(ap.parse_args()), ["rft"])
