"""Registration the Gymnasium 1.x way, and a base import that never pulls in torch & co."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ["torch", "transformers", "trl", "open_clip", "peft", "datasets", "accelerate"]


def _run(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("env_id", ["ColBench-Backend-v0", "ColBench-Frontend-v0"])
def test_import_and_make_pull_no_heavy_modules(env_id: str) -> None:
    code = f"""
import json, sys
import gymnasium as gym
import colbench_gym
env = gym.make({env_id!r})
print(json.dumps({{"heavy": [m for m in {HEAVY!r} if m in sys.modules], "id": env.spec.id}}))
"""
    result = _run(code)
    assert result == {"heavy": [], "id": env_id}


def test_make_with_module_prefix_needs_no_import() -> None:
    result = _run(
        "import json, gymnasium as gym\n"
        "env = gym.make('colbench_gym:ColBench-Backend-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(json.dumps({'obs': isinstance(obs, str) and len(obs) > 0}))"
    )
    assert result == {"obs": True}


def test_register_envs_and_ids() -> None:
    import gymnasium as gym

    import colbench_gym

    gym.register_envs(colbench_gym)
    for env_id in ("ColBench-Backend-v0", "ColBench-Frontend-v0"):
        spec = gym.spec(env_id)
        assert spec.version == 0 and spec.name.startswith("ColBench-")
        assert isinstance(spec.entry_point, str)  # string entry point: registration imports nothing heavy


def test_import_is_cheap() -> None:
    result = _run(
        "import json, sys, time\n"
        "t = time.perf_counter(); import colbench_gym; dt = time.perf_counter() - t\n"
        "print(json.dumps({'loaded': sorted(m for m in sys.modules if m.startswith('colbench_gym')), 'playwright': 'playwright' in sys.modules}))"
    )
    assert result["playwright"] is False
    assert set(result["loaded"]) == {"colbench_gym"}
