"""Fixtures for the online-RL tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def browser_ready():
    from colbench_gym.rendering import find_chromium, locate

    if find_chromium() is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium, or set COLBENCH_CHROMIUM)")
    if locate(required=False) is None:
        pytest.skip("offline Tailwind assets missing: python -m colbench_gym.rendering.assets install")
    return True
