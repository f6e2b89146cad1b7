"""`train-actor --pair_labels monte-carlo`: step pairs labelled by the Monte-Carlo values
themselves (the oracle-credit actor), ordered by value, trained end to end on the tiny model."""

from __future__ import annotations

import json

import pytest
from mc_fixtures import FULL, HALF, QUESTION, ZERO, ScriptedPolicy, offline_record

from sweet_agent.actor import mc_values as MC
from sweet_agent.cli import main
from tests.training.conftest import make_task

COMMON = ["--max-steps", "2", "--batch-size", "2", "--learning-rate", "1e-3", "--max-length", "256"]


@pytest.fixture(scope="module")
def values_file(tmp_path_factory):
    """Both agent turns of one offline trajectory, 4 candidates each: FULL (1.0), HALF (0.5) and
    ZERO (0.0) are graded directly; QUESTION is completed 4 times by a script that answers
    FULL, FULL, FULL, ZERO: 0.75."""
    record = offline_record(make_task(1), [QUESTION, FULL])
    path = tmp_path_factory.mktemp("mc") / "values.jsonl"
    policy = ScriptedPolicy([QUESTION, FULL, HALF, ZERO], turns=[FULL, FULL, FULL, ZERO])
    MC.build_mc_values([record], policy, MC.MCConfig(num_candidates=4, rollouts_per_candidate=4, concurrency=4),
                       output=path)
    return path


VALUE = {FULL: 1.0, QUESTION: 0.75, HALF: 0.5, ZERO: 0.0}


def test_pairs_are_ordered_by_monte_carlo_value(values_file):
    rows, _ = MC.read_values_file(values_file)
    assert [{c["text"]: c["mc_value"] for c in r["candidates"]} for r in rows] == [VALUE, VALUE]
    pairs, counts = MC.monte_carlo_pairs(rows, pairs_per_turn=4, seed=0)
    assert counts == {"turns": 2, "turns_without_pair": 0, "pairs": 8}
    for turn in (0, 1):
        got = {(p["chosen"][0]["content"], p["rejected"][0]["content"]) for p in pairs if p["turn"] == turn}
        assert got == {(c, r) for c in (FULL, QUESTION) for r in (HALF, ZERO)}  # top half against bottom half
    for p in pairs:
        assert p["chosen_score"] == VALUE[p["chosen"][0]["content"]] > p["rejected_score"] == VALUE[
            p["rejected"][0]["content"]]
        assert p["pair_labels"] == "monte-carlo" and p["prompt"] == rows[p["turn"]]["prompt"]
    # fewer pairs per turn are drawn from the same top x bottom options; equal values never pair
    two, _ = MC.monte_carlo_pairs(rows, pairs_per_turn=2, seed=1)
    assert len(two) == 4 and all(p["chosen_score"] > p["rejected_score"] for p in two)
    tied = [dict(rows[0], candidates=[dict(c, mc_value=0.5) for c in rows[0]["candidates"]])]
    assert MC.monte_carlo_pairs(tied, 4)[1] == {"turns": 1, "turns_without_pair": 1, "pairs": 0}


def test_oracle_credit_actor_trains_end_to_end(values_file, tmp_path, tiny_model_dir, capsys):
    from safetensors.torch import load_file

    out, pairs = tmp_path / "actor", tmp_path / "pairs.jsonl"
    assert main(["train-actor", "--pair_labels", "monte-carlo", "--mc_values", str(values_file),
                 "--model_name_or_path", str(tiny_model_dir), "--output-dir", str(out), "--pairs-out", str(pairs),
                 "--pairs_per_turn", "4", "--lora-r", "4", *COMMON]) == 0
    assert "8 step pairs labelled by Monte-Carlo values" in capsys.readouterr().out
    rows = [json.loads(x) for x in pairs.read_text().splitlines()]
    assert len(rows) == 8 and all(r["chosen_score"] > r["rejected_score"] for r in rows)
    meta = json.loads((tmp_path / "pairs.jsonl.meta.json").read_text())
    assert meta["settings"]["pair_labels"] == "monte-carlo" and meta["counts"]["pairs"] == 8
    base, trained = load_file(str(tiny_model_dir / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert max((trained[k] - base[k]).abs().max().item() for k in base) > 1e-6  # the policy moved


def test_monte_carlo_labels_need_a_values_file(tmp_path, tiny_model_dir, values_file):
    argv = ["train-actor", "--pair_labels", "monte-carlo", "--model_name_or_path", str(tiny_model_dir),
            "--output-dir", str(tmp_path / "a"), *COMMON]
    with pytest.raises(SystemExit, match="takes its pairs from --mc_values"):
        main(argv)
    with pytest.raises(SystemExit, match="not found"):
        main([*argv, "--mc_values", str(tmp_path / "missing.jsonl")])
    with pytest.raises(SystemExit, match="with no --critic"):
        main([*argv, "--mc_values", str(values_file), "--critic", str(tmp_path)])
