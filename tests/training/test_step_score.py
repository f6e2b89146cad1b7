"""`train-actor --step_score`: ours (critic vs its reference) or the paper release's (critic with the
privileged info vs the sampling policy without it), checked against log-probabilities computed by
hand from the models' logits."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from sweet_agent.actor.candidates import build_step_pairs
from sweet_agent.actor.config import ActorConfig, StepPairConfig
from sweet_agent.cli import main
from sweet_agent.sweet_rl.algorithm import STEP_SCORES, score_candidates, with_privileged

BEFORE = [{"role": "system", "content": "You help a user write a function."},
          {"role": "user", "content": "Write f(x)."}]
CANDS = ["What should it return?", "I WANT TO ANSWER: def f(x): return 1", "no", "maybe maybe yes"]
PRIV = "def f(x):\n    return x + 1\n"


def _mean_logprob(model, tok, messages, candidate):
    """By hand: the mean log-probability of the candidate's tokens (its text and the end-of-turn
    token the model must emit) after the chat-templated prompt, from one forward pass's logits."""
    prompt = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    ids = tok(prompt + candidate + "<|im_end|>", add_special_tokens=False)["input_ids"]
    assert ids[:len(p_ids)] == p_ids  # the prompt tokenizes the same inside the whole sequence
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits[:-1], dim=-1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1)
    return float(logp[len(p_ids) - 1:].mean())


@pytest.fixture
def policy(tiny_tokenizer):
    from tiny_model import build_tiny_model

    return build_tiny_model(tiny_tokenizer, seed=2)


def test_release_score_equals_hand_computation(tiny_model, tiny_ref_model, tiny_tokenizer, policy):
    got = score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV,
                           step_score="release", policy=policy, policy_tokenizer=tiny_tokenizer)
    want = [_mean_logprob(tiny_model, tiny_tokenizer, with_privileged(BEFORE, PRIV), c)  # critic, with the solution
            - _mean_logprob(policy, tiny_tokenizer, BEFORE, c)                           # sampler, its own prompt
            for c in CANDS]
    assert got == pytest.approx(want, abs=1e-5)
    ours = score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV)
    assert all(abs(a - b) > 1e-3 for a, b in zip(got, ours))  # the option changes every score


def test_release_score_reads_the_policy_not_the_critic_reference(tiny_model, tiny_ref_model, tiny_tokenizer, policy):
    kw = dict(step_score="release", policy_tokenizer=tiny_tokenizer)
    # the critic against itself as the sampler, without privileged info: the same prompt, score 0
    same = score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, None, policy=tiny_model, **kw)
    assert same == pytest.approx([0.0] * len(CANDS), abs=1e-6)
    # the privileged info is read by the critic only
    priv = score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, policy=tiny_model, **kw)
    assert all(abs(x) > 1e-4 for x in priv)
    # the critic's reference model plays no part; the sampling policy does
    with_ref = score_candidates(tiny_model, tiny_ref_model, tiny_tokenizer, BEFORE, CANDS, PRIV, policy=policy, **kw)
    other = score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, policy=tiny_ref_model, **kw)
    base = score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, policy=policy, **kw)
    assert with_ref == base and other != pytest.approx(base, abs=1e-3)
    # normalize "none": token sums on both sides (the release's --use_sum)
    summed = score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, normalize="none",
                              policy=policy, **kw)
    assert summed != pytest.approx(base, abs=1e-3)
    with pytest.raises(ValueError, match="sampling policy"):
        score_candidates(tiny_model, None, tiny_tokenizer, BEFORE, CANDS, PRIV, step_score="release")


def test_step_pairs_under_each_score(tiny_critic, tiny_model, tiny_tokenizer, toy_records, policy):
    def pairs(step_score):
        return build_step_pairs(toy_records[:3], policy, tiny_tokenizer, tiny_critic,
                                StepPairConfig(num_candidates=4, pairs_per_turn=2, turn_fraction=0.5, max_new_tokens=6,
                                               step_score=step_score))

    ours, release = pairs("critic-ref"), pairs("release")
    assert ours and release
    for row in release:
        c, r = row["chosen"][0]["content"], row["rejected"][0]["content"]
        hand = [_mean_logprob(tiny_model, tiny_tokenizer, _privileged_view(row, toy_records), x)
                - _mean_logprob(policy, tiny_tokenizer, row["prompt"], x) for x in (c, r)]
        assert [row["chosen_score"], row["rejected_score"]] == pytest.approx(hand, abs=1e-5)
        assert row["chosen_score"] >= row["rejected_score"]
    assert ({(r["task_key"], r["turn_index"]) for r in ours} == {(r["task_key"], r["turn_index"]) for r in release})
    assert [r["chosen_score"] for r in ours] != pytest.approx([r["chosen_score"] for r in release], abs=1e-3)


def _privileged_view(row, records):
    from sweet_agent.training_data import records as R

    rec = next(r for r in records if R.task_key(r) == row["task_key"])
    return with_privileged(row["prompt"], R.privileged_info(rec))


def test_bad_step_score_is_one_line(tmp_path, tiny_model_dir, tiny_tokenizer, capsys):
    assert set(STEP_SCORES) == {"critic-ref", "release"}
    with pytest.raises(ValueError, match="step_score must be one of critic-ref, release; got 'relase'"):
        ActorConfig(output_dir=str(tmp_path), step_score="relase", bf16=False)
    with pytest.raises(ValueError, match="step_score must be one of"):
        StepPairConfig(step_score="ours")  # what build_step_pairs reads: refused before any sampling
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("")
    preset = tmp_path / "bad.yaml"
    preset.write_text(yaml.safe_dump({"step_score": "paper"}))
    for flags in (["--step_score", "relase"], ["--config", str(preset)]):
        assert main(["train-actor", *flags, "--pairs_in", str(pairs), "--model_name_or_path", str(tiny_model_dir),
                     "--output_dir", str(tmp_path / "o")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("sweet-agent train-actor: error: step_score must be one of "
                                                   "critic-ref, release")


def test_step_score_from_a_yaml_preset_and_the_flag(tmp_path):
    from sweet_agent.actor.cli import dataclass_types
    from sweet_agent.training.parser import parse_command

    preset = tmp_path / "release.yaml"
    preset.write_text("step_score: release\nnum_candidates: 16\npairs_per_turn: 4\n")
    _, cfg, _ = parse_command("t", "actor", dataclass_types(), ["--config", str(preset), "--output_dir", "o"])
    assert (cfg.step_score, cfg.num_candidates, cfg.pairs_per_turn) == ("release", 16, 4)
    _, cfg, _ = parse_command("t", "actor", dataclass_types(), ["--config", "paper", "--output_dir", "o"])
    assert cfg.step_score == "critic-ref"  # the default is ours, the paper preset too
    _, cfg, _ = parse_command("t", "actor", dataclass_types(),
                              ["--config", "paper", "--step-score", "release", "--output_dir", "o"])
    assert cfg.step_score == "release"


def _critic_dir(tmp_path, critic_type="logratio", pair_rule="success"):
    from tiny_model import save_tiny

    critic = save_tiny(tmp_path / "critic", seed=1)
    # the reference named here does not exist: only a step score that reads it can fail on it
    (critic / "sweet_critic.json").write_text(json.dumps(
        {"reference_model": str(tmp_path / "no-such-reference"), "critic_type": critic_type, "normalize": "turn",
         "use_privileged_info": True, "pair_rule": pair_rule}))
    return critic


def test_cli_release_step_score_loads_no_critic_reference(tmp_path, toy_records, tiny_model_dir, capsys):
    data = tmp_path / "trajs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:3]))
    critic = _critic_dir(tmp_path, pair_rule="release")
    out = tmp_path / "pairs.jsonl"
    base = ["train-actor", "--data", str(data), "--critic", str(critic), "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(tmp_path / "o"), "--num_candidates", "4", "--turn_fraction", "0.5",
            "--max_new_tokens", "6", "--pairs_out", str(out), "--only_pairs"]
    assert main([*base, "--step_score", "release"]) == 0
    printed = capsys.readouterr().out
    assert "(step score: release; candidates from policy:" in printed and "note:" not in printed
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows and all(r["chosen_score"] >= r["rejected_score"] for r in rows)
    assert main(base) == 1  # ours reads the critic's reference model, which is missing here
    assert "no-such-reference" in capsys.readouterr().err


def test_cli_release_step_score_refuses_a_regression_critic(tmp_path, toy_records, tiny_model_dir, capsys):
    data = tmp_path / "trajs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:3]))
    critic = _critic_dir(tmp_path, critic_type="regression")
    with pytest.raises(SystemExit, match="--step_score release needs a log-probability critic.*regression"):
        main(["train-actor", "--data", str(data), "--critic", str(critic), "--model_name_or_path",
              str(tiny_model_dir), "--output_dir", str(tmp_path / "o"), "--step_score", "release", "--only_pairs"])
