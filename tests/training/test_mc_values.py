"""Monte-Carlo step values (`sweet-agent mc-values`): an answer candidate is worth its graded
reward; any other candidate is worth the mean graded reward of k completions by the behaviour
policy, played from the trajectory's own simulator state; the stage resumes and writes atomically."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from mc_fixtures import FULL, GRADE, HALF, QUESTION, SYSTEM, ZERO, ScriptedPolicy, offline_record

from sweet_agent.actor import mc_values as MC
from tests.training.conftest import make_task


def _graded(answer: str, task: dict) -> float:
    """The grader's own verdict on an answer (not through the stage)."""
    from colbench_gym.grading import get_default_grader
    from colbench_gym.protocol import extract_code, parse_action
    from colbench_gym.tasks.records import BackendTask

    return get_default_grader().grade(extract_code(parse_action(answer).answer), BackendTask.from_record(task)).fraction


@pytest.fixture(scope="module")
def task():
    return make_task(1)


@pytest.fixture(scope="module")
def record(task):
    """Agent turn 1 asks (the offline person replies), agent turn 2 answers in full."""
    return offline_record(task, [QUESTION, FULL])


def _estimate(record, candidates, policy, n_prefix, k=3, max_turns=3, concurrency=4):
    config = MC.MCConfig(rollouts_per_candidate=k, concurrency=concurrency)
    envs = [MC.make_env(config, max_turns) for _ in range(concurrency)]
    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return MC.estimate_turn(policy, envs, pool, record, n_prefix, candidates, config, seed=0, turn=0,
                                    env_seed=MC.env_seed_of(record, 0, 0), system=SYSTEM, max_turns=max_turns)
    finally:
        for env in envs:
            env.close()


def test_answer_candidates_are_worth_their_graded_reward(record, task):
    policy = ScriptedPolicy()
    values, mismatches = _estimate(record, [FULL, HALF, ZERO], policy, n_prefix=1)
    assert mismatches == 0
    for text, v in zip([FULL, HALF, ZERO], values):
        assert v["mc_value"] == GRADE[text] == pytest.approx(_graded(text, task))
        assert v["terminal"] and v["rollouts"] == 0 and v["rewards"] == [GRADE[text]]
        assert v["end_reasons"] == ["answer"]
    assert policy.asked == []  # no completion was played


def test_a_question_is_worth_the_mean_of_k_graded_completions(record):
    """k = 3 completions answer FULL, HALF, ZERO (the script, in call order): (1 + 0.5 + 0) / 3."""
    policy = ScriptedPolicy(turns=[FULL, HALF, ZERO])
    (v,), _ = _estimate(record, [QUESTION], policy, n_prefix=0, k=3)
    assert not v["terminal"] and v["rollouts"] == 3 and v["failed_rollouts"] == 0
    assert sorted(v["rewards"]) == [0.0, 0.5, 1.0]
    assert v["mc_value"] == pytest.approx(0.5)
    assert v["completion_turns"] == [1, 1, 1]
    # each completion continued the candidate's dialogue, the offline person's reply included
    assert len(policy.asked) == 3
    for conv, _ in policy.asked:
        assert conv[0] == {"role": "system", "content": SYSTEM}
        assert [m["role"] for m in conv] == ["system", "user", "assistant", "user"] and conv[2]["content"] == QUESTION
        assert conv[3]["content"] == record["dialogue_history"][2]["content"]  # the same person, the same reply


def test_completions_play_to_the_end_and_longer_ones_are_graded_too(record):
    """The script asks again, then answers: each completion takes 2 turns (agent turns 2 and 3)."""
    policy = ScriptedPolicy(turns=["Anything else?", HALF])
    (v,), _ = _estimate(record, [QUESTION], policy, n_prefix=0, k=2, concurrency=1)
    assert v["completion_turns"] == [2, 2] and v["rewards"] == [0.5, 0.5] and v["mc_value"] == 0.5


def test_the_last_allowed_turn_is_graded_directly(record):
    """At agent turn max_turns a question ends the episode: graded as the answer, no rollouts."""
    (v,), _ = _estimate(record, [QUESTION], ScriptedPolicy(), n_prefix=1, max_turns=2)
    assert v["terminal"] and v["rollouts"] == 0 and v["end_reasons"] == ["turn_limit"] and v["mc_value"] == 0.0


def test_the_replay_reaches_the_recorded_state_and_counts_what_differs(record):
    _, same = _estimate(record, [FULL], ScriptedPolicy(), n_prefix=1)
    assert same == 0
    other = json.loads(json.dumps(record))
    other["dialogue_history"][2]["content"] = "a reply the person never gave"
    _, differ = _estimate(other, [FULL], ScriptedPolicy(), n_prefix=1)
    assert differ == 1


def test_infrastructure_failures_are_left_out_of_the_mean(record, monkeypatch):
    from colbench_gym.simulators import SimulatorError

    policy = ScriptedPolicy(turns=[FULL])
    calls = {"n": 0}
    original = MC._Completion.act

    def flaky(self, text):  # the second completion's simulator fails for good
        calls["n"] += 1
        if calls["n"] == 2:
            self.fail(SimulatorError("down"), "environment_error")
            return
        original(self, text)

    monkeypatch.setattr(MC._Completion, "act", flaky)
    (v,), _ = _estimate(record, [QUESTION], policy, n_prefix=0, k=3, concurrency=1)
    assert v["failed_rollouts"] == 1 and v["rewards"] == [1.0, 1.0] and v["mc_value"] == 1.0
    assert "simulator_error" in v["end_reasons"]


def test_stage_rows_resume_and_atomic_output(record, tmp_path):
    """Both agent turns of the record; an interrupted stage resumes from its journal and ends
    with the file an uninterrupted run writes; a finished file is read back on --resume."""
    config = MC.MCConfig(num_candidates=3, rollouts_per_candidate=2, concurrency=3, max_turns=3)
    cands = [QUESTION, FULL, ZERO]
    whole = MC.build_mc_values([record], ScriptedPolicy(cands, turns=[HALF]), config, seed=5,
                               output=tmp_path / "whole.jsonl")
    assert [r["agent_turn"] for r in whole] == [1, 2] and [r["turn_index"] for r in whole] == [1, 3]
    for row in whole:
        assert row["replay_mismatches"] == 0 and row["task"] == record["task"]
        by_text = {c["text"]: c for c in row["candidates"]}
        assert by_text[FULL]["mc_value"] == 1.0 and by_text[ZERO]["mc_value"] == 0.0
        assert by_text[FULL]["answer"] and not by_text[QUESTION]["answer"]
    assert {c["text"]: c["mc_value"] for c in whole[0]["candidates"]}[QUESTION] == 0.5  # completions answer HALF
    assert {c["text"]: c["terminal"] for c in whole[1]["candidates"]}[QUESTION] is False  # turn 2 of 3
    meta = json.loads(MC.meta_path(tmp_path / "whole.jsonl").read_text())
    assert meta["format"] == MC.FORMAT and meta["counts"]["turns"] == 2 and meta["counts"]["rollouts"] == 4
    assert not MC.journal_path(tmp_path / "whole.jsonl").exists()

    out = tmp_path / "values.jsonl"
    with pytest.raises(KeyboardInterrupt):
        MC.build_mc_values([record], ScriptedPolicy(cands, turns=[HALF], fail_on_sample=2), config, seed=5,
                           output=out)
    assert not out.exists() and MC.journal_path(out).exists()  # nothing half-written
    with pytest.raises(MC.MCValuesError, match="other settings"):
        MC.build_mc_values([record], ScriptedPolicy(cands, turns=[HALF]), config, seed=6, output=out, resume=True)
    again = ScriptedPolicy(cands, turns=[HALF])
    rows = MC.build_mc_values([record], again, config, seed=5, output=out, resume=True)
    assert again.sampled == 1  # only the turn the journal lacked
    assert rows == whole and MC.read_values_file(out)[0] == whole
    done = ScriptedPolicy(cands, turns=[HALF])
    assert MC.build_mc_values([record], done, config, seed=5, output=out, resume=True) == whole
    assert done.sampled == 0 and done.asked == []


def test_identical_candidates_share_one_estimate(record):
    policy = ScriptedPolicy(turns=[FULL, ZERO])
    values, _ = _estimate(record, [QUESTION, QUESTION], policy, n_prefix=0, k=2)
    assert values[0] == values[1] and len(policy.asked) == 2


def test_mc_values_command_end_to_end(record, tmp_path, tiny_model_dir, capsys):
    """`sweet-agent mc-values` with a local model as the behaviour policy (the tiny random model
    never answers: its completions run to the turn limit and are graded there)."""
    from sweet_agent.cli import main

    data = tmp_path / "offline.jsonl"
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "values.jsonl"
    argv = ["mc-values", "--data", str(data), "--policy", str(tiny_model_dir), "--num_candidates", "2",
            "--rollouts_per_candidate", "2", "--max_new_tokens", "6", "--output", str(out), "--no-progress",
            "--first_turns", "1"]
    assert main(argv) == 0
    rows, meta = MC.read_values_file(out)
    assert len(rows) == 1 and rows[0]["agent_turn"] == 1 and len(rows[0]["candidates"]) == 2
    for c in rows[0]["candidates"]:
        assert 0.0 <= c["mc_value"] <= 1.0
        assert c["terminal"] or (c["rollouts"] == 2 and all(1 <= t <= 2 for t in c["completion_turns"]))
    assert meta["settings"]["max_turns"] == 3  # from the record's meta
    assert "[mc-values] 1 agent turns of 1 trajectories: 2 candidates" in capsys.readouterr().out
    assert main([*argv, "--resume"]) == 0
    with pytest.raises(SystemExit) as refused:  # refused before any work: exit 2
        main(["mc-values", "--data", str(data), "--output", str(out), "--rollouts_per_candidate", "0"])
    assert refused.value.code == 2
    assert "rollouts_per_candidate must be >= 1" in capsys.readouterr().err


def test_mc_values_with_an_openai_compatible_behaviour_policy(record, tmp_path):
    """`--policy openai:MODEL`: the candidates in one request for n choices, the completions one
    request per turn, all to a local HTTP server speaking the protocol."""
    from sweet_agent.cli import main
    from tests.local_openai_server import LocalOpenAIServer

    def agent(body):
        return [QUESTION, FULL][body["choice"]] if "choice" in body else HALF

    data = tmp_path / "offline.jsonl"
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "values.jsonl"
    with LocalOpenAIServer(agent) as server:
        assert main(["mc-values", "--data", str(data), "--policy", "openai:scripted", "--base_url", server.base_url,
                     "--num_candidates", "2", "--rollouts_per_candidate", "3", "--output", str(out),
                     "--no-progress"]) == 0
        n_requests = len(server.requests)
    rows, _ = MC.read_values_file(out)
    assert [r["agent_turn"] for r in rows] == [1, 2]
    for row in rows:
        assert {c["text"]: c["mc_value"] for c in row["candidates"]} == {QUESTION: 0.5, FULL: 1.0}
    assert n_requests == 2 + 2 * 3  # per turn: one request for both candidates, one per completion turn


def test_question_openers_are_completed_locally_when_the_behaviour_policy_is_an_endpoint(record, tmp_path,
                                                                                          tiny_model_dir, capsys):
    """`--policy openai:MODEL --question_policy LOCAL --explore_candidates F`: the endpoint samples the
    policy's own candidates and plays the completions; the question openers are continued by the local
    model (an endpoint cannot continue a forced start). Without --question_policy it is a one-line error."""
    from sweet_agent.cli import main
    from tests.local_openai_server import LocalOpenAIServer

    def agent(body):
        return [QUESTION, FULL][body["choice"]] if "choice" in body else HALF

    data = tmp_path / "offline.jsonl"
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "values.jsonl"
    argv = ["mc-values", "--data", str(data), "--num_candidates", "4", "--explore_candidates", "0.5",
            "--rollouts_per_candidate", "1", "--max_new_tokens", "6", "--output", str(out), "--no-progress",
            "--first_turns", "1"]
    with LocalOpenAIServer(agent) as server:
        assert main([*argv, "--policy", "openai:scripted", "--base_url", server.base_url]) == 1
        assert "question candidates are completed by a local model" in capsys.readouterr().err
        assert main([*argv, "--policy", "openai:scripted", "--base_url", server.base_url,
                     "--question_policy", str(tiny_model_dir)]) == 0
        asked_for = [r["body"].get("n", 1) for r in server.requests]
    rows, _ = MC.read_values_file(out)
    cands = rows[0]["candidates"]
    assert len(cands) == 4 and sum(bool(c.get("question")) for c in cands) == 2  # two openers, continued locally
    assert {c["text"] for c in cands if not c.get("question")} <= {QUESTION, FULL}  # the endpoint's own two
    assert 2 in asked_for  # the policy's own two candidates came from the endpoint, in one request


class _SeedLog(ScriptedPolicy):
    """The scripted policy, logging the seed of every completion turn."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seeds: list[int] = []

    def generate(self, conversations, sampling=None, seeds=None):
        self.seeds += list(seeds or [])
        return super().generate(conversations, sampling, seeds)


def test_extend_plays_new_completions_of_the_same_candidates_and_pools_them(record, tmp_path):
    """`--extend`: k = 1 completions answered HALF; 2 more per going-on candidate answer FULL.
    Candidates are not sampled again, answers are not played again, the new draws have new seeds
    (rollout numbers 1 and 2), and each value is the mean of all three, the first draw first."""
    cands = [QUESTION, FULL, ZERO]
    config = MC.MCConfig(num_candidates=3, rollouts_per_candidate=1, concurrency=3, max_turns=3)
    first = _SeedLog(cands, turns=[HALF])
    MC.build_mc_values([record], first, config, seed=5, output=tmp_path / "k1.jsonl")
    source = MC.read_values_file(tmp_path / "k1.jsonl")

    more = _SeedLog(cands, turns=[FULL])
    k3 = MC.MCConfig(num_candidates=3, rollouts_per_candidate=2, concurrency=3, max_turns=3)
    rows = MC.build_mc_values([record], more, k3, seed=5, output=tmp_path / "k3.jsonl", extend=source)
    assert more.sampled == 0 and len(more.asked) == 2 * 2  # 2 turns x 1 going-on candidate x 2 new completions
    assert not set(more.seeds) & set(first.seeds) and len(set(more.seeds)) == 4
    assert more.seeds[:2] == [MC.rollout_seed(5, 0, 0, r, 0) for r in (1, 2)]
    for before, after in zip(source[0], rows):
        assert [c["text"] for c in after["candidates"]] == [c["text"] for c in before["candidates"]]
        by_text = {c["text"]: c for c in after["candidates"]}
        q = by_text[QUESTION]
        assert q["rewards"] == [0.5, 1.0, 1.0] and q["rollouts"] == 3
        assert q["mc_value"] == pytest.approx(2.5 / 3) and len(q["end_reasons"]) == 3
        assert by_text[FULL] == {c["text"]: c for c in before["candidates"]}[FULL]  # graded once, kept
    meta = json.loads(MC.meta_path(tmp_path / "k3.jsonl").read_text())
    assert meta["settings"]["mc"]["rollouts_per_candidate"] == 3
    assert meta["settings"]["extends"]["rollouts_before"] == 1 and meta["settings"]["extends"]["rollouts_added"] == 2
    assert meta["counts"]["rollouts"] == 2 * 3

    # an extended file extends again (k 3 -> 4; the earlier extension kept), with other concurrency (no value changes)
    k4 = MC.build_mc_values([record], _SeedLog(cands, turns=[ZERO]),
                            MC.MCConfig(num_candidates=3, rollouts_per_candidate=1, concurrency=1, max_turns=3), seed=5,
                            output=tmp_path / "k4.jsonl", extend=MC.read_values_file(tmp_path / "k3.jsonl"))
    assert {c["text"]: c["rewards"] for c in k4[0]["candidates"]}[QUESTION] == [0.5, 1.0, 1.0, 0.0]
    meta4 = json.loads(MC.meta_path(tmp_path / "k4.jsonl").read_text())["settings"]
    assert meta4["mc"]["rollouts_per_candidate"] == 4 and meta4["extends"]["earlier"]["rollouts_before"] == 1

    again = _SeedLog(cands, turns=[FULL])  # finished: --resume reads it back
    assert MC.build_mc_values([record], again, k3, seed=5, output=tmp_path / "k3.jsonl", resume=True,
                              extend=source) == rows and again.asked == []
    with pytest.raises(MC.MCValuesError, match=r"^--extend: it was built with other settings \(seed: 5 vs 6"):
        MC.build_mc_values([record], more, k3, seed=6, output=tmp_path / "k3b.jsonl", extend=source)
    with pytest.raises(MC.MCValuesError, match=r"^--extend: it was built with other settings \(mc.temperature"):
        MC.build_mc_values([record], more, MC.MCConfig(num_candidates=3, rollouts_per_candidate=2, concurrency=3,
                                                       max_turns=3, temperature=0.5),
                           seed=5, output=tmp_path / "k3b.jsonl", extend=source)


def test_extend_on_the_command_line(record, tmp_path, capsys):
    """`sweet-agent mc-values --extend VALUES` against an endpoint: no candidate requested again,
    the pooled values written; naming the same file twice is a one-line refusal."""
    from sweet_agent.cli import main
    from tests.local_openai_server import LocalOpenAIServer

    completion = {"text": HALF}

    def agent(body):
        return [QUESTION, FULL][body["choice"]] if "choice" in body else completion["text"]

    data = tmp_path / "offline.jsonl"
    data.write_text(json.dumps(record) + "\n")
    k1, k2 = tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    argv = ["mc-values", "--data", str(data), "--policy", "openai:scripted", "--num_candidates", "2",
            "--rollouts_per_candidate", "1", "--no-progress"]
    with LocalOpenAIServer(agent) as server:
        assert main([*argv, "--base_url", server.base_url, "--output", str(k1)]) == 0
        completion["text"] = FULL
        n_before = len(server.requests)
        assert main([*argv, "--base_url", server.base_url, "--output", str(k2), "--extend", str(k1)]) == 0
        new_requests = server.requests[n_before:]
    assert len(new_requests) == 2 and all(r["body"].get("n", 1) == 1 for r in new_requests)  # completions only
    rows, _ = MC.read_values_file(k2)
    assert [{c["text"]: c["mc_value"] for c in r["candidates"]} for r in rows] == [{QUESTION: 0.75, FULL: 1.0}] * 2
    printed = capsys.readouterr().out
    assert "4 completions in all (k=2: 1 added to" in printed and "'s, 2 new)" in printed
    with pytest.raises(SystemExit) as refused:
        main([*argv, "--output", str(k1), "--extend", str(k1)])
    assert refused.value.code == 2 and "--extend and --output name the same file" in capsys.readouterr().err
