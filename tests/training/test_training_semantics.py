"""Training that means what it says (issue 11, section 2): pair rules, the critic's view of the
dialogue, ties, near-zero margins, truncation counts, ablations by hand, and stages with nothing
to train on stopping with one line."""

from __future__ import annotations

import json
import math

import pytest
import torch

from sweet_agent.cli import main
from sweet_agent.critic.config import CriticConfig
from sweet_agent.critic.trainer import CriticCollator, CriticTrainer, pair_stats
from sweet_agent.training.command import NOTHING_TO_TRAIN
from sweet_agent.training_data.pairs import build_trajectory_pairs, pairs_to_rows
from tests.training.conftest import make_task, make_traj

# ------------------------------------------------------------------------------ pair rules


def _rewards(pairs):
    return sorted((p["chosen"]["reward"], p["rejected"]["reward"]) for p in pairs)


def test_pair_rules_give_the_expected_pairs():
    t = make_task(0)
    recs = [make_traj(t, True), make_traj(t, False, 0.5, 1), make_traj(t, False, 0.0)]
    assert _rewards(build_trajectory_pairs(recs, rule="success")) == [(1.0, 0.0), (1.0, 0.5)]
    assert _rewards(build_trajectory_pairs(recs, rule="reward")) == [(0.5, 0.0), (1.0, 0.0), (1.0, 0.5)]
    assert _rewards(build_trajectory_pairs(recs, rule="top-bottom")) == [(1.0, 0.0)]


def test_top_bottom_rule_makes_frontend_pairs():
    """CLIP similarity is continuous and never 1: the paper's rule finds nothing, top-vs-bottom does."""
    t = make_task(1)
    sims = [0.81, 0.62, 0.35, 0.35, 0.62]
    recs = [make_traj(t, False, s, i) for i, s in enumerate(sims)]
    for r in recs:
        r["success"] = None  # frontend records carry no success flag
    assert build_trajectory_pairs(recs) == []
    assert _rewards(build_trajectory_pairs(recs, rule="top-bottom")) == [(0.81, 0.35), (0.81, 0.35)]
    assert len(build_trajectory_pairs(recs, rule="reward")) == 1 * 4 + 2 * 2  # 0.81 > 4 others; 0.62s > 0.35s
    same = [make_traj(make_task(2), False, 0.5, i) for i in range(3)]
    assert build_trajectory_pairs(same, rule="top-bottom") == []  # no gap, no preference


def test_rft_keeps_the_chosen_side_of_the_rule():
    from sweet_agent.baselines.rft import rft_rows

    t = make_task(0)
    recs = [make_traj(t, False, 0.7), make_traj(t, False, 0.2, 1), make_traj(t, False, 0.4, 2)]
    assert rft_rows(recs) == []
    assert len(rft_rows(recs, rule="top-bottom")) == 1
    assert len(rft_rows(recs, rule="reward")) == 2


# ------------------------------------------------------------------------------ the critic's view


def test_critic_sees_the_policy_system_prompt():
    recs = [make_traj(make_task(0), True), make_traj(make_task(0), False)]
    for r in recs:
        r["meta"] = {"system_prompt": "You may ask questions."}
    row = pairs_to_rows(build_trajectory_pairs(recs))[0]
    assert row["chosen"][0] == {"role": "system", "content": "You may ask questions."}
    assert [m["role"] for m in row["chosen"]] == ["system", "user", "assistant", "user", "assistant"]
    # An explicit system prompt (as passed with --system_prompt) wins over the record's.
    row = pairs_to_rows(build_trajectory_pairs(recs), system_prompt="SYS")[0]
    assert row["rejected"][0] == {"role": "system", "content": "SYS"}


def test_critic_input_puts_privileged_info_into_that_system_message(tiny_tokenizer):
    from sweet_agent.sweet_rl.algorithm import with_privileged

    msgs = with_privileged([{"role": "system", "content": "You may ask."}, {"role": "user", "content": "hi"}], "REF")
    assert len(msgs) == 2 and msgs[0]["content"].endswith("REF\n\nYou may ask.")


# ------------------------------------------------------------------------------ ties and margins


def test_ties_are_not_correct_and_are_counted():
    s = pair_stats(torch.tensor([1.0, 0.5, 0.2, 0.0]), torch.tensor([0.0, 0.5, 0.3, 0.0]))
    assert s["accuracy"] == 0.25 and s["tie_rate"] == 0.5 and s["pairs"] == 4
    assert s["max_abs_margin"] == 1.0


def _trajs(tmp_path, recs):
    path = tmp_path / "trajs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def test_a_run_whose_margins_are_all_zero_says_so(tmp_path, toy_records, tiny_model_dir, capsys):
    """LoRA starts as the identity (B = 0): with learning rate 0 every score is exactly 0."""
    out = tmp_path / "critic"
    assert main(["train-critic", "--data", _trajs(tmp_path, toy_records), "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(out), "--use_peft", "--lora_r", "2", "--learning_rate", "0", "--max_steps", "1",
                 "--per_device_train_batch_size", "2", "--max_length", "256", "--eval_fraction", "0.34",
                 "--save_strategy", "no"]) == 0
    text = capsys.readouterr().out
    assert "every held-out margin is ~0" in text and "raise --learning_rate" in text
    assert "ties 100% counted as not correct" in text
    meta = json.loads((out / "sweet_critic.json").read_text())
    assert meta["heldout_tie_rate"] == 1.0 and meta["heldout_accuracy"] == 0.0


# ------------------------------------------------------------------------------ truncation counts


def test_turns_cut_by_max_length_are_counted(tiny_tokenizer, tiny_model, toy_records, tmp_path, caplog):
    from transformers.utils import logging as hf_logging

    from sweet_agent.critic.trainer import encode_trajectory
    from sweet_agent.training_data.spans import assistant_token_spans

    row = pairs_to_rows(build_trajectory_pairs(toy_records))[0]
    _, spans = assistant_token_spans(tiny_tokenizer, row["chosen"])
    full, _, cut = encode_trajectory(tiny_tokenizer, row["chosen"], None, None, return_cut=True)
    assert cut == 0
    assert encode_trajectory(tiny_tokenizer, row["chosen"], None, spans[-1][1], return_cut=True)[2] == 0
    ids, _, cut = encode_trajectory(tiny_tokenizer, row["chosen"], None, spans[-1][1] - 1, return_cut=True)
    assert cut == 1 and len(ids) == spans[-1][1] - 1  # the last turn's end-of-turn token is gone
    assert encode_trajectory(tiny_tokenizer, row["chosen"], None, spans[0][0] + 1, return_cut=True)[2] == 2
    hf_logging.enable_propagation()
    try:
        with caplog.at_level("WARNING"):
            CriticTrainer(model=tiny_model, args=CriticConfig(output_dir=str(tmp_path), max_length=5,
                                                             report_to="none"),
                          train_dataset=[row], processing_class=tiny_tokenizer)
    finally:
        hf_logging.disable_propagation()
    assert "max_length=5 cut 4 agent turns in 2 of 2 trajectories" in caplog.text


def test_candidates_cut_by_the_token_cap_are_counted(tiny_model, tiny_tokenizer):
    from sweet_agent.actor.candidates import sample_candidates

    conv = [{"role": "user", "content": "hello"}]
    texts, cut = sample_candidates(tiny_model, tiny_tokenizer, conv, 4, max_new_tokens=3, seed=0,
                                   return_truncated=True)
    assert len(texts) == 4 and cut == 4  # a random 400-token model does not end a turn within 3 tokens
    tiny_model.generation_config.eos_token_id = tiny_tokenizer.convert_tokens_to_ids("e")  # a common token
    texts, cut = sample_candidates(tiny_model, tiny_tokenizer, conv, 4, max_new_tokens=60, seed=0,
                                   return_truncated=True)
    assert cut < 4


# ------------------------------------------------------------------------------ ablations by hand


def _logratio_scores(model, ref, tok, row, priv, normalize):
    """Trajectory score by hand: per-token log-ratios on agent tokens, per-turn mean (turn) or sum (none)."""
    from sweet_agent.sweet_rl.algorithm import with_privileged
    from sweet_agent.training_data.spans import assistant_token_spans

    ids, spans = assistant_token_spans(tok, with_privileged(row, priv))
    x = torch.tensor([ids])
    with torch.no_grad():
        lp = torch.log_softmax(model(input_ids=x).logits[0].float(), -1)
        lr = torch.log_softmax(ref(input_ids=x).logits[0].float(), -1)
    total = 0.0
    for s, e in spans:
        vals = [float(lp[j - 1, ids[j]] - lr[j - 1, ids[j]]) for j in range(s, e)]
        total += sum(vals) / (len(vals) if normalize == "turn" else 1)
    return total


def _bt(pairs, beta=0.1):
    return sum(-math.log(1 / (1 + math.exp(-beta * (c - r)))) for c, r in pairs) / len(pairs)


ABLATIONS = [{}, {"normalize": "none"}, {"use_privileged_info": False}]


def _ablation_loss(ablation, model, tokenizer, records, tmp_path) -> tuple[float, float]:
    """``(the trainer's loss, the hand-computed loss)`` of the log-ratio critic under ``ablation``,
    after one seeded perturbation of ``model`` (so the policy and its reference differ)."""
    rows = pairs_to_rows(build_trajectory_pairs(records))[:2]
    args = CriticConfig(output_dir=str(tmp_path), report_to="none", per_device_train_batch_size=2, **ablation)
    trainer = CriticTrainer(model=model, args=args, train_dataset=rows, processing_class=tokenizer)
    noise = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=noise, dtype=p.dtype))
    batch = CriticCollator(tokenizer.pad_token_id)(trainer.train_dataset.to_list())
    loss = trainer.compute_loss(trainer.model, batch).item()
    norm = ablation.get("normalize", "turn")
    scores = []
    for row in rows:
        priv = row["privileged_info"] if ablation.get("use_privileged_info", True) else None
        scores.append((_logratio_scores(trainer.model, trainer.ref_model, tokenizer, row["chosen"], priv, norm),
                       _logratio_scores(trainer.model, trainer.ref_model, tokenizer, row["rejected"], priv, norm)))
    return loss, _bt(scores)


@pytest.mark.parametrize("ablation", ABLATIONS)
def test_logratio_ablations_give_the_hand_computed_loss(ablation, tiny_model, tiny_tokenizer, toy_records, tmp_path):
    loss, by_hand = _ablation_loss(ablation, tiny_model, tiny_tokenizer, toy_records, tmp_path)
    assert loss == pytest.approx(by_hand, rel=1e-4)


def test_each_ablation_changes_the_loss(tiny_tokenizer, toy_records, tmp_path):
    """Across ablations, on the same model and perturbation: each ablation gives another loss (and
    the hand computations agree), so none of them is silently the default."""
    from tiny_model import build_tiny_model

    losses = {}
    for ablation in ABLATIONS:
        loss, by_hand = _ablation_loss(ablation, build_tiny_model(tiny_tokenizer, seed=0), tiny_tokenizer,
                                       toy_records, tmp_path)
        assert loss == pytest.approx(by_hand, rel=1e-4)
        losses[str(ablation)] = loss
    assert len(losses) == 3
    values = list(losses.values())
    assert all(abs(a - b) > 1e-6 * max(abs(a), abs(b)) for i, a in enumerate(values) for b in values[i + 1:]), losses


def test_regression_head_loss_by_hand(tiny_model, tiny_tokenizer, toy_records, tmp_path):
    from sweet_agent.sweet_rl.algorithm import with_privileged
    from sweet_agent.training_data.spans import assistant_token_spans

    rows = pairs_to_rows(build_trajectory_pairs(toy_records))[:2]
    args = CriticConfig(output_dir=str(tmp_path), report_to="none", per_device_train_batch_size=2,
                        critic_type="regression")
    trainer = CriticTrainer(model=tiny_model, args=args, train_dataset=rows, processing_class=tiny_tokenizer)
    head = trainer.model.value_head
    with torch.no_grad():
        head.weight.normal_()
        head.bias.fill_(0.3)
    batch = CriticCollator(tiny_tokenizer.pad_token_id)(trainer.train_dataset.to_list())
    loss = trainer.compute_loss(trainer.model, batch).item()

    def score(msgs, priv):
        ids, spans = assistant_token_spans(tiny_tokenizer, with_privileged(msgs, priv))
        with torch.no_grad():
            h = trainer.model.lm(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0]
            return sum(float(head(h[e - 1])) for _, e in spans)  # value at each turn's last token, summed

    pairs = [(score(r["chosen"], r["privileged_info"]), score(r["rejected"], r["privileged_info"])) for r in rows]
    assert loss == pytest.approx(_bt(pairs), rel=1e-4)
    assert abs(loss - math.log(2)) > 1e-3  # the head moved the scores: not the untrained log 2
    # saved and loaded whole: the head written atomically beside the backbone, the same weights back
    from sweet_agent.critic.regression import HEAD_FILE, RegressionCritic

    trainer.model.save_pretrained(tmp_path / "saved")
    assert sorted(p.name for p in (tmp_path / "saved").iterdir() if HEAD_FILE in p.name) == [HEAD_FILE]
    back = RegressionCritic.from_pretrained(tmp_path / "saved").value_head
    assert torch.equal(back.weight, head.weight) and torch.equal(back.bias, head.bias)


# ------------------------------------------------------------------------------ nothing to train on


def _failing(n=3):
    t = make_task(0)
    return [make_traj(t, False, 0.0, i) for i in range(n)]


@pytest.mark.parametrize("command", ["train-critic", "train-rft", "train-mtdpo"])
def test_nothing_to_train_is_one_line_not_a_traceback(command, tmp_path, tiny_model_dir, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--data", _trajs(tmp_path, _failing()), "--model_name_or_path", str(tiny_model_dir),
              "--output_dir", str(tmp_path / "o")])
    assert exc.value.code == NOTHING_TO_TRAIN
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"sweet-agent {command}: nothing to train on: ")
    assert "--pair_rule" in err[0] and "Traceback" not in err[0]
    # every trajectory scored 0.0: no rule can pair them, so the advice is the data, not another rule
    assert "every one of the 3 trajectories has reward 0.0" in err[0]


@pytest.mark.parametrize("command,rule", [("train-critic", "success"), ("train-critic", "reward"),
                                          ("train-rft", "success"), ("train-mtdpo", "reward")])
def test_nothing_to_train_never_suggests_the_rule_in_use(command, rule, tmp_path, tiny_model_dir, capsys):
    """One trajectory per task, rewards that differ across tasks: nothing pairs within a task
    (RFT's success rule keeps nothing below the threshold)."""
    recs = [make_traj(make_task(i), False, 0.1 * i, 0) for i in range(3)]
    with pytest.raises(SystemExit) as exc:
        main([command, "--data", _trajs(tmp_path, recs), "--model_name_or_path", str(tiny_model_dir),
              "--output_dir", str(tmp_path / "o"), "--pair_rule", rule])
    assert exc.value.code == NOTHING_TO_TRAIN
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--pair_rule {rule} " not in err[0].partition("; ")[2] + " "
    assert ("lower --success_threshold" in err[0]) == (rule == "success")


def test_actor_with_no_step_pairs_is_one_line(tmp_path, tiny_model_dir, capsys):
    empty = tmp_path / "pairs.jsonl"
    empty.write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["train-actor", "--pairs_in", str(empty), "--model_name_or_path", str(tiny_model_dir),
              "--output_dir", str(tmp_path / "o")])
    assert exc.value.code == NOTHING_TO_TRAIN
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no step pairs" in err[0] and "--num_candidates" in err[0]
