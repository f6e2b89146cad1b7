"""`examples/trl_grpo.py` on the real 0.5B model gets a GRPO gradient in its first step on a CPU (issue 39).

Without the example's tool-call opener the untrained model answers in prose: no tool call, every
reward 0, reward std 0, no gradient. With it (and `collab-multi:train`, where details the request
states give a first answer partial credit), the first step's rollouts call tools and their rewards
differ. This runs `make grpo-example-check` (benchmarks/check_grpo_example.py) and reads its line:
one real step, a few minutes on 2 idle cores, ~16 GB resident at its peak (`make test-long`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

#: a training run on the real model (~3 min, ~16 GB resident at its peak): `make test-long`, not `make test`; the
#: opener's rules each have a fast tiny-model test in tests/grpo/test_trl_path.py, which `make test` runs
pytestmark = [pytest.mark.slow, pytest.mark.long]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(2400)
def test_the_first_step_calls_tools_and_its_rewards_differ() -> None:
    from sweet_agent.policies.default_model import default_model_status

    if not default_model_status().get("ready"):
        pytest.skip("default model not prepared (sweet-agent fetch-model)")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "check_grpo_example.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=2300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    found = re.search(r"tools/call_frequency ([\d.]+), reward_std ([\d.]+), frac_reward_zero_std ([\d.]+)", proc.stdout)
    assert found, proc.stdout[-2000:] + proc.stderr[-3000:]
    calls, std, zero_std = map(float, found.groups())
    assert calls > 0 and std > 0 and zero_std < 1, found.group(0)
    assert proc.returncode == 0
    step = re.search(r"step 1: reward ([\d.]+) \(std ([\d.]+)", proc.stdout)
    assert step and float(step.group(2)) == pytest.approx(std, abs=1e-3)  # the example's own summary agrees
