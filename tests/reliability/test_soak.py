"""The short soak (benchmarks/soak_rollouts.py --quick): a rollout against a fault-injecting
endpoint (policy and simulator), SIGKILLed twice and resumed, ends with every requested episode
exactly once, no torn line, and a file that loads with `datasets`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: subprocess rollouts: still run by `make test`, skipped by `make test-fast`
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_quick_soak_loses_and_duplicates_nothing():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "soak_rollouts.py"), "--quick", "--json"],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["requested"] == 60 and result["recorded"] == 60 == result["distinct"] == result["datasets_rows"]
    assert result["lost"] == 0 and result["duplicated"] == 0 and result["torn_lines"] == 0
    assert result["kills_survived"] == 2  # SIGKILLed twice, as --quick asks (the harness kills before the run ends)
    assert sum(result["injected"].values()) > 0  # faults really were injected
