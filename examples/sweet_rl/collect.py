"""Stage 1: collect offline trajectories with the base policy (`sweet-agent rollout`)."""
import argparse

from pipeline import add_arguments, collect, settings

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    print(collect(settings(ap.parse_args())))
