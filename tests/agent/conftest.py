"""Fixtures for the agent tests: a tiny random model saved once, and a scripted simulator.

The tiny model is real (a Qwen2 architecture with 2 layers of width 32 and a byte-level BPE
tokenizer trained on the spot), so loading, chat templating, batching, padding and seeded
sampling all run through transformers exactly as with a real checkpoint — in milliseconds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from colbench_gym.simulators.base import HumanSimulator


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from tests.training.tiny_model import save_tiny

    return save_tiny(tmp_path_factory.mktemp("tiny-agent-model") / "model", seed=0)


@pytest.fixture(scope="session")
def tiny_policy(tiny_model_dir):
    from sweet_agent.policies.transformers_policy import TransformersPolicy

    return TransformersPolicy.from_pretrained(str(tiny_model_dir), dtype="float32", max_batch_size=8, quiet=True)


class TaggingSimulator(HumanSimulator):
    """A deterministic person: each reply names the task's function and fingerprints the agent's
    last visible message, so a reply that reached the wrong episode is detectable."""

    kind = "backend"

    def respond(self, task: Any, dialogue: list[dict[str, str]], **context: Any) -> str:
        fn = task.ground_truth.split("def ", 1)[1].split("(", 1)[0]
        last = dialogue[-1]["content"]
        return f"[{fn}] re {fingerprint(last)}: keep it simple."


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@pytest.fixture()
def tagging_simulator() -> TaggingSimulator:
    return TaggingSimulator()
