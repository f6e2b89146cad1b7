"""One measurement of an episode: the viewer, `sweet-agent evaluate` and the learning benchmark agree.

The definitions live in :mod:`sweet_agent.evaluation.metrics` (questions, turns, failed episodes) and
:func:`colbench_gym.tasks.records.record_success` (success); these tests pin them and check that
each report reads its numbers from there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from colbench_gym.tasks.records import record_success
from sweet_agent.evaluation.metrics import (
    agent_turn_kinds,
    bootstrap_ci,
    episode_metrics,
    metric_values,
    pair_turn_kind,
    paired_difference,
    summarize_episodes,
)
from sweet_agent.evaluation.report import summarize
from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
TASK = {"problem_description": "Write fee(x) for my shop.", "ground_truth": "def fee(x):\n    return x + 1\n",
        "test_cases": {"test1": "fee(1)", "test2": "fee(2)"}}


def _rec(turns: list[str], reward: float, success: bool | None, eid: str, **extra) -> dict:
    history = []
    for i, out in enumerate(turns):
        history.append({"role": "user", "content": "Write fee(x) for my shop." if i == 0 else "It adds one."})
        answer = out.split("I WANT TO ANSWER:", 1)
        history.append({"role": "assistant", "content": answer[1].strip() if len(answer) == 2 else out, "output": out})
    rec = {"task": TASK, "dialogue_history": history, "answer": turns[-1], "reward": reward,
           "meta": {"episode_id": eid, "sample": 0, "task_index": int(eid.split(":")[0])}}
    if success is not None:
        rec["success"] = success
    return {**rec, **extra}


ASK_THEN_ANSWER = ["What should it add?", "I WANT TO ANSWER: def fee(x):\n    return x + 1  # why not?"]
ASK_UNTIL_LIMIT = ["What should it add?", "I will write it now.", "Really, what should it add?"]


def test_a_question_is_a_non_answer_turn_with_a_question_mark_wherever_it_stands():
    assert agent_turn_kinds(_rec(ASK_THEN_ANSWER, 1.0, True, "0:0")) == ["question", "answer"]
    # the last turn of an episode that hit the turn limit is a question like any other
    assert agent_turn_kinds(_rec(ASK_UNTIL_LIMIT, 0.0, False, "1:0")) == ["question", "statement", "question"]
    m = episode_metrics(_rec(ASK_UNTIL_LIMIT, 0.0, False, "1:0"))
    assert (m.turns, m.questions, m.success, m.tests_passed) == (3, 2, 0.0, 0.0)


def test_a_step_pair_side_is_a_question_an_answer_or_other_by_its_first_assistant_turn():
    def side(text: str) -> list[dict]:
        return [{"role": "assistant", "content": text}, {"role": "user", "content": "ok?"}]

    assert pair_turn_kind(side("OUTPUT: Which currency do you use?")) == "question"
    assert pair_turn_kind(side("I WANT TO ANSWER: def fee(x): return x + 1")) == "answer"
    # a code draft without the marker and a plain statement are both "other", like a frontend draft
    assert pair_turn_kind(side("OUTPUT: def fee(x): return x + 1")) == "other"
    assert pair_turn_kind(side("OUTPUT: <html><body>hi</body></html>")) == "other"
    # the side's first assistant turn decides, whatever follows it
    assert pair_turn_kind(side("OUTPUT: What rate?") + side("I WANT TO ANSWER: def fee(x): return x")) == "question"


def test_one_success_rule_with_an_optional_threshold():
    assert record_success({"success": False, "reward": 1.0}) is False  # a stored verdict wins
    assert record_success({"reward": 1.0}) is True and record_success({"reward": 0.99}) is False
    assert record_success({"reward": None}) is None and record_success({}) is None
    # a threshold judges the reward alone (partial-credit training sets)
    assert record_success({"success": False, "reward": 0.8}, threshold=0.75) is True
    assert record_success({"success": True, "reward": 0.5}, threshold=0.75) is False
    assert record_success({"success": True}, threshold=0.75) is None
    assert episode_metrics({"task": TASK, "dialogue_history": [], "reward": 1.0}).success == 1.0


def test_a_record_of_no_kind_is_an_error_never_a_frontend_episode():
    from colbench_gym.tasks import TaskFormatError
    from sweet_agent.evaluation.metrics import record_kind

    page = {"problem_description": "A page.", "ground_truth": "<html><body>Hi</body></html>"}
    assert record_kind({"task": TASK}) == "backend" and record_kind({"task": page}) == "frontend"
    for task in ({"problem_description": "x", "ground_truth": "plain text"}, None):
        with pytest.raises(TaskFormatError, match="trajectory record's task"):
            episode_metrics({"task": task, "dialogue_history": [], "reward": 1.0})


def test_failed_episodes_are_left_out_of_every_metric():
    recs = [_rec(ASK_THEN_ANSWER, 1.0, True, "0:0"), _rec(["?"], 0.0, None, "1:0", error="endpoint gave up")]
    eps = [episode_metrics(r, i) for i, r in enumerate(recs)]
    assert [e.failed for e in eps] == [False, True]
    assert metric_values(eps, "questions") == [1.0]
    with pytest.raises(ValueError, match="unknown metric"):
        metric_values(eps, "question")
    s = summarize(recs)
    assert s.infrastructure_failures == 1 and s.success == 1.0 and s.mean_turns == 2.0
    assert s.end_reasons == {"unknown_error": 1, "unrecorded": 1}  # the old record shapes say no more


def _load_bench():
    return load_benchmark("bench_learning")


def test_evaluate_viewer_and_learning_benchmark_report_the_same_numbers(tmp_path):
    zero = [_rec(["I WANT TO ANSWER: def fee(x):\n    return x"], r, None, f"{i}:0") for i, r in enumerate((0.0, 0.5, 0.0))]
    ours = [_rec(ASK_THEN_ANSWER, 1.0, True, "0:0"), _rec(ASK_UNTIL_LIMIT, 0.0, False, "1:0"),
            _rec(ASK_THEN_ANSWER, 0.5, False, "2:0")]
    eps = [episode_metrics(r, i) for i, r in enumerate(ours)]
    viewer = summarize_episodes(eps)
    report = summarize(ours)
    assert report.success == viewer["success"].mean == pytest.approx(1 / 3)
    assert report.tests_passed == viewer["tests_passed"].mean == pytest.approx(0.5)
    assert report.mean_turns == viewer["turns"].mean == pytest.approx(7 / 3)
    assert viewer["questions"].mean == pytest.approx(4 / 3)

    run = tmp_path / "run"
    (run / "test").mkdir(parents=True)
    for name, recs in (("zero-shot", zero), ("rft-s0", ours)):  # one training seed
        (run / "test" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    rows = {r["method"]: r for r in _load_bench().method_table(run, "test")}
    row = rows["rft"]
    for key, metric in (("success", "success"), ("tests", "tests_passed"), ("turns", "turns"), ("questions", "questions")):
        est = viewer[metric]  # one seed: the hierarchical interval is the ordinary bootstrap, resample for resample
        assert row[key]["mean"] == est.mean and row[key]["ci95"] == [est.low, est.high], key
    diff = paired_difference({f"{i}:0": episode_metrics(r) for i, r in enumerate(zero)},
                             {f"{i}:0": e for i, e in enumerate(eps)}, "tests_passed", seed=1)
    got = row["tests"]["vs"]["zero-shot"]
    assert got["tasks"] == 3 and got["mean"] == pytest.approx(diff.mean)
    assert diff.mean == pytest.approx((1.0 + 0.0 + 0.5 - 0.5) / 3)
    assert row["asked_rate"] == 1.0 and rows["zero-shot"]["questions"]["mean"] == 0.0


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    xs = [0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75]
    a, b = bootstrap_ci(xs, seed=3), bootstrap_ci(xs, seed=3)
    assert a == b and a.low <= a.mean <= a.high and a.n == 7 and a.mean == sum(xs) / len(xs)
    assert bootstrap_ci([]).mean is None and bootstrap_ci([None, 1.0]).n == 1
