"""SWEET-RL's pair construction as the paper and its release run it (issue 36): every agent turn
paired, ``pairs_per_turn`` top-half/bottom-half pairs per turn, rows that say which agent turn
they are, and candidates sampled once from the base policy and shared by every training seed's
critic (only when the base policy and the sampling settings are the same). Tiny random models,
hand-checkable fixtures."""

from __future__ import annotations

import json
import random

import pytest

from sweet_agent.actor import pair_files as PF
from sweet_agent.actor.candidates import build_step_pairs, local_policy, stage_turns
from sweet_agent.actor.config import StepPairConfig
from sweet_agent.sweet_rl.algorithm import select_pairs


# ----------------------------------------------------------------------------- top half / bottom half
def test_select_pairs_draws_distinct_top_half_against_bottom_half_pairs():
    texts = [f"candidate {i}" for i in range(16)]
    scores = [float(s) for s in random.Random(0).sample(range(16), 16)]
    top = {i for i in range(16) if scores[i] >= 8}  # the 8 best by score
    for seed in range(20):
        pairs = select_pairs(texts, scores, 4, random.Random(seed))
        assert len(pairs) == 4 == len(set(pairs))  # the release's --num_pairs 4, no pair twice
        assert all(c in top and r not in top for c, r in pairs)
    # several pairs per turn where possible: 2 candidates allow one, 3 allow two (top 1 x bottom 2)
    assert len(select_pairs(["a", "b"], [1.0, 0.0], 4)) == 1
    assert sorted(select_pairs(["a", "b", "c"], [2.0, 1.0, 0.0], 4)) == [(0, 1), (0, 2)]
    # identical texts carry no preference: never paired
    assert sorted(select_pairs(["a", "b", "a", "b"], [3.0, 2.0, 1.0, 0.0], 4)) == [(0, 3), (1, 2)]
    assert select_pairs(["a", "a", "a", "a"], [3.0, 2.0, 1.0, 0.0], 4) == []


def test_paper_defaults_pair_every_turn_with_four_pairs():
    cfg = StepPairConfig()
    assert (cfg.num_candidates, cfg.pairs_per_turn, cfg.turn_fraction, cfg.first_turns, cfg.skip_turns,
            cfg.temperature, cfg.explore_turns) == (16, 4, 1.0, 0, 0, 1.0, 0)


# ----------------------------------------------------------------------------- agent turns in rows
def test_rows_and_journal_say_the_agent_turn_beside_the_dialogue_position(tiny_critic, tiny_tokenizer, toy_records,
                                                                         tmp_path):
    """The toy dialogues are person, agent, person, agent: agent turn 1 is dialogue position 1,
    agent turn 2 is position 3 (agent turn k at 2k - 1)."""
    from tiny_model import build_tiny_model

    policy = build_tiny_model(tiny_tokenizer, seed=2)
    out = tmp_path / "pairs.jsonl"
    cfg = StepPairConfig(num_candidates=4, pairs_per_turn=2, max_new_tokens=6)
    rows = build_step_pairs(toy_records[:2], policy, tiny_tokenizer, tiny_critic, cfg, seed=0, pairs_out=out)
    assert {(r["agent_turn"], r["turn_index"]) for r in rows} == {(1, 1), (2, 3)}
    for r in rows:
        assert r["agent_turn"] == 1 + sum(m["role"] == "assistant" for m in r["prompt"])
    assert len(rows) == 2 * 4  # 2 trajectories x 2 agent turns, 2 pairs each
    # the journal says it too (kept while the stage runs; read one from an interrupted build)
    journal = PF.TurnJournal(tmp_path / "j.jsonl", {"s": 1}, PF.Shard(), resume=False)
    journal.append({"turn": 0, "agent_turn": 1, "rows": [], "error": None})
    journal.close()
    assert json.loads((tmp_path / "j.jsonl").read_text().splitlines()[1])["agent_turn"] == 1


# ----------------------------------------------------------------------------- candidates shared across seeds
class _NoSampling:
    """A candidate source under the local policy's name that fails the test if asked for a sample."""

    supports_prefix = True

    def __init__(self, policy, tokenizer):
        self.name = local_policy(policy, tokenizer).name

    def sample_n(self, *a, **k):
        raise AssertionError("sampled although the candidates file holds every turn")

    generate = sample_n


@pytest.fixture
def two_critics(tiny_tokenizer):
    """Two training seeds' critics: different weights, the same reference."""
    from tiny_model import build_tiny_model

    from sweet_agent.critic.loading import LoadedCritic

    ref = build_tiny_model(tiny_tokenizer, seed=1)
    return [LoadedCritic(build_tiny_model(tiny_tokenizer, seed=s), ref, tiny_tokenizer, {"seed": s}) for s in (0, 7)]


def test_every_seeds_critic_scores_the_same_candidates(two_critics, tiny_tokenizer, toy_records, tmp_path):
    from tiny_model import build_tiny_model

    policy = build_tiny_model(tiny_tokenizer, seed=2)
    recs, shared = toy_records[:3], tmp_path / "candidates.jsonl"
    cfg = StepPairConfig(num_candidates=4, pairs_per_turn=2, max_new_tokens=6, explore_candidates=0.25,
                         candidate_seed=0)
    first: dict = {}
    rows0 = build_step_pairs(recs, policy, tiny_tokenizer, two_critics[0], cfg, seed=0, stats=first,
                             candidates_file=shared, policy_identity={"model": "tiny-2"})
    assert first["reused_turns"] == 0 and shared.exists()
    by_turn = PF.read_candidate_file(shared, json.loads(shared.read_text().splitlines()[0])["settings"])
    assert sorted(by_turn) == list(range(6)) and all(len(c) == 4 for c in by_turn.values())
    assert all(sum(c["question"] for c in cands) == 1 for cands in by_turn.values())  # one question per turn
    # the second seed's stage: another critic, another pair-draw seed, the same samples (none drawn again)
    second: dict = {}
    rows1 = build_step_pairs(recs, policy, tiny_tokenizer, two_critics[1], cfg, seed=1, stats=second,
                             candidates=_NoSampling(policy, tiny_tokenizer), candidates_file=shared, policy_identity={"model": "tiny-2"})
    assert second["reused_turns"] == 6 and second["candidates"] == 24 and second["question_candidates"] == 6
    for row in rows1:
        texts = {c["text"] for c in by_turn[row["turn"]]}
        assert {row["chosen"][0]["content"], row["rejected"][0]["content"]} <= texts
    scores0 = {(r["turn"], r["chosen"][0]["content"]): r["chosen_score"] for r in rows0}
    scores1 = {(r["turn"], r["chosen"][0]["content"]): r["chosen_score"] for r in rows1}
    common = set(scores0) & set(scores1)
    assert common and any(scores0[k] != scores1[k] for k in common)  # each seed's own critic scored them
    # the same stage sampling afresh (no file) gives the first seed's candidates: the file changed nothing
    fresh = build_step_pairs(recs, policy, tiny_tokenizer, two_critics[0], cfg, seed=0)
    assert fresh == rows0


@pytest.mark.parametrize("change", ["policy", "temperature", "num_candidates", "records", "candidate_seed"])
def test_candidates_of_another_policy_or_sampling_are_refused_in_one_line(change, two_critics, tiny_tokenizer,
                                                                          toy_records, tmp_path):
    from tiny_model import build_tiny_model

    policy = build_tiny_model(tiny_tokenizer, seed=2)
    shared = tmp_path / "candidates.jsonl"
    base = dict(num_candidates=3, pairs_per_turn=1, max_new_tokens=4, candidate_seed=0)
    build_step_pairs(toy_records[:1], policy, tiny_tokenizer, two_critics[0], StepPairConfig(**base), seed=0,
                     candidates_file=shared, policy_identity={"model": "tiny-2"})
    kw, recs, identity = dict(base), toy_records[:1], {"model": "tiny-2"}
    if change == "policy":
        identity = {"model": "tiny-3"}
    elif change == "records":
        recs = toy_records[1:2]
    else:
        kw[change] = {"temperature": 0.7, "num_candidates": 4, "candidate_seed": 5}[change]
    with pytest.raises(PF.CandidateFileError) as err:
        build_step_pairs(recs, policy, tiny_tokenizer, two_critics[1], StepPairConfig(**kw), seed=1,
                         candidates=_NoSampling(policy, tiny_tokenizer), candidates_file=shared, policy_identity=identity)
    msg = str(err.value)
    assert "\n" not in msg and "candidates of another base policy or sampling" in msg
    assert {"policy": "policy.model", "records": "records.", "temperature": "sampling.temperature",
            "num_candidates": "sampling.num_candidates", "candidate_seed": "seed:"}[change] in msg
    # the critic's settings are not part of it: a different critic reads the file (shown above), and so
    # does a different pair draw or step score
    build_step_pairs(toy_records[:1], policy, tiny_tokenizer, two_critics[1],
                     StepPairConfig(**base, step_score="release"), seed=9, candidates=_NoSampling(policy, tiny_tokenizer),
                     candidates_file=shared, policy_identity={"model": "tiny-2"})


def test_model_fingerprint_tells_checkpoints_apart(tmp_path):
    from tiny_model import save_tiny

    from sweet_agent.training.models import model_fingerprint

    a, b = save_tiny(tmp_path / "a", seed=0), save_tiny(tmp_path / "b", seed=1)
    fa, fb = model_fingerprint(a), model_fingerprint(b)
    assert fa["sha256"] != fb["sha256"] and fa == model_fingerprint(a)
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in a.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert model_fingerprint(copy)["sha256"] == fa["sha256"]  # the same weights elsewhere are the same policy
    (copy / "checkpoint-5").mkdir()  # a Trainer's resumable state is not the model
    (copy / "checkpoint-5" / "optimizer.pt").write_bytes(b"state")
    assert model_fingerprint(copy)["sha256"] == fa["sha256"]
    (copy / "adapter").mkdir()  # but everything else in the folder is
    (copy / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    assert model_fingerprint(copy)["sha256"] != fa["sha256"]
    big = tmp_path / "big.gguf"
    big.write_bytes(b"\0" * 100 + b"x")
    assert model_fingerprint(big, chunk=8, whole_below=16)["sha256"] != model_fingerprint(
        tmp_path / "a", chunk=8, whole_below=16)["sha256"]
    assert model_fingerprint("some/hub-id") == {"model": "some/hub-id"}


def test_train_actor_shares_candidates_between_seeds_and_refuses_another_policy(tmp_path, toy_records, capsys):
    """The command: the first seed's stage writes --candidates_file, the second seed's (another
    critic, another --seed, the same --candidate_seed) reads it; another base policy is refused
    in one line before anything is sampled."""
    from tiny_model import save_tiny

    from sweet_agent.cli import main

    policy, other = save_tiny(tmp_path / "policy", seed=2), save_tiny(tmp_path / "other", seed=3)
    ref = save_tiny(tmp_path / "ref", seed=1)
    critics = [save_tiny(tmp_path / f"critic{s}", seed=s) for s in (0, 5)]
    for c in critics:
        (c / "sweet_critic.json").write_text(json.dumps({"reference_model": str(ref)}))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:2]))
    shared = tmp_path / "candidates.jsonl"

    def stage(critic, seed, model=policy):
        return main(["train-actor", "--data", str(data), "--critic", str(critic), "--model_name_or_path", str(model),
                     "--output_dir", str(tmp_path / f"o{seed}"), "--num_candidates", "4", "--max_new_tokens", "6",
                     "--seed", str(seed), "--candidate_seed", "0", "--candidates_file", str(shared),
                     "--pairs_out", str(tmp_path / f"pairs{seed}.jsonl"), "--only_pairs", "--report_to", "none"])

    assert stage(critics[0], 0) == 0 and shared.exists()
    capsys.readouterr()
    assert stage(critics[1], 1) == 0
    assert "candidates of 4 turns read from --candidates_file" in capsys.readouterr().out
    settings = json.loads(shared.read_text().splitlines()[0])["settings"]
    assert settings["policy"]["model"] == str(policy.resolve()) and settings["policy"]["sha256"]
    with pytest.raises(SystemExit) as err:
        stage(critics[1], 2, model=other)
    msg = str(err.value)
    assert "\n" not in msg and "candidates of another base policy or sampling (" in msg and "policy.sha256" in msg


def test_stage_turns_cover_every_agent_turn_by_default(toy_records):
    turns = stage_turns(toy_records, StepPairConfig())
    assert len(turns) == 2 * len(toy_records)  # every agent turn of every trajectory


@pytest.mark.parametrize("preset", ["cpu", "paper"])
def test_every_shipped_actor_preset_pairs_every_agent_turn_as_the_paper_does(preset, toy_records):
    """``train-actor --config cpu|paper`` as the parser reads the shipped YAML: every agent turn of
    every trajectory, >= 8 candidates at temperature 1, 4 pairs per turn, DPO + NLL 0.01."""
    from sweet_agent.actor.cli import dataclass_types
    from sweet_agent.training.parser import parse_command

    _, actor, _ = parse_command("t", "actor", dataclass_types(), ["--config", preset, "--output_dir", "o"])
    assert len(stage_turns(toy_records, actor)) == 2 * len(toy_records)  # the toy dialogues: 2 agent turns each
    assert actor.num_candidates >= 8 and actor.temperature == 1.0 and actor.pairs_per_turn == 4
    assert list(actor.loss_weights) == [1.0, 0.01] and actor.beta == 0.1
    assert (actor.first_turns, actor.skip_turns, actor.explore_turns) == (0, 0, 0)
