"""Fixtures of the interop tests: files in the paper release's exact shapes (tests/interop/fixtures)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


@pytest.fixture()
def release_backend(tmp_path: Path) -> Path:
    """2 tasks x 2 samples in k-block order, no rewards (the release's backend rollouts)."""
    return Path(shutil.copy(FIX / "release_backend_k2.jsonl", tmp_path / "release_backend.jsonl"))


@pytest.fixture()
def release_frontend(tmp_path: Path) -> Path:
    """2 tasks x 2 samples, answers are PNG paths (relative to the file), rewards stored."""
    shutil.copytree(FIX / "release_frontend_pngs", tmp_path / "release_frontend_pngs")
    return Path(shutil.copy(FIX / "release_frontend_k2.jsonl", tmp_path / "release_frontend.jsonl"))
