"""Each rule has one home: task identity, the message type, the win rule and answer extraction."""

from __future__ import annotations

import pytest

from colbench_gym import protocol
from colbench_gym.evaluation import metrics
from colbench_gym.tasks.identity import task_identity

BACKEND = {"problem_description": "Fee for a gym member.", "ground_truth": "def fee(m):\n    return 10 if m else 20\n",
           "test_cases": {"a": "fee(True)", "b": "fee(False)"}}


def test_every_task_key_is_the_canonical_identity():
    from sweet_agent.evaluation.report import task_key as eval_key
    from sweet_agent.training_data.records import task_key as critic_key

    reordered = {**BACKEND, "test_cases": {"b": "fee(False)", "a": "fee(True)"}}
    assert eval_key(BACKEND) == task_identity(BACKEND) == eval_key(reordered)
    assert critic_key({"task": BACKEND}) == task_identity(BACKEND)
    # Different hidden tests are a different task for every consumer (the old keys ignored them).
    other = {**BACKEND, "test_cases": {"a": "fee(True)"}}
    assert eval_key(other) != eval_key(BACKEND) and critic_key({"task": other}) != critic_key({"task": BACKEND})


def test_one_message_type():
    from sweet_agent import prompts, trajectories
    from sweet_agent.training_data import records

    assert prompts.Messages is protocol.Messages and trajectories.Messages is protocol.Messages
    assert records.Messages is protocol.Messages
    from colbench_gym.simulators.base import Dialogue

    assert Dialogue is protocol.Messages  # the simulator's name for the same type


@pytest.mark.parametrize(("ours", "theirs", "value"), [
    (0.9, 0.8, 1.0), (0.8, 0.9, 0.0), (0.8, 0.8, 0.5),
    (0.8 + metrics.TIE_TOLERANCE / 2, 0.8, 0.5),  # render noise is a tie
    (0.8 + 3 * metrics.TIE_TOLERANCE, 0.8, 1.0),
])
def test_win_rule(ours, theirs, value):
    assert metrics.win_value(ours, theirs) == value


def test_both_evaluators_use_the_same_win_rule():
    from colbench_gym.evaluation import frontend as colbench_frontend
    from sweet_agent.evaluation.report import win_rate

    task = {"problem_description": "A page.", "ground_truth": "<html></html>"}
    near_tie = metrics.TIE_TOLERANCE / 10
    ours = [{"task": task, "reward": 0.5 + near_tie}]
    theirs = [{"task": task, "reward": 0.5}]
    assert win_rate(ours, theirs) == (0.5, 1)  # the old sweet-agent rule (==) called this a win
    assert colbench_frontend.win_value is metrics.win_value
    assert metrics.win_rate([]) is None and metrics.win_rate([(1, 0), (0, 0)]) == 0.75


def test_answer_html_extraction_lives_in_the_protocol():
    page = "<html><body><h1>Hi</h1></body></html>"
    assert protocol.extract_answer_html(f"Here it is: {page} enjoy") == page
    assert protocol.extract_answer_html("```html\n<div>bare</div>\n```").strip() == "<div>bare</div>"
    assert protocol.extract_answer_html("sorry, no page") is None


def test_one_success_rule_for_backend_records():
    from colbench_gym.tasks.records import record_success
    from sweet_agent.evaluation.report import summarize
    from sweet_agent.trajectories import clean_paper_record

    assert record_success({"success": False, "reward": 1.0}) is False  # a stored verdict wins
    assert record_success({"reward": 1.0}) is True and record_success({"reward": 0.99}) is False
    assert record_success({"reward": None}) is None
    recs = [{"task": BACKEND, "dialogue_history": [], "answer": "", "reward": r} for r in (1.0, 0.5, None)]
    assert summarize(recs).success == 0.5  # the ungraded record does not count
    paper = {"task": BACKEND, "dialogue_history": [], "answer": "", "reward": 1.0}
    assert clean_paper_record(paper)["success"] is True
