"""``sweet-agent evaluate``: the paper's metrics for trajectory files — or, with ``--best-of N
--critic DIR``, for critic-guided best-of-N episodes it plays first.

    sweet-agent evaluate runs/zero_shot.jsonl runs/sweet.jsonl
    sweet-agent evaluate --best-of 4 --critic out/critic-noref --tasks collab:test --episodes 40 \\
        --policy default --temperature 0.7 --output runs/best-of-4.jsonl

WHY it lives beside the rollout and not in :mod:`sweet_agent.evaluation`: evaluating a decoding
method means playing episodes with it. The episodes are played by exactly the code of
``sweet-agent rollout --best-of N --critic DIR`` (:func:`sweet_agent.rollout.cli.play`, every
rollout option), written to ``--output`` (resumable with ``--resume``), and reported by exactly the
code that reports on files (:func:`sweet_agent.evaluation.report.run`, with ``--reference``,
``--regrade``, ``--json``; its numbers measured by :mod:`sweet_agent.evaluation.metrics`). The
rollout sits in a higher import layer than the evaluation package (which must not play episodes:
the viewer and the leaderboard read it), so the command that does both is here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sweet_agent.evaluation import report
from sweet_agent.rollout import cli as rollout_cli


def _rollout_defaults() -> dict[str, object]:
    parser = argparse.ArgumentParser(add_help=False)
    rollout_cli.add_arguments(parser, output_required=False)
    return vars(parser.parse_args([]))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    report.add_arguments(parser, files_required=False)
    rollout_cli.add_arguments(parser, output_required=False)
    parser.description = ((parser.description or "") + ". With --best-of N --critic DIR, first play best-of-N "
                          "episodes with the rollout options below (written to --output), then report on them.")


def default_output(best_of: int, critic: str) -> str:
    return str(Path("runs") / "evaluate" / f"best-of-{best_of}-{Path(critic).name or 'critic'}.jsonl")


def run(args: argparse.Namespace) -> int:
    def usage(msg: str) -> int:
        print(f"error: {msg}", file=sys.stderr)  # the CLI's boundary names the command (colbench_gym.cli.dispatch)
        return 2

    if args.best_of > 1 or args.critic:
        if args.best_of < 2:
            return usage("--critic is for critic-guided decoding: add --best-of N (N >= 2)")
        if not args.critic:
            return usage("--best-of needs --critic DIR (a `train-critic --no_use_privileged_info` output)")
        args.output = args.output or default_output(args.best_of, args.critic)
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        rollout_cli.play(args)
        args.files = [*args.files, args.output]
    else:
        changed = sorted(f"--{k.replace('_', '-')}" for k, v in _rollout_defaults().items() if getattr(args, k) != v)
        if changed:
            return usage(f"{', '.join(changed)} choose episodes to play, which only --best-of N --critic DIR does; "
                         "to report on existing trajectories pass only FILE(s)")
        if not args.files:
            return usage("pass trajectory FILE(s) to report on, or --best-of N --critic DIR to play episodes first")
    return report.run(args)
