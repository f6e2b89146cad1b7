"""The release's pairing rules as pair-rule choices of our trainers (`--pair_rule release|release-frontend`)."""

from __future__ import annotations

import copy

from sweet_agent.training.arguments import PreferenceDataArguments
from sweet_agent.training_data.pairs import PAIR_RULES, build_trajectory_pairs, chosen_candidates
from tests.interop.conftest import FIX, read_jsonl


def _with_rewards(rec: dict, rewards: list[float]) -> list[dict]:
    out = []
    for i, r in enumerate(rewards):
        x = copy.deepcopy(rec)
        x.update(reward=r, tag=i)
        out.append(x)
    return out


def test_release_backend_rule_takes_the_first_best_sample_only():
    a, b = (read_jsonl(FIX / "release_backend_k2.jsonl")[i] for i in (0, 1))
    recs = _with_rewards(a, [1.0, 0.5, 1.0, 0.25]) + _with_rewards(b, [0.5, 0.2])
    pairs = build_trajectory_pairs(recs, rule="release")
    assert [(p["chosen"]["tag"], p["rejected"]["tag"]) for p in pairs] == [(0, 1), (0, 3)]  # task b: best < 1
    ours = build_trajectory_pairs(recs, rule="success")
    assert sorted((p["chosen"]["tag"], p["rejected"]["tag"]) for p in ours) == [(0, 1), (0, 3), (2, 1), (2, 3)]
    assert chosen_candidates(_with_rewards(b, [0.5, 0.2]), rule="release") == []


def test_release_frontend_rule_needs_a_gap_of_one_tenth():
    fe = read_jsonl(FIX / "release_frontend_k2.jsonl")[0]
    recs = _with_rewards(fe, [0.9, 0.85, 0.6, 0.55])
    pairs = build_trajectory_pairs(recs, rule="release-frontend")
    got = sorted((p["chosen"]["tag"], p["rejected"]["tag"]) for p in pairs)
    assert got == [(0, 2), (0, 3), (1, 2), (1, 3)]  # 0.9 vs 0.85 and 0.6 vs 0.55 are too close
    assert len(build_trajectory_pairs(recs, rule="top-bottom")) == 1


def test_rules_are_choices_of_the_trainers_config():
    assert {"release", "release-frontend"} <= set(PAIR_RULES)
    choices = PreferenceDataArguments.__dataclass_fields__["pair_rule"].metadata["choices"]
    assert "release" in choices and "release-frontend" in choices
