"""`sweet-agent critic-report`: a step score's pairwise agreement with the Monte-Carlo values,
per agent turn, counted by hand on a 6-pair fixture; real critics scored exactly as train-actor
scores candidates; each critic judged on the tasks it did not train on."""

from __future__ import annotations

import json

import pytest

from sweet_agent.actor import critic_report as CR
from sweet_agent.actor import mc_values as MC
from sweet_agent.cli import main
from tests.training.conftest import make_task


def _cand(text, mc, answer=False):
    return {"text": text, "mc_value": mc, "answer": answer}


def _row(turn, agent_turn, task_key, cands, task=None):
    prompt = [{"role": "system", "content": "Ask, then answer."}, {"role": "user", "content": "Write f(x)."}]
    prompt += [{"role": "assistant", "content": "What is x?"}, {"role": "user", "content": "A number."}] * (agent_turn - 1)
    return {"turn": turn, "agent_turn": agent_turn, "task_key": task_key, "turn_index": 2 * agent_turn - 1,
            "prompt": prompt, "task": task or make_task(0), "candidates": cands, "error": None}


#: (values row, the step score of each of its candidates). Hand count:
#:   turn 0, agent turn 1: a0>a1 agree, a0>a2 agree, a1>a2 disagree (0.1 < 0.2); the repeated a0 counts once;
#:     a0 and a1 are answers: answer-answer 1 of 1, ask-answer 1 of 2
#:   turn 1, agent turn 2: b0=b1 an MC tie (left out); b2>b0 agree, b2>b1 agree
#:   turn 2, agent turn 2: c1>c0 but equal scores: a score tie (not agreeing); c2 has no value (2 pairs unmeasured)
#: => 6 pairs, 4 agree; agent turn 1: 2 of 3; agent turn 2: 2 of 3, 1 MC tie, 1 score tie, 2 unmeasured;
#:    ask-ask 2 of 3
FIXTURE = [
    (_row(0, 1, "A", [_cand("a0", 1.0, True), _cand("a1", 0.5, True), _cand("a2", 0.0), _cand("a0", 1.0, True)]),
     [0.3, 0.1, 0.2, 0.3]),
    (_row(1, 2, "A", [_cand("b0", 0.5), _cand("b1", 0.5), _cand("b2", 1.0)]), [0.7, 0.2, 0.9]),
    (_row(2, 2, "B", [_cand("c0", 0.0), _cand("c1", 1.0), _cand("c2", None)]), [0.4, 0.4, 5.0]),
]
ROWS = [r for r, _ in FIXTURE]
SCORES = {r["turn"]: s for r, s in FIXTURE}


def test_agreement_equals_the_hand_count():
    table = CR.agreement_by_turn(ROWS, SCORES)
    assert list(table) == ["1", "2", "all"]
    one, two, total = table["1"], table["2"], table["all"]
    assert (one.pairs, one.agree, one.mc_ties, one.score_ties, one.unmeasured) == (3, 2, 0, 0, 0)
    assert (two.pairs, two.agree, two.mc_ties, two.score_ties, two.unmeasured) == (3, 2, 1, 1, 2)
    assert (total.pairs, total.agree) == (6, 4) and total.rate == pytest.approx(4 / 6)
    assert total.turns == [(2, 3), (2, 2), (0, 1)]  # (agree, pairs) per turn with pairs: the bootstrap's units
    assert total.kinds == {"answer-answer": [1, 1], "ask-answer": [1, 2], "ask-ask": [2, 3]}
    # the Wilson 95 % interval of 4 of 6 (a textbook value)
    lo, hi = CR.wilson(4, 6)
    assert lo == pytest.approx(0.3000, abs=5e-4) and hi == pytest.approx(0.9032, abs=5e-4)
    # a perfect score agrees on every pair; its reverse on none
    mc = {r["turn"]: [c["mc_value"] if c["mc_value"] is not None else 0.0 for c in r["candidates"]] for r in ROWS}
    assert CR.agreement_by_turn(ROWS, mc)["all"].agree == 6
    assert CR.agreement_by_turn(ROWS, {k: [-x for x in v] for k, v in mc.items()})["all"].agree == 0


def test_what_the_values_prefer_equals_the_hand_count():
    """No step score: agent turn 1 holds answers a0 (1.0; its repeat counts once) and a1 (0.5) against
    a2 (0.0, goes on): 2 ask-answer pairs, the answer worth more in both; agent turn 2 has no answer
    (5 measured candidates going on, mean (0.5 + 0.5 + 1 + 0 + 1) / 5; c2 has no value)."""
    prefers = CR.mc_preferences(ROWS)
    assert list(prefers) == ["1", "2", "all"]
    assert prefers["1"] == {"turns": 1, "ask_answer_pairs": 2, "goes_on_higher": 0, "answer_higher": 2, "ties": 0,
                            "candidates": {"goes_on": 1, "answers": 2},
                            "mean_value": {"goes_on": 0.0, "answers": 0.75}}
    assert prefers["2"]["ask_answer_pairs"] == 0 and prefers["2"]["turns"] == 2
    assert prefers["2"]["mean_value"] == {"goes_on": pytest.approx(0.6), "answers": None}
    assert prefers["all"]["candidates"] == {"goes_on": 6, "answers": 2} and prefers["all"]["answer_higher"] == 2
    # a question worth as much as an answer is a tie; worth more, a win for going on
    row = _row(5, 1, "C", [_cand("q", 0.5), _cand("ans", 0.5, True), _cand("q2", 0.9)])
    assert {k: CR.mc_preferences([row])["1"][k] for k in ("goes_on_higher", "answer_higher", "ties")} == \
        {"goes_on_higher": 1, "answer_higher": 0, "ties": 1}


def test_a_critic_is_judged_on_the_tasks_it_did_not_train_on():
    table = CR.agreement_by_turn(ROWS, SCORES, skip_tasks={"B"})
    assert (table["all"].pairs, table["all"].agree) == (5, 4)
    assert table["2"].trained_on == 3  # turn 2's pair, ... and its 2 unmeasured ones: all left out
    report = CR.build_report(ROWS, [CR.Scorer("c", "critic-ref", SCORES, trained_tasks={"B"})], tasks="heldout")
    assert report["scorers"][0]["by_agent_turn"]["all"]["pairs"] == 5
    report = CR.build_report(ROWS, [CR.Scorer("c", "critic-ref", SCORES, trained_tasks={"B"})], tasks="all")
    assert report["scorers"][0]["by_agent_turn"]["all"]["pairs"] == 6


def test_turn_bootstrap_interval_holds_the_estimate_and_is_seeded():
    turns = [(2, 3), (2, 2), (0, 1), (3, 3), (1, 4)]
    lo, hi = CR.turn_bootstrap(turns, seed=1)
    assert lo <= 8 / 13 <= hi and 0 <= lo < hi <= 1
    assert CR.turn_bootstrap(turns, seed=1) == (lo, hi)


def _write_values(path, rows, k=4):
    MC.write_values_file(path, rows, {"format": MC.FORMAT, "counts": {},
                                      "settings": {"mc": {"rollouts_per_candidate": k, "reward_mode": "fraction"},
                                                   "policy": "scripted"}})


def test_critic_report_command_prints_and_writes_the_hand_count(tmp_path, capsys):
    values = tmp_path / "values.jsonl"
    _write_values(values, ROWS)
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps({"turn": t, "scores": s}) + "\n" for t, s in SCORES.items()))
    out = tmp_path / "report.json"
    assert main(["critic-report", "--values", str(values), "--scores", f"hand={scores}", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "k=4 completions per candidate" in text and "wilson 95% CI" in text
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln[:1] in "12a" and "n=" in ln}
    assert "0.667 [0.300, 0.903] n=6" in lines["all"]
    assert "0.667" in lines["1"] and "n=3" in lines["1"] and "n=3" in lines["2"]
    report = json.loads(out.read_text())
    col = report["scorers"][0]
    assert col["name"] == "hand" and report["ci"]["method"] == "wilson" and col["fingerprint"] is None
    kinds = col["by_agent_turn"]["all"].pop("by_pair_kind")
    assert {k: (v["agree"], v["pairs"]) for k, v in kinds.items()} == {"answer-answer": (1, 1), "ask-answer": (1, 2),
                                                                       "ask-ask": (2, 3)}
    assert col["by_agent_turn"]["all"] | {"ci": None} == {"pairs": 6, "agree": 4, "agreement": pytest.approx(4 / 6),
                                                           "ci": None, "score_ties": 1, "mc_ties": 1, "unmeasured": 2,
                                                           "trained_on": 0, "turns_with_pairs": 3}
    assert col["by_agent_turn"]["all"]["ci"] == pytest.approx([0.3000, 0.9032], abs=5e-4)
    assert report["values_by_agent_turn"]["2"] == {"turns": 2, "pairs": 3, "mc_ties": 1, "unmeasured": 2}
    assert report["mc_prefers"]["1"]["answer_higher"] == 2
    assert "1: 0 / 2 / 0 of 2; 0.000 vs 0.750" in text  # what the values prefer, printed under the table
    # nothing to report on, and a values file that is not one: one line each
    with pytest.raises(SystemExit) as refused:  # refused before any work: exit 2
        main(["critic-report", "--values", str(values)])
    assert refused.value.code == 2
    assert "name at least one step score" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["critic-report", "--values", str(scores), "--scores", f"hand={scores}"])
    assert refused.value.code == 2
    assert "not written by `sweet-agent mc-values`" in capsys.readouterr().err


@pytest.fixture
def critics(tmp_path, tiny_model_dir, toy_records):
    """SWEET's critic (train-critic on the toy records, 2 of 6 tasks held out) and a critic
    without the reference solution (a tiny model with that metadata)."""
    from tiny_model import save_tiny

    data = tmp_path / "trajs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    sweet = tmp_path / "critic"
    assert main(["train-critic", "--data", str(data), "--model", str(tiny_model_dir), "--output-dir", str(sweet),
                 "--eval-fraction", "0.34", "--max-steps", "1", "--batch-size", "2", "--max-length", "256"]) == 0
    plain = save_tiny(tmp_path / "critic-noref", seed=3)
    (plain / "sweet_critic.json").write_text(json.dumps({"reference_model": str(tiny_model_dir),
                                                         "use_privileged_info": False, "normalize": "turn"}))
    return sweet, plain


def test_critic_report_scores_critics_as_train_actor_does(tmp_path, critics, tiny_model_dir, capsys):
    from sweet_agent.critic.loading import load_critic
    from sweet_agent.sweet_rl.algorithm import score_candidates
    from sweet_agent.training.models import load_model
    from sweet_agent.training_data.records import task_key

    sweet, plain = critics
    meta = json.loads((sweet / "sweet_critic.json").read_text())
    tasks = [make_task(i) for i in range(6)]
    assert sorted(meta["train_task_keys"] + meta["heldout_task_keys"]) == sorted(task_key({"task": t}) for t in tasks)
    assert len(meta["heldout_task_keys"]) == 2
    texts = ["What should it return?", "I WANT TO ANSWER: def f(x): return x + 1", "no no no"]
    rows = [_row(i, 1 + i % 2, task_key({"task": t}), [_cand(x, v) for x, v in zip(texts, (1.0, 0.5, 0.0))], task=t)
            for i, t in enumerate(tasks)]
    values = tmp_path / "values.jsonl"
    _write_values(values, rows)
    out = tmp_path / "report.json"
    assert main(["critic-report", "--values", str(values), "--critic", f"sweet={sweet}", "--critic", str(plain),
                 "--release", f"release={sweet}", "--device", "cpu", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    cols = {c["name"]: c for c in report["scorers"]}
    assert list(cols) == ["sweet", "critic-noref (critic-ref, without reference)", "release"]
    assert "records no training tasks" in printed  # the hand-made critic: every pair used, and said so
    # which critic each column scored (the bench checks it against the one that made the step pairs)
    from sweet_agent.training.models import model_fingerprint

    assert cols["sweet"]["fingerprint"] == cols["release"]["fingerprint"] == model_fingerprint(sweet)["sha256"]
    assert cols["critic-noref (critic-ref, without reference)"]["fingerprint"] == model_fingerprint(plain)["sha256"]

    # by hand: each candidate scored by score_candidates, the pairs counted on the held-out tasks
    critic = load_critic(sweet, "float32", device="cpu")
    noref = load_critic(plain, "float32", device="cpu")
    policy, ptok = load_model(str(tiny_model_dir), "float32", device="cpu")
    held = set(meta["heldout_task_keys"])
    want = {"sweet": [], "critic-noref (critic-ref, without reference)": [], "release": []}
    for row in rows:
        t = row["task"]["ground_truth"]
        s = score_candidates(critic.model, critic.ref, critic.tokenizer, row["prompt"], texts, t)
        n = score_candidates(noref.model, noref.ref, noref.tokenizer, row["prompt"], texts, None)
        r = score_candidates(critic.model, None, critic.tokenizer, row["prompt"], texts, t, step_score="release",
                             policy=policy, policy_tokenizer=ptok)
        for name, sc, only_held in (("sweet", s, True), ("critic-noref (critic-ref, without reference)", n, False),
                                    ("release", r, True)):
            if only_held and row["task_key"] not in held:
                continue
            want[name] += [sc[i] > sc[j] for i, j in ((0, 1), (0, 2), (1, 2))]  # MC order: 0 > 1 > 2
    for name, agrees in want.items():
        got = cols[name]["by_agent_turn"]["all"]
        assert got["pairs"] == len(agrees) and got["agree"] == sum(agrees), name
    assert cols["sweet"]["by_agent_turn"]["all"]["trained_on"] == 12  # 4 trained tasks x 3 pairs
    assert cols["sweet"]["privileged_info"] is True and cols["critic-noref (critic-ref, without reference)"][
        "privileged_info"] is False


def test_an_interrupted_critic_report_resumes_from_its_scores_journal(tmp_path, critics, monkeypatch, capsys):
    """--scores-journal: a run killed after some turns (here: the scorer fails at the third) leaves
    those turns journalled; the rerun scores only the rest and writes the report an uninterrupted
    run writes. A turn whose candidates changed, another critic checkpoint, or a torn last line
    is scored again."""
    import sweet_agent.sweet_rl.algorithm as A
    from sweet_agent.training_data.records import task_key

    sweet, plain = critics
    texts = ["What should it return?", "I WANT TO ANSWER: def f(x): return x + 1", "no no no"]
    rows = [_row(i, 1 + i % 2, task_key({"task": t}), [_cand(x, v) for x, v in zip(texts, (1.0, 0.5, 0.0))], task=t)
            for i, t in enumerate(make_task(i) for i in range(6))]
    values = tmp_path / "values.jsonl"
    _write_values(values, rows)
    argv = ["critic-report", "--values", str(values), "--critic", f"sweet={sweet}", "--device", "cpu", "--no-progress"]
    assert main([*argv, "--json", str(tmp_path / "whole.json")]) == 0
    whole = json.loads((tmp_path / "whole.json").read_text())

    real, calls = A.score_candidates, []

    def fails_at_third(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("killed")
        return real(*a, **k)

    journal = tmp_path / "scores.jsonl"
    monkeypatch.setattr(A, "score_candidates", fails_at_third)
    assert main([*argv, "--scores-journal", str(journal), "--json", str(tmp_path / "r.json")]) == 1
    assert "error: killed" in capsys.readouterr().err  # the command's one-line error
    assert len(journal.read_text().splitlines()) == 2 and not (tmp_path / "r.json").exists()
    with open(journal, "a") as fh:  # the process died while writing a third line
        fh.write('{"key": {"kind": "critic-ref"}, "tu')
    calls.clear()
    monkeypatch.setattr(A, "score_candidates", lambda *a, **k: calls.append(1) or real(*a, **k))
    capsys.readouterr()
    assert main([*argv, "--scores-journal", str(journal), "--json", str(tmp_path / "r.json")]) == 0
    assert len(calls) == 4  # the 6 turns less the 2 journalled
    assert "2 turns' scores read back from" in capsys.readouterr().out
    resumed = json.loads((tmp_path / "r.json").read_text())
    assert resumed["scorers"][0]["by_agent_turn"] == whole["scorers"][0]["by_agent_turn"]
    assert len(journal.read_text().splitlines()) == 6 and journal.read_text().endswith("\n")
    # a turn whose candidates changed is scored again; another critic checkpoint reuses nothing
    rows[0]["candidates"][2]["text"] = "something else"
    _write_values(values, rows)
    calls.clear()
    assert main([*argv, "--scores-journal", str(journal)]) == 0 and len(calls) == 1
    calls.clear()
    assert main(["critic-report", "--values", str(values), "--critic", f"other={plain}", "--device", "cpu",
                 "--no-progress", "--scores-journal", str(journal)]) == 0 and len(calls) == 6


def _drawn(text, rewards, answer=False):
    """A candidate with its completions' rewards (an answer: graded once, exact)."""
    value = sum(rewards) / len(rewards)
    return {"text": text, "mc_value": value, "rewards": rewards, "answer": answer, "terminal": answer}


#: Two completions per going-on candidate. Hand count of the label noise (pairs with a going-on side):
#:   turn 0, agent turn 1: (q1,q2) draw 1 ties; (q1,ans) 0.5 vs -0.5 disagree; (q1,ans2) draw 0 ties;
#:     (q2,ans) agree; (q2,ans2) agree; (ans,ans2) both exact: not a noise pair
#:   turn 1, agent turn 2: (r1,r2) agree; r3 lost its second completion: (r1,r3), (r2,r3) unmeasured
#: => a = 3 of 4; c = (1 + sqrt(0.5)) / 2.
#: Against the first completion alone (q1 1, q2 0, ans 0.5, ans2 1; r1 1, r2 0, r3 0.5):
#:   turn 0, scores .9 .6 .5 .2: (q1,q2) agree, (q1,ans) agree, (q1,ans2) MC tie, (q2,ans) disagree,
#:     (q2,ans2) disagree, (ans,ans2) disagree (exact labels) -> 2 of 5
#:   turn 1, scores .9 .1 .9: (r1,r2) agree, (r1,r3) a score tie, (r2,r3) agree -> 2 of 3
#: => 4 of 8. Corrected: the exact pair as observed (0 of 1); the 7 others: 4 agree, 1 score tie, so
#:    4 of the 6 ordered -> corrected(4/6, c), times 6/7 ordered; (0 + 6 * corrected(4/6, c)) / 8.
DRAWN = [
    _row(0, 1, "A", [_drawn("q1", [1.0, 0.0]), _drawn("q2", [0.0, 0.0]), _drawn("ans", [0.5], True),
                     _drawn("ans2", [1.0], True)]),
    _row(1, 2, "A", [_drawn("r1", [1.0, 1.0]), _drawn("r2", [0.0, 0.5]), _drawn("r3", [0.5])]),
]
DRAWN_SCORES = {0: [0.9, 0.6, 0.5, 0.2], 1: [0.9, 0.1, 0.9]}


def test_label_noise_and_the_corrected_agreement_equal_the_hand_count(tmp_path, capsys):
    rel = CR.label_reliability(DRAWN)
    assert (rel["1"].pairs, rel["1"].agree, rel["1"].mc_ties) == (3, 2, 2)
    assert (rel["2"].pairs, rel["2"].agree, rel["2"].unmeasured) == (1, 1, 2)
    assert (rel["all"].pairs, rel["all"].agree) == (4, 3)
    c = (1 + 0.5 ** 0.5) / 2
    assert CR.label_accuracy(0.75) == pytest.approx(c) and CR.label_accuracy(0.4) == 0.5
    assert CR.label_accuracy(1.0) == 1.0 and CR.corrected(0.6, 0.5) is None
    assert CR.corrected(0.75, 1.0) == 0.75  # exact labels: nothing to correct
    first = CR.agreement_by_turn(CR.draw_rows(DRAWN, 0), DRAWN_SCORES)["all"]
    assert (first.pairs, first.agree, first.score_ties) == (8, 4, 1)

    report = CR.build_report(DRAWN, [CR.Scorer("hand", "file", DRAWN_SCORES)])
    assert report["completions_per_candidate"] == 2
    assert report["label_reliability"]["all"]["agreement"] == 0.75
    assert report["label_reliability"]["all"]["label_accuracy"] == pytest.approx(c)
    one = report["scorers"][0]["first_completion"]
    fixed = (4 / 6 - (1 - c)) / (2 * c - 1)
    assert (one["agree"], one["pairs"], one["exact_pairs"], one["noisy_pairs"], one["score_ties"]) == (4, 8, 1, 7, 1)
    assert one["corrected"] == pytest.approx(6 * fixed / 8)
    lo, hi = CR.wilson(4, 6)  # the ordered noisy pairs' interval, mapped
    assert one["corrected_ci"] == pytest.approx([6 * min(1, (x - (1 - c)) / (2 * c - 1)) / 8 for x in (lo, hi)])
    assert one["corrected_ci"][1] == 6 / 8  # the upper end held to 1 on the noisy pairs
    text = CR.format_report(report)
    assert "all: a = 0.750" in text and f"c = {c:.3f}" in text
    assert f"hand: 0.500 [{one['ci'][0]:.3f}, {one['ci'][1]:.3f}] n=8 -> corrected {6 * fixed / 8:.3f}" in text
    boot = CR.build_report(DRAWN, [CR.Scorer("hand", "file", DRAWN_SCORES)], ci="turn-bootstrap", seed=3)
    blo, bhi = boot["scorers"][0]["first_completion"]["corrected_ci"]
    assert 0 <= blo <= 6 * fixed / 8 <= bhi <= 1
    # one completion per candidate: no noise to measure, the report says nothing of it
    single = CR.build_report(ROWS, [CR.Scorer("hand", "file", SCORES)])
    assert single["label_reliability"] is None and single["scorers"][0]["first_completion"] is None
    assert "Label noise" not in CR.format_report(single)


def test_a_completion_that_failed_is_not_another_ones_draw():
    """`rewards` leaves failed completions out; the draws follow `end_reasons`, so the second
    completion's reward is not read as the first's."""
    c = {"text": "q", "terminal": False, "mc_value": 1.0, "rewards": [1.0], "failed_rollouts": 1,
         "end_reasons": ["simulator_error", "answer"]}
    assert CR.completion_rewards(c) == [None, 1.0]
    assert CR.draw_value(c, 0) is None and CR.draw_value(c, 1) == 1.0 and CR.draw_value(c, 2) is None
    assert CR.draw_value({"text": "a", "terminal": True, "mc_value": 0.5, "rewards": [0.5]}, 1) == 0.5  # exact
