"""Suite-wide settings and fixtures: offline hub, fixture paths, the browser (renderer, screenshot cache)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Offline first: a hub miss otherwise costs ~50 s of retries per call.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Screenshot caches go to a per-run folder, not the user's ~/.cache (removed at exit).
_CACHE = tempfile.mkdtemp(prefix="colbench-test-cache-")
os.environ.setdefault("COLBENCH_CACHE_DIR", _CACHE)
atexit.register(shutil.rmtree, _CACHE, True)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def browser_ready() -> bool:
    """Chromium and the offline Tailwind assets, for every test that renders (one definition)."""
    from colbench_gym.rendering import find_chromium, locate

    if find_chromium() is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium, or set COLBENCH_CHROMIUM)")
    if locate(required=False) is None:
        pytest.skip("offline Tailwind assets missing: python -m colbench_gym.rendering.assets install")
    return True


@pytest.fixture(scope="session", autouse=True)
def _screenshot_cache_in_tmp(tmp_path_factory):
    # Never write into the user's ~/.cache from tests, even where COLBENCH_CACHE_DIR is set outside.
    old = os.environ.get("COLBENCH_CACHE_DIR")
    os.environ["COLBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("colbench-cache"))
    yield
    if old is None:
        os.environ.pop("COLBENCH_CACHE_DIR", None)
    else:
        os.environ["COLBENCH_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def renderer(browser_ready):
    """One real Chromium page pool per session, for the rendering and frontend tests."""
    from colbench_gym.rendering import Renderer

    r = Renderer(pool_size=2, timeout=15.0)  # generous: the machine running the suite is shared
    yield r
    r.close()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def backend_records() -> list[dict]:
    """Backend tasks in the official record shape (our own contents)."""
    with (FIXTURES / "backend_tasks.jsonl").open() as fh:
        return [json.loads(line) for line in fh if line.strip()]
