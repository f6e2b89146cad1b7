"""Question candidates in SWEET's step pairs (``ActorConfig.explore_candidates``): a policy that
never asks gives the critic no question to prefer, so a share of a turn's candidates is started
with the exploration openers of :mod:`sweet_agent.policies.exploration` and completed by the
policy. Real tiny model and critic; no mocks."""

from __future__ import annotations

import pytest

from sweet_agent.actor.candidates import build_step_pairs, sample_candidates
from sweet_agent.actor.config import ActorConfig, StepPairConfig
from sweet_agent.policies.exploration import DEFAULT_LATER_OPENERS, DEFAULT_OPENERS, ExplorationConfig
from sweet_agent.sweet_rl.algorithm import question_count

CONV = [{"role": "user", "content": "Write f(x)."}]


def starts_with_opener(text: str, openers=DEFAULT_OPENERS + DEFAULT_LATER_OPENERS) -> bool:
    return any(text.startswith(o.strip()) for o in openers)


def test_questions_are_the_last_candidates_and_start_with_an_opener(tiny_model, tiny_tokenizer):
    out, cut = sample_candidates(tiny_model, tiny_tokenizer, CONV, n=5, max_new_tokens=8, seed=3, questions=3,
                                 return_truncated=True)
    assert len(out) == 5
    assert not any(starts_with_opener(t) for t in out[:2])  # the policy's own samples
    assert all(starts_with_opener(t) and t.endswith("?") for t in out[2:])  # completed questions
    assert len({t for t in out[2:]}) > 1  # sampled per candidate, not one copy
    assert 0 <= cut <= 2  # the cap count covers the policy's own samples
    # seeded: the same call gives the same candidates; the tokenizer's padding side is restored
    tiny_tokenizer.padding_side = "right"
    again = sample_candidates(tiny_model, tiny_tokenizer, CONV, n=5, max_new_tokens=8, seed=3, questions=3)
    assert again == out and tiny_tokenizer.padding_side == "right"
    only = sample_candidates(tiny_model, tiny_tokenizer, CONV, n=2, max_new_tokens=8, seed=3, questions=2)
    assert len(only) == 2 and all(starts_with_opener(t) for t in only)


def test_off_is_unchanged(tiny_model, tiny_tokenizer):
    plain = sample_candidates(tiny_model, tiny_tokenizer, CONV, n=4, max_new_tokens=6, seed=1)
    off = sample_candidates(tiny_model, tiny_tokenizer, CONV, n=4, max_new_tokens=6, seed=1, questions=0,
                            exploration=ExplorationConfig())
    assert off == plain and not any(starts_with_opener(t) for t in plain)


def test_question_count():
    assert question_count(16, 0.0) == 0
    assert question_count(16, 0.25) == 4
    assert question_count(2, 0.1) == 1  # at least one when on
    assert question_count(4, 1.0) == 4
    with pytest.raises(ValueError, match="explore_candidates"):
        question_count(4, 1.5)


def test_step_pairs_hold_question_candidates_only_when_on(tiny_critic, tiny_tokenizer, toy_records):
    from tiny_model import build_tiny_model

    policy = build_tiny_model(tiny_tokenizer, seed=2)
    recs = toy_records[:3]  # two agent turns each
    kw = dict(num_candidates=2, pairs_per_turn=1, turn_fraction=1.0, max_new_tokens=6)

    default_stats: dict[str, int] = {}
    default = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, StepPairConfig(**kw), seed=0,
                               stats=default_stats)
    off_stats: dict[str, int] = {}
    off = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, StepPairConfig(explore_candidates=0.0, **kw),
                           seed=0, stats=off_stats)
    assert off == default and off_stats == default_stats and off_stats["question_candidates"] == 0
    texts = [r[k][0]["content"] for r in off for k in ("chosen", "rejected")]
    assert texts and not any(starts_with_opener(t) for t in texts)

    stats: dict[str, int] = {}
    rows = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic,
                            StepPairConfig(explore_candidates=0.5, explore_turns=1, **kw), seed=0, stats=stats)
    assert stats["turns"] == 6 and stats["candidates"] == 12
    assert stats["question_candidates"] == 3  # one of two candidates at each first agent turn
    def agent_turn(row):  # agent turns before this one in the policy's prompt
        return sum(m["role"] == "assistant" for m in row["prompt"])

    first = [r for r in rows if agent_turn(r) == 0]
    later = [r for r in rows if agent_turn(r) > 0]
    assert len(first) == 3 and later
    for r in first:  # a question against the policy's own answer, whichever the critic preferred
        pair = [r["chosen"][0]["content"], r["rejected"][0]["content"]]
        assert sum(starts_with_opener(t) for t in pair) == 1, pair
    for r in later:  # only the first agent turn explores
        assert not any(starts_with_opener(r[k][0]["content"]) for k in ("chosen", "rejected"))


def test_config_field_flag_and_presets():
    from sweet_agent.actor.cli import parse_args

    assert ActorConfig(output_dir="/tmp/x", bf16=False).explore_candidates == 0.0
    args = parse_args(["--output_dir", "o", "--explore_candidates", "0.5", "--explore_turns", "2"])
    assert args.training.explore_candidates == 0.5 and args.training.explore_turns == 2
    assert parse_args(["--config", "paper", "--output_dir", "o"]).training.explore_candidates == 0.0
    with pytest.raises(ValueError, match="explore_candidates"):
        ActorConfig(output_dir="/tmp/x", bf16=False, explore_candidates=2.0)
    assert ActorConfig(output_dir="/tmp/x", bf16=False).explore_turns == 0  # 0 = every agent turn
    with pytest.raises(ValueError, match="explore_turns must be >= 0"):
        ActorConfig(output_dir="/tmp/x", bf16=False, explore_turns=-1)


def test_question_candidates_join_every_agent_turn_by_default(pairs_of_toy_records):
    """explore_turns 0 (the default): the critic is offered a question at the second agent turn
    too, started with a later-turn opener ("one more question"), so "ask again" meets "answer"
    wherever the decision exists; explore_turns 1 keeps them to the first agent turn."""
    build = pairs_of_toy_records
    stats: dict[str, int] = {}
    rows = build(explore_candidates=0.5, stats=stats)
    assert stats["turns"] == 6 and stats["question_candidates"] == 6  # one of two candidates at each turn
    by_turn = {1: [r for r in rows if r["agent_turn"] == 1], 2: [r for r in rows if r["agent_turn"] == 2]}
    assert len(by_turn[1]) == 3 and len(by_turn[2]) == 3
    for r in by_turn[1]:
        pair = [r["chosen"][0]["content"], r["rejected"][0]["content"]]
        assert sum(starts_with_opener(t, DEFAULT_OPENERS) for t in pair) == 1, pair
    for r in by_turn[2]:  # the second agent turn: after the person's reply, "one more question"
        assert sum(m["role"] == "assistant" for m in r["prompt"]) == 1 and r["turn_index"] == 3
        pair = [r["chosen"][0]["content"], r["rejected"][0]["content"]]
        assert sum(starts_with_opener(t, DEFAULT_LATER_OPENERS) for t in pair) == 1, pair
        assert all(t.endswith("?") for t in pair if starts_with_opener(t)), pair
    first_only: dict[str, int] = {}
    rows = build(explore_candidates=0.5, explore_turns=1, stats=first_only)
    assert first_only["question_candidates"] == 3
    assert not any(starts_with_opener(r[k][0]["content"]) for r in rows if r["agent_turn"] == 2
                   for k in ("chosen", "rejected"))


def test_train_actor_flag_puts_questions_into_the_written_pairs(tmp_path, toy_records, tiny_model_dir, capsys):
    import json

    from sweet_agent.cli import main

    data = tmp_path / "trajs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    common = ["--max_steps", "1", "--per_device_train_batch_size", "2", "--max_length", "256", "--report_to", "none"]
    assert main(["train-critic", "--data", str(data), "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(tmp_path / "critic"), *common]) == 0
    pairs = tmp_path / "pairs.jsonl"
    assert main(["train-actor", "--data", str(data), "--critic", str(tmp_path / "critic"),
                 "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "actor"),
                 "--num_candidates", "2", "--turn_fraction", "0.5", "--max_new_tokens", "6",
                 "--explore_candidates", "0.5", "--pairs_out", str(pairs), "--only_pairs", *common]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(x) for x in pairs.read_text().splitlines()]
    assert {r["agent_turn"] for r in rows} == {1, 2}  # every agent turn offers a question (explore_turns 0)
    assert f"{len(rows)} of {2 * len(rows)} candidates started with a question opener (--explore_candidates 0.5, " \
           "at every agent turn)" in out
    for r in rows:  # one question against the policy's own candidate, whichever the critic preferred
        assert sum(starts_with_opener(r[k][0]["content"]) for k in ("chosen", "rejected")) == 1


@pytest.fixture
def pairs_of_toy_records(tiny_critic, tiny_tokenizer, toy_records):
    """``build_step_pairs`` on three two-turn toy trajectories, a tiny policy unlike the critic
    (``kw``: :class:`StepPairConfig` fields)."""
    from tiny_model import build_tiny_model

    policy = build_tiny_model(tiny_tokenizer, seed=2)

    def build(stats: dict[str, int] | None = None, **kw):
        config = StepPairConfig(**(dict(num_candidates=2, pairs_per_turn=1, turn_fraction=1.0, max_new_tokens=6) | kw))
        return build_step_pairs(toy_records[:3], policy, tiny_tokenizer, tiny_critic, config, seed=0, stats=stats)
    return build


def test_first_turns_keeps_only_each_trajectorys_first_agent_turns(pairs_of_toy_records):
    """``first_turns`` selects turns by their place in the trajectory (where asking is decided), and
    the pairs it keeps are exactly the all-turns run's pairs for those turns (same seeds)."""
    build = pairs_of_toy_records
    stats: dict[str, int] = {}
    rows = build(first_turns=1, explore_candidates=0.5, stats=stats)
    assert stats["turns"] == 3 and stats["question_candidates"] == 3
    assert len(rows) == 3 and all(not any(m["role"] == "assistant" for m in r["prompt"]) for r in rows)
    everything: dict[str, int] = {}
    both = build(first_turns=2, explore_candidates=0.5, stats=everything)
    assert everything["turns"] == 6  # 2 >= every trajectory's turn count: all of them, like 0
    assert sorted(r["task_key"] for r in rows) == sorted(
        r["task_key"] for r in both if not any(m["role"] == "assistant" for m in r["prompt"]))
    with pytest.raises(ValueError, match="first_turns"):
        build(first_turns=-1)


def test_first_turns_flag_and_error():
    from sweet_agent.actor.cli import parse_args

    assert ActorConfig(output_dir="/tmp/x", bf16=False).first_turns == 0  # the paper's: every turn
    assert parse_args(["--output_dir", "o", "--first_turns", "1"]).training.first_turns == 1
    with pytest.raises(ValueError, match="first_turns must be >= 0"):
        ActorConfig(output_dir="/tmp/x", bf16=False, first_turns=-2)


def test_skip_turns_with_first_turns_selects_a_window(pairs_of_toy_records):
    build = pairs_of_toy_records
    stats: dict[str, int] = {}
    rows = build(skip_turns=1, first_turns=2, explore_candidates=0.5, explore_turns=2, stats=stats)
    assert stats["turns"] == 3 and len(rows) == 3
    assert all(sum(m["role"] == "assistant" for m in r["prompt"]) == 1 for r in rows)  # the second agent turn
    for r in rows:  # explore_turns 2: the second turn offers a question against the policy's own text
        assert sum(starts_with_opener(r[k][0]["content"]) for k in ("chosen", "rejected")) == 1
    assert build(skip_turns=2) == []  # no trajectory has a third agent turn
    with pytest.raises(ValueError, match="skip_turns must be >= 0"):
        ActorConfig(output_dir="/tmp/x", bf16=False, skip_turns=-1)


def test_pairs_in_reads_several_files(tmp_path, tiny_model_dir, capsys):
    import json

    from sweet_agent.cli import main

    def pair(i: int) -> dict:
        return {"prompt": [{"role": "user", "content": f"Write f{i}(x)."}],
                "chosen": [{"role": "assistant", "content": "What should f return?"}],
                "rejected": [{"role": "assistant", "content": "I WANT TO ANSWER: def f(x): return x"}]}

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(pair(0)) + "\n")
    b.write_text("".join(json.dumps(pair(i)) + "\n" for i in (1, 2)))
    assert main(["train-actor", "--pairs_in", f"{a},{b}", "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(tmp_path / "o"), "--max_steps", "1", "--per_device_train_batch_size", "3",
                 "--max_length", "128", "--report_to", "none", "--save_strategy", "no"]) == 0
    out = capsys.readouterr().out
    assert f"[train-actor] 3 step pairs from {a}, {b}" in out
    assert (tmp_path / "o" / "config.json").exists() or (tmp_path / "o" / "adapter_config.json").exists()
