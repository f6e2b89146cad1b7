"""`sweet-agent export --format release|paper-offline`: the release's exact shapes and lossless round trips."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sweet_agent.interop.release import check_release_assumptions, release_turn_text
from tests.interop.conftest import FIX, read_jsonl


def cli(main, *argv: str) -> subprocess.CompletedProcess:
    """Run a CLI in-process (one interpreter: the ML imports are paid once), output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return subprocess.CompletedProcess(argv, rc, out.getvalue(), err.getvalue())


def export(src: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    from sweet_agent.cli import main

    return cli(main, "export", str(src), "--output", str(out), *extra)


def release_order_assertion(records: list[dict], k: int) -> None:
    """What the release's evaluators assert before anything else (our own restatement)."""
    n_tasks = len(records) // k
    for i in range(len(records) - n_tasks):
        assert records[i]["task"]["problem_description"] == records[i + n_tasks]["task"]["problem_description"]


def test_turn_text_follows_the_release():
    assert release_turn_text("THOUGHT: x\nOUTPUT: hi OUTPUT: again") == (" hi ", "THOUGHT: x\nOUTPUT: hi ")
    assert release_turn_text("plain") == ("plain", "plain")


def test_backend_export_has_the_release_shapes(tmp_path):
    src = shutil.copy(FIX / "ours_backend_k2.jsonl", tmp_path / "ours.jsonl")
    out = tmp_path / "release.jsonl"
    r = export(src, out, "--format", "release")
    assert r.returncode == 0, r.stderr
    assert "2 tasks x k=2, record i and i + 2 the same task" in r.stdout
    recs = read_jsonl(out)
    ours = read_jsonl(src)
    # written in finishing order (1:1, 0:0, 1:0, 0:1); exported in k-block order, tasks by index
    assert [x["meta"]["episode_id"] for x in recs] == ["0:0", "1:0", "0:1", "1:1"]
    release_order_assertion(recs, k=2)
    assert check_release_assumptions(recs) == []
    for rec in recs:
        turns = [t for t in rec["dialogue_history"] if t["role"] == "assistant"]
        first, last = turns
        # `input` is the policy's (Qwen) chat template with the system prompt and the earlier dialogue
        assert first["input"].startswith("<|im_start|>system\n") and first["input"].endswith("<|im_start|>assistant\n")
        assert rec["task"]["problem_description"] in first["input"]
        assert first["output"] in last["input"] and "Keep it simple." in last["input"]
        assert first["content"] == " Any special cases?"  # text after OUTPUT:
        assert "prompt_messages" not in first
    # nothing is lost: graded keys and meta ride along
    assert sorted(x["tests_passed"] for x in recs) == sorted(x["tests_passed"] for x in ours)
    assert all(x["reward"] is not None and x["meta"]["policy"] for x in recs)


def test_unequal_sample_counts_are_refused_or_dropped(tmp_path):
    src = shutil.copy(FIX / "ours_backend_uneven.jsonl", tmp_path / "uneven.jsonl")
    r = export(src, tmp_path / "o.jsonl", "--format", "release")
    assert r.returncode == 2
    assert r.stderr.strip() == ("sweet-agent export: error: tasks have unequal sample counts (1 tasks x 2, 1 tasks x 1); the release's "
                                "scripts need k samples of every task: pass --drop-incomplete to keep only the "
                                "tasks with 2")
    assert not (tmp_path / "o.jsonl").exists()
    r = export(src, tmp_path / "o.jsonl", "--format", "release", "--drop-incomplete")
    assert r.returncode == 0, r.stderr
    assert "dropped 1 tasks with fewer than 2 samples" in r.stdout and "I sell tickets" in r.stdout
    recs = read_jsonl(tmp_path / "o.jsonl")
    assert len(recs) == 2 and all("is_even" in x["task"]["problem_description"] for x in recs)


def test_tokenizer_is_named_when_the_policy_is_not_known(tmp_path):
    recs = read_jsonl(FIX / "ours_backend_k2.jsonl")
    for x in recs:
        del x["meta"]["policy"]
    src = tmp_path / "nopolicy.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in recs))
    r = export(src, tmp_path / "o.jsonl", "--format", "release")
    assert r.returncode == 2 and "--tokenizer" in r.stderr
    r = export(src, tmp_path / "o.jsonl", "--format", "release", "--tokenizer", "default")
    assert r.returncode == 0, r.stderr
    assert read_jsonl(tmp_path / "o.jsonl")[0]["dialogue_history"][1]["input"].startswith("<|im_start|>system")


@pytest.mark.browser
def test_frontend_export_renders_answers_to_png_files(tmp_path):
    src = shutil.copy(FIX / "ours_frontend_k2.jsonl", tmp_path / "ours_fe.jsonl")
    out = tmp_path / "exp" / "release_fe.jsonl"
    out.parent.mkdir()
    r = export(src, out, "--format", "release")
    assert r.returncode == 0, r.stderr
    recs = read_jsonl(out)
    assert recs[0]["answer"].endswith(".png") and os.path.isfile(recs[0]["answer"])
    assert Path(recs[0]["answer"]).parent == (tmp_path / "exp" / "release_fe_images").resolve()
    assert recs[1]["answer"] == "No answer" and recs[1]["answer_html"] == "sorry"
    assert recs[0]["answer_html"].startswith("```html")  # the way back keeps the page
    assert check_release_assumptions(recs) == []
    # and our evaluator scores the exported file from its screenshots, as the release's would
    scored = tmp_path / "scored.jsonl"
    from colbench_gym.cli import main

    r = cli(main, "evaluate", "frontend", str(out), "--output", str(scored), "--scorer", "fallback", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert [x["answer_source"] for x in read_jsonl(scored)] == ["image", None]


def _answer_kept_or_rendered(src: Path, a: dict, b: dict) -> None:
    """A frontend answer on the way back: the release's PNG when the file exists (copied into the
    export's own folder, pixel for pixel: a path outside it would not be read there; no
    answer_html), else a fresh screenshot of the stored answer, whose text rides along in answer_html."""
    from PIL import Image

    kept = src.parent / a["answer"]
    if kept.is_file():
        assert Path(b["answer"]).parent.name.endswith("_images") and "answer_html" not in b
        with Image.open(b["answer"]) as copy, Image.open(kept) as original:
            assert copy.convert("RGB").tobytes() == original.convert("RGB").tobytes()
    else:
        assert b["answer"] == "No answer" or os.path.isfile(b["answer"])
        assert b["answer_html"] == a["answer"]


def test_release_file_round_trips(tmp_path, release_backend, release_frontend):
    for src in (release_backend, release_frontend):
        original = read_jsonl(src)
        assert len(original) == 4
        again = tmp_path / f"again_{src.name}"
        r = export(src, again, "--format", "release")
        assert r.returncode == 0, r.stderr
        back = read_jsonl(again)
        assert len(back) == len(original)  # every record comes back, none dropped or duplicated
        for a, b in zip(original, back, strict=True):
            if "test_cases" not in a["task"]:  # PNG paths: kept when the file exists (absolute), else re-rendered
                _answer_kept_or_rendered(src, a, b)
                a = {k: v for k, v in a.items() if k != "answer"}
                b = {k: v for k, v in b.items() if k not in ("answer", "answer_html")}
            assert a == b  # the whole record, field by field
        if "backend" in src.name:
            assert back == original  # byte-for-byte the same records
        # release -> ours (paper-offline) -> release keeps every field; ours adds meta only
        ours = tmp_path / f"ours_{src.name}"
        r = export(src, ours, "--format", "paper-offline")
        assert r.returncode == 0, r.stderr
        clean = read_jsonl(ours)
        assert len(clean) == len(original)
        assert all(t.get("prompt_messages") for x in clean for t in x["dialogue_history"] if t["role"] == "assistant")
        back2 = tmp_path / f"back_{src.name}"
        r = export(ours, back2, "--format", "release")
        assert r.returncode == 0, r.stderr
        again2 = read_jsonl(back2)
        assert len(again2) == len(original)
        for a, b in zip(original, again2, strict=True):
            assert b.pop("meta")["system_prompt"]
            b.pop("success", None)
            if "test_cases" in a["task"]:
                assert a == b
            else:
                assert a["dialogue_history"] == b["dialogue_history"] and a["reward"] == b["reward"]
                _answer_kept_or_rendered(src, a, b)
                b = {k: v for k, v in b.items() if k not in ("answer", "answer_html")}
                assert {k: v for k, v in a.items() if k != "answer"} == b  # task, dialogue, reward: all of it


def test_episodes_that_failed_for_infrastructure_reasons_are_not_exported(tmp_path):
    """The release's scripts train on every record they get: an episode whose person failed has no
    score and is left out (said on stdout); the task it leaves short then needs --drop-incomplete."""
    recs = read_jsonl(FIX / "ours_backend_k2.jsonl")
    failed = next(x for x in recs if x["meta"]["episode_id"] == "1:1")
    failed["meta"].update(end_reason="simulator_error", infrastructure_failure=True)
    failed.update(reward=None, success=None, error="simulator_error: the person's endpoint is down")
    src = tmp_path / "with_failure.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in recs))
    r = export(src, tmp_path / "o.jsonl", "--format", "release")
    assert r.returncode == 2 and "--drop-incomplete" in r.stderr
    r = export(src, tmp_path / "o.jsonl", "--format", "release", "--drop-incomplete")
    assert r.returncode == 0, r.stderr
    assert "left out 1 records of episodes that failed for infrastructure reasons" in r.stdout
    out = read_jsonl(tmp_path / "o.jsonl")
    assert [x["meta"]["episode_id"] for x in out] == ["0:0", "0:1"]
