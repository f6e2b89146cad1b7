"""Question exploration (behaviour policy) and critic-guided best-of-N, on a real tiny model."""

from __future__ import annotations

import json

import pytest

from sweet_agent.policies.base import Policy, PolicyError, SamplingParams
from sweet_agent.policies.exploration import DEFAULT_OPENERS, ExplorationConfig, ExploringPolicy
from sweet_agent.policies.transformers_policy import TransformersPolicy
from sweet_agent.trajectories import record_prefilled_turns
from tests.training.tiny_model import build_tiny_model, build_tiny_tokenizer

SAMPLING = SamplingParams(max_new_tokens=12, temperature=1.0)


@pytest.fixture(scope="module")
def tiny_policy():
    tok = build_tiny_tokenizer()
    return TransformersPolicy(build_tiny_model(tok), tok, name="tiny")


def conv(turns: int = 0):
    msgs = [{"role": "system", "content": "You may ask."}, {"role": "user", "content": "write def f(x)"}]
    for _ in range(turns):
        msgs += [{"role": "assistant", "content": "What should it return?"}, {"role": "user", "content": "x + 1"}]
    return msgs


def test_prefix_is_continued_and_reported(tiny_policy):
    plain = tiny_policy.generate([conv()], SAMPLING, [7])[0]
    forced = tiny_policy.generate([conv()], SAMPLING, [7], prefixes=["Before I write the function, one question: "])[0]
    assert forced.prefix == "Before I write the function, one question: "
    assert forced.text.startswith(forced.prefix) and len(forced.text) > len(forced.prefix)
    assert plain.prefix == "" and not plain.text.startswith(forced.prefix)


def test_rate_one_prefills_every_eligible_turn_and_only_those(tiny_policy):
    pol = ExploringPolicy(tiny_policy, ExplorationConfig(rate=1.0, turns=1))
    first = pol.generate([conv(0)] * 4, SAMPLING, [1, 2, 3, 4])
    assert all(g.prefix in DEFAULT_OPENERS and g.text.startswith(g.prefix) for g in first)
    assert all(g.text.endswith("?") for g in first)  # a prefilled turn is a question
    later = pol.generate([conv(1)] * 2, SAMPLING, [5, 6])
    assert all(g.prefix == "" for g in later)
    assert "explore(rate=1" in pol.name and pol.name.startswith("tiny+")


def test_rate_zero_is_the_wrapped_policy_and_decisions_are_seeded(tiny_policy):
    seeds = list(range(20))
    off = ExploringPolicy(tiny_policy, ExplorationConfig(rate=0.0))
    assert [g.text for g in off.generate([conv()] * 20, SAMPLING, seeds)] == \
        [g.text for g in tiny_policy.generate([conv()] * 20, SAMPLING, seeds)]
    half = ExplorationConfig(rate=0.5)
    picks = [half.opener_for(conv(), s) for s in range(200)]
    assert picks == [half.opener_for(conv(), s) for s in range(200)]
    assert 60 < sum(p is not None for p in picks) < 140


def test_per_turn_rates_prefill_each_agent_turn_with_its_own_probability(tiny_policy):
    """rates=(P1, P2): agent turn 1 is prefilled with probability P1, turn 2 with P2, later turns
    never; turns=0 makes every turn eligible. Each turn draws on its own seed, so data holds
    episodes that answer at once, ask once and answer, and ask twice."""
    from sweet_agent.policies.base import derive_seed
    from sweet_agent.policies.exploration import DEFAULT_LATER_OPENERS

    only_second = ExploringPolicy(tiny_policy, ExplorationConfig(rates=(0.0, 1.0)))
    assert only_second.name.endswith("+explore(rates=0/1)")
    first, second, third = (only_second.generate([conv(t)], SAMPLING, [11 + t])[0] for t in range(3))
    assert first.prefix == "" and third.prefix == ""
    assert second.prefix in DEFAULT_LATER_OPENERS and second.text.startswith(second.prefix)  # "one more question"
    assert (first.explore_rate, second.explore_rate, third.explore_rate) == (0.0, 1.0, 0.0)
    every = ExplorationConfig(rate=1.0, turns=0)
    assert all(every.opener_for(conv(t), 5) is not None for t in range(6)) and "turns=all" in every.describe()
    assert ExplorationConfig(rate=1.0, turns=2).opener_for(conv(2), 5) is None
    # independent per-turn draws with the collector's turn seeds: every pattern of (turn 1, turn 2) occurs
    cfg = ExplorationConfig(rates="0.5,0.5")
    assert cfg.rates == (0.5, 0.5) and cfg.rate_at(1) == cfg.rate_at(2) == 0.5 and cfg.rate_at(3) == 0.0
    patterns: dict[tuple[bool, bool], int] = {}
    for task in range(400):
        pat = tuple(cfg.opener_for(conv(t), derive_seed(0, "policy", task, 0, t)) is not None for t in range(2))
        patterns[pat] = patterns.get(pat, 0) + 1
    assert set(patterns) == {(False, False), (True, False), (False, True), (True, True)}
    assert all(60 < n < 140 for n in patterns.values()), patterns
    for bad in ((), (0.5, 1.5), "0.5,x"):
        with pytest.raises(ValueError, match="rates"):
            ExplorationConfig(rates=bad)
    with pytest.raises(ValueError, match="turns must be >= 0"):
        ExplorationConfig(turns=-1)


def test_rollout_records_which_agent_turns_were_prefilled_and_their_rates(tiny_policy, tmp_path):
    from sweet_agent.policies.exploration import prefilled_agent_turns
    from sweet_agent.rollout.collector import RolloutConfig, collect

    pol = ExploringPolicy(tiny_policy, ExplorationConfig(rates=(1.0, 1.0)))
    cfg = RolloutConfig(tasks="collab:train", num_tasks=2, samples_per_task=1, max_turns=3, concurrency=2,
                        sampling=SamplingParams(max_new_tokens=8, temperature=1.0))
    collect(pol, cfg, tmp_path / "t.jsonl", progress=False)
    recs = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    for r in recs:  # the tiny model never answers: three agent turns, the first two prefilled
        exploration = r["meta"]["exploration"]
        assert r["meta"]["turns"] == 3
        assert prefilled_agent_turns(r) == [1, 2] and exploration["prefilled"] == 2 == record_prefilled_turns(r)
        assert exploration["rates"] == [1.0, 1.0, 0.0]
        agent = [m["content"] for m in r["dialogue_history"] if m["role"] == "assistant"]
        assert agent[1].startswith(exploration["openers"][1]) and "one more question" in exploration["openers"][1]
        assert "+explore(rates=1/1)" in r["meta"]["policy"]
    # the first schema (a list of {"turn": 0-based, "opener"}) reads the same way
    assert prefilled_agent_turns({"meta": {"exploration": {"prefilled_turns": [{"turn": 0, "opener": "x"}]}}}) == [1]
    assert prefilled_agent_turns({"meta": {}}) == []


def test_rollout_flags_make_the_behaviour_policy():
    import argparse

    from sweet_agent.rollout.cli import _exploration

    def ns(**kw):
        return argparse.Namespace(**{"explore_rate": 0.0, "explore_turns": 1, "explore_rates": None, **kw})

    assert _exploration(ns()) is None
    assert _exploration(ns(explore_rate=0.5, explore_turns=0)) == ExplorationConfig(rate=0.5, turns=0)
    assert _exploration(ns(explore_rates="0.5,0.3")).rates == (0.5, 0.3)
    with pytest.raises(SystemExit, match="not both"):
        _exploration(ns(explore_rate=0.5, explore_rates="0.5"))
    with pytest.raises(SystemExit, match="rates"):
        _exploration(ns(explore_rates="0.5,2"))


def test_policy_without_prefix_support_is_refused():
    class Endpoint(Policy):
        name = "endpoint"

        def generate(self, conversations, sampling=None, seeds=None):
            raise AssertionError("not called")

    with pytest.raises(PolicyError, match="cannot continue"):
        ExploringPolicy(Endpoint(), ExplorationConfig())
    with pytest.raises(ValueError, match="rate"):
        ExplorationConfig(rate=1.5)


def test_rollout_records_the_behaviour_policy(tiny_policy, tmp_path):
    from sweet_agent.rollout.collector import RolloutConfig, collect

    pol = ExploringPolicy(tiny_policy, ExplorationConfig(rate=1.0, turns=1))
    cfg = RolloutConfig(tasks="collab:train", num_tasks=2, samples_per_task=1, max_turns=2, concurrency=2,
                        sampling=SamplingParams(max_new_tokens=8, temperature=1.0))
    result = collect(pol, cfg, tmp_path / "t.jsonl", progress=False)
    recs = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(recs) == 2 == len(result.records)
    for r in recs:
        exploration = r["meta"]["exploration"]  # one opener per agent turn ("" where none was forced)
        assert [i for i, o in enumerate(exploration["openers"]) if o] == [0]
        assert exploration["prefilled"] == 1 == record_prefilled_turns(r)
        first_agent = next(m for m in r["dialogue_history"] if m["role"] == "assistant")
        assert first_agent["content"].startswith(exploration["openers"][0])
        assert "+explore(" in r["meta"]["policy"]


# ----------------------------------------------------------------------------- best-of-N
class _Critic:
    """A real (tiny, random) critic/reference pair as :class:`LoadedCritic` exposes it."""

    def __init__(self, privileged: bool):
        tok = build_tiny_tokenizer()
        self.model, self.ref, self.tokenizer = build_tiny_model(tok, seed=3), build_tiny_model(tok, seed=4), tok
        self.normalize, self.use_privileged_info = "turn", privileged


def test_best_of_n_keeps_the_candidate_the_critic_scores_highest(tiny_policy):
    from sweet_agent.best_of_n import BestOfNPolicy
    from sweet_agent.policies.base import derive_seed
    from sweet_agent.sweet_rl.algorithm import score_candidates

    critic = _Critic(privileged=False)
    bon = BestOfNPolicy(tiny_policy, critic, n=4)
    out = bon.generate([conv()], SAMPLING, [11])[0]
    cands = tiny_policy.generate([conv()] * 4, SAMPLING, [derive_seed(11, "best-of-n", j) for j in range(4)])
    scores = score_candidates(critic.model, critic.ref, critic.tokenizer, conv(), [c.text for c in cands])
    assert len(set(c.text for c in cands)) > 1
    assert out.text == cands[max(range(4), key=lambda j: (scores[j], -j))].text
    assert bon.last_scores[0] == pytest.approx(scores)


def test_best_of_n_refuses_a_privileged_critic_and_greedy(tiny_policy, tmp_path):
    from sweet_agent.best_of_n import BestOfNPolicy

    with pytest.raises(PolicyError, match="leak the answer"):
        BestOfNPolicy(tiny_policy, _Critic(privileged=True), n=4)
    (tmp_path / "sweet_critic.json").write_text(json.dumps({"use_privileged_info": True}))
    with pytest.raises(PolicyError, match="no_use_privileged_info"):
        BestOfNPolicy.from_dir(tiny_policy, tmp_path, 4)
    with pytest.raises(PolicyError, match="greedy"):
        BestOfNPolicy(tiny_policy, _Critic(privileged=False), n=2).generate([conv()], SAMPLING.with_(temperature=0), [1])


def test_rft_trains_on_the_prefilled_opener(tiny_policy, tmp_path):
    """The behaviour policy's opener is part of the recorded agent turn, so RFT's agent-only loss
    covers it: a kept asking episode teaches the target policy to open with the question itself."""
    from sweet_agent.baselines.rft import RFTConfig, make_rft_trainer, rft_rows
    from sweet_agent.rollout.collector import RolloutConfig, collect

    pol = ExploringPolicy(tiny_policy, ExplorationConfig(rate=1.0, turns=1))
    cfg = RolloutConfig(tasks="collab:train", num_tasks=2, samples_per_task=1, max_turns=2, concurrency=2,
                        sampling=SamplingParams(max_new_tokens=8, temperature=1.0))
    collect(pol, cfg, tmp_path / "t.jsonl", progress=False)
    recs = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    for r in recs:  # the tiny model's answers score 0: mark them kept; what is trained is the question here
        r["reward"], r["success"] = 1.0, True
    rows = rft_rows(recs, rule="best")
    assert len(rows) == 2
    tok = tiny_policy.tokenizer
    args = RFTConfig(output_dir=str(tmp_path / "rft"), use_cpu=True, bf16=False, max_steps=1, save_strategy="no",
                      max_length=None, report_to="none")  # no truncation: the byte-level prompts are long
    trainer = make_rft_trainer(build_tiny_model(tok, seed=5), tok, rows, args)
    by_request = {r["task"]["problem_description"]: r for r in recs}
    assert len(trainer.train_dataset) == 2
    for row in trainer.train_dataset:
        rec = by_request[next(m["content"] for m in row["messages"] if m["role"] == "user")]
        opener = rec["meta"]["exploration"]["openers"][0].strip()
        trained = tok.decode([t for t in row["labels"] if t != -100])
        assert opener in trained, (opener, trained)
        assert rec["task"]["problem_description"] not in trained  # the request is context, not target
