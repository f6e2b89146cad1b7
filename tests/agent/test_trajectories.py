"""Trajectory records: official shape, safe append + resume, HF datasets round trip, paper file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweet_agent.trajectories import (
    OFFICIAL_KEYS,
    TrajectoryFormatError,
    TrajectoryWriter,
    agent_turns,
    from_hf_row,
    load_paper_offline,
    make_record,
    parse_llama3_prompt,
    read_trajectories,
    to_hf_dataset,
    write_jsonl_atomic,
)

PAPER = Path(__file__).parent / "fixtures" / "paper_offline_sample.jsonl"
TASK = {"problem_description": "Write double(x) for me.", "ground_truth": "def double(x):\n    return 2 * x\n",
        "test_cases": {"test1": "double(1)", "test2": "double(-3)"}}
MESSAGES = [
    {"role": "user", "content": "Write double(x) for me."},
    {"role": "assistant", "content": "Let me think. OUTPUT: Should negative numbers work too?"},
    {"role": "user", "content": "Yes, any integer."},
    {"role": "assistant", "content": "I WANT TO ANSWER:\n```python\ndef double(x):\n    return 2 * x\n```"},
]


def _record(i: int = 0, reward: float = 1.0) -> dict:
    return make_record(TASK, MESSAGES, answer="```python\ndef double(x):\n    return 2 * x\n```", reward=reward,
                       success=reward == 1.0, meta={"episode_id": f"{i}:0", "system_prompt": "SYS"})


def test_record_has_the_official_shape():
    rec = _record()
    assert set(OFFICIAL_KEYS) <= set(rec) and rec["success"] is True
    hist = rec["dialogue_history"]
    assert [t["role"] for t in hist] == ["user", "assistant", "user", "assistant"]
    assert hist[0] == {"role": "user", "content": "Write double(x) for me."}
    # agent turns: raw text in output, the protocol's view in content (thought removed / answer only)
    assert hist[1]["output"] == MESSAGES[1]["content"]
    assert hist[1]["content"] == "Should negative numbers work too?"
    assert hist[3]["content"].startswith("```python") and hist[3]["output"].startswith("I WANT TO ANSWER:")
    # same keys as the official sample layout, all JSON-serialisable
    json.loads(json.dumps(rec))


def test_agent_turns_rebuild_the_prompts_the_agent_saw():
    turns = list(agent_turns(_record()))
    assert len(turns) == 2
    msgs, out = turns[1]
    assert msgs[0] == {"role": "system", "content": "SYS"}
    assert msgs[2] == {"role": "assistant", "content": MESSAGES[1]["content"]}  # raw own turn
    assert msgs[-1] == {"role": "user", "content": "Yes, any integer."}
    assert out == MESSAGES[3]["content"]


def test_validation_names_the_problem():
    bad = _record()
    del bad["answer"]
    from sweet_agent.trajectories import validate_record

    with pytest.raises(TrajectoryFormatError, match="missing 'answer'"):
        validate_record(bad)
    with pytest.raises(TrajectoryFormatError, match="role"):
        make_record(TASK, [{"role": "robot", "content": "x"}], answer="", reward=0, success=False)


def test_writer_refuses_to_clobber_and_locks(tmp_path):
    path = tmp_path / "t.jsonl"
    with TrajectoryWriter(path) as w:
        w.write(_record(0))
        with pytest.raises(RuntimeError, match="another process"):
            TrajectoryWriter(path, resume=True)
    with pytest.raises(FileExistsError, match="--resume"):
        TrajectoryWriter(path)
    with TrajectoryWriter(path, overwrite=True) as w:
        assert w.records_on_disk == 0
    assert path.read_text() == ""


def test_resume_cuts_a_torn_last_line_and_reports_done_ids(tmp_path):
    path = tmp_path / "t.jsonl"
    with TrajectoryWriter(path) as w:
        for i in range(3):
            w.write(_record(i))
    whole = path.read_bytes()
    with open(path, "ab") as fh:  # a write interrupted half-way
        fh.write(json.dumps(_record(3)).encode()[:57])
    # readers skip the torn tail ...
    assert [r["meta"]["episode_id"] for r in read_trajectories(path)] == ["0:0", "1:0", "2:0"]
    # ... and resuming cuts it off before appending
    with TrajectoryWriter(path, resume=True) as w:
        assert set(w.done) == {"0:0", "1:0", "2:0"} and w.torn_bytes == 57
        assert path.read_bytes() == whole
        w.write(_record(3))
    assert [r["meta"]["episode_id"] for r in read_trajectories(path)] == ["0:0", "1:0", "2:0", "3:0"]


def test_damage_in_the_middle_is_an_error_not_silently_dropped(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [json.dumps(_record(0)), "{not json", json.dumps(_record(1))]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryFormatError, match=":2: not valid JSON"):
        read_trajectories(path)
    with pytest.raises(TrajectoryFormatError, match="damaged in the middle"):
        TrajectoryWriter(path, resume=True)


def test_appends_survive_a_killed_writer(tmp_path):
    """A process killed right after write() returns leaves every written record readable."""
    path = tmp_path / "t.jsonl"
    code = (
        "import os, sys\n"
        "from tests.agent.test_trajectories import _record\n"
        "from sweet_agent.trajectories import TrajectoryWriter\n"
        f"w = TrajectoryWriter({str(path)!r})\n"
        "for i in range(4): w.write(_record(i))\n"
        "os._exit(9)  # no close(), no flush at exit\n"
    )
    res = subprocess.run([sys.executable, "-c", code], check=False, cwd=Path(__file__).parents[2], capture_output=True)
    assert res.returncode == 9, res.stderr.decode()
    assert len(read_trajectories(path)) == 4


def test_hf_dataset_round_trip_is_lossless(tmp_path):
    recs = [_record(0), _record(1, reward=0.5)] + load_paper_offline(PAPER)
    recs[1]["task"] = {**TASK, "test_cases": {"test1": "double(2)"}, "source": "extra key kept"}
    path = write_jsonl_atomic(tmp_path / "t.jsonl", recs)
    ds = to_hf_dataset(path)
    assert ds.num_rows == len(recs)
    assert ds[0]["dialogue_history"][1]["output"] == MESSAGES[1]["content"]
    assert [from_hf_row(row) for row in ds] == recs
    # and it survives the on-disk Arrow format too
    ds.save_to_disk(str(tmp_path / "ds"))
    import datasets

    again = datasets.load_from_disk(str(tmp_path / "ds"))
    assert [from_hf_row(row) for row in again] == recs


def test_atomic_write_leaves_no_temp_files(tmp_path):
    write_jsonl_atomic(tmp_path / "a.jsonl", [_record(0)])
    assert os.listdir(tmp_path) == ["a.jsonl"]


def test_parse_llama3_prompt_recovers_clean_messages():
    text = ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\nBe helpful.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi\nthere"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nQ?<|eot_id|><|start_header_id|>user"
            "<|end_header_id|>\n\nA.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
    assert parse_llama3_prompt(text) == [
        {"role": "system", "content": "Be helpful."}, {"role": "user", "content": "Hi\nthere"},
        {"role": "assistant", "content": "Q?"}, {"role": "user", "content": "A."}]
    with pytest.raises(TrajectoryFormatError, match="Llama-3"):
        parse_llama3_prompt("plain text")


def test_paper_file_loader():
    recs = load_paper_offline(PAPER)
    assert len(recs) == 6
    # 2 tasks x 3 samples in consecutive blocks -> sample numbers per task
    assert [r["meta"]["sample"] for r in recs] == [0, 0, 1, 1, 2, 2]
    first = recs[0]
    assert first["meta"]["system_prompt"].startswith("You help a person write a Python function")
    assert "Cutting Knowledge" not in first["meta"]["system_prompt"]
    for rec in recs:
        for turn in rec["dialogue_history"]:
            assert "input" not in turn and "<|" not in turn["content"]
            if turn["role"] == "assistant":
                assert all("<|" not in m["content"] for m in turn["prompt_messages"])
        # the recovered prompts agree with the dialogue: turn t sees system + the history before it
        hist = rec["dialogue_history"]
        for (msgs, out), idx in zip(agent_turns(rec), [i for i, t in enumerate(hist) if t["role"] == "assistant"]):
            assert msgs[0]["role"] == "system"
            assert [m["content"] for m in msgs[1:]] == [t["content"] for t in hist[:idx]]
            assert out == hist[idx]["output"]
    assert recs[0]["success"] is True and recs[2]["success"] is False


def test_writer_keeps_a_record_holding_a_lone_surrogate(tmp_path):
    """Any str is a valid turn: a record quoting one (a lone surrogate is not UTF-8) is written as a
    \\uXXXX escape and reads back to the same string, instead of failing the write."""
    from sweet_agent.trajectories import TrajectoryWriter, read_trajectories

    task = {"problem_description": "Write f(x).", "ground_truth": "def f(x):\n    return x\n",
            "test_cases": {"test1": "f(1)"}}
    turn = "What is the rate \ud800?"
    rec = {"task": task, "dialogue_history": [{"role": "user", "content": "Write f(x)."},
                                              {"role": "assistant", "content": turn}],
           "answer": "", "reward": 0.0}
    path = tmp_path / "t.jsonl"
    with TrajectoryWriter(path) as w:
        w.write(rec)
    assert "\\ud800" in path.read_text(encoding="utf-8")
    assert list(read_trajectories(path))[0]["dialogue_history"][1]["content"] == turn
