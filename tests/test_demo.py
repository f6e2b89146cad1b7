"""``make demo``'s comparison of an untrained and a trained policy (examples/demo.py part 5),
played for real (held-out collab tasks, offline simulator, sandboxed grading, the viewer) with a tiny
random model and a LoRA adapter on top of it standing in for the 0.5B model and the shipped
SWEET-RL adapter."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from sweet_agent.trajectories import record_task_extras

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "training"))


@pytest.fixture(scope="module")
def tiny_pair(tmp_path_factory):
    from peft import LoraConfig, get_peft_model
    from tiny_model import build_tiny_model, save_tiny

    tmp = tmp_path_factory.mktemp("demo")
    base = save_tiny(tmp / "base")
    from transformers import AutoTokenizer

    model = get_peft_model(build_tiny_model(AutoTokenizer.from_pretrained(base), seed=0),
                           LoraConfig(r=2, target_modules="all-linear", init_lora_weights=False))
    model.peft_config["default"].base_model_name_or_path = str(base)
    model.save_pretrained(tmp / "adapter")
    (tmp / "adapter" / "PROVENANCE.json").write_text(json.dumps({"method": "SWEET-RL", "summary": "test adapter"}))
    return base, tmp / "adapter"


def test_demo_compares_untrained_and_trained_on_the_same_held_out_tasks(tiny_pair, tmp_path, capsys):
    from examples.demo import compare_trained

    base, adapter = tiny_pair
    args = argparse.Namespace(policy=str(base), trained=str(adapter), trained_tasks=2, trained_turns=5)
    assert compare_trained(args, tmp_path) == 0
    out = capsys.readouterr().out
    assert "untrained vs" in out and "(SWEET-RL, test adapter)" in out
    assert "greedy, up to 3 agent turns, untrained" in out  # --trained-turns above the run's limit: the run's
    runs = {}
    for name in ("untrained", "trained"):
        recs = [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        runs[name] = recs
        assert sorted(r["meta"]["task_index"] for r in recs) == [1000, 1001]
        assert all(record_task_extras(r)["source"] == "collab:test" and r["meta"]["seed"] is not None for r in recs)
        assert all(r["meta"]["max_turns"] == 3 for r in recs)  # no run settings in its provenance: v1's episodes
        assert f"[demo] {name:>9}: asked a question in " in out
    assert runs["untrained"][0]["meta"]["policy"] != runs["trained"][0]["meta"]["policy"]
    assert "  1000  " in out and "  1001  " in out  # the side-by-side table, one row per task
    index = (tmp_path / "viewer" / "index.html")
    assert index.is_file() and "paired comparison" in out


def test_demo_plays_the_tasks_and_turn_limit_of_the_run_that_trained_the_adapter(tiny_pair, tmp_path, capsys):
    """An adapter from a run on another family (protocol v2: collab-multi, 6 agent turns) is shown
    on that run's held-out tasks, first task and seed, not on collab:test; ``--trained-turns`` below
    the run's turn limit bounds the episodes, and the demo says the run allowed more."""
    import shutil

    from examples.demo import compare_trained

    base, adapter = tiny_pair
    mine = shutil.copytree(adapter, tmp_path / "adapter")
    settings = {"test_tasks": "collab-multi:test", "test_start": 1005, "max_turns": 4, "max_new_tokens": 16,
                "eval_seed": 7, "val_tasks": "collab-multi:val"}
    (mine / "PROVENANCE.json").write_text(json.dumps({"method": "SWEET-RL", "summary": "v2", "settings": settings}))
    args = argparse.Namespace(policy=str(base), trained=str(mine), trained_tasks=2, trained_turns=2)
    assert compare_trained(args, tmp_path / "out") == 0
    out = capsys.readouterr().out
    assert ("2 held-out collab-multi:test tasks (indices 1005-1006), greedy, up to 2 agent turns "
            "(its run allowed 4; --trained-turns 4 plays them all)") in out
    for name in ("untrained", "trained"):
        recs = [json.loads(x) for x in (tmp_path / "out" / f"{name}.jsonl").read_text().splitlines()]
        assert sorted(r["meta"]["task_index"] for r in recs) == [1005, 1006]
        assert all(record_task_extras(r)["source"] == "collab-multi:test" and r["meta"]["max_turns"] == 2
                   and r["meta"]["turns"] <= 2 for r in recs)


def test_demo_falls_back_to_v1_episodes_when_the_run_settings_cannot_be_played(capsys):
    from examples.demo import V1_EPISODES, _run_episodes

    v2 = {"test_tasks": "collab-multi:test", "test_start": 1000, "max_turns": 6, "max_new_tokens": 128, "eval_seed": 1000}
    assert _run_episodes(v2, 4) == v2 and _run_episodes({}, 4) == V1_EPISODES
    assert _run_episodes({"max_turns": 6}, 4) == dict(V1_EPISODES, max_turns=6)  # what it names, the rest v1's
    assert capsys.readouterr().err == ""
    for bad, why in (({"test_tasks": "embedded:test"}, "fewer than 1004 tasks"),  # 30 tasks, first at 1000
                     ({"test_tasks": "no-such-family:test"}, ""), (dict(v2, max_turns=None), "non-integer"),
                     (dict(v2, test_start="1000"), "non-integer")):
        assert _run_episodes(bad, 4) == V1_EPISODES
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot be played here" in err[0] and why in err[0]


def test_demo_refuses_a_missing_trained_path(tmp_path, capsys):
    from examples.demo import compare_trained

    args = argparse.Namespace(policy="default", trained=str(tmp_path / "nope"), trained_tasks=2)
    assert compare_trained(args, tmp_path) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such checkpoint or adapter" in err[0]


def test_demo_turn_limit_defaults_to_two_and_refuses_below_one(capsys):
    from examples.demo import main

    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--trained-turns TRAINED_TURNS agent-turn limit" in help_text and "(default: 2)" in help_text
    with pytest.raises(SystemExit) as exc:
        main(["--trained-turns", "0"])
    assert exc.value.code == 2
    assert "--trained-turns 0: the comparison needs at least 1 agent turn" in capsys.readouterr().err
