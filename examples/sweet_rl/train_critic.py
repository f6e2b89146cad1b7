"""Stage 2: train the privileged step-level critic (`sweet-agent train-critic`).

Ablations: --ablation no-privileged | regression-head | no-normalisation
"""
import argparse

from pipeline import ABLATIONS, add_arguments, collect, settings, train_critic

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--ablation", default=None, choices=sorted(ABLATIONS))
    args = ap.parse_args()
    s = settings(args)
    print(train_critic(s, collect(s), args.ablation))
