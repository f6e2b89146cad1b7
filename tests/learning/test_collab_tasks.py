"""The collaboration-pays task source (``collab:train|test``): deterministic, disjoint splits, no
leaks in the request, and the offline simulator gives the decisive detail to a natural question."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401 - registers the environments
from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.tasks.collab_generator import FAMILIES, generate_collab_spec, generate_collab_task
from colbench_gym.tasks.sources import resolve_task_source

N = 120


def specs(split: str, n: int = N):
    return [generate_collab_spec(i, split) for i in range(n)]


def test_deterministic_and_every_family_in_both_splits():
    a, b = specs("train", 40), specs("train", 40)
    assert [s.source for s in a] == [s.source for s in b]
    for split in ("train", "test"):
        assert {s.family for s in specs(split)} == set(FAMILIES)


def test_splits_are_disjoint():
    train = {s.key for s in specs("train", 300)}
    test = {s.key for s in specs("test", 300)}
    assert not train & test
    assert len(test) > 100  # the held-out split is not a handful of repeats


def test_requests_hide_the_details_and_tests_exercise_the_reference():
    for s in specs("train") + specs("test"):
        assert not re.search(r"\d", s.description), s.description
        for word in s.hidden_strings:
            assert not re.search(rf"\b{re.escape(word.lower())}\b", s.description.lower()), (word, s.description)
        assert s.function_name in s.description
        assert len(s.tests) == 10 and len(set(s.tests)) == 10
        ns: dict = {}
        exec(s.source, ns)  # our own template
        outputs = [repr(eval(c, ns)) for c in s.tests]  # noqa: S307 - our own test calls
        assert len(set(outputs)) >= 2, (s.family, outputs)  # a constant answer cannot pass them all


def test_task_source_spec_and_env():
    src = resolve_task_source("collab:test", "backend")
    assert src.name == "collab:test" and src[3].problem_description == generate_collab_task(3, "test").problem_description
    with pytest.raises(ValueError, match="backend tasks only"):
        resolve_task_source("collab:train", "frontend")
    env = gym.make("ColBench-Backend-v0", tasks="collab:train", simulator="offline", max_turns=3)
    try:
        obs, info = env.reset(seed=0, options={"task_index": 0})
        assert generate_collab_task(0, "train").problem_description in obs
    finally:
        env.close()


#: The question a person would naturally be asked for each family, and what the reply must contain.
NATURAL_QUESTION = {
    "surcharge": ("What rate should I use?", lambda h: [repr(h["rate"])]),
    "per_unit_fee": ("How is the fee computed, is there a base fee?", lambda h: [repr(h["base"]), repr(h["rate"])]),
    "unit_convert": ("Which unit are your measurements in?", lambda h: [repr(h["factor"])]),
    "threshold": ("What is the cut-off value?", lambda h: [repr(h["limit"])]),
    "message": ("What exact message should it return?", lambda h: [h["template"].replace("{}", "<name>")]),
    "code_format": ("What should the code look like?", lambda h: [h["prefix"] + h["sep"], str(h["width"])]),
    "date_format": ("What date format do you want?", lambda h: [h["sep"] + "<"]),
    "zero_rule": ("What should it return when the divisor is zero?", lambda h: [str(h["value"])]),
}


def test_offline_simulator_answers_the_natural_question_with_the_decisive_detail():
    sim = OfflineBackendSimulator(seed=0)
    seen: dict[str, int] = {}
    for s in specs("train", 80) + specs("test", 80):
        question, must = NATURAL_QUESTION[s.family]
        task = s.to_task()
        sim.reset(task, seed=1)
        reply = sim.respond(task, [{"role": "user", "content": s.description}, {"role": "assistant", "content": question}])
        for piece in must(s.hidden):
            assert piece in reply, (s.family, s.hidden, reply)
        seen[s.family] = seen.get(s.family, 0) + 1
    assert set(seen) == set(FAMILIES)


def test_answering_without_the_detail_fails():
    """A plausible guess (the structure right, the person's detail not) passes few tests."""
    from colbench_gym.grading import get_default_grader  # noqa: PLC0415

    guesses = {
        "surcharge": lambda s: s.source.replace(repr(s.hidden["rate"]), "0.1"),
        "threshold": lambda s: s.source.replace(f"= {s.hidden['limit']!r}", "= 50"),
        "message": lambda s: f"def {s.function_name}(name):\n    return 'Hello, ' + name + '!'\n",
        "date_format": lambda s: f"def {s.function_name}(year, month, day):\n    return f'{{year}}-{{month:02d}}-{{day:02d}}'\n",
    }
    scores = []
    for s in specs("test", 60):
        if s.family in guesses and s.hidden.get("rate") != 0.1 and s.hidden.get("template") != "Hello, {}!":
            result = get_default_grader().grade(guesses[s.family](s), s.to_task())
            scores.append(result.passed / result.total)
    assert len(scores) >= 10
    assert sum(scores) / len(scores) < 0.35, scores
