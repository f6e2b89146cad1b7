"""Two wrong answers of the offline backend simulator, found by a probe over the embedded and
generated tasks (issue 24, item 7), fixed at their root:

* "I don't know" about an input on which the reference raises ValueError: a rule such as
  ``if people < 1: raise ValueError`` covers 0 without saying "zero", so a question naming the
  value ("What if people is 0?", or the call itself) matched no fact. Rules on parameters now
  carry their condition (``Fact.guards``) and a question naming a value is answered by the first
  rule that value meets.
* "The result is rounded to a whole number" where the function returns cents (or a dict, or
  text): a rounding on the way (``total_cents = round(...)``) was passed off as the result's.
"""

from __future__ import annotations

import pytest

from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.simulators.offline_backend.phrasing import IDK
from colbench_gym.tasks.embedded import load_embedded


def _task(name: str):
    return next(t for t in load_embedded("backend", "test") if f"def {name}(" in t.ground_truth)


def _ask(task, question: str) -> str:
    sim = OfflineBackendSimulator()
    sim.reset(task, seed=0)
    return sim.respond(task, [{"role": "user", "content": task.problem_description},
                              {"role": "assistant", "content": question}])


@pytest.mark.parametrize("question", ["What if people is 0?", "What if there are 0 people?",
                                      "What if people is negative?", "What should happen for split_bill(20, 0, 'ok')?"])
def test_an_input_the_reference_rejects_is_not_answered_i_dont_know(question):
    reply = _ask(_task("split_bill"), question)
    assert not any(idk in reply for idk in IDK), reply
    assert "ValueError" in reply and "people is less than 1" in reply


def test_a_call_on_rejected_input_names_the_first_rule_that_applies():
    reply = _ask(_task("sleep_quality"), "What should happen for sleep_quality(-1, 0)?")
    assert "ValueError" in reply and "'bad'" not in reply  # the error comes first; 'bad' is never reached


@pytest.mark.parametrize("name,stored", [("split_bill", "total cents"), ("budget_status", "rate")])
def test_rounding_on_the_way_is_not_passed_off_as_the_results(name, stored):
    reply = _ask(_task(name), "Should the result be rounded? To how many decimals?")
    assert "the result is rounded" not in reply.lower(), reply
    assert f"the {stored} is rounded" in reply.lower(), reply
