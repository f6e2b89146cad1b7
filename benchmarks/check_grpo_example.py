"""Does `examples/trl_grpo.py` get a gradient on the real 0.5B model on a CPU? (issue 39, item 2)

    make grpo-example-check        # = python benchmarks/check_grpo_example.py (minutes to tens of minutes on 2 cores)

With its defaults (``collab-multi:train``, the tool-call opener, one GRPO group of 4 rollouts a
step, 256 completion tokens, temperature 0.7), the example's first step should call tools and
have a group whose rewards differ (reward std > 0, frac_reward_zero_std < 1: GRPO has a
gradient). Without the opener the same step had no tool call and every reward 0. Measured on
2 idle cores (2026-11-27): 164-210 s for the step, 0.5-1.0 tool calls per rollout, reward std
0.167 (docs/trl.md). `make test` runs this through tests/grpo/test_trl_example_gradient.py; the
opener's rules are tested on a tiny model in tests/grpo/test_trl_path.py. Exit 0 when the step
calls tools and has reward variance, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from examples.trl_grpo import main as example

    with tempfile.TemporaryDirectory() as out:
        trainer = example(["--max-steps", "1", "--output-dir", str(Path(out) / "out")])
    logs = [log for log in trainer.state.log_history if "reward" in log]
    if not logs:
        print("grpo example check: no step logged a reward", file=sys.stderr)
        return 1
    log = logs[0]
    calls, zero_std, std = log.get("tools/call_frequency", 0), log.get("frac_reward_zero_std", 1), log.get("reward_std", 0)
    print(f"grpo example check: tools/call_frequency {calls}, reward_std {std}, frac_reward_zero_std {zero_std}")
    return 0 if calls > 0 and zero_std < 1 and std > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
