"""Stage 3: sample candidates per agent turn, score them with the critic, write step pairs."""
import argparse

from pipeline import add_arguments, collect, settings, step_pairs, train_critic

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    s = settings(ap.parse_args())
    data = collect(s)
    critic = train_critic(s, data)
    if critic is None:
        raise SystemExit("no critic (no preference pairs in the offline data)")
    print(step_pairs(s, data, critic))
