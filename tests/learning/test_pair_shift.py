"""benchmarks/pair_shift.py: how a trained actor moved its own pairs' log-probabilities, by kind of
turn. A tiny model trained with step-level DPO on question-over-answer pairs must widen the
margin of those pairs; the same model as policy and base shifts nothing; bad input is one line."""

from __future__ import annotations

import json

import pytest

from sweet_agent.cli import main as sweet_main
from tests.benchmark_modules import load_benchmark
from tests.training.tiny_model import save_tiny

Q = [{"role": "assistant", "content": "What rate should I use?"}]
A = [{"role": "assistant", "content": "I WANT TO ANSWER: def f(x): return x"}]
S = [{"role": "assistant", "content": "Here is my plan for the function."}]


@pytest.fixture(scope="module")
def shift():
    return load_benchmark("pair_shift")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny(tmp_path_factory.mktemp("pair-shift") / "model", seed=0)


def _pairs(path):
    rows = [{"prompt": [{"role": "user", "content": f"Write f{i}(x) for my shop."}], "chosen": Q, "rejected": A,
             "agent_turn": 1} for i in range(4)]
    rows.append({"prompt": [{"role": "user", "content": "Write g(x)."}, *Q, {"role": "user", "content": "5 %"}],
                 "chosen": A, "rejected": S, "agent_turn": 2})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_dpo_trained_actor_widens_its_pairs_and_the_table_says_by_kind(shift, tiny, tmp_path, capsys):
    pairs = _pairs(tmp_path / "pairs.jsonl")
    actor = tmp_path / "actor"
    assert sweet_main(["train-actor", "--pairs_in", str(pairs), "--model_name_or_path", str(tiny),
                       "--output_dir", str(actor), "--num_train_epochs", "4", "--per_device_train_batch_size", "2",
                       "--learning_rate", "5e-3", "--max_length", "256", "--report_to", "none",
                       "--save_strategy", "no", "--lora-r", "4", "--merge_adapter", "false"]) == 0
    capsys.readouterr()
    out = tmp_path / "shift.json"
    assert shift.main(["--pairs", str(pairs), "--policy", str(actor), "--base", str(tiny), "--out", str(out),
                       "--greedy"]) == 0
    printed = capsys.readouterr().out
    s = json.loads(out.read_text())
    rows = {(r["agent_turns"], r["side"], r["kind"]): r for r in s["rows"]}
    assert set(rows) == {("1", "chosen", "question"), ("1", "rejected", "answer"),
                         ("2+", "chosen", "answer"), ("2+", "rejected", "other")}
    # the same question text in 4 prompts: 4 distinct candidates (a turn is its prompt and its text)
    assert rows[("1", "chosen", "question")]["candidates"] == 4
    # DPO widened every first-turn question-over-answer margin
    qa = s["question_vs_answer"]["1"]
    assert (qa["pairs"], qa["chose_question"], qa["margin_grew"]) == (4, 4, 4)
    assert qa["question_likelier_policy"] >= qa["question_likelier_base"]
    assert rows[("1", "chosen", "question")]["mean_shift"] > rows[("1", "rejected", "answer")]["mean_shift"]
    assert "| 1 | chosen | question | 4 |" in printed
    # --greedy: one greedy turn per distinct prompt (4 at agent turn 1, 1 later), by each model
    for model in ("base", "policy"):
        assert {g: sum(k.values()) for g, k in s["greedy"][model].items()} == {"1": 4, "2+": 1}
    assert "The greedy turn at the pairs' distinct prompts" in printed
    assert "agent turns 1: 4 pairs, the question chosen in 4, the margin (chosen − rejected) grew in 4" in printed

    # only the first agent turn, and the model against itself: nothing moves
    assert shift.main(["--pairs", str(pairs), "--policy", str(tiny), "--base", str(tiny), "--agent-turns", "1",
                       "--out", str(out)]) == 0
    s = json.loads(out.read_text())
    assert {r["agent_turns"] for r in s["rows"]} == {"1"} and s["pairs"] == 4 and s["greedy"] is None
    assert s["command"].startswith("python benchmarks/pair_shift.py --pairs ") and s["command"].endswith(
        "--agent-turns 1 --out " + str(out))  # the file says what made it
    assert all(abs(r["mean_shift"]) < 1e-4 and r["rose"] == 0 for r in s["rows"])
    qa = s["question_vs_answer"]["1"]
    assert qa["margin_grew"] == 0 and qa["question_likelier_base"] == qa["question_likelier_policy"]


def test_a_file_that_is_not_step_pairs_is_refused_in_one_line(shift, tmp_path, capsys):
    bad = tmp_path / "traj.jsonl"
    bad.write_text(json.dumps({"dialogue_history": []}) + "\n")
    assert shift.main(["--pairs", str(bad), "--policy", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "lacks prompt/chosen/rejected or an integer agent_turn" in err and "step-pair file" in err
    assert shift.main(["--pairs", str(_pairs(tmp_path / "p.jsonl")), "--policy", "x", "--agent-turns", "3"]) == 2
    assert "no pair at agent turns 3" in capsys.readouterr().err


def test_the_question_counts_as_likelier_by_its_own_log_prob_whichever_side_it_is_on(shift):
    """Hand-set log-probs (policy, base): one pair chooses the question, one the answer, one ties."""
    def pair(p, chosen, rejected):
        return {"prompt": [{"role": "user", "content": p}], "chosen": chosen, "rejected": rejected, "agent_turn": 1}

    pairs = [pair("a", Q, A), pair("b", A, Q), pair("c", A, Q)]
    key = {p: json.dumps([{"role": "user", "content": p}], sort_keys=True) for p in "abc"}
    q, a = Q[0]["content"], A[0]["content"]
    logps = {(key["a"], q): (-5.0, -20.0), (key["a"], a): (-30.0, -10.0),   # question: less likely -> likelier
             (key["b"], a): (-8.0, -9.0), (key["b"], q): (-3.0, -12.0),     # answer chosen; question likelier, then more
             (key["c"], a): (-7.0, -7.0), (key["c"], q): (-7.0, -7.0)}      # a tie is nobody's
    s = shift.summarize(pairs, logps)["question_vs_answer"]["1"]
    assert s == {"pairs": 3, "chose_question": 1, "margin_grew": 1,
                 "question_likelier_base": 0, "question_likelier_policy": 2}
