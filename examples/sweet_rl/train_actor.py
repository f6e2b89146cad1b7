"""Stage 4: train the policy with DPO on the step pairs (`sweet-agent train-actor --pairs-in`)."""
import argparse

from pipeline import add_arguments, settings, train_actor

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    s = settings(ap.parse_args())
    pairs = s["workdir"] / "step_pairs.jsonl"
    if not pairs.exists():
        raise SystemExit(f"{pairs} not found: run step_pairs.py first")
    print(train_actor(s, pairs))
