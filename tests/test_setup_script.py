"""scripts/setup.sh, the set-up both README commands run: what it refuses before it installs anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_disk_without_room_for_the_first_set_up_is_one_line_and_installs_nothing(tmp_path):
    """A full disk used to fail deep inside pip ("[Errno 28] No space left on device", which once
    cost a CI run); the first full set-up now says how much room it needs before it creates .venv."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", repo / "scripts" / "setup.sh")
    env = {**os.environ, "COLBENCH_SETUP_NEED_GB": str(10**9), "PYTHON": sys.executable, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(["bash", str(repo / "scripts" / "setup.sh"), "full"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[setup] error: ")
    assert f"needs about {10**9} GB" in lines[0] and "free space and rerun" in lines[0] and str(repo) in lines[0]
    free_gb = shutil.disk_usage(repo).free // 2**30
    assert f"{free_gb} GB free" in lines[0] or f"{free_gb - 1} GB free" in lines[0]  # df's and Python's rounding
    assert not (repo / ".venv").exists()
