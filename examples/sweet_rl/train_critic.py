"""Stage 2: train the privileged step-level critic (`sweet-agent train-critic`).

Ablations: --ablation no-privileged | no-normalisation | release-normalisation | regression-head
"""
import argparse

from pipeline import add_arguments, collect, settings, train_critic

ABLATIONS = {"none": {}, "no-privileged": {"no_privileged_info": True}, "no-normalisation": {"normalize": "none"},
             "release-normalisation": {"normalize": "trajectory"}, "regression-head": {"critic_type": "regression"}}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--ablation", default="none", choices=sorted(ABLATIONS))
    args = ap.parse_args()
    s = settings(args)
    print(train_critic(s, collect(s), **ABLATIONS[args.ablation]))
