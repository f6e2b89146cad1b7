"""Fixtures for the training tests: a tiny random Qwen2 model with a real BPE tokenizer
(built offline, see tiny_model.py) and small toy trajectory sets in the official record shape."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).parent))

from tiny_model import build_tiny_model, build_tiny_tokenizer, save_tiny


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return build_tiny_tokenizer()


@pytest.fixture
def tiny_model(tiny_tokenizer):
    return build_tiny_model(tiny_tokenizer, seed=0)


@pytest.fixture
def tiny_ref_model(tiny_tokenizer):
    return build_tiny_model(tiny_tokenizer, seed=1)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("tiny") / "model")


def make_task(i: int) -> dict:
    return {
        "problem_description": f"Write a python function f{i}(x) for my shop.",
        "ground_truth": f"def f{i}(x):\n    return x + {i}\n",
        "test_cases": {"test1": f"f{i}(1)", "test2": f"f{i}(2)"},
    }


def make_traj(task: dict, good: bool, reward: float | None = None, variant: int = 0) -> dict:
    """A two-turn trajectory: a good one asks a question and answers; a bad one rambles."""
    name = task["problem_description"].split()[4].split("(")[0]
    if good:
        a1, a2 = "What should it return?", f"I WANT TO ANSWER: def {name}(x):\n    return x + 1\n"
    else:
        a1, a2 = "no no no" + " no" * variant, "maybe maybe"
    hist = [
        {"role": "user", "content": task["problem_description"]},
        {"role": "assistant", "content": a1, "output": a1},
        {"role": "user", "content": "It adds a number."},
        {"role": "assistant", "content": a2, "output": a2},
    ]
    r = (1.0 if good else 0.0) if reward is None else reward
    return {"task": task, "dialogue_history": hist, "answer": a2, "reward": r, "success": r >= 1.0}


@pytest.fixture
def toy_records():
    """6 tasks × (1 success + 2 failures): a separable critic data set."""
    recs = []
    for i in range(6):
        t = make_task(i)
        recs += [make_traj(t, True), make_traj(t, False, variant=0), make_traj(t, False, 0.5, variant=1)]
    return recs


@pytest.fixture
def tiny_critic(tiny_model, tiny_ref_model, tiny_tokenizer):
    """The tiny critic and its reference as ``load_critic`` returns a trained one (default
    metadata: per-turn normalisation, privileged info): what ``build_step_pairs`` scores with."""
    from sweet_agent.critic.loading import LoadedCritic

    return LoadedCritic(tiny_model, tiny_ref_model, tiny_tokenizer, {})
