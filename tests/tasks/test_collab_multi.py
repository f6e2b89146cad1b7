"""The multi-detail collaboration source (``collab-multi:train|val|test``): deterministic, disjoint
splits; requests that hide every unstated detail; the offline simulator answers each detail's
natural question with that detail (through ``gym.make``) and vague or off-target questions with
nothing; the reference passes every test, guesses fail, and an answer that knows k of n details
passes exactly k/n of the tests (graded by the real grader)."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter

import gymnasium as gym
import pytest

import colbench_gym  # noqa: F401 - registers the environments
from colbench_gym.grading import get_default_grader
from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.tasks.collab_multi import (
    FAMILIES,
    MAX_TURNS,
    N_TESTS,
    SPLITS,
    TRAIN_TEST,
    VAL,
    generate_collab_multi_spec,
    generate_collab_multi_task,
)
from colbench_gym.tasks.sources import available_sources, resolve_task_source

N = 160
_CACHE: dict[tuple[str, int], list] = {}


def specs(split: str, n: int = N):
    if (split, n) not in _CACHE:
        _CACHE[(split, n)] = [generate_collab_multi_spec(i, split) for i in range(n)]
    return _CACHE[(split, n)]


def every(n: int = N):
    return [s for split in SPLITS for s in specs(split, n)]


def said(reply: str, piece: str) -> bool:
    """Whether a reply says ``piece`` (a number only as a whole number: 7.0 is not in 17.0)."""
    if re.match(r"-?\d", piece):
        return re.search(rf"(?<![\w.]){re.escape(piece)}(?!\d)", reply) is not None
    return piece in reply


def test_splits_are_the_three_and_generation_is_deterministic():
    assert SPLITS == ("train", "test", "val")
    for split in SPLITS:
        again = [generate_collab_multi_spec(i, split) for i in range(40)]
        assert [(s.description, s.source, s.tests) for s in again] == \
               [(s.description, s.source, s.tests) for s in specs(split)[:40]]
        assert {s.family for s in specs(split)} == set(FAMILIES), split
    with pytest.raises(ValueError, match="split must be one of"):
        generate_collab_multi_spec(0, "dev")
    with pytest.raises(ValueError, match="non-negative int"):
        generate_collab_multi_spec(-1, "train")


#: sha256 over the records of tasks 0..199 of each split (generator version 1): a change to the
#: generator that moves any task must bump COLLAB_MULTI_GENERATOR_VERSION and this digest.
PINNED_200 = {"train": "52f60318db6b0edf180cf31710b53e3156ffafa472327c97c2d26661b57fcd00",
              "test": "741ed51c68cbd131c77864e7ba4666097a658f17d127e85a110d6b7727877db4",
              "val": "5e5455ae8acfdbc2ce1af2d2532e12c4e86ddd42d4f927b7d3795cf7fe6f9e29"}


@pytest.mark.parametrize("split", SPLITS)
def test_tasks_are_pinned(split):
    h = hashlib.sha256()
    for i in range(200):
        h.update(json.dumps(generate_collab_multi_task(i, split).to_record(), sort_keys=True).encode())
    assert h.hexdigest() == PINNED_200[split]


def _combination(s) -> tuple:
    """A task's function and detail values, whatever the request states and in whatever order."""
    return s.function_name, tuple(sorted((d.name, repr(d.value)) for d in s.details))


def test_splits_share_no_task_and_no_function_with_the_same_details():
    n = 500
    by_split = {split: specs(split, n) for split in SPLITS}
    keys = {split: {s.key for s in got} for split, got in by_split.items()}
    combos = {split: {_combination(s) for s in got} for split, got in by_split.items()}
    ids = {split: {s.to_task().task_id for s in got} for split, got in by_split.items()}
    for a, b in itertools.combinations(SPLITS, 2):
        assert not keys[a] & keys[b], (a, b)
        assert not combos[a] & combos[b], (a, b)
        assert not ids[a] & ids[b], (a, b)
    # at least 100 distinct test tasks (and as many distinct combinations) among the first 150
    assert len({_combination(s) for s in specs("test", 150)}) >= 140
    assert len({s.to_task().task_id for s in specs("test", 150)}) == 150
    for split in SPLITS:
        assert {s.to_task().to_record()["source"] for s in by_split[split]} == {f"collab-multi:{split}"}


def test_validation_domain_shares_no_detail_value_with_train_and_test():
    for field in ("greetings", "updates", "prefixes", "name_formats", "invalid_labels"):
        assert not set(getattr(VAL, field)) & set(getattr(TRAIN_TEST, field)), field
    for field in ("zero_values", "negative_values"):
        assert not {repr(v) for v in getattr(VAL, field)} & {repr(v) for v in getattr(TRAIN_TEST, field)}, field
    assert not {t[0] for t in VAL.limits} & {t[0] for t in TRAIN_TEST.limits}
    # numbers: every price, rate and factor of val is off the train/test grid, so no val detail
    # value was ever a trained one
    trained = {(s.function_name, d.name, repr(d.value)) for split in ("train", "test") for s in specs(split, 500)
               for d in s.details}
    held_out = {(s.function_name, d.name, repr(d.value)) for s in specs("val", 500) for d in s.details
                if d.kind in ("price", "rate", "factor", "message", "format", "order", "label", "threshold")}
    assert held_out and not held_out & trained


def test_details_tests_and_stated_share():
    counts: Counter = Counter()
    stated_tasks = all_stated = 0
    tasks = every()
    for s in tasks:
        n = len(s.details)
        counts[n] += 1
        assert 2 <= n <= 4, s
        assert len(s.tests) == N_TESTS and len(set(s.tests)) == N_TESTS
        owned = sorted(i for d in s.details for i in d.tests)
        assert owned == list(range(N_TESTS)), s  # the details partition the tests
        assert {len(d.tests) for d in s.details} == {N_TESTS // n}
        record = s.to_task().to_record()
        assert record["details"] == n and record["stated_details"] == len(s.stated)
        if s.stated:
            stated_tasks += 1
            all_stated += len(s.stated) == n
    assert set(counts) == {2, 3, 4}
    share = stated_tasks / len(tasks)
    assert 0.20 <= share <= 0.36, share  # about 28 % state some details ...
    assert 0 < all_stated < stated_tasks  # ... some of them all, most only some


def test_turn_limit_fits_one_question_per_detail_but_not_two():
    most = max(len(s.details) for s in every())
    assert most == 4
    assert most + 1 <= MAX_TURNS < 2 * most + 1
    ask_twice = [2 * len(s.hidden) + 1 > MAX_TURNS for s in every() if s.hidden]
    assert sum(ask_twice) / len(ask_twice) >= 0.5  # for most tasks asking everything twice runs out of turns


def test_requests_hide_every_unstated_detail():
    for s in every():
        assert s.function_name in s.description
        text = s.description
        for d in s.stated:
            assert d.statement in text, (d.statement, text)
            text = text.replace(d.statement, "")
        assert not re.search(r"\d", text), s.description  # digits only in stated details
        low = text.lower()  # the request less what it states: a stated detail may share a word
        for d in s.hidden:  # or a number (a width, a rounding) with a hidden one
            for word in d.hidden_words:
                assert not re.search(rf"\b{re.escape(word.lower())}\b", low), (word, s.description)
            for piece in d.says:
                assert not said(text, piece), (piece, s.description)


def test_references_are_simple_and_tests_run_them():
    for s in every(60):
        assert len(s.source.splitlines()) <= 12, s.source
        ns: dict = {}
        exec(s.source, ns)  # our own template
        outputs = [repr(eval(test, ns)) for test in s.tests]  # noqa: S307 - our own test calls
        assert len(set(outputs)) >= len(s.details), (s.family, outputs)  # no constant answer passes them all


def _natural_cases(n: int):
    return [(split, i) for split in SPLITS for i in range(n)]


@pytest.mark.parametrize("split", SPLITS)
def test_offline_simulator_answers_each_natural_question_with_its_detail_through_the_env(split):
    """Through gym.make: ask each detail's natural question in turn; each reply says that detail
    and no other hidden detail; the rest of the turns still hold the answer."""
    env = gym.make("ColBench-Backend-v0", tasks=f"collab-multi:{split}", simulator="offline", max_turns=MAX_TURNS)
    seen: Counter = Counter()
    try:
        for i in range(60):
            s = specs(split)[i]
            obs, info = env.reset(seed=i, options={"task_index": i})
            assert obs == s.description
            for d in s.details:
                reply, reward, done, truncated, info = env.step(d.question)
                assert not done and reward == 0.0
                for piece in d.says:
                    assert said(reply, piece), (s.family, d.question, piece, reply)
                for other in s.details:
                    if other is not d:
                        assert not all(said(reply, p) for p in other.says), (d.question, other.name, reply)
                assert info["simulator_leaks_blocked"] == 0
                seen[s.family] += 1
            assert info["turn"] == len(s.details) < MAX_TURNS
    finally:
        env.close()
    assert set(seen) == set(FAMILIES)


#: Questions that name no topic, and questions about something else: the person says they don't know.
VAGUE = ("Can you tell me more?", "Any other details?", "Is there anything else I should know?", "What else?",
         "Could you give me more details?", "Anything I should keep in mind?", "How should it work?")
OFF_TARGET = ("What is the weather like?", "Do you like pizza?", "How was your weekend?",
              "Which programming language do you prefer?", "What colour is your car?")


def test_vague_and_off_target_questions_reveal_nothing():
    sim = OfflineBackendSimulator(seed=0)
    for s in every(80):
        task = s.to_task()
        sim.reset(task, seed=1)
        for q in VAGUE + OFF_TARGET:
            reply = sim.respond(task, [{"role": "user", "content": s.description}, {"role": "assistant", "content": q}])
            for d in s.details:
                assert not all(said(reply, p) for p in d.says), (s.family, q, d.name, reply)


def _grade(code: str, s) -> dict[str, bool]:
    result = get_default_grader().grade(code, s.to_task())
    assert result.total == N_TESTS, result
    return result.per_test


def test_reference_passes_and_knowing_k_of_n_details_passes_k_of_n_tests():
    """For every subset of the details: the reference with the others replaced by a wrong guess
    passes exactly the tests of the known details, so the fraction reward is k/n."""
    checked: Counter = Counter()
    for s in every(16):
        n = len(s.details)
        for known in itertools.product((True, False), repeat=n):
            code = s.source if all(known) else s.wrong_answer(known)
            per_test = _grade(code, s)
            want = {f"test{i + 1}" for d, k in zip(s.details, known) if k for i in d.tests}
            assert {name for name, ok in per_test.items() if ok} == want, (s.family, known, code)
            assert len(want) / N_TESTS == pytest.approx(sum(known) / n)
            checked[(s.family, sum(known))] += 1
    assert {f for f, _ in checked} == set(FAMILIES)


def test_plausible_guesses_fail_the_tests_of_unstated_details():
    """An answer that knows the stated details and guesses the others (defaults a model could
    write without asking; a guess that happens to be right counts) passes few of the guessed
    details' tests."""
    scores: dict[str, list[float]] = {f: [] for f in FAMILIES}
    for s in every(40):
        if not s.hidden:
            continue
        hidden_tests = {f"test{i + 1}" for d in s.hidden for i in d.tests}
        for g in range(max(len(d.guesses) for d in s.hidden)):
            per_test = _grade(s.answer(guess=g), s)
            scores[s.family].append(sum(per_test[t] for t in hidden_tests) / len(hidden_tests))
    for family, got in scores.items():
        assert len(got) >= 10, (family, len(got))
        assert sum(got) / len(got) <= 0.30, (family, got)


def test_a_fully_informed_episode_earns_the_fraction_of_details_used():
    """End to end: ask the hidden details' questions, answer knowing some of them; the fraction
    reward is the share of details the answer used."""
    env = gym.make("ColBench-Backend-v0", tasks="collab-multi:test", simulator="offline", max_turns=MAX_TURNS,
                   reward_mode="fraction")
    try:
        for i in range(12):
            s = specs("test")[i]
            env.reset(seed=0, options={"task_index": i})
            for d in s.hidden:
                env.step(d.question)
            known = [True] * len(s.details)
            known[i % len(known)] = False
            _, reward, done, _, info = env.step("I WANT TO ANSWER:\n" + s.wrong_answer(known))
            assert done and info["ended_by"] == "answer"
            assert reward == pytest.approx((len(known) - 1) / len(known))
    finally:
        env.close()


def test_task_source_spec_listing_and_errors():
    src = resolve_task_source("collab-multi:test", "backend")
    assert src.name == "collab-multi:test" and src[3].problem_description == specs("test")[3].description
    assert resolve_task_source("collab-multi:val", "backend")[5].ground_truth == specs("val")[5].source
    with pytest.raises(ValueError, match="'train', 'test', 'val'"):
        resolve_task_source("collab-multi:dev", "backend")
    with pytest.raises(ValueError, match="backend tasks only"):
        resolve_task_source("collab-multi:train", "frontend")
    listed = {info.spec for info in available_sources()}
    assert {"collab-multi:train", "collab-multi:val", "collab-multi:test"} <= listed


def test_the_tasks_command_lists_shows_and_audits_the_source(capsys):
    """`colbench tasks sources` lists the three splits; `show --reveal` prints a task; the audit
    finds every task solvable (each constant that decides a test is stated by the request or the
    offline person) on the first tasks of each split."""
    from colbench_gym.cli import main

    assert main(["tasks", "sources"]) == 0
    listing = capsys.readouterr().out
    for split in SPLITS:
        assert re.search(rf"^collab-multi:{split}\s+backend\s+unbounded\s+Procedural backend tasks with two to four",
                         listing, re.MULTILINE), listing
    assert main(["tasks", "show", "2", "--tasks", "collab-multi:val", "--reveal"]) == 0
    assert specs("val")[2].source.strip() in capsys.readouterr().out
    for split in SPLITS:
        assert main(["tasks", "audit", f"collab-multi:{split}", "--count", "24", "--strict"]) == 0
        assert "24 ok" in capsys.readouterr().out
