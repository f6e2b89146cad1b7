"""`colbench evaluate backend`: graded records, same order, fields kept, best-of-k, clean errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from colbench_gym.cli import main

TASKS = [
    {"problem_description": "double it", "ground_truth": "def dbl(x):\n    return 2 * x\n",
     "test_cases": {f"test{i}": f"dbl({i})" for i in range(1, 11)}},
    {"problem_description": "greet", "ground_truth": "def hi(n):\n    return 'hi ' + n\n",
     "test_cases": {"test1": "hi('a')", "test2": "hi('bob')"}},
    {"problem_description": "sign", "ground_truth": "def sg(x):\n    return (x > 0) - (x < 0)\n",
     "test_cases": {"test1": "sg(5)", "test2": "sg(-3)", "test3": "sg(0)", "test4": "sg(2)"}},
]
# Two samples per task as two consecutive blocks (the layout of the paper's offline file).
ANSWERS = [
    ["```python\ndef dbl(x):\n    return x + x\n```", "def hi(n):\n    return 'hello ' + n", "def sg(x):\n    return 1"],
    ["def dbl(x):\n    return x", "I WANT TO ANSWER is not code", "def sg(x):\n    return (x > 0) - (x < 0)"],
]


def _write_input(path: Path) -> list[dict]:
    records = []
    for block, answers in enumerate(ANSWERS):
        for task, answer in zip(TASKS, answers):
            records.append({"task": task, "dialogue_history": [{"role": "user", "content": "hi"}],
                            "answer": answer, "reward": 0.25, "sample": block, "meta": {"keep": [1, 2]}})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def test_evaluate_backend(tmp_path, capsys):
    src, out = tmp_path / "in.jsonl", tmp_path / "sub" / "out.jsonl"
    records = _write_input(src)
    assert main(["evaluate", "backend", str(src), "--output", str(out), "--k", "2", "--workers", "2"]) == 0
    graded = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(graded) == len(records)
    for before, after in zip(records, graded):  # same order, every field kept
        for key in ("task", "dialogue_history", "answer", "sample", "meta"):
            assert after[key] == before[key]
    assert [g["reward"] for g in graded] == [1.0, 0.0, 0.5, 0.0, 0.0, 1.0]
    assert [g["success"] for g in graded] == [True, False, False, False, False, True]
    assert [g["tests_passed"] for g in graded] == [10, 0, 2, 0, 0, 4]
    assert graded[4]["grade_error"].startswith("SyntaxError")
    captured = capsys.readouterr()
    assert "success rate: 33.3%" in captured.out and "tests passed: 41.7%" in captured.out
    # best of 2 per task: dbl 1.0 (success), hi 0.0, sg 1.0 (success)
    assert "best-of-2 over 3 tasks: success rate: 66.7%   tests passed: 66.7%" in captured.out
    assert "grading" in captured.err and "6/6" in captured.err  # the tqdm progress bar
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.jsonl"]  # no temporary left


@pytest.mark.parametrize("bad_line,message", [
    ("{not json", "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"answer": "x"}', "missing 'task'"),
    ('{"task": {"problem_description": "p", "ground_truth": "def f(): pass", "test_cases": {"t": "f()"}}}',
     "missing 'answer'"),
    ('{"task": {"problem_description": "p", "ground_truth": "g"}, "answer": "x"}', "test_cases"),
    ('{"task": {"problem_description": "p", "ground_truth": "def f(): pass", "test_cases": {"t": "f()"}}, '
     '"answer": 3}', "'answer' must be a string"),
])
def test_malformed_line_names_the_line(tmp_path, capsys, bad_line, message):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_input(src)
    lines = src.read_text().splitlines()
    lines.insert(2, bad_line)
    src.write_text("\n".join(lines) + "\n")
    out.write_text("previous results\n")
    assert main(["evaluate", "backend", str(src), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}:3" in err and message in err
    assert out.read_text() == "previous results\n"  # untouched: nothing half-written


def test_missing_input_file(tmp_path, capsys):
    assert main(["evaluate", "backend", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_console_entry_point_and_sandbox_info(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_input(src)
    proc = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "evaluate", "backend", str(src), "-o", str(out),
                           "--no-progress"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "success rate: 33.3%" in proc.stdout and "grading" not in proc.stderr
    info = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "sandbox-info", "--json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert info.returncode == 0, info.stderr
    data = json.loads(info.stdout)
    assert data["level"] in ("namespaces", "rlimits-only") and data["self_test"]["ok"] is True
    # what each submission gets is reported, and listed as missing when it is not there
    for key, words in (("ipc_namespace_per_submission", "IPC namespace"), ("seccomp", "seccomp")):
        assert data[key] is True or any(words in m for m in data["missing"])
    # where the machine provides bubblewrap (here and in CI) every feature must be on, not merely reported
    bwrap = _working_bubblewrap()
    if bwrap is None:
        pytest.skip("bubblewrap cannot create namespaces on this machine: the features above may be off")
    assert data["level"] == "namespaces" and data["bwrap"] and data["pid_namespace"] is True
    assert data["ipc_namespace_per_submission"] is True
    if os.uname().machine in ("x86_64", "aarch64"):  # the architectures the seccomp filter is written for
        assert data["seccomp"] is True
    assert not any(w in m for m in data["missing"] for w in ("IPC namespace", "seccomp", "bubblewrap"))


def _working_bubblewrap() -> str | None:
    """A bwrap that creates user, PID, network and IPC namespaces here (checked by running it), or None."""
    from colbench_gym.grading.sandbox import _bwrap_candidates

    for bwrap in _bwrap_candidates():
        try:
            ok = subprocess.run([bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                                 "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"],
                                capture_output=True, timeout=60, check=False).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return bwrap
    return None
