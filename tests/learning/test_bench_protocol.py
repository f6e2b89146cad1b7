"""The learning benchmark's protocol (``benchmarks/bench_learning.py``), without a model: every
method, the grid, the validation selection and every seed are stages; the selection reads
validation results only; the seed-aware statistics equal a hand computation."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

from sweet_agent.evaluation.metrics import bootstrap_ci, hierarchical_bootstrap, hierarchical_difference
from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_learning")


def _rec(split: str, reward: float, eid: str, *, meta_tasks: str | None = None) -> dict:
    task = {"problem_description": "p", "ground_truth": "def f():\n    return 1\n", "test_cases": {"t": "f()"},
            "source": split}
    text = "What rate?" if reward else "I WANT TO ANSWER: def f(): return 0"
    return {"task": task, "dialogue_history": [{"role": "user", "content": "p"}, {"role": "assistant", "content": text}],
            "answer": "" if reward else text, "reward": reward, "success": reward == 1.0,
            "meta": {"episode_id": eid, "tasks": meta_tasks or split, "sample": 0}}


def _write(path: Path, recs: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_quick_profile_has_every_method_the_grid_the_selection_and_every_seed(bench, tmp_path):
    s = dict(bench.PROFILES["quick"], best_of_n=True, frontend_arm=True)  # with v2's optional arms
    stages = bench.build_stages(s, tmp_path)
    seeds = bench.seeds_of(s)
    assert len(seeds) == 3 and bench.seeds_of(bench.PROFILES["full"]) == seeds  # quick shrinks sizes, not seeds
    assert set(bench.METHODS) == {"zero-shot", "rft", "mtdpo", "sweet", "oracle", "best-of-n"}
    sizes = {m: len(bench.grid_points(s, m)) for m in bench.GRID}
    # the oracle-credit actor has no grid: it is SWEET-RL's chosen setting with perfect credit, an upper bound
    assert set(bench.GRID) == set(bench.METHODS) - {"zero-shot", "oracle"} and len(set(sizes.values())) == 1
    for profile in bench.PROFILES.values():
        assert len({len(bench.grid_points(profile, m)) for m in bench.GRID}) == 1
    assert bench.PROFILES["full"]["test_episodes"] >= 100
    for m in bench.GRID:
        assert f"select-{m}" in stages
        assert set(stages[f"select-{m}"].deps) == {f"val-{m}-g{i}" for i in range(sizes[m])}
        for sd in seeds:
            assert f"test-{m}-s{sd}" in stages and f"embedded-{m}-s{sd}" in stages and f"collab-{m}-s{sd}" in stages
            assert f"select-{m}" in stages[f"test-{m}-s{sd}"].deps  # test runs only after the choice
    assert {"collect", "val-zero-shot", "test-zero-shot", "embedded-zero-shot", "collect-frontend"} <= set(stages)
    for m in bench.FRONTEND_METHODS:
        assert any(n.startswith(f"frontend-{m}") for n in stages)
    for st in stages.values():  # the DAG is closed
        assert set(st.deps) <= set(stages), st.name
    # nothing before the selection looks at a test or embedded result
    upstream = {d for m in bench.GRID for d in _ancestors(stages, f"select-{m}")}
    assert not {n for n in upstream if n.startswith(("test-", "collab-", "embedded-", "frontend-"))}


def test_protocol_v2_trains_on_multi_detail_tasks_and_tests_two_families(bench, tmp_path):
    """Protocol v2 (issue 38): offline data, validation and the first test family are collab-multi (six agent
    turns, >= 4x v1's 48 episodes), collab:test is the second family (tasks v1 never played), best-of-N and
    the frontend arm are optional, and the oracle-credit actor and the critic report are stages."""
    full = bench.PROFILES["full"]
    assert full["train_tasks"] == "collab-multi:train" and full["val_tasks"] == "collab-multi:val"
    assert full["test_tasks"] == "collab-multi:test" and full["collab_test_tasks"] == "collab:test"
    assert full["train_episodes"] * full["k"] >= 4 * 48 and full["max_turns"] == 6
    assert full["test_episodes"] >= 100 and full["collab_test_episodes"] >= 100 and full["embedded_episodes"] == 30
    assert full["collab_test_start"] >= 1100  # v1 played collab:test 1000-1099
    assert len(full["explore_rates"].split(",")) == full["max_turns"] - 1  # every agent turn but the last explores
    heldout = range(full["heldout_start"], full["heldout_start"] + full["heldout_episodes"])
    assert not set(heldout) & set(range(full["train_episodes"]))  # the critic report's tasks are no critic's
    for name in ("quick", "full"):
        s = dict(bench.PROFILES[name])
        stages = bench.build_stages(s, tmp_path / name)
        assert not any(n.startswith(("frontend", "collect-frontend")) or "best-of-n" in n for n in stages)
        assert bench.methods_of(s) == ("zero-shot", "rft", "mtdpo", "sweet", "oracle")
        for sd in bench.seeds_of(s):
            assert stages[f"pairs-s{sd}"].command()[stages[f"pairs-s{sd}"].command().index("--data") + 1] == str(
                tmp_path / name / "offline-paired.jsonl")
        assert set(stages["critic-report"].deps) == {"mc-heldout", "train-critic-noref-s0",
                                                      *(f"train-critic-s{sd}" for sd in bench.seeds_of(s))}
        assert "train-critic-noref-s1" not in stages  # only the report's column (best-of-N would need every seed)
        # the label check: the same held-out candidates with more completions, then the report again on them
        assert stages["mc-heldout-more"].deps == ("mc-heldout",)
        assert set(stages["critic-report-labels"].deps) == {"mc-heldout-more", "critic-report",
                                                             *stages["critic-report"].deps} - {"mc-heldout"}
    stages = bench.build_stages(dict(bench.PROFILES["quick"]), tmp_path / "cmds")
    collab = [str(x) for x in stages["collab-rft-s1"].command()]
    assert collab[collab.index("--tasks") + 1] == "collab:test"
    assert collab[collab.index("--task-indices") + 1].split(",")[0] == "1100"
    mc = [str(x) for x in stages["mc-train"].command()]
    assert mc[mc.index("--data") + 1] == str(tmp_path / "cmds" / "offline-paired.jsonl")
    assert mc[mc.index("--rollouts_per_candidate") + 1] == str(bench.PROFILES["quick"]["mc_rollouts"])
    report = [str(x) for x in stages["critic-report"].command()]
    assert report.count("--critic") == 4 and report.count("--release") == 1
    import argparse

    from sweet_agent.actor import critic_report, mc_values

    more = [str(x) for x in stages["mc-heldout-more"].command()]
    assert more[more.index("--extend") + 1] == str(tmp_path / "cmds" / "mc" / "heldout.jsonl")
    assert more[more.index("--rollouts_per_candidate") + 1] == str(bench.PROFILES["quick"]["label_check"])
    labels = [str(x) for x in stages["critic-report-labels"].command()]
    assert labels[labels.index("--values") + 1].endswith("heldout-more.jsonl")
    assert labels[labels.index("--scores-journal") + 1] == report[report.index("--scores-journal") + 1]  # reused
    assert [x for x in labels if x.startswith(("sweet-", "noref-", "release-"))] == \
        [x for x in report if x.startswith(("sweet-", "noref-", "release-"))]  # the same critics
    for stage, module in (("mc-train", mc_values), ("mc-heldout", mc_values), ("mc-heldout-more", mc_values),
                          ("critic-report", critic_report), ("critic-report-labels", critic_report)):
        parser = argparse.ArgumentParser(exit_on_error=False)
        module.add_arguments(parser)
        cmd = [str(x) for x in stages[stage].command()]
        args = parser.parse_args(cmd[cmd.index("sweet_agent.cli") + 2:])  # the command's own flags, parsed
        if module is mc_values:
            assert args.output.endswith(".tmp") and args.resume and args.max_turns == bench.PROFILES["quick"]["max_turns"]
            assert args.num_candidates == bench.PROFILES["quick"]["num_candidates"]
        else:
            assert args.ci == "turn-bootstrap" and args.json.endswith(".json.tmp")


def test_the_oracle_credit_actor_is_sweets_chosen_setting_on_monte_carlo_pairs(bench, tmp_path):
    s = dict(bench.PROFILES["quick"])
    stages = bench.build_stages(s, tmp_path)
    bench.write_text_atomic(tmp_path / "selection" / "sweet.json", json.dumps({"chosen": 1}))
    for sd in bench.seeds_of(s):
        st = stages[f"train-oracle-s{sd}"]
        assert set(st.deps) == {"select-sweet", "mc-train"}
        cmd = [str(x) for x in st.command()]
        assert cmd[cmd.index("--pair_labels") + 1] == "monte-carlo" and "--critic" not in cmd
        assert cmd[cmd.index("--mc_values") + 1] == str(tmp_path / "mc" / "train.jsonl")
        assert cmd[cmd.index("--learning_rate") + 1] == str(bench.grid_points(s, "sweet")[1]["learning_rate"])
        assert cmd[cmd.index("--seed") + 1] == str(sd)
        test = [str(x) for x in stages[f"test-oracle-s{sd}"].command()]
        assert test[test.index("--policy") + 1] == str(tmp_path / "models" / "oracle" / f"s{sd}")


def test_paired_subset_is_a_seeded_share_of_the_trajectories(bench, tmp_path):
    data = tmp_path / "offline.jsonl"
    data.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(20)))
    bench.write_paired_subset(data, tmp_path / "a.jsonl", 0.1, 0)
    bench.write_paired_subset(data, tmp_path / "b.jsonl", 0.1, 0)
    bench.write_paired_subset(data, tmp_path / "c.jsonl", 0.1, 1)
    a = [json.loads(x)["i"] for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(a) == 2 and a == sorted(a) and (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
    assert (tmp_path / "c.jsonl").read_text() != (tmp_path / "a.jsonl").read_text()  # the data seed decides
    bench.write_paired_subset(data, tmp_path / "d.jsonl", 0.01, 0)
    assert len((tmp_path / "d.jsonl").read_text().splitlines()) == 1  # at least one trajectory
    assert bench.departures(dict(bench.PROFILES["full"], pair_trajectories=0.05)).keys() == {"pair_trajectories"}
    assert "pair_trajectories" not in bench.departures(bench.PROFILES["full"])  # the release's 10 %


def _ancestors(stages, name):
    seen, todo = set(), [name]
    while todo:
        for d in stages[todo.pop()].deps:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def test_commands_after_the_selection_use_the_chosen_setting(bench, tmp_path):
    s = dict(bench.PROFILES["quick"])
    stages = bench.build_stages(s, tmp_path)
    bench.write_text_atomic(tmp_path / "selection" / "rft.json", json.dumps({"chosen": 1}))
    lr = bench.grid_points(s, "rft")[1]["learning_rate"]
    train = stages["train-rft-s1"].command()
    assert train[train.index("--learning_rate") + 1] == str(lr)
    test0 = stages["test-rft-s0"].command()
    assert test0[test0.index("--policy") + 1] == str(tmp_path / "models" / "rft" / "g1-s0")
    test1 = stages["test-rft-s1"].command()
    assert test1[test1.index("--policy") + 1] == str(tmp_path / "models" / "rft" / "s1")
    indices = test1[test1.index("--task-indices") + 1].split(",")
    assert indices[0] == str(s["test_start"]) and len(indices) == s["test_episodes"]


def test_frontend_trainers_checkpoint_activations_and_backend_ones_do_not(bench, tmp_path):
    """Frontend rows are 1,536-token HTML: the critic's step took 24 GB without activation
    checkpointing and was killed; the backend stages keep the setting they ran with."""
    stages = bench.build_stages(dict(bench.PROFILES["quick"], frontend_arm=True), tmp_path)
    for sd in bench.seeds_of(bench.PROFILES["quick"]):
        bench.write_text_atomic(tmp_path / "selection" / "rft.json", json.dumps({"chosen": 0}))
        bench.write_text_atomic(tmp_path / "selection" / "sweet.json", json.dumps({"chosen": 0}))
        for name in (f"train-frontend-critic-s{sd}", f"train-frontend-rft-s{sd}", f"train-frontend-sweet-s{sd}"):
            cmd = [str(x) for x in stages[name].command()]
            assert cmd[cmd.index("--gradient_checkpointing") + 1] == "true", name
        for name in (f"train-critic-s{sd}", f"train-rft-s{sd}", f"train-sweet-s{sd}"):
            if name in stages:
                assert "--gradient_checkpointing" not in [str(x) for x in stages[name].command()], name


def test_long_backend_rows_checkpoint_activations_and_train_critics_one_at_a_time(bench, tmp_path):
    """Protocol v2's backend rows are 1,536 tokens: its critic held 16 GB a step without activation
    checkpointing and was OOM-killed beside other stages; rows up to 1,024 tokens (the quick
    profile) keep the setting they ran with."""
    full = bench.build_stages(dict(bench.PROFILES["full"], candidate_server="none"), tmp_path / "full")
    quick = bench.build_stages(dict(bench.PROFILES["quick"], candidate_server="none"), tmp_path / "quick")
    for name in ("train-critic-s0", "train-critic-noref-s0", "train-rft-g0-s0", "train-mtdpo-g0-s0"):
        cmd = [str(x) for x in full[name].command()]
        assert cmd[cmd.index("--gradient_checkpointing") + 1] == "true", name
        # a ~2 h stage checkpoints and resumes after a sitting's end instead of starting over
        assert cmd[cmd.index("--save_strategy") + 1] == "steps" and cmd[cmd.index("--resume_from_checkpoint") + 1] == "last"
        assert cmd[cmd.index("--save_steps") + 1] == "1"  # a sitting's end loses at most the step in flight
        assert full[name].resumable and not quick[name].resumable, name
        # the critic's held-out evaluation once at the end, not at every checkpoint (it followed the save strategy)
        assert ("--eval_strategy" in cmd and cmd[cmd.index("--eval_strategy") + 1] == "epoch") == ("critic" in name), name
        short = [str(x) for x in quick[name].command()]
        assert "--gradient_checkpointing" not in short and short[short.index("--save_strategy") + 1] == "no", name
    groups = {n: st.extra.get(bench.ONE_AT_A_TIME) for n, st in full.items()}
    assert groups["train-critic-s0"] == groups["train-critic-s1"] == groups["train-critic-noref-s0"] is not None
    assert groups["train-rft-g0-s0"] is None and groups["collect"] is None
    assert all(st.extra.get(bench.ONE_AT_A_TIME) is None for st in quick.values())


def test_a_trainer_with_nothing_to_train_on_is_named_in_the_report(bench, tmp_path):
    """A training stage whose data gives it no rows exits NOTHING_TO_TRAIN after one line: the
    stage does not count as done, and the report names it with that line (its method's rows are
    missing from the tables), until a later run of the stage succeeds."""
    run = tmp_path / "run"
    run.mkdir()
    why = "sweet-agent train-mtdpo: nothing to train on: no trajectory pairs under --pair_rule reward"
    script = f"import sys; print('loading'); print({why!r}, file=sys.stderr); sys.exit({bench.NOTHING_TO_TRAIN})"
    stage = bench.Stage("train-mtdpo-g0-s0", run / "models" / "mtdpo" / "g0-s0", (), [sys.executable, "-c", script],
                        tmp=run / "models" / "mtdpo" / "g0-s0.tmp")
    assert bench.run_stage(stage, run) is False and not stage.done()
    assert bench.nothing_to_train(run, set()) == {"train-mtdpo-g0-s0": why}
    s = dict(bench.PROFILES["quick"], candidate_server="none")
    bench.write_report(run, s)
    md = (run / "results.md").read_text()
    assert "**Stages that found nothing to train on** (their method's rows are missing above" in md
    assert f"train-mtdpo-g0-s0: {why}." in md
    bench._log_timing(run, "train-mtdpo-g0-s0", 1.0)  # a later run of the stage succeeded
    bench.write_report(run, s)
    assert "nothing to train on" not in (run / "results.md").read_text()


def test_selection_reads_validation_results_only(bench, tmp_path):
    val0 = _write(tmp_path / "val" / "rft-g0.jsonl", [_rec("collab:val", 0.5, "0:0"), _rec("collab:val", 0.5, "1:0")])
    val1 = _write(tmp_path / "val" / "rft-g1.jsonl", [_rec("collab:val", 1.0, "0:0"), _rec("collab:val", 0.0, "1:0")])
    got = bench.select([val0, val1])
    # equal mean tests passed (0.5); the tie goes to higher success (0 vs 0.5)
    assert got["chosen"] == 1 and [v["tests_passed"] for v in got["val"]] == [0.5, 0.5]
    assert bench.select([val0, val0])["chosen"] == 0  # a full tie: the earlier, more conservative point
    test = _write(tmp_path / "test" / "rft-s0.jsonl", [_rec("collab:test", 1.0, "0:0")])
    with pytest.raises(bench.SelectionError, match="split test, not val"):
        bench.select([val0, test])
    mixed = _write(tmp_path / "val" / "mixed.jsonl", [_rec("collab:val", 0.5, "0:0"), _rec("collab:test", 1.0, "1:0")])
    with pytest.raises(bench.SelectionError, match="record 1 is from split test"):
        bench.select([mixed])
    embedded = _write(tmp_path / "e.jsonl", [_rec("", 1.0, "0:0", meta_tasks="embedded:test")])
    with pytest.raises(bench.SelectionError, match="split test"):
        bench.select([embedded])
    unknown = _write(tmp_path / "u.jsonl", [_rec("", 1.0, "0:0", meta_tasks="x.jsonl")])
    with pytest.raises(bench.SelectionError, match="split unknown"):
        bench.select([unknown])


def test_selection_stage_runs_and_refuses_a_test_file_in_place(bench, tmp_path):
    s = dict(bench.PROFILES["quick"])
    stages = bench.build_stages(s, tmp_path)
    for i in range(2):
        _write(tmp_path / "val" / f"mtdpo-g{i}.jsonl", [_rec("collab:val", 0.25 * (i + 1), "0:0")])
    assert bench.run_stage(stages["select-mtdpo"], tmp_path)
    assert json.loads((tmp_path / "selection" / "mtdpo.json").read_text())["chosen"] == 1
    for i in range(2):  # someone copies test results where validation results belong
        _write(tmp_path / "val" / f"rft-g{i}.jsonl", [_rec("collab:test", 1.0, "0:0")])
    assert not bench.run_stage(stages["select-rft"], tmp_path)
    assert not (tmp_path / "selection" / "rft.json").exists()
    assert "not val" in (tmp_path / "logs" / "select-rft.log").read_text()


def test_report_tables_come_from_the_seed_aware_statistics(bench, tmp_path):
    zero = [_rec("collab:test", r, f"{i}:0") for i, r in enumerate((0.0, 0.5, 0.0, 0.0))]
    _write(tmp_path / "test" / "zero-shot.jsonl", zero)
    per_seed = {0: (1.0, 0.5, 0.0, 1.0), 1: (0.5, 0.5, 0.5, 1.0), 2: (1.0, 1.0, 0.0, 0.5)}
    for sd, rewards in per_seed.items():
        _write(tmp_path / "test" / f"sweet-s{sd}.jsonl", [_rec("collab:test", r, f"{i}:0") for i, r in enumerate(rewards)])
        _write(tmp_path / "test" / f"rft-s{sd}.jsonl", [_rec("collab:test", 0.0, f"{i}:0") for i in range(4)])
    rows = {r["method"]: r for r in bench.method_table(tmp_path, "test")}
    sweet = rows["sweet"]
    assert sweet["seeds"] == 3 and sweet["episodes"] == 12
    hand = sum(sum(r) / 4 for r in per_seed.values()) / 3
    assert sweet["tests"]["mean"] == pytest.approx(hand)
    vals = {sd: dict(enumerate(r)) for sd, r in per_seed.items()}
    vals = {sd: {f"{i}:0": v for i, v in d.items()} for sd, d in vals.items()}
    est = hierarchical_bootstrap(vals)
    assert sweet["tests"]["ci95"] == [est.low, est.high]
    zs = {"-": {f"{i}:0": r for i, r in enumerate((0.0, 0.5, 0.0, 0.0))}}
    d = hierarchical_difference(zs, vals, seed=1)
    assert sweet["tests"]["vs"]["zero-shot"] == {"mean": d.mean, "ci95": [d.low, d.high], "tasks": 4}
    assert d.mean == pytest.approx(hand - 0.5 / 4)
    assert sweet["tests"]["vs"]["rft"]["mean"] == pytest.approx(hand)  # SWEET-RL against each baseline
    assert "vs" in rows["rft"]["tests"] and set(rows["rft"]["tests"]["vs"]) == {"zero-shot"}
    md = bench.markdown(list(rows.values()), "t")
    assert "SWEET-RL minus each baseline" in md and "| RFT |" in md


def test_hierarchical_bootstrap_equals_a_hand_computation():
    # the point estimate: the mean over seeds of each seed's mean over tasks
    assert hierarchical_bootstrap({0: {"a": 1.0, "b": 0.0}, 1: {"a": 1.0, "b": 1.0}}).mean == pytest.approx(0.75)
    # only the tasks every seed holds are used
    assert hierarchical_bootstrap({0: {"a": 1.0, "b": 0.0}, 1: {"a": 0.0}}).n == 1
    # one seed: exactly the ordinary bootstrap over tasks, resample for resample
    xs = [0.0, 1.0, 0.5, 0.25, 1.0, 0.0, 0.75]
    assert hierarchical_bootstrap({7: dict(enumerate(xs))}, seed=3) == bootstrap_ci(xs, seed=3)
    # every task of a seed the same: only the seed draw matters. Two seeds at 0 and 1: a replicate
    # is 0 (both draws the first, p = 1/4), 0.5 (p = 1/2) or 1 (p = 1/4), so the 95 % interval is [0, 1]
    est = hierarchical_bootstrap({0: {t: 0.0 for t in range(10)}, 1: {t: 1.0 for t in range(10)}})
    assert (est.mean, est.low, est.high, est.n) == (0.5, 0.0, 1.0, 10)
    # a difference against a one-run baseline (zero-shot all 0): method seeds at 0.2 and 0.6 -> mean 0.4,
    # replicates 0.2, 0.4 or 0.6
    d = hierarchical_difference({"-": {t: 0.0 for t in range(8)}}, {0: {t: 0.2 for t in range(8)}, 1: {t: 0.6 for t in range(8)}})
    assert d.mean == pytest.approx(0.4) and d.low == pytest.approx(0.2) and d.high == pytest.approx(0.6)


def test_seed_variance_widens_the_interval():
    import random

    rng = random.Random(0)
    base = {t: rng.random() for t in range(40)}
    zero = {"-": base}
    same = {sd: {t: v + 0.1 for t, v in base.items()} for sd in range(3)}
    spread = {sd: {t: v + 0.1 + 0.2 * (sd - 1) for t, v in base.items()} for sd in range(3)}
    a, b = hierarchical_difference(zero, same), hierarchical_difference(zero, spread)
    assert a.mean == pytest.approx(0.1) and b.mean == pytest.approx(0.1)
    assert (b.high - b.low) > 10 * (a.high - a.low)
    # tasks shared across seeds: the task variance stays in the interval (not averaged away by seeds)
    one = hierarchical_bootstrap({0: base})
    three = hierarchical_bootstrap({sd: base for sd in range(3)})
    assert (three.high - three.low) == pytest.approx(one.high - one.low, rel=0.25)


def test_candidate_server_resolution(bench, monkeypatch):
    """auto: the llama.cpp server on a CPU-only machine with the default model and llama-cpp-python;
    the policy in process otherwise; a server of the user's own (candidates_from) always wins."""
    import importlib.util as iu

    import sweet_agent.devices as devices

    s = dict(bench.PROFILES["full"])
    assert s["candidate_server"] == "auto" and bench.PROFILES["quick"]["candidate_server"] == "auto"
    real_find = iu.find_spec
    have = {"llama_cpp": True}
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: object() if have.get(name) else
                        (None if name in have else real_find(name, *a)))
    monkeypatch.setattr(devices, "resolve_device", lambda spec="auto": "cpu")
    assert bench.resolve_candidate_server(dict(s)) == "llama"
    assert bench.resolve_candidate_server(dict(s, model="/some/other/model")) == "none"
    assert bench.resolve_candidate_server(dict(s, candidates_from="openai:m", candidates_base_url="http://x/v1")) == "none"
    assert bench.resolve_candidate_server(dict(s, candidate_server="none")) == "none"
    monkeypatch.setattr(devices, "resolve_device", lambda spec="auto": "cuda:0")
    assert bench.resolve_candidate_server(dict(s)) == "none"  # generate on the GPU
    monkeypatch.setattr(devices, "resolve_device", lambda spec="auto": "cpu")
    have["llama_cpp"] = False
    assert bench.resolve_candidate_server(dict(s)) == "none"
    with pytest.raises(SystemExit, match="llama-cpp-python"):
        bench.resolve_candidate_server(dict(s, candidate_server="llama"))
    with pytest.raises(SystemExit, match="auto, llama or none"):
        bench.resolve_candidate_server(dict(s, candidate_server="vllm"))


def test_step_pair_stages_ask_the_benchmark_server_and_resume(bench, tmp_path, monkeypatch):
    s = dict(bench.PROFILES["quick"], candidate_server="llama", frontend_arm=True)
    stages = bench.build_stages(s, tmp_path)
    sampled = [st for st in stages.values() if st.extra.get("candidates")]
    pair_stages = [st for st in sampled if st.name.startswith("pairs")]
    assert {st.name for st in pair_stages} >= {"pairs-s0", "pairs-s2", "pairs-frontend-s1"}
    assert {st.name for st in sampled} - {st.name for st in pair_stages} == {"mc-heldout", "mc-train", "mc-heldout-more"}

    class Server:
        base_url = "http://127.0.0.1:5555/v1"

    monkeypatch.setattr(bench, "CANDIDATE_SERVER", Server())
    for st in pair_stages:
        cmd = st.command()
        assert cmd[cmd.index("--candidates_from") + 1] == bench.CANDIDATE_MODEL
        assert cmd[cmd.index("--candidates_base_url") + 1] == Server.base_url
        assert "--resume" in cmd and st.resumable  # an interrupted stage keeps its journal
    for name in ("mc-heldout", "mc-train", "mc-heldout-more"):  # Monte-Carlo values: the server samples, the local
        # model continues openers
        cmd = [str(x) for x in stages[name].command()]
        assert cmd[cmd.index("--policy") + 1] == bench.CANDIDATE_MODEL
        assert cmd[cmd.index("--base_url") + 1] == Server.base_url and cmd[cmd.index("--question_policy") + 1] == s["model"]
    monkeypatch.setattr(bench, "CANDIDATE_SERVER", None)
    cmd = [str(x) for x in stages["mc-train"].command()]
    assert cmd[cmd.index("--policy") + 1] == s["model"] and "--question_policy" not in cmd  # the policy in process
    cmd = stages["pairs-s0"].command()
    assert "--candidates_from" not in cmd and "--candidates_base_url" not in cmd  # the policy in process
    own = bench.build_stages(dict(s, candidates_from="openai:mine", candidates_base_url="http://h:1/v1"), tmp_path)
    cmd = own["pairs-s0"].command()
    assert cmd[cmd.index("--candidates_from") + 1] == "openai:mine"
    assert cmd[cmd.index("--candidates_base_url") + 1] == "http://h:1/v1"


def test_a_rollout_stage_with_infrastructure_failures_is_not_done(bench, tmp_path):
    """finish_rollout: an episode the simulator or grader failed (no score) leaves the stage
    unfinished, so the next run's --resume plays it again; an agent's own error is a scored
    episode and does not."""
    part, out = tmp_path / "test" / "sweet-s0.jsonl.partial", tmp_path / "test" / "sweet-s0.jsonl"
    ok = _rec("collab:test", 1.0, "1000:0")
    agent_err = {**_rec("collab:test", 0.0, "1001:0"), "error": "agent output unparsable"}
    agent_err["meta"] = {**agent_err["meta"], "failed": True, "infrastructure_failure": False, "end_reason": "agent_error"}
    infra = {**_rec("collab:test", 0.0, "1002:0"), "reward": None, "success": None, "error": "simulator down"}
    infra["meta"] = {**infra["meta"], "failed": True, "infrastructure_failure": True, "end_reason": "simulator_error"}
    _write(part, [ok, agent_err, infra])
    with pytest.raises(RuntimeError, match=r"1 episodes failed for infrastructure reasons \(episodes \['1002:0'\]\)"):
        bench.finish_rollout(part, out)
    assert not out.exists() and part.exists()
    _write(part, [ok, agent_err])
    bench.finish_rollout(part, out)
    assert [json.loads(x)["meta"]["episode_id"] for x in out.read_text().splitlines()] == ["1000:0", "1001:0"]
    assert not part.exists()
    # a failure that stayed after MAX_REPLAYS replays (every method meets the same bad task) is accepted
    from sweet_agent.trajectories import MAX_REPLAYS, replaced_path

    out.unlink()
    _write(part, [ok, agent_err, infra])
    _write(replaced_path(part), [infra] * (MAX_REPLAYS - 1))
    with pytest.raises(RuntimeError, match="infrastructure"):
        bench.finish_rollout(part, out)
    _write(replaced_path(part), [infra] * MAX_REPLAYS)
    bench.finish_rollout(part, out)
    assert len(out.read_text().splitlines()) == 3 and not part.exists()
    assert len(replaced_path(out).read_text().splitlines()) == MAX_REPLAYS and not replaced_path(part).exists()
    stages = bench.build_stages(dict(bench.PROFILES["quick"]), tmp_path / "run")
    assert all(st.finish is not None for n, st in stages.items() if st.resumable)  # every rollout and pair stage


def test_a_pair_stage_with_failed_turns_is_not_done(bench, tmp_path):
    """finish_pairs: turns that failed after retries leave no output (the next run resumes them);
    a complete file moves with its metadata."""
    from sweet_agent.actor.pair_files import meta_path

    tmp, out = tmp_path / "first-s0.jsonl.tmp", tmp_path / "first-s0.jsonl"
    tmp.write_text('{"prompt": "p"}\n')
    from sweet_agent.actor.pair_files import FORMAT

    meta_path(tmp).write_text(json.dumps({"format": FORMAT, "failed_turns": [3, 7], "counts": {"turns": 9}}))
    with pytest.raises(RuntimeError, match="2 turns failed"):
        bench.finish_pairs(tmp, out)
    assert not out.exists() and tmp.exists()
    meta_path(tmp).write_text(json.dumps({"format": FORMAT, "failed_turns": [], "counts": {"turns": 9}}))
    bench.finish_pairs(tmp, out)
    assert out.read_text() == '{"prompt": "p"}\n' and json.loads(meta_path(out).read_text())["counts"]["turns"] == 9
    assert not tmp.exists() and not meta_path(tmp).exists()


def test_critic_choices_skip_a_running_stage_and_name_the_backend(bench, tmp_path):
    """The report is rewritten while a step-pair stage runs: its ``.tmp`` file and journal are not
    pair files yet. A finished file's rows say which backend sampled them."""
    q = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "What rate should I use?"}]
    a = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "I WANT TO ANSWER: def f(): return 0"}]
    prompt = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "Which rate?"},
              {"role": "user", "content": "7 %"}]
    _write(tmp_path / "pairs" / "s0.jsonl", [
        {"chosen": q, "rejected": a, "agent_turn": 1, "turn_index": 1, "candidates_from": "openai:m"},
        {"chosen": a, "rejected": q, "agent_turn": 1, "turn_index": 1, "candidates_from": "openai:m"},
        {"chosen": q, "rejected": q, "agent_turn": 1, "turn_index": 1, "candidates_from": "openai:m"},
        # a row from before agent_turn: read from its prompt (one agent turn before it: agent turn 2),
        # never from turn_index (the dialogue position 3)
        {"prompt": prompt, "chosen": a, "rejected": q, "turn_index": 3, "candidates_from": "openai:m"}])
    _write(tmp_path / "pairs" / "s1.jsonl.tmp.turns.jsonl", [{"turn": 3, "rows": []}])
    _write(tmp_path / "pairs" / "s1.jsonl.tmp", [{"turn": 3}])
    got = bench.critic_choices(tmp_path)
    assert got == [{"file": "s0.jsonl", "agent_turn": 1, "turn_index": 1, "pairs": 3, "question_vs_answer": 2,
                    "chose_question": 1, "chosen": {"question": 2, "answer": 1, "other": 0},
                    "rejected": {"question": 2, "answer": 1, "other": 0},
                    "candidates_from": ["openai:m"], "critic_fingerprint": None},
                   {"file": "s0.jsonl", "agent_turn": 2, "turn_index": 3, "pairs": 1, "question_vs_answer": 1,
                    "chose_question": 0, "chosen": {"question": 0, "answer": 1, "other": 0},
                    "rejected": {"question": 1, "answer": 0, "other": 0},
                    "candidates_from": ["openai:m"], "critic_fingerprint": None}]


def test_the_report_sums_what_the_pairs_push_up_and_down_per_kind_of_turn(bench, tmp_path):
    """Turn 1's pairs may prefer the question while all turns together reject questions more often
    than they choose them: the second table shows both (times chosen minus times rejected)."""
    q = [{"role": "assistant", "content": "What rate should I use?"}]
    a = [{"role": "assistant", "content": "I WANT TO ANSWER: def f(): return 0"}]
    s = [{"role": "assistant", "content": "def f():\n    return 0"}]  # a draft: neither asks nor answers
    _write(tmp_path / "pairs" / "s0.jsonl",
           [{"chosen": q, "rejected": a, "agent_turn": 1}] * 2 + [{"chosen": s, "rejected": q, "agent_turn": 2}] * 3
           + [{"chosen": a, "rejected": a, "agent_turn": 3}])
    md = bench.pairs_push_markdown(bench.critic_choices(tmp_path))
    assert "| critic s0 | +2 / -2 / +0 | -3 / +0 / +3 | -1 / -2 / +3 |" in md
    assert "question / answer / other" in md
    assert bench.pairs_push_markdown([]) == ""


def test_the_oracle_s_pairs_stand_beside_the_critics_and_are_kept_in_the_records(bench, tmp_path):
    """What SWEET-RL's actor learns (its critic's pairs) is set beside what the Monte-Carlo values
    teach the oracle-credit actor (the pairs it wrote into its model folder), in the report's table;
    those pairs are kept by the records, the oracle's weights are not."""
    q = [{"role": "assistant", "content": "What rate should I use?"}]
    a = [{"role": "assistant", "content": "I WANT TO ANSWER: def f(): return 0"}]
    run, dest = tmp_path / "run", tmp_path / "records"
    _write(run / "pairs" / "s0.jsonl", [{"chosen": a, "rejected": q, "agent_turn": 1, "candidates_from": "openai:m"}] * 3)
    oracle = run / "models" / "oracle" / "s0"
    (oracle / "adapter").mkdir(parents=True)
    (oracle / "adapter" / "adapter_model.safetensors").write_bytes(b"w")
    (oracle / "training_budget.json").write_text(json.dumps({"epochs": 1.0}))
    _write(oracle / bench.ORACLE_PAIRS, [{"chosen": q, "rejected": a, "agent_turn": 1, "candidates_from": "mc-values"},
                                         {"chosen": a, "rejected": q, "agent_turn": 2, "candidates_from": "mc-values"}])
    (oracle / (bench.ORACLE_PAIRS + ".meta.json")).write_text(json.dumps({"counts": {"pairs": 2}}))
    choices = bench.critic_choices(run)
    assert [(c["file"], c["agent_turn"], c["chose_question"], c["question_vs_answer"]) for c in choices] == [
        ("s0.jsonl", 1, 0, 3), ("oracle-s0", 1, 1, 1), ("oracle-s0", 2, 0, 1)]
    md = bench.choices_markdown(choices)
    assert "| critic s0 (pairs/s0.jsonl) | 0 of 3 (3) | – | openai:m |" in md
    assert "| Monte-Carlo values (oracle-s0: the oracle-credit actor's pairs) | 1 of 1 (1) | 0 of 1 (1) | mc-values |" in md

    stages = bench.build_stages(dict(bench.PROFILES["quick"]), run)
    assert stages["train-oracle-s0"].done()
    saved = set(bench.save_records(stages, run, dest))
    assert {f"models/oracle/s0/{bench.ORACLE_PAIRS}", f"models/oracle/s0/{bench.ORACLE_PAIRS}.meta.json",
            "models/oracle/s0/training_budget.json"} <= saved
    assert not any("adapter" in p for p in saved)


def test_the_report_says_what_dpo_did_to_its_pairs_and_the_records_keep_the_log(bench, tmp_path):
    """From each DPO-trained model's log (the trainer's training_log.json, or for a model trained before
    it existed its newest checkpoint's trainer_state.json): how often the pairs were ordered right and
    how the chosen and rejected sides moved, first half against second half; RFT (no DPO metrics) and a
    training still running are left out. The records keep the log, so a fresh machine reports it too."""
    def step(i, acc, c, r):
        return {"step": i, "loss": 0.5, "rewards/accuracies": acc, "rewards/chosen": c, "rewards/rejected": r,
                "rewards/margins": c - r}

    run, dest, fresh = tmp_path / "run", tmp_path / "records", tmp_path / "fresh"
    sweet = _model(run / "models" / "sweet" / "s1", b"w")
    ck = sweet / "checkpoint-4"
    ck.mkdir()
    (ck / "trainer_state.json").write_text(json.dumps({"log_history": [
        step(1, 0.0, 0.0, 0.0), step(2, 1.0, -1.0, -3.0), step(3, 0.5, 0.5, -1.0), step(4, 1.0, -2.0, -6.0),
        {"step": 4, "train_loss": 0.4}]}))
    (sweet / "checkpoint-2").mkdir()  # an older checkpoint, and a torn newer one: neither is read
    (sweet / "checkpoint-2" / "trainer_state.json").write_text(json.dumps({"log_history": [step(1, 1, 9, 9)]}))
    (sweet / "checkpoint-5").mkdir()
    rft = _model(run / "models" / "rft" / "s1", b"w")
    (rft / bench.TRAINING_LOG_FILE).write_text(json.dumps({"command": "train-rft", "log_history": [{"step": 1, "loss": 1.0}]}))
    mtdpo = _model(run / "models" / "mtdpo" / "s1", b"w")
    (mtdpo / bench.TRAINING_LOG_FILE).write_text(json.dumps({"command": "train-mtdpo", "log_history": [
        step(1, 0.0, 0.0, 0.0), step(2, 1.0, 0.2, -0.2)]}))
    _model(run / "models" / "oracle" / "s0.tmp", b"w")

    rows = {r["model"]: r for r in bench.dpo_dynamics(run)}
    assert set(rows) == {"sweet/s1", "mtdpo/s1"}
    s1 = rows["sweet/s1"]
    # the first entry (the actor still equals its reference: both rewards 0, a tie TRL counts wrong) is left out
    assert s1["logged_steps"] == 3 and s1["chosen_fell"] == 2
    assert s1["first_half"] == {"accuracies": 0.75, "chosen": -0.25, "rejected": -2.0, "margins": 1.75}
    assert s1["second_half"] == {"accuracies": 1.0, "chosen": -2.0, "rejected": -6.0, "margins": 4.0}
    md = bench.dpo_dynamics_markdown(list(rows.values()))
    assert "| sweet/s1 | 3 | 75 → 100 | -0.25 → -2.00 | -2.00 → -6.00 | 2 of 3 |" in md
    assert "| mtdpo/s1 | 1 | 100 → n/a | +0.20 → n/a | -0.20 → n/a | 0 of 1 |" in md
    assert "pairs whose margin grew %" in md

    stages = bench.build_stages(dict(bench.PROFILES["quick"]), run)
    assert stages["train-sweet-s1"].done()
    saved = set(bench.save_records(stages, run, dest))
    assert {"models/sweet/s1/training_log.json", "models/mtdpo/s1/training_log.json"} <= saved
    assert json.loads((sweet / bench.TRAINING_LOG_FILE).read_text())["from"] == "checkpoint-4/trainer_state.json"
    bench.restore_records(stages, dest, fresh)
    assert not list((fresh / "models" / "sweet" / "s1").glob("checkpoint-*"))
    assert {r["model"]: r for r in bench.dpo_dynamics(fresh)}["sweet/s1"] == s1


def test_the_report_says_when_the_critic_report_scored_another_critic_than_the_pairs(bench, tmp_path):
    """A critic trained again (a lost machine) is not the one that scored a restored pair file:
    the pair file's meta and the critic report each record the critic's fingerprint, and the
    report names every seed whose two differ; files from before the fingerprint are no mismatch."""
    from sweet_agent.actor.pair_files import FORMAT, meta_path

    q = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "What rate should I use?"}]
    a = [{"role": "user", "content": "p"}, {"role": "assistant", "content": "I WANT TO ANSWER: def f(): return 0"}]
    for stem, sha in (("s0", "a" * 64), ("s1", "b" * 64), ("s2", None)):
        _write(tmp_path / "pairs" / f"{stem}.jsonl", [{"chosen": q, "rejected": a, "agent_turn": 1}])
        meta_path(tmp_path / "pairs" / f"{stem}.jsonl").write_text(json.dumps(
            {"format": FORMAT, "settings": {"critic": {"meta_sha256": "m", "fingerprint": sha}}}))
    choices = bench.critic_choices(tmp_path)
    assert [c["critic_fingerprint"] for c in choices] == ["a" * 64, "b" * 64, None]
    report = {"scorers": [{"name": "sweet-s0", "fingerprint": "a" * 64},      # the same critic
                          {"name": "sweet-s1", "fingerprint": "c" * 64},      # trained again
                          {"name": "release-s1", "fingerprint": "c" * 64},
                          {"name": "sweet-s2", "fingerprint": "d" * 64},      # pairs predate the fingerprint
                          {"name": "noref-s0", "fingerprint": "e" * 64}]}    # made no pairs
    assert bench.critic_mismatches(choices, report) == [
        f"sweet-s1 scored critic {'c' * 12}, but pairs/s1.jsonl was scored by {'b' * 12}",
        f"release-s1 scored critic {'c' * 12}, but pairs/s1.jsonl was scored by {'b' * 12}"]
    assert bench.critic_mismatches(choices, None) == []
    # the written report says it, beside each pair file's critic
    path = bench.Layout(tmp_path).critic_report
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**report, "turns": 1, "ci": {"method": "wilson", "about": "Wilson"},
                                "scorers": [dict(c, kind="critic-ref", by_agent_turn={}) for c in report["scorers"]]}))
    written = bench.write_report(tmp_path, dict(bench.PROFILES["quick"], candidate_server="none"))
    assert written["critic_mismatches"] == bench.critic_mismatches(choices, report)
    md = (tmp_path / "results.md").read_text()
    assert "**The critic report did not score the critics that made SWEET-RL's step pairs**" in md
    assert f"sweet-s1 scored critic {'c' * 12}, but pairs/s1.jsonl was scored by {'b' * 12}" in md
    assert f"| critic s0 (pairs/s0.jsonl; critic {'a' * 12}) | 1 of 1 (1) | ? |" in md


#: A stage command for the fork server's path (``python -m``): tests/agent/command_probe.py.
PROBE = [sys.executable, "-m", "tests.agent.command_probe"]


@pytest.mark.parametrize("start", ["subprocess", "forkserver"])
def test_a_stop_ends_the_running_stages_and_what_they_started(bench, tmp_path, monkeypatch, start):
    """SIGINT / SIGTERM (request_stop): the running stage's whole process group ends (here a
    command that started a child of its own), the stage is not done, and no stage starts after;
    the same for a stage started as a fresh process and one forked from the fork server."""
    import os
    import signal
    import threading
    import time

    pidfile = tmp_path / "child.pid"
    if start == "subprocess":
        cmd = [sys.executable, "-c", "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
               f"'import time; time.sleep(120)']); open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(120)"]
    else:
        cmd = [*PROBE, str(tmp_path / "atexit"), "0", "--child", str(pidfile), "--sleep"]
    assert bench.can_fork(cmd) == (start == "forkserver")
    st = bench.Stage("sleeper", tmp_path / "out.txt", (), cmd)
    monkeypatch.setattr(bench, "STOP", threading.Event())
    result = {}
    th = threading.Thread(target=lambda: result.setdefault("ok", bench.run_stage(st, tmp_path)))
    th.start()
    for _ in range(600):
        if pidfile.exists() and pidfile.read_text().strip() and bench._running:
            break
        time.sleep(0.05)
    child = int(pidfile.read_text())
    (stage_pid,) = bench._running
    bench.request_stop(signal.SIGTERM)
    th.join(60)
    assert not th.is_alive() and result["ok"] is False and not st.done()
    (entry,) = [json.loads(x) for x in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert entry["stage"] == "sleeper" and entry["ended"] == "stopped" and entry["seconds"] > 0  # this sitting's time
    for pid in (stage_pid, child):  # both gone (a zombie of an exited parent is reaped by init)
        for _ in range(200):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            if open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "Z":
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"process {pid} still runs after the stop")
    stages = {"next": bench.Stage("next", tmp_path / "next.txt", (), [sys.executable, "-c", "pass"])}
    bench.run_all(stages, tmp_path, 1, None, dict(bench.PROFILES["quick"], candidate_server="none"))
    assert not stages["next"].done()  # nothing starts once stopped


def test_the_critic_report_s_trainings_come_before_the_methods_trainings(bench, tmp_path):
    """Trainings run one at a time; the critics the report needs (SWEET's and the one without the
    reference) go first, so the critic's step-level accuracy is known hours before the methods' tables."""
    stages = bench.build_stages(dict(bench.PROFILES["full"]), tmp_path / "run")
    report_trainings = [stages[d] for d in stages["critic-report"].deps if d.startswith("train-")]
    others = [st for n, st in stages.items() if n.startswith("train-") and st not in report_trainings]
    assert len(report_trainings) == 4 and others
    assert min(st.priority for st in report_trainings) > max(st.priority for st in others)


def test_a_stage_s_time_is_summed_over_the_sittings_it_ran_in(bench, tmp_path, monkeypatch):
    """A stage resumed over several sittings: a sitting that ended by a stop is logged as
    ``stopped``; one whose benchmark was killed outright (a sitting's end) is logged by the next run
    from the stale lock (its start, and its last heartbeat = the lock's mtime) as ``interrupted``;
    the report sums them."""
    import os
    import subprocess
    import time

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock = tmp_path / "locks" / "train-x.lock"
    lock.parent.mkdir(parents=True)
    began = time.time() - 1000
    # a benchmark and a stage group both gone; the lock names the commit that sitting ran
    lock.write_text(f"{dead.pid} {dead.pid} {began:.1f} 0123abc")
    os.utime(lock, (began + 300, began + 300))
    assert bench._lock(tmp_path, "train-x") == lock  # stale: taken over
    bench._log_timing(tmp_path, "train-x", 120.0, ended="stopped")
    bench._log_timing(tmp_path, "train-x", 100.0)
    bench._log_timing(tmp_path, "train-y", 7.0, ended="stopped")
    entries = [json.loads(x) for x in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert [e.get("ended", "done") for e in entries] == ["interrupted", "stopped", "done", "stopped"]
    assert entries[0]["seconds"] == pytest.approx(300, abs=0.2)
    # the interrupted sitting is logged under its own commit, with no load (today's is not its load);
    # the sittings logged as they end carry the commit and load of now
    assert entries[0]["commit"] == "0123abc" and "loadavg" not in entries[0]
    assert entries[1]["commit"] == bench.code_commit() and len(entries[1]["loadavg"]) == 3
    times = bench.stage_times(entries)
    assert times["train-x"]["sittings"] == 3 and times["train-x"]["done"]
    assert times["train-x"]["seconds"] == pytest.approx(520, abs=0.2)
    assert times["train-y"] == {"seconds": 7.0, "sittings": 1, "done": False}
    # the heartbeat: a running stage's lock is touched while the benchmark waits for it
    monkeypatch.setattr(bench, "HEARTBEAT_S", 0.2)
    os.utime(lock, (began, began))
    lock.write_text(f"{dead.pid} {dead.pid} {began:.1f}")  # written before locks named their commit
    os.utime(lock, (began + 60, began + 60))
    assert bench._lock(tmp_path, "train-x") == lock
    old = json.loads((tmp_path / "timings.jsonl").read_text().splitlines()[-1])
    assert old["ended"] == "interrupted" and old["commit"] == "unknown"
    os.utime(lock, (began, began))
    bench._wait_or_stop(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"]), lock)
    assert lock.stat().st_mtime > time.time() - 5


def test_stages_of_one_memory_group_never_run_at_once(bench, tmp_path, monkeypatch):
    """Two stages of a ONE_AT_A_TIME group with --jobs 2 run one after the other (two frontend
    critics at once took all memory); a stage outside the group still takes the free slot."""
    import threading

    monkeypatch.setattr(bench, "STOP", threading.Event())
    log = tmp_path / "order.log"

    def stage(name: str, group: str | None) -> bench.Stage:
        out = tmp_path / f"{name}.txt"
        script = (f"import time; log = open({str(log)!r}, 'a', buffering=1); log.write('start {name}\\n');"
                  f"time.sleep(0.5); log.write('end {name}\\n'); open({str(out)!r}, 'w').write('ok')")
        return bench.Stage(name, out, (), [sys.executable, "-c", script], priority=1 if group else 0,
                           extra={bench.ONE_AT_A_TIME: group} if group else {})

    stages = {n: stage(n, g) for n, g in (("critic-a", "big"), ("critic-b", "big"), ("rollout", None))}
    bench.run_all(stages, tmp_path, 2, None, dict(bench.PROFILES["quick"], candidate_server="none"))
    assert all(st.done() for st in stages.values())
    events = log.read_text().split("\n")[:-1]
    first, second = sorted(("critic-a", "critic-b"), key=lambda n: events.index(f"start {n}"))
    assert events.index(f"end {first}") < events.index(f"start {second}"), events
    # the free slot went to the stage outside the group while the first critic ran
    assert events.index("start rollout") < events.index(f"end {first}"), events
    cmds = bench.build_stages(dict(bench.PROFILES["quick"], frontend_arm=True), tmp_path / "run")
    assert {n for n, st in cmds.items() if st.extra.get(bench.ONE_AT_A_TIME)} == {
        f"train-frontend-{kind}-s{sd}" for kind in ("critic", "sweet") for sd in bench.seeds_of(bench.PROFILES["quick"])}


@pytest.mark.parametrize("start", ["subprocess", "forkserver"])
def test_a_stage_that_misses_the_stop_is_stopped_again_then_killed(bench, tmp_path, monkeypatch, start):
    """A SIGTERM that reaches a stage while it starts up can be lost (seen once: the stage trained
    on and the run never stopped). After a stop the stage's group gets SIGTERM again, then SIGKILL:
    here a stage that ignores SIGTERM altogether ends, not done (fresh or forked)."""
    import os
    import signal
    import threading
    import time

    monkeypatch.setattr(bench, "STOP", threading.Event())
    monkeypatch.setattr(bench, "STOP_RESEND_S", 0.5)
    monkeypatch.setattr(bench, "STOP_GRACE_S", 2.0)
    ready = tmp_path / "ready"
    if start == "subprocess":
        cmd = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
               f"open({str(ready)!r}, 'w').write('x'); time.sleep(300)"]
    else:  # the probe prints its line once it ignores SIGTERM
        cmd = [*PROBE, str(tmp_path / "atexit"), "0", "--deaf", "--sleep"]
    st = bench.Stage("deaf", tmp_path / "deaf.txt", (), cmd)
    log = tmp_path / "logs" / "deaf.log"
    result = {}
    th = threading.Thread(target=lambda: result.setdefault("ok", bench.run_stage(st, tmp_path)))
    th.start()
    for _ in range(2400):
        if (ready.exists() or (log.exists() and '"pid"' in log.read_text())) and bench._running:
            break
        time.sleep(0.05)
    (pid,) = bench._running
    bench.request_stop(signal.SIGTERM)
    th.join(60)
    assert not th.is_alive() and result["ok"] is False and not st.done()
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(pid, 0)


@pytest.mark.parametrize("start", ["subprocess", "forkserver"])
def test_stage_start_decides_whether_a_stage_is_forked_from_the_fork_server(bench, tmp_path, monkeypatch, start):
    """``--stage-start``: ``forkserver`` (the default) forks a ``python -m`` stage from the process that
    imported torch once; ``subprocess`` starts a fresh interpreter. Either way the stage runs in
    its own process group from the repository root, its output goes to its log, it is done."""
    monkeypatch.setattr(bench, "STAGE_START", start)
    st = bench.Stage("probe", tmp_path / "probe.out", (), [*PROBE, str(tmp_path / "probe.out"), "0"])
    assert bench.run_stage(st, tmp_path) and st.done()  # the probe's atexit handler wrote the output
    log = (tmp_path / "logs" / "probe.log").read_text()
    assert log.startswith("$ ") and "a line to stderr" in log
    seen = json.loads(next(line for line in log.splitlines() if line.startswith("{")))
    assert seen["pid"] == seen["pgid"] and seen["cwd"] == str(bench.ROOT)
    assert seen["torch_preloaded"] == (start == "forkserver")
    # a stage gets the cores' share per job unless the caller set OMP_NUM_THREADS itself (make test sets 1)
    assert seen["threads"] in (None, int(os.environ.get("OMP_NUM_THREADS") or bench._threads_per_stage()))


def test_a_resume_keeps_the_candidate_backend_it_started_with(bench, tmp_path, monkeypatch):
    import importlib.util as iu

    run = tmp_path / "run"
    run.mkdir()
    old = {k: v for k, v in bench.PROFILES["quick"].items() if k != "candidate_server"}  # made before the setting
    (run / "settings.json").write_text(json.dumps(old))
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list"]) == 0  # read as "none": no refusal
    (run / "settings.json").write_text(json.dumps(dict(old, candidate_server="llama")))
    real_find = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name == "llama_cpp" else real_find(name, *a))
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list"]) == 0  # listing needs no server
    with pytest.raises(SystemExit, match="llama-cpp-python"):  # running does: one line, not another backend
        bench.main(["--profile", "quick", "--run-dir", str(run), "--only", "collect"])
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list", "--candidate-server", "none"]) == 2


def test_frontend_step_pairs_sample_candidates_of_the_frontend_length(bench, tmp_path, monkeypatch):
    """A page needs the rollouts' length: the frontend pairs ask for frontend_candidate_tokens,
    the backend ones for candidate_tokens; a run directory from before the setting keeps the
    backend length its frontend pairs ran with (listed and reported, not refused), and a new run
    gets the profile's value."""
    s = dict(bench.PROFILES["full"], candidate_server="none", frontend_arm=True)
    stages = bench.build_stages(s, tmp_path)

    def tokens(stage):
        cmd = [str(x) for x in stages[stage].command()]
        return int(cmd[cmd.index("--max_new_tokens") + 1])

    assert tokens("pairs-frontend-s0") == s["frontend_candidate_tokens"] == s["frontend_max_new_tokens"]
    assert tokens("pairs-s0") == s["candidate_tokens"] == s["max_new_tokens"] == 128  # the rollouts' length
    run = tmp_path / "run"
    run.mkdir()
    # the quick profile's frontend length apart from its backend one, so the legacy value is told apart
    monkeypatch.setitem(bench.PROFILES["quick"], "frontend_candidate_tokens", 50)
    old = {k: v for k, v in dict(bench.PROFILES["quick"], candidate_server="none").items()
           if k != "frontend_candidate_tokens"}  # made before the setting
    (run / "settings.json").write_text(json.dumps(old))
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list"]) == 0
    assert "frontend_candidate_tokens" not in json.loads((run / "settings.json").read_text())  # left as it was
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list", "--frontend-candidate-tokens", "50"]) == 2
    used = {}
    real_build = bench.build_stages
    bench.build_stages = lambda s, run: used.update(s) or real_build(s, run)
    try:
        assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list"]) == 0
    finally:
        bench.build_stages = real_build
    assert used["frontend_candidate_tokens"] == old["candidate_tokens"] == 48  # what its pairs ran with
    new_run = tmp_path / "new"
    assert bench.main(["--profile", "quick", "--run-dir", str(new_run), "--list", "--candidate-server", "none"]) == 0
    assert json.loads((new_run / "settings.json").read_text())["frontend_candidate_tokens"] == 50


def test_a_stale_lock_stops_the_orphaned_stage_first(bench, tmp_path):
    """The benchmark that held the lock is gone but its stage (own process group) still runs:
    taking the lock stops that group, so two copies never write the same files."""
    import os
    import subprocess

    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "collect.lock").write_text(f"{dead.pid} {orphan.pid}")
    import threading

    reaper = threading.Thread(target=orphan.wait)  # as init reaps a real orphan
    reaper.start()
    lock = bench._lock(tmp_path, "collect")
    reaper.join(60)
    assert lock is not None and lock.read_text() == str(os.getpid())
    assert orphan.returncode == -15  # SIGTERM


def test_export_adapter_writes_the_chosen_point_in_bf16_with_its_provenance(bench, tmp_path, capsys):
    """What `make demo` ships: the validation-chosen grid point's adapter (training seed 0),
    weights rounded to bf16 once, base named `default`, and where it came from."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file

    sys.path.insert(0, str(ROOT / "tests" / "training"))
    from tiny_model import build_tiny_model, build_tiny_tokenizer

    from sweet_agent.policies.checkpoint_layout import adapter_dir

    run = tmp_path / "runs" / "proto"
    s = dict(bench.PROFILES["quick"], candidate_server="none")
    run.mkdir(parents=True)
    (run / "settings.json").write_text(json.dumps(s))
    (tmp_path / "runs" / "proto.commit").write_text("abc123\n")
    with pytest.raises(SystemExit, match="no selection for sweet"):
        bench.export_adapter(run, tmp_path / "out")
    sel = {"chosen": 1, "rule": "max val tests passed", "val": [
        {"point": 0, "episodes": 2, "tests_passed": 0.1, "success": 0.0},
        {"point": 1, "episodes": 2, "tests_passed": 0.3, "success": 0.5}]}
    bench.write_text_atomic(run / "selection" / "sweet.json", json.dumps(sel))
    peft_model = get_peft_model(build_tiny_model(build_tiny_tokenizer(), seed=0),
                                LoraConfig(r=2, target_modules="all-linear", init_lora_weights=False))
    peft_model.save_pretrained(run / "models" / "sweet" / "g1-s0" / "adapter")
    (run / "logs").mkdir()
    # two sittings: the second, from another clone and commit, finished the training, and it is what the
    # provenance names (not the first sitting's command nor the run's starting commit)
    (run / "logs" / "train-sweet-g1-s0.log").write_text(
        "$ /old/clone/python -m sweet_agent.cli train-actor --seed 0\nlog...\n"
        "$ python -m sweet_agent.cli train-actor --seed 0\nlog...\n")
    (run / "timings.jsonl").write_text("".join(json.dumps(t) + "\n" for t in (
        {"stage": "train-sweet-g1-s0", "seconds": 5, "commit": "aaa111"},  # done, then trained again
        {"stage": "train-sweet-g1-s0", "seconds": 5, "commit": "bbb222", "ended": "stopped"},
        {"stage": "train-sweet-g1-s0", "seconds": 5, "commit": "fed789"},
        {"stage": "train-sweet-g1-s0", "seconds": 5, "commit": "ccc333", "ended": "interrupted"},
        {"stage": "train-rft-g1-s0", "seconds": 5, "commit": "bad000"})) + '{"stage": "train-sweet-g1-s0", "sec')
    info = bench.export_adapter(run, tmp_path / "out")
    out = tmp_path / "out"
    assert adapter_dir(out) == out and not (out / "tokenizer.json").exists()
    src = load_file(str(run / "models" / "sweet" / "g1-s0" / "adapter" / "adapter_model.safetensors"))
    got = load_file(str(out / "adapter_model.safetensors"))
    assert src.keys() == got.keys() and all(got[k].dtype == torch.bfloat16 for k in got)
    assert all(torch.equal(got[k], src[k].to(torch.bfloat16)) for k in src)
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == "default"
    prov = json.loads((out / "PROVENANCE.json").read_text())
    assert prov == info and prov["commit"] == "fed789" and prov["stage"] == "train-sweet-g1-s0"
    assert prov["command"] == "python -m sweet_agent.cli train-actor --seed 0"
    assert prov["grid_point"] == bench.grid_points(s, "sweet")[1] and prov["validation"]["tests_passed"] == 0.3
    assert prov["weights_bytes"] == (out / "adapter_model.safetensors").stat().st_size
    # the command line says how it compares with the shipped adapter (not measured here: no val-shipped)
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--candidate-server", "none",
                       "--export-adapter", str(tmp_path / "out2")]) == 0
    assert ("against the shipped demo adapter: not measured (stages val-shipped and val-demo have not both run)"
            in capsys.readouterr().out)
    assert prov["validation_of_these_weights"] is None  # val-demo has not played these weights
    # once val-demo has played these very weights, the provenance carries their own validation run
    _write(run / "val" / "shipped.jsonl", [_rec("collab:val", 0.5, "0:0")])
    _write(run / "val" / "demo.jsonl", [_rec("collab:val", 0.25, "0:0")])
    bench.write_text_atomic(bench.demo_played_file(run), json.dumps(
        {"weights_sha256": bench.weights_fingerprint(run / "models" / "sweet" / "g1-s0")}))
    prov = bench.export_adapter(run, tmp_path / "out3")
    assert prov["validation_of_these_weights"]["tests_passed"] == 0.25 and prov["validation"]["tests_passed"] == 0.3
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--candidate-server", "none",
                       "--export-adapter", str(tmp_path / "out4")]) == 0
    printed = capsys.readouterr().out
    assert "validation tests passed 30.0 %" in printed
    assert "these weights 25.0 % (stage val-demo), the shipped adapter 50.0 %" in printed
    # not for another method's weights: val-demo played SWEET-RL's
    peft_model.save_pretrained(run / "models" / "rft" / "g1-s0" / "adapter")
    bench.write_text_atomic(run / "selection" / "rft.json", json.dumps(sel))
    assert bench.export_adapter(run, tmp_path / "out5", method="rft")["validation_of_these_weights"] is None
    # a run without per-sitting commits (v1's layout) names the commit it started at
    (run / "timings.jsonl").unlink()
    assert bench.export_adapter(run, tmp_path / "out6")["commit"] == "abc123"


def test_the_demo_adapter_is_replaced_only_by_a_sweet_policy_that_beats_it_on_the_same_validation(bench, tmp_path,
                                                                                                    monkeypatch):
    """Issue 38, item 5: the full profile validates the shipped adapter (stage val-shipped, on the
    val tasks, read by no selection); the report and --export-adapter say whether SWEET-RL's chosen
    point passes more of the same val tests (a tie keeps the shipped adapter)."""
    s = dict(bench.PROFILES["full"], candidate_server="none")
    stages = bench.build_stages(s, tmp_path / "full")
    cmd = [str(x) for x in stages["val-shipped"].command()]
    assert cmd[cmd.index("--policy") + 1] == str(bench.SHIPPED_ADAPTER) and bench.SHIPPED_ADAPTER.is_dir()
    assert cmd[cmd.index("--tasks") + 1] == s["val_tasks"] and stages["val-shipped"].deps == ()
    assert not any("val-shipped" in st.deps for st in stages.values())  # no selection reads it
    assert "val-shipped" not in bench.build_stages(dict(s, model="some/other-base"), tmp_path / "other")
    assert "val-demo" not in bench.build_stages(dict(s, model="some/other-base"), tmp_path / "other")

    # before validation has chosen, val-demo waits on every grid point's training, like test-sweet-s0
    assert stages["val-demo"].deps == stages["test-sweet-s0"].deps

    run = tmp_path / "run"
    assert bench.demo_adapter_verdict(run, s) is None
    _write(run / "val" / "shipped.jsonl", [_rec("collab:val", 0.5, "0:0"), _rec("collab:val", 0.5, "1:0")])
    assert bench.demo_adapter_verdict(run, s) is None  # SWEET-RL not chosen yet
    bench.write_text_atomic(run / "selection" / "sweet.json", json.dumps({"chosen": 1, "val": []}))
    # val-demo plays the model --export-adapter ships: the chosen point's, first training seed, on the same val tasks
    demo = bench.build_stages(s, run)["val-demo"]
    cmd = [str(x) for x in demo.command()]
    assert cmd[cmd.index("--policy") + 1] == str(run / "models" / "sweet" / "g1-s0")
    assert cmd[cmd.index("--tasks") + 1] == s["val_tasks"] and demo.deps == ("select-sweet", "train-sweet-g1-s0")
    assert not any("val-demo" in st.deps for st in stages.values())  # no selection reads it
    _write(run / "val" / "sweet-g0.jsonl", [_rec("collab:val", 1.0, "0:0"), _rec("collab:val", 1.0, "1:0")])
    _write(run / "val" / "sweet-g1.jsonl", [_rec("collab:val", 1.0, "0:0"), _rec("collab:val", 0.5, "1:0")])
    assert bench.demo_adapter_verdict(run, s) is None  # the weights that would ship have not played yet
    bench.write_report(run, s)
    assert "Demo adapter (`make demo`): pending: stage val-demo" in (run / "results.md").read_text()

    # the stage finishes: its output, and beside it the fingerprint of the weights it played
    weights = run / "models" / "sweet" / "g1-s0" / "adapter" / "adapter_model.safetensors"
    weights.parent.mkdir(parents=True)
    import torch
    from safetensors.torch import save_file

    save_file({"lora_A": torch.full((2, 2), 0.1)}, str(weights))  # the weights as trained again
    _write(demo.tmp, [_rec("collab:val", 0.5, "0:0"), _rec("collab:val", 0.5, "1:0")])
    demo.finish()
    assert (run / "val" / "demo.jsonl").is_file() and not demo.tmp.exists()
    played = json.loads((run / "val" / "demo.jsonl.weights.json").read_text())["weights_sha256"]
    assert played == bench.weights_fingerprint(weights.parent.parent)
    # the chosen model plays worse than when it was validated (trained again on a replaced machine)
    tie = bench.demo_adapter_verdict(run, s)
    assert tie["sweet_point"] == 1 and tie["sweet"]["tests_passed"] == tie["shipped"]["tests_passed"] == 0.5
    assert tie["validated"]["tests_passed"] == 0.75 and tie["stale"] is False
    assert tie["replace"] is False  # what ships is judged, not its earlier validation or the better g0
    _write(run / "val" / "demo.jsonl", [_rec("collab:val", 1.0, "0:0"), _rec("collab:val", 0.5, "1:0")])
    better = bench.demo_adapter_verdict(run, s)
    assert better["replace"] is True and better["sweet"]["tests_passed"] == 0.75
    bench.write_report(run, s)
    md = (run / "results.md").read_text()
    assert "(SWEET-RL's chosen grid point, first training seed; stage val-demo) passes 75.0 % of the tests" in md
    assert "its validation run 75.0 %), the shipped adapter 50.0 %" in md and "**replace it**" in md
    assert better["difference"]["mean"] == 0.25 and better["difference"]["n"] == 2  # paired on the same tasks
    assert "paired difference 25.0 [" in md and "] over 2 tasks)" in md
    # once the verdict is acted on (the demo's adapter holds these weights as exported), it says so
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(bench, "SHIPPED_ADAPTER", shipped)
    (shipped / "PROVENANCE.json").write_text(json.dumps({"weights_sha256": hashlib.sha256(
        bench.shippable_weights(weights.parent)).hexdigest()}))
    assert bench.demo_adapter_verdict(run, s)["shipped_now"] is True
    bench.write_report(run, s)
    md = (run / "results.md").read_text()
    assert "replaced: examples/adapters/shipped now holds these weights" in md and "**replace it**" not in md
    (shipped / "PROVENANCE.json").write_text(json.dumps({"weights_sha256": "0" * 64}))  # another adapter ships
    assert bench.demo_adapter_verdict(run, s)["shipped_now"] is False

    # the model is trained again after val-demo played it: no verdict, nothing replaced, the report says why
    save_file({"lora_A": torch.full((2, 2), 0.2)}, str(weights))  # other weights
    stale = bench.demo_adapter_verdict(run, s)
    assert stale["stale"] is True and stale["replace"] is False
    bench.write_report(run, s)
    md = (run / "results.md").read_text()
    assert "**no verdict**: stage val-demo played other weights" in md and "**replace it**" not in md
    # a report from records alone (the weights elsewhere) trusts the fingerprint; a run without one does not
    weights.unlink()
    assert bench.demo_adapter_verdict(run, s)["stale"] is False
    (run / "val" / "demo.jsonl.weights.json").unlink()
    assert bench.demo_adapter_verdict(run, s)["stale"] is True


def test_the_critic_agreement_table_says_how_many_turns_each_agent_turn_has(bench):
    """Columns carry their held-out turn counts, and agent turns with too few turns for a resampled
    interval are named under the table (v2's held-out values: 16 turns at agent turn 1, 5-7 later)."""
    cell = {"agreement": 0.75, "ci": [0.5, 0.9], "pairs": 12}
    rep = {"turns": 21, "rollouts_per_candidate": 1,
           "values_by_agent_turn": {"1": {"turns": 16}, "2": {"turns": 5}, "all": {"turns": 21}},
           "ci": {"method": "turn-bootstrap", "about": "whole turns resampled"},
           "scorers": [{"name": "sweet-s0", "kind": "critic-ref", "by_agent_turn": {"1": cell, "2": cell, "all": cell}}]}
    md = bench.critic_agreement_markdown(rep)
    assert "| step score | agent turn 1 (16 turns) | agent turn 2 (5 turns) | all turns (21 turns) |" in md
    assert "| sweet-s0 (critic-ref) | 75.0 [50.0, 90.0] (12) |" in md
    assert "Agent turn 2 has fewer than 10 held-out turns" in md and "turn 1 has" not in md
    # a Wilson interval does not resample turns: no such note
    assert "fewer than" not in bench.critic_agreement_markdown({**rep, "ci": {"method": "wilson", "about": "w"}})


def test_the_report_says_what_the_monte_carlo_values_prefer_once_they_exist(bench, tmp_path):
    """As soon as a Monte-Carlo stage has finished, results.md says which way its values point
    between going on and answering (sweet-agent critic-report's count; no critic needed)."""
    from sweet_agent.actor import mc_values as MC

    run = tmp_path / "run"
    assert bench.mc_prefers(run) == {}  # no values yet: no table
    cands = [{"text": "What rate?", "mc_value": 0.5, "answer": False},
             {"text": "I WANT TO ANSWER: def f(): 0", "mc_value": 0.0, "answer": True},
             {"text": "I WANT TO ANSWER: def f(): 1", "mc_value": 0.5, "answer": True}]
    row = {"turn": 0, "agent_turn": 1, "task_key": "t", "turn_index": 1, "prompt": [], "candidates": cands,
           "error": None}
    MC.write_values_file(bench.Layout(run).mc / "heldout.jsonl", [row],
                         {"format": MC.FORMAT, "counts": {}, "settings": {"mc": {}}})
    prefers = bench.mc_prefers(run)
    assert list(prefers) == ["heldout"]
    assert {k: prefers["heldout"]["1"][k] for k in ("goes_on_higher", "answer_higher", "ties")} == \
        {"goes_on_higher": 1, "answer_higher": 0, "ties": 1}
    md = bench.mc_prefers_markdown(prefers)
    assert "| heldout | 1 | 1 | 2 | 1 | 0 | 1 | 50.0 (1) | 25.0 (2) |" in md


def test_records_carry_a_run_to_a_fresh_machine_without_weights(bench, tmp_path, capsys):
    """What the finished stages leave is saved beside the weights-free copy; a fresh run directory gets it back,
    and a critic whose readers are not all done trains again instead of being marked done without weights."""
    src, dest, fresh = tmp_path / "run", tmp_path / "records", tmp_path / "fresh"
    assert bench.main(["--profile", "quick", "--run-dir", str(src), "--list"]) == 0
    stages = bench.build_stages(json.loads((src / "settings.json").read_text()), src)
    _write(src / "offline.jsonl", [_rec("collab-multi:train", 1.0, "e0")])
    _write(src / "val" / "zero-shot.jsonl", [_rec("collab-multi:val", 0.0, "v0")])
    for sd, with_pairs in ((0, True), (1, False)):  # critic s0's readers are done, s1's are not
        critic = src / "models" / "critic" / f"s{sd}"
        (critic / "checkpoint-3").mkdir(parents=True)
        (critic / "adapter_model.safetensors").write_bytes(b"w" * 64)
        (critic / "checkpoint-3" / "trainer_state.json").write_text("{}")
        (critic / "training_budget.json").write_text(json.dumps({"epochs": 1.0, "seed": sd}))
        if with_pairs:
            _write(src / "pairs" / f"s{sd}.jsonl", [{"agent_turn": 1}])
    for st in stages.values():  # every other reader of critic s0 done too (the critic report)
        if "train-critic-s0" in st.deps and not st.done():
            _write(st.output, [{"done": st.name}]) if st.output.suffix else st.output.mkdir(parents=True)
    _write(src / "reports" / "critic-report.scores.jsonl", [{"key": {"kind": "critic-ref"}, "turn": 0}])
    saved = set(bench.save_records(stages, src, dest))
    assert {"settings.json", "offline.jsonl", "val/zero-shot.jsonl", "pairs/s0.jsonl",
            "models/critic/s0/training_budget.json", "models/critic/s1/training_budget.json",
            "reports/critic-report.scores.jsonl"} <= saved
    assert not any(p.endswith(".safetensors") or "checkpoint-" in p for p in saved)
    assert bench.save_records(stages, src, dest) == []  # unchanged files are not written again

    capsys.readouterr()
    assert bench.main(["--profile", "quick", "--run-dir", str(fresh), "--records", str(dest), "--list"]) == 0
    out, err = capsys.readouterr()
    assert "trains again (weights are not kept): train-critic-s1" in err
    listed = {line.split()[1] if line.startswith("done") else line.split()[0]: line.startswith("done")
              for line in out.splitlines() if "<-" in line}
    assert listed["collect"] and listed["val-zero-shot"] and listed["pairs-s0"] and listed["train-critic-s0"]
    assert not listed["train-critic-s1"] and not listed["pairs-s1"]
    assert (fresh / "offline.jsonl").read_text() == (src / "offline.jsonl").read_text()
    assert (fresh / "reports" / "critic-report.scores.jsonl").read_text() == \
        (src / "reports" / "critic-report.scores.jsonl").read_text()
    assert json.loads((fresh / "models" / "critic" / "s0" / "training_budget.json").read_text())["seed"] == 0
    assert not (fresh / "models" / "critic" / "s1").exists()
    # what the fresh run has is never replaced by a record
    (fresh / "offline.jsonl").write_text("newer\n")
    bench.restore_records(stages, dest, fresh)
    assert (fresh / "offline.jsonl").read_text() == "newer\n"


@pytest.mark.parametrize("batching", [True, False])
def test_server_batching_decides_the_servers_flag_and_the_completions_in_flight(bench, tmp_path, monkeypatch, batching):
    s = dict(bench.PROFILES["quick"], candidate_server="llama", server_batching=batching)
    stages = bench.build_stages(s, tmp_path)
    monkeypatch.setattr("sweet_agent.policies.default_model.gguf_path", lambda: tmp_path / "m.gguf")
    server = bench.candidate_server(stages, set(stages), tmp_path, s)  # built, not started
    assert ("--batch-requests" in server.argv) is batching

    class Server:
        base_url = "http://127.0.0.1:5555/v1"

    monkeypatch.setattr(bench, "CANDIDATE_SERVER", Server())
    cmd = [str(x) for x in stages["mc-heldout"].command()]
    assert cmd[cmd.index("--concurrency") + 1] == ("8" if batching else "2")


def test_a_run_made_before_server_batching_keeps_one_request_at_a_time(bench, tmp_path):
    run = tmp_path / "run"
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--candidate-server", "none", "--list"]) == 0
    settings = json.loads((run / "settings.json").read_text())
    assert settings["server_batching"] is True
    del settings["server_batching"]  # written before the setting existed
    (run / "settings.json").write_text(json.dumps(settings))
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list"]) == 0  # not "other settings"


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_every_training_stage_computes_in_the_runs_precision(bench, tmp_path, capsys, monkeypatch, device):
    monkeypatch.setattr("sweet_agent.devices.resolve_device", lambda *a, **k: device)
    for precision, flag in (("bf16", "true"), ("fp32", "false")):
        stages = bench.build_stages(dict(bench.PROFILES["quick"], train_precision=precision), tmp_path)
        bench.write_text_atomic(tmp_path / "selection" / "sweet.json", json.dumps({"chosen": 0}))
        trains = [st for st in stages.values() if st.name.startswith("train-") and "-s" in st.name
                  and not st.name.startswith(("train-rft-s", "train-mtdpo-s", "train-sweet-s"))]
        assert {st.name for st in trains} >= {"train-critic-s0", "train-critic-noref-s0", "train-oracle-s1",
                                              "train-rft-g0-s0", "train-mtdpo-g1-s0", "train-sweet-g0-s0"}
        for st in trains:
            cmd = [str(x) for x in st.command()]
            assert cmd[cmd.index("--bf16") + 1] == flag, st.name
            # CPU autocast is asked for by name (the trainers refuse an unmarked bf16 without a GPU)
            assert ("--use_cpu" in cmd) is (precision == "bf16" and device == "cpu"), st.name
    assert bench.main(["--profile", "quick", "--run-dir", str(tmp_path / "r"), "--train-precision", "fp16",
                       "--list"]) == 2
    assert "--train-precision 'fp16': use one of bf16, fp32, auto" in capsys.readouterr().err
    stages = bench.build_stages(dict(bench.PROFILES["quick"], train_precision="auto"), tmp_path)  # a run made before
    assert all("--bf16" not in [str(x) for x in st.command()] for st in stages.values()
               if st.name.startswith("train-critic"))


def test_records_keep_an_unfinished_stage_s_progress_until_it_finishes(bench, tmp_path):
    """A rollout's .partial file and a Monte-Carlo stage's journal are saved as whole lines (the stage may be
    writing), come back into a fresh run directory for the stage to resume from, and leave the records once
    the stage is done."""
    src, dest, fresh = tmp_path / "run", tmp_path / "records", tmp_path / "fresh"
    s = dict(bench.PROFILES["quick"])
    stages = bench.build_stages(s, src)
    partial = _write(src / "offline.jsonl.partial", [_rec("collab-multi:train", 1.0, "e0")])
    partial.write_text(partial.read_text() + '{"torn": ')  # an episode being written
    journal = src / "mc" / "heldout.jsonl.tmp.turns.jsonl"
    _write(journal, [{"turn": 0}, {"turn": 1}])
    saved = set(bench.save_records(stages, src, dest))
    assert {"offline.jsonl.partial", "mc/heldout.jsonl.tmp.turns.jsonl"} <= saved

    fresh_stages = bench.build_stages(s, fresh)
    restored, _ = bench.restore_records(fresh_stages, dest, fresh)
    assert (fresh / "offline.jsonl.partial").read_text() == partial.read_text().rsplit("\n", 1)[0] + "\n"
    assert (fresh / "mc" / "heldout.jsonl.tmp.turns.jsonl").read_text() == journal.read_text()
    assert not fresh_stages["collect"].done()  # it resumes from the partial file, it is not finished

    _write(src / "offline.jsonl", [_rec("collab-multi:train", 1.0, "e0")])  # the stage finishes
    partial.unlink()
    bench.save_records(stages, src, dest)
    assert not (dest / "offline.jsonl.partial.gz").exists() and (dest / "offline.jsonl.gz").exists()
    assert (dest / "mc" / "heldout.jsonl.tmp.turns.jsonl.gz").exists()  # still running
    # --report-only --records: the report and the records from what exists, beside a running benchmark
    assert bench.main(["--profile", "quick", "--run-dir", str(src), "--records", str(tmp_path / "again"),
                       "--report-only"]) == 1  # no test table yet
    assert {p.relative_to(tmp_path / "again").as_posix() for p in (tmp_path / "again").rglob("*.gz")} >= {
        "offline.jsonl.gz", "settings.json.gz", "mc/heldout.jsonl.tmp.turns.jsonl.gz"}


def test_records_restore_sidecars_and_never_a_model_a_pending_stage_loads(bench, tmp_path):
    """A values file comes back with its .meta.json (mc-values refuses one without it); a grid point's model is
    read by the first seed's test stages, so it is not restored as done while they are pending (it trains again);
    the progress of a stage that played the lost model is not restored (it would mix two models' episodes)."""
    src, dest, fresh = tmp_path / "run", tmp_path / "records", tmp_path / "fresh"
    s = dict(bench.PROFILES["quick"])
    stages = bench.build_stages(s, src)
    assert {f"train-rft-g{i}-s0" for i in range(2)} <= set(stages["test-rft-s0"].deps)  # it loads the chosen one
    _write(src / "mc" / "heldout.jsonl", [{"agent_turn": 1}])
    (src / "mc" / "heldout.jsonl.meta.json").write_text(json.dumps({"settings": {"k": 1}}))
    for i in range(2):  # the RFT grid trained, validated and chosen; its test stages pending
        model = src / "models" / "rft" / f"g{i}-s0"
        (model / "adapter").mkdir(parents=True)
        (model / "adapter" / "adapter_config.json").write_text("{}")
        (model / "adapter" / "adapter_model.safetensors").write_bytes(b"w")
        (model / "training_budget.json").write_text(json.dumps({"epochs": 1.0}))
        _write(src / "val" / f"rft-g{i}.jsonl", [_rec("collab-multi:val", 0.5, f"v{i}")])
    (src / "selection").mkdir()
    (src / "selection" / "rft.json").write_text(json.dumps({"chosen": 1}))
    _write(src / "test" / "rft-s0.jsonl.partial", [_rec("collab-multi:test", 1.0, "t0")])  # played g1-s0's weights
    saved = set(bench.save_records(stages, src, dest))
    assert {"mc/heldout.jsonl.meta.json", "models/rft/g1-s0/training_budget.json"} <= saved
    assert not any("adapter" in p for p in saved)  # neither weights nor the adapter's config

    restored, waiting = bench.restore_records(bench.build_stages(s, fresh), dest, fresh)
    assert (fresh / "mc" / "heldout.jsonl.meta.json").is_file()
    assert waiting == ["train-rft-g0-s0", "train-rft-g1-s0"] and not (fresh / "models" / "rft").exists()
    assert not (fresh / "test" / "rft-s0.jsonl.partial").exists()  # its model trains again
    assert "val/rft-g1.jsonl" in restored and "selection/rft.json" in restored


def test_a_grid_point_validation_did_not_choose_is_not_trained_again_on_a_fresh_machine(bench, tmp_path, capsys):
    """Once the selection exists, the first seed's test stages read the chosen point's model only: a run continued
    from its records on a fresh machine trains that one again (its readers are pending), not the other one."""
    src, dest, fresh = tmp_path / "run", tmp_path / "records", tmp_path / "fresh"
    assert bench.main(["--profile", "quick", "--run-dir", str(src), "--list"]) == 0
    s = json.loads((src / "settings.json").read_text())
    for i in range(2):
        model = src / "models" / "rft" / f"g{i}-s0"
        model.mkdir(parents=True)
        (model / "training_budget.json").write_text(json.dumps({"epochs": 1.0, "point": i}))
        _write(src / "val" / f"rft-g{i}.jsonl", [_rec("collab-multi:val", 0.5, f"v{i}")])
    (src / "selection").mkdir()
    (src / "selection" / "rft.json").write_text(json.dumps({"chosen": 1}))
    stages = bench.build_stages(s, src)
    assert {"select-rft", "train-rft-g1-s0"} == set(stages["test-rft-s0"].deps) == set(stages["embedded-rft-s0"].deps)
    bench.save_records(stages, src, dest)

    assert bench.main(["--profile", "quick", "--run-dir", str(fresh), "--records", str(dest), "--list"]) == 0
    out, err = capsys.readouterr()
    listed = {line.split()[1] if line.startswith("done") else line.split()[0]: line.startswith("done")
              for line in out.splitlines() if "<-" in line}
    assert listed["train-rft-g0-s0"] and not listed["train-rft-g1-s0"]
    assert "trains again (weights are not kept): train-rft-g1-s0" in err and "train-rft-g0-s0," not in err
    assert json.loads((fresh / "models" / "rft" / "g0-s0" / "training_budget.json").read_text())["point"] == 0
    assert "test-rft-s0                  <- select-rft, train-rft-g1-s0" in out


def test_a_resumed_llama_run_needs_the_bindings_only_while_a_step_pair_stage_is_left(bench, tmp_path, capsys,
                                                                                       monkeypatch):
    """A run made with --candidate-server llama, continued on a machine without llama-cpp-python: refused in one
    line while a candidate stage is pending; once they are all done the rest of the run goes on without them."""
    import importlib.util

    run = tmp_path / "run"
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--candidate-server", "none", "--list"]) == 0
    settings = json.loads((run / "settings.json").read_text())
    (run / "settings.json").write_text(json.dumps(dict(settings, candidate_server="llama")))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else find_spec(name, *a))
    for i in range(2):
        _write(run / "val" / f"rft-g{i}.jsonl", [_rec("collab-multi:val", 0.5 * i, f"v{i}")])
    with pytest.raises(SystemExit, match="--candidate-server llama needs llama-cpp-python"):
        bench.main(["--profile", "quick", "--run-dir", str(run), "--only", "select-rft"])
    assert not (run / "selection" / "rft.json").exists()
    stages = bench.build_stages(dict(settings, candidate_server="llama"), run)
    for st in stages.values():
        if st.extra.get("candidates"):
            _write(st.output, [])
    bench.main(["--profile", "quick", "--run-dir", str(run), "--only", "select-rft"])
    assert json.loads((run / "selection" / "rft.json").read_text())["chosen"] == 1


def _model(folder: Path, weights: bytes) -> Path:
    (folder / "adapter").mkdir(parents=True)
    (folder / "adapter" / "adapter_config.json").write_text("{}")
    (folder / "adapter" / "adapter_model.safetensors").write_bytes(weights)
    (folder / "training_budget.json").write_text(json.dumps({"epochs": 1.0}))
    return folder


def _checkpoint(tmp: Path, step: int, *, complete: bool = True) -> Path:
    ck = tmp / f"checkpoint-{step}"
    ck.mkdir(parents=True)
    (ck / "adapter_model.safetensors").write_bytes(b"c" * step)
    (ck / "optimizer.pt").write_bytes(b"o" * step)
    if complete:  # the Trainer writes trainer_state.json last
        (ck / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return ck


def test_weights_keep_what_a_pending_stage_reads_and_the_newest_checkpoint_and_drop_what_is_spent(bench, tmp_path):
    src, kept = tmp_path / "run", tmp_path / "weights"
    assert bench.main(["--profile", "quick", "--run-dir", str(src), "--list"]) == 0
    s = json.loads((src / "settings.json").read_text())
    stages = bench.build_stages(s, src)
    _model(src / "models" / "rft" / "g0-s0", b"w0")  # val-rft-g0 pending: kept
    _model(src / "models" / "rft" / "g1-s0", b"w1")
    _checkpoint(src / "models" / "rft" / "g0-s0", 3)  # a finished stage's checkpoints are not kept
    for st in stages.values():  # every reader of g1-s0 done: spent
        if "train-rft-g1-s0" in st.deps:
            _write(st.output, []) if st.output.suffix else st.output.mkdir(parents=True)
    tmp = stages["train-sweet-g0-s0"].tmp  # an unfinished stage: its newest complete checkpoint
    _checkpoint(tmp, 4)
    _checkpoint(tmp, 5, complete=False)  # being written
    written = bench.save_weights(stages, src, kept)
    assert sorted(written) == ["models/rft/g0-s0", "models/sweet/g0-s0.tmp/checkpoint-4"]
    assert (kept / "models/rft/g0-s0/adapter/adapter_model.safetensors").read_bytes() == b"w0"
    assert not (kept / "models/rft/g0-s0/checkpoint-3").exists() and not (kept / "models/rft/g1-s0").exists()
    manifest = json.loads((kept / "models/rft/g0-s0" / bench.WEIGHTS_MANIFEST).read_text())["files"]
    assert set(manifest) == {"adapter/adapter_config.json", "adapter/adapter_model.safetensors", "training_budget.json"}
    assert bench.save_weights(stages, src, kept) == []  # nothing new

    (tmp / "checkpoint-5" / "trainer_state.json").write_text("{}")  # the next checkpoint completes
    assert bench.save_weights(stages, src, kept) == ["models/sweet/g0-s0.tmp/checkpoint-5"]
    assert [p.name for p in (kept / "models/sweet/g0-s0.tmp").iterdir()] == ["checkpoint-5"]
    # a checkpoint the trainer rotates away while it is copied: the kept one stays, no torn copy
    _checkpoint(tmp, 6)
    real_copytree = bench.shutil.copytree

    def rotating(src_dir, dst, **kw):
        out = real_copytree(src_dir, dst, **kw)
        (Path(src_dir) / "optimizer.pt").unlink()  # deleted under the copy
        return out

    bench.shutil.copytree = rotating
    try:
        assert bench.save_weights(stages, src, kept) == []
    finally:
        bench.shutil.copytree = real_copytree
    assert sorted(p.name for p in (kept / "models/sweet/g0-s0.tmp").iterdir()) == ["checkpoint-5"]
    # an older checkpoint in the run directory (a run restarted elsewhere) never replaces a later kept one;
    # a copy left by a killed process is cleared
    for ck in tmp.glob("checkpoint-*"):
        bench.shutil.rmtree(ck)
    _checkpoint(tmp, 3)
    (kept / "models/sweet/g0-s0.tmp" / "checkpoint-4.copying-999999999").mkdir()
    assert bench.save_weights(stages, src, kept) == []
    assert sorted(p.name for p in (kept / "models/sweet/g0-s0.tmp").iterdir()) == ["checkpoint-5"]

    _write(stages["val-rft-g0"].output, [])  # g0-s0's last pending reader... and the others
    for st in stages.values():
        if "train-rft-g0-s0" in st.deps and not st.done():
            _write(st.output, []) if st.output.suffix else st.output.mkdir(parents=True)
    tmp.rename(stages["train-sweet-g0-s0"].output)  # the SWEET-RL stage finishes
    (stages["train-sweet-g0-s0"].output / "adapter").mkdir()
    (stages["train-sweet-g0-s0"].output / "adapter" / "adapter_model.safetensors").write_bytes(b"s0")
    for st in stages.values():
        if "train-sweet-g0-s0" in st.deps and not st.done():
            _write(st.output, []) if st.output.suffix else st.output.mkdir(parents=True)
    bench.save_weights(stages, src, kept)
    assert not (kept / "models/rft/g0-s0").exists() and not (kept / "models/sweet/g0-s0.tmp").exists()
    assert not (kept / "models/sweet/g0-s0").exists()  # spent: no reader left, and validation has not chosen it
    bench.write_text_atomic(src / "selection" / "sweet.json", json.dumps({"chosen": 0}))
    assert bench.save_weights(stages, src, kept) == ["models/sweet/g0-s0"]  # --export-adapter reads it: kept
    assert (kept / "models/sweet/g0-s0/adapter/adapter_model.safetensors").read_bytes() == b"s0"
    (stages["train-sweet-g0-s0"].output / "adapter" / "adapter_model.safetensors").write_bytes(b"s0, again")
    assert bench.save_weights(stages, src, kept) == ["models/sweet/g0-s0"]  # trained again: copied again
    assert (kept / "models/sweet/g0-s0/adapter/adapter_model.safetensors").read_bytes() == b"s0, again"


def test_a_fresh_machine_resumes_from_kept_weights_and_never_from_a_damaged_copy(bench, tmp_path, capsys):
    src, kept, fresh = tmp_path / "run", tmp_path / "weights", tmp_path / "fresh"
    assert bench.main(["--profile", "quick", "--run-dir", str(src), "--list"]) == 0
    stages = bench.build_stages(json.loads((src / "settings.json").read_text()), src)
    _model(src / "models" / "rft" / "g0-s0", b"w0")
    _model(src / "models" / "rft" / "g1-s0", b"w1")
    _checkpoint(stages["train-sweet-g0-s0"].tmp, 7)
    bench.save_weights(stages, src, kept)
    bench.save_records(stages, src, tmp_path / "records")
    (kept / "models/rft/g1-s0/adapter/adapter_model.safetensors").write_bytes(b"xx")  # damaged after it was kept

    capsys.readouterr()
    assert bench.main(["--profile", "quick", "--run-dir", str(fresh), "--records", str(tmp_path / "records"),
                       "--weights", str(kept), "--list"]) == 0
    out, err = capsys.readouterr()
    listed = {line.split()[1] if line.startswith("done") else line.split()[0]: line.startswith("done")
              for line in out.splitlines() if "<-" in line}
    assert listed["train-rft-g0-s0"] and not listed["train-rft-g1-s0"]
    assert (fresh / "models/rft/g0-s0/adapter/adapter_model.safetensors").read_bytes() == b"w0"
    assert not (fresh / "models/rft/g0-s0" / bench.WEIGHTS_MANIFEST).exists()
    assert "g1-s0 does not match its manifest: not restored (train-rft-g1-s0 trains again)" in out + err
    assert not (fresh / "models/rft/g1-s0").exists()
    ck = fresh / "models/sweet/g0-s0.tmp/checkpoint-7"
    assert json.loads((ck / "trainer_state.json").read_text()) == {"global_step": 7}
    from sweet_agent.training.saving import last_checkpoint
    assert last_checkpoint(str(ck.parent)) == str(ck)  # --resume_from_checkpoint last starts there
    assert "weights: models/rft/g0-s0, models/sweet/g0-s0.tmp/checkpoint-7 restored from" in err
    # another run (other settings) is refused the folder: it would take these models for its own
    assert bench.main(["--profile", "quick", "--run-dir", str(tmp_path / "other"), "--sweet-nll-weight", "1.0",
                       "--weights", str(kept), "--list"]) == 2
    assert "keeps the weights of a run with other settings (RUN.json); give this run its own folder" in \
        capsys.readouterr().err
    assert not (tmp_path / "other" / "models").exists()


def test_a_running_benchmark_keeps_a_training_stage_s_checkpoints_while_it_trains(bench, tmp_path, monkeypatch):
    """Not only after a stage ends: every WEIGHTS_EVERY_S while stages run (a SWEET-RL actor trains for hours)."""
    import threading

    kept = tmp_path / "weights"
    monkeypatch.setattr(bench, "WEIGHTS", kept)
    monkeypatch.setattr(bench, "WEIGHTS_EVERY_S", 0.05)
    monkeypatch.setattr(bench, "STOP", threading.Event())
    (tmp_path / "settings.json").write_text(json.dumps(bench.PROFILES["quick"]))  # what marks the weights folder
    trainer = bench.Stage("train-x", tmp_path / "models" / "x", (), None, tmp=tmp_path / "models" / "x.tmp")
    _checkpoint(trainer.tmp, 2)
    want = kept / "models" / "x.tmp" / "checkpoint-2" / bench.WEIGHTS_MANIFEST
    # a stage that finishes only once the checkpoint is kept (or fails after 120 s)
    waiter = bench.Stage("waiter", tmp_path / "w.txt", (), [sys.executable, "-c", (
        "import os, sys, time\n"
        f"for _ in range(2400):\n    if os.path.exists({str(want)!r}): break\n    time.sleep(0.05)\n"
        f"else:\n    sys.exit(1)\nopen({str(tmp_path / 'w.txt.tmp')!r}, 'w').write('ok')")],
        tmp=tmp_path / "w.txt.tmp")
    stages = {"train-x": trainer, "waiter": waiter}
    bench.run_all(stages, tmp_path, 1, {"waiter"}, dict(bench.PROFILES["quick"], candidate_server="none"))
    assert waiter.done() and want.is_file()
