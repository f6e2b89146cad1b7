"""The collaboration-pays task source (``collab:train|val|test``): deterministic, disjoint splits, no
leaks in the request, and the offline simulator gives the decisive detail to a natural question."""

from __future__ import annotations

import hashlib
import json
import re

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401 - registers the environments
from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.tasks.collab_generator import (
    _UNITS,
    FAMILIES,
    TRAIN_TEST,
    VAL,
    generate_collab_spec,
    generate_collab_task,
)
from colbench_gym.tasks.sources import resolve_task_source

N = 120


def specs(split: str, n: int = N):
    return [generate_collab_spec(i, split) for i in range(n)]


def test_deterministic_and_every_family_in_every_split():
    a, b = specs("train", 40), specs("train", 40)
    assert [s.source for s in a] == [s.source for s in b]
    assert [s.source for s in specs("val", 40)] == [s.source for s in specs("val", 40)]
    for split in ("train", "val", "test"):
        assert {s.family for s in specs(split)} == set(FAMILIES)


#: sha256 over the records of tasks 0..999 of collab:train and collab:test (generator version 2),
#: taken before collab:val existed: adding the validation split moved no existing task.
PINNED_1000 = {"train": "868281a56705f05f0c898132f54e64c11c49ce9a68437a7e56d5d330598261c6",
               "test": "3c1b31a82460312758217f6aff9ffcb6c0d3138dbcc48860ec54b98d1c315551"}


@pytest.mark.parametrize("split", ["train", "test"])
def test_train_and_test_are_byte_identical_to_before_the_validation_split(split):
    h = hashlib.sha256()
    for i in range(1000):
        h.update(json.dumps(generate_collab_task(i, split).to_record(), sort_keys=True).encode())
    assert h.hexdigest() == PINNED_1000[split]


def test_validation_split_is_disjoint_from_train_and_test():
    """Pairwise disjoint by structural key and by task id over 500 tasks of each split; the val
    domain shares no value of a key-making field with the train/test domain."""
    n = 500
    by_split = {split: specs(split, n) for split in ("train", "val", "test")}
    keys = {split: {s.key for s in got} for split, got in by_split.items()}
    ids = {split: {s.to_task().task_id for s in got} for split, got in by_split.items()}
    for a, b in (("train", "val"), ("val", "test"), ("train", "test")):
        assert not keys[a] & keys[b], (a, b)
        assert not ids[a] & ids[b], (a, b)
    assert len(keys["val"]) > 150  # not a handful of repeats
    assert {s.to_task().to_record()["source"] for s in by_split["val"]} == {"collab:val"}
    # the domains, field by field: disjoint values where the key is made
    assert not {u for us in VAL.unit_table().values() for u in us} & {u for us in TRAIN_TEST.unit_table().values() for u in us}
    assert not set(VAL.greetings) & set(TRAIN_TEST.greetings)
    assert not set(VAL.prefixes) & set(TRAIN_TEST.prefixes)
    assert not set(VAL.date_seps) & set(TRAIN_TEST.date_seps)
    assert not {repr(v) for v in VAL.zero_values} & {repr(v) for v in TRAIN_TEST.zero_values}
    assert not {v for v in VAL.zero_values if not isinstance(v, str)} & {0, -1}  # == compares across types
    limits = lambda d: {x for t in d.thresholds for x in range(t[3], t[4] + 1)}  # noqa: E731
    assert not limits(VAL) & limits(TRAIN_TEST)


def test_train_and_test_are_disjoint():
    train = {s.key for s in specs("train", 300)}
    test = {s.key for s in specs("test", 300)}
    assert not train & test
    assert len(test) > 100  # the held-out split is not a handful of repeats


def test_requests_hide_the_details_and_tests_exercise_the_reference():
    for s in specs("train") + specs("val") + specs("test"):
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
    val = resolve_task_source("collab:val", "backend")
    assert val.name == "collab:val" and val[3].problem_description == generate_collab_task(3, "val").problem_description
    with pytest.raises(ValueError, match="'train', 'test'"):
        resolve_task_source("generated:val", "backend")  # only the collab set has a validation split
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
    for s in specs("train", 80) + specs("val", 80) + specs("test", 80):
        question, must = NATURAL_QUESTION[s.family]
        task = s.to_task()
        sim.reset(task, seed=1)
        reply = sim.respond(task, [{"role": "user", "content": s.description}, {"role": "assistant", "content": question}])
        for piece in must(s.hidden):
            assert piece in reply, (s.family, s.hidden, reply)
        seen[s.family] = seen.get(s.family, 0) + 1
    assert set(seen) == set(FAMILIES)


def _swap(s, old: str, new: str) -> str | None:
    """The reference with one hidden piece replaced; None when the guess is the hidden piece."""
    if old == new:
        return None
    assert s.source.count(old) == 1, (old, s.source)
    return s.source.replace(old, new)


def _from_scratch(s, body: str) -> str:
    params = s.source.split("(", 1)[1].split(")", 1)[0]
    return f"def {s.function_name}({params}):\n    return {body}\n"


_TYPICAL_LIMITS = {"can_join": (16, 18, 21), "passes_exam": (50, 60, 70), "needs_freight": (10, 20, 30),
                   "is_fever": (375, 380, 385),
                   # the validation domain's scenarios
                   "is_speeding": (110, 120, 130), "needs_approval": (200, 250, 300), "is_tall_enough": (110, 120, 130),
                   "is_heatwave": (300, 320, 350)}
_UNIT_FACTORS = {f for units in _UNITS.values() for _, f in units}  # val tasks: the factors a trained model saw
_TEMPLATES = ("Hello, {}!", "Welcome, {}!", "Hi {}!")
_DATES = {("ymd", "-"): "f'{year}-{month:02d}-{day:02d}'", ("dmy", "/"): "f'{day:02d}/{month:02d}/{year}'",
          ("mdy", "/"): "f'{month:02d}/{day:02d}/{year}'"}

#: Per family, answers a model could write *without* the person's detail: the reference with the
#: hidden constant(s) replaced by a default or an alternative, or a common format from scratch.
#: Each returns the answer's source, or None when that guess happens to be the hidden detail.
PLAUSIBLE_GUESSES = {
    "surcharge": [lambda s, g=g: _swap(s, f"= {s.hidden['rate']!r}\n", f"= {g!r}\n") for g in (0.05, 0.1, 0.2)],
    "per_unit_fee": [
        lambda s: _swap(s, f"base_fee = {s.hidden['base']!r}", "base_fee = 0.0"),
        lambda s: _swap(s, f"base_fee = {s.hidden['base']!r}", "base_fee = 5.0"),
        lambda s: _swap(s, f"= {s.hidden['rate']!r}\n", "= 1.0\n"),
        lambda s: _swap(s, f"= {s.hidden['rate']!r}\n", "= 2.5\n"),
    ],
    "unit_convert": [lambda s, g=g: _swap(s, f"= {s.hidden['factor']!r}\n", f"= {g!r}\n")
                     for g in sorted(_UNIT_FACTORS | {1.0})],
    "threshold": [lambda s, k=k: _swap(s, f"= {s.hidden['limit']!r}\n", f"= {_TYPICAL_LIMITS[s.function_name][k]}\n")
                  for k in range(3)],
    "message": [lambda s, t=t: None if t == s.hidden["template"] else _from_scratch(s, "f" + repr(t.replace("{}", "{name}")))
                for t in _TEMPLATES],
    "code_format": [
        lambda s: _swap(s, repr(s.hidden["prefix"] + s.hidden["sep"])[1:-1], "ID" + s.hidden["sep"]),
        lambda s: _swap(s, repr(s.hidden["prefix"] + s.hidden["sep"])[1:-1], s.hidden["prefix"] + "-"),
        lambda s: _swap(s, f":0{s.hidden['width']}d", ":05d"),
    ],
    "date_format": [lambda s, k=k: None if k == (s.hidden["order"], s.hidden["sep"]) else _from_scratch(s, _DATES[k])
                    for k in _DATES],
    "zero_rule": [
        lambda s: _swap(s, f"return {s.hidden['value']!r}\n", "return 0\n"),
        lambda s: _swap(s, f"return {s.hidden['value']!r}\n", "return None\n"),
        lambda s: None if (s.hidden["value"], s.hidden["digits"]) == (0, 2) else
        s.source.replace(f"return {s.hidden['value']!r}\n", "return 0\n").replace(f", {s.hidden['digits']})", ", 2)"),
    ],
}


def _grade(code: str, spec) -> float:
    from colbench_gym.grading import get_default_grader  # noqa: PLC0415

    result = get_default_grader().grade(code, spec.to_task())
    assert result.total == 10, result
    return result.passed / result.total


def test_every_family_fails_a_plausible_guess_and_passes_the_reference():
    """Guessing the person's detail fails most tests in every family (no partial credit for a
    guess: the threshold family's yes/no tests once gave any guessed limit about half of them),
    while the reference passes all of them. Graded by the real sandboxed grader."""
    assert set(PLAUSIBLE_GUESSES) == set(FAMILIES)
    scores: dict[str, list[float]] = {f: [] for f in FAMILIES}
    for s in specs("train", 60) + specs("val", 30) + specs("test", 60):
        assert _grade(s.source, s) == 1.0, s
        for guess in PLAUSIBLE_GUESSES[s.family]:
            code = guess(s)
            if code is not None:
                scores[s.family].append(_grade(code, s))
    for family, got in scores.items():
        assert len(got) >= 10, (family, len(got))
        assert sum(got) / len(got) <= 0.30, (family, got)
        assert max(got) < 0.5, (family, got)  # not even a lucky near miss passes most tests


def test_knowing_half_of_a_two_part_detail_passes_less_than_half():
    """The threshold's "at least" vs "more than" and the zero rule's rounding are part of the
    detail: right limit with the wrong comparison, or right zero value with the wrong rounding
    (and the converse), pass at most four tests in ten."""
    flip = {">=": ">", ">": ">="}
    checked = {"threshold": 0, "zero_rule": 0}
    for s in specs("train", 60) + specs("test", 60):
        if s.family == "threshold":
            answers = [_swap(s, f" {s.hidden['op']} ", f" {flip[s.hidden['op']]} ")]
        elif s.family == "zero_rule":
            other = 1 + s.hidden["digits"] % 3
            answers = [_swap(s, f", {s.hidden['digits']})", f", {other})"),
                       _swap(s, f"return {s.hidden['value']!r}\n", "return 'error'\n")]
        else:
            continue
        for code in answers:
            assert _grade(code, s) <= 0.4, (s.family, s.hidden, code)
            checked[s.family] += 1
    assert min(checked.values()) >= 10, checked
