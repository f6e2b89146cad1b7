"""`sweet-agent rollout`'s progress bar moves with every agent turn, not only when an episode ends
(a 2-episode run once sat at ``0/4`` for 9.5 minutes and looked hung)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from sweet_agent.trajectories import read_trajectories
from tests.local_openai_server import LocalOpenAIServer

QUESTIONS = 3  # agent turns that ask before the turn that answers


def _agent(body: dict) -> str:
    """A scripted agent: asks QUESTIONS times, then answers (an endpoint speaking the OpenAI protocol)."""
    asked = sum(m["role"] == "assistant" for m in body["messages"])
    if asked < QUESTIONS:
        return f"OUTPUT: Question {asked + 1}: what should happen for an empty input?"
    return "I WANT TO ANSWER:\n```python\ndef f(*args):\n    return None\n```"


def _frames(stderr: str) -> list[str]:
    """Every redraw of the bar (tqdm writes them separated by carriage returns)."""
    return [f.strip() for f in re.split(r"[\r\n]+", stderr) if "turn" in f and "episodes=" in f]


def test_the_bar_counts_agent_turns_before_the_first_episode_ends(tmp_path):
    out = tmp_path / "run.jsonl"
    with LocalOpenAIServer(_agent) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "sweet_agent.cli", "rollout", "--policy", "openai:scripted",
             "--base-url", server.base_url, "--simulator", "offline", "--episodes", "2", "--max-turns", "5",
             "--concurrency", "1", "--output", str(out)],
            capture_output=True, text=True, timeout=600,
            # every update drawn (tqdm's own setting; the default draws at most every 0.1 s)
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TQDM_MININTERVAL": "0"})
    assert proc.returncode == 0, proc.stderr
    recs = read_trajectories(out)
    assert [r["meta"]["turns"] for r in recs] == [QUESTIONS + 1] * 2  # each episode asked, then answered
    frames = _frames(proc.stderr)
    progress = [(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                for f in frames if (m := re.search(r"\| *(\d+)/(\d+) \[.*episodes=(\d+)/2", f))]
    assert progress, proc.stderr
    assert {total for _, total, _ in progress} == {2 * 5}  # episodes x --max-turns, the most they can take
    # while the first episode is still running, the bar shows each of its agent turns
    assert {n for n, _, done in progress if done == 0} >= {0, 1, 2, 3}
    # an episode that answers early fills its share (5 turns each), so the bar ends full
    assert (5, 10, 1) in progress and progress[-1] == (10, 10, 2)
    assert all(a[0] <= b[0] for a, b in zip(progress, progress[1:]))  # never moves back
    assert "success=" in frames[-1] and "turn/s" in proc.stderr


def test_no_progress_draws_nothing(tmp_path):
    with LocalOpenAIServer(_agent) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "sweet_agent.cli", "rollout", "--policy", "openai:scripted",
             "--base-url", server.base_url, "--episodes", "1", "--max-turns", "5", "--no-progress",
             "--output", str(tmp_path / "run.jsonl")],
            capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert _frames(proc.stderr) == []
