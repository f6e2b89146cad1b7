"""The learning benchmark runs SWEET-RL as the paper does (issue 36): every shipped profile pairs
every agent turn of the offline data with the base policy's own samples (>= 8 on a CPU,
temperature 1, the rollouts' length), 4 top-half/bottom-half pairs per turn, question
candidates at every agent turn, candidates sampled once and scored by every seed's critic, the
actor's NLL weight 0.01 (weight 1 only in the named ablation), and the same epochs and
learning-rate grid for every trained method. The stage commands are parsed by the real
``train-actor`` / ``train-*`` parsers, so what is checked is what the stages would run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.benchmark_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "training"))


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_learning")


def _stages(bench, name, tmp_path):
    s = dict(bench.PROFILES[name], candidate_server="none", frontend_arm=True)  # with v2's optional frontend arm
    stages = bench.build_stages(s, tmp_path / name)
    for m in ("rft", "mtdpo", "sweet", "best-of-n"):  # the commands after a selection
        bench.write_text_atomic(tmp_path / name / "selection" / f"{m}.json", json.dumps({"chosen": 0}))
    return s, stages


def _parsed(stage):
    """``(command, (script, config, model))`` of a stage's sweet-agent command, parsed as the command does."""
    import importlib

    from sweet_agent.cli import COMMANDS

    cmd = [str(x) for x in stage.command()]
    name = cmd[cmd.index("sweet_agent.cli") + 1]
    module = next(mod for names, mod, _ in COMMANDS if name in names)
    return name, importlib.import_module(module).parse_args(cmd[cmd.index("sweet_agent.cli") + 2:])


def _records():
    """Three hand-made trajectories of 1, 2 and 3 agent turns: 6 agent turns."""
    recs = []
    for n in (1, 2, 3):
        hist = [{"role": "user", "content": f"Write f{n}(x)."}]
        for t in range(n):
            hist += [{"role": "assistant", "content": f"turn {t + 1}?"}, {"role": "user", "content": "ok"}]
        hist[-1:] = []  # ends with the agent
        task = {"problem_description": f"Write f{n}(x).", "ground_truth": "def f(x):\n    return x\n",
                "test_cases": {"t": "f(1)"}}
        recs.append({"task": task, "dialogue_history": hist, "answer": hist[-1]["content"], "reward": 0.0})
    return recs


@pytest.mark.parametrize("profile", ["full", "quick", "ablation-nll1"])
def test_every_profile_pairs_every_agent_turn_as_the_paper_does(bench, profile, tmp_path):
    from sweet_agent.actor.candidates import stage_turns

    s, stages = _stages(bench, profile, tmp_path)
    pair_stages = [st for st in stages.values() if st.extra.get("candidates") and st.name.startswith("pairs")]
    assert {st.name for st in pair_stages} == {f"pairs{a}-s{sd}" for a in ("", "-frontend")
                                               for sd in bench.seeds_of(s)}
    recs = _records()
    for st in pair_stages:
        name, args = _parsed(st)
        cfg = args.training
        assert name == "train-actor" and args.script.only_pairs
        assert (cfg.turn_fraction, cfg.first_turns, cfg.skip_turns) == (1.0, 0, 0), st.name
        assert len(stage_turns(recs, cfg, cfg.candidate_seed)) == 6  # every agent turn of every trajectory
        assert cfg.num_candidates >= bench.MIN_CANDIDATES and cfg.pairs_per_turn == 4 and cfg.temperature == 1.0
        rollout_length = s["frontend_max_new_tokens"] if "frontend" in st.name else s["max_new_tokens"]
        assert cfg.max_new_tokens == rollout_length, st.name
        if "frontend" not in st.name:  # question openers may join at every agent turn, not only the first
            assert cfg.explore_candidates > 0 and cfg.explore_turns == 0
    for sd in bench.seeds_of(s):  # the actor's NLL weight: the paper's 0.01, or the ablation's 1, said by its name
        _, args = _parsed(stages[f"train-sweet-{'g0-' if sd == 0 else ''}s{sd}"])
        assert args.training.loss_weights == [1.0, 1.0 if profile == "ablation-nll1" else 0.01]
    assert bench.departures(s) == ({} if profile != "ablation-nll1" else
                                   {"sweet_nll_weight": "actor NLL weight 1 (the paper's 0.01)"})


def test_a_departing_profile_must_be_a_named_ablation(bench, monkeypatch, tmp_path, capsys):
    bench.check_profiles()  # the shipped ones
    monkeypatch.setitem(bench.PROFILES, "full", dict(bench.PROFILES["full"], pairs_per_turn=1))
    with pytest.raises(SystemExit, match=r"profile 'full' departs from the paper in \['pairs_per_turn'\]"):
        bench.check_profiles()
    monkeypatch.undo()
    # a flag that makes a run depart renames it, and the report says what departs
    run = tmp_path / "run"
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list", "--candidate-server", "none",
                       "--num-candidates", "2"]) == 0
    assert "departs from the paper's SWEET-RL in: 2 candidates per agent turn" in capsys.readouterr().err
    settings = json.loads((run / "settings.json").read_text())
    assert settings["profile"] == "quick-departs"
    report = bench.write_report(run, settings)
    assert report["departures"] == {"num_candidates": "2 candidates per agent turn (the paper 16, a CPU profile >= 8)"}
    md = (run / "results.md").read_text()
    assert md.startswith("Profile: quick-departs. SWEET-RL's step pairs and actor loss depart from the paper and its "
                         "release in: 2 candidates per agent turn")
    # a profile that does not depart names what it runs by design: its candidates, the openers, the share paired
    run = tmp_path / "quick"
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list", "--candidate-server", "none"]) == 0
    bench.write_report(run, json.loads((run / "settings.json").read_text()))
    assert (run / "results.md").read_text().startswith(
        "Profile: quick. SWEET-RL's step pairs and actor loss depart from the paper and its release in: nothing but "
        "the CPU's 8 candidates per agent turn (the paper 16), the question openers among them and every agent turn "
        "of 50 % of the trajectories paired (the release's share; the paper's text pairs every trajectory)")


def test_candidates_are_sampled_once_and_scored_by_every_seeds_critic(bench, tmp_path):
    s, stages = _stages(bench, "full", tmp_path)
    first, *others = bench.seeds_of(s)
    files, seeds = set(), set()
    for arm in ("", "-frontend"):
        for sd in (first, *others):
            st = stages[f"pairs{arm}-s{sd}"]
            _, args = _parsed(st)
            files.add(args.script.candidates_file)
            seeds.add(args.training.candidate_seed)
            assert args.training.seed == sd and args.script.critic.endswith(f"s{sd}")  # each seed's own critic
            if sd != first:  # waits for the file the first seed's stage writes
                assert f"pairs{arm}-s{first}" in st.deps
    assert seeds == {s["data_seed"]}
    assert files == {str(tmp_path / "full" / "candidates" / "backend.jsonl"),
                     str(tmp_path / "full" / "candidates" / "frontend.jsonl")}


def test_every_trained_method_gets_the_same_epochs_and_learning_rates(bench, tmp_path):
    for profile in bench.PROFILES:
        s, stages = _stages(bench, profile, tmp_path)
        budgets = {}
        for m, command in (("rft", "train-rft"), ("mtdpo", "train-mtdpo"), ("sweet", "train-actor")):
            lrs = []
            for point in range(len(bench.grid_points(s, m))):
                name, args = _parsed(stages[f"train-{m}-g{point}-s0"])
                assert name == command and args.training.max_steps == -1  # no step budget
                budgets[m] = args.training.num_train_epochs
                lrs.append(args.training.learning_rate)
            assert lrs == [p["learning_rate"] for p in bench.grid_points(s, "rft")]  # one grid for every method
            for sd in bench.seeds_of(s)[1:]:
                assert _parsed(stages[f"train-{m}-s{sd}"])[1].training.num_train_epochs == budgets[m]
        assert set(budgets.values()) == {s["train_epochs"]}, (profile, budgets)
        for name in ("train-critic-s0", "train-critic-noref-s0", "train-frontend-critic-s0"):
            assert _parsed(stages[name])[1].training.num_train_epochs == s["critic_epochs"]
        for name in ("train-frontend-rft-s0", "train-frontend-sweet-s0"):
            assert _parsed(stages[name])[1].training.num_train_epochs == s["train_epochs"]
        for sd in bench.seeds_of(s):  # the oracle-credit actor: SWEET-RL's epochs, learning rate and pairs per turn
            name, args = _parsed(stages[f"train-oracle-s{sd}"])
            assert name == "train-actor" and args.script.pair_labels == "monte-carlo"
            assert args.training.num_train_epochs == s["train_epochs"] and args.training.pairs_per_turn == 4
            assert args.training.learning_rate == bench.grid_points(s, "sweet")[0]["learning_rate"]
            assert args.training.loss_weights == _parsed(stages["train-sweet-g0-s0"])[1].training.loss_weights


def test_behaviour_data_explores_the_first_agent_turns_with_their_own_rates(bench, tmp_path):
    from sweet_agent.policies.exploration import ExplorationConfig

    for profile in ("full", "quick"):
        s, stages = _stages(bench, profile, tmp_path)
        cmd = [str(x) for x in stages["collect"].command()]
        rates = cmd[cmd.index("--explore-rates") + 1]
        cfg = ExplorationConfig(rates=rates)
        assert len(cfg.rates) >= 2 and all(0 < r < 1 for r in cfg.rates)  # ask once, twice, or answer at once
        assert "--explore-rate" not in cmd


def test_the_report_lists_every_models_budget(bench, tmp_path):
    run = tmp_path / "run"
    s = dict(bench.PROFILES["quick"], candidate_server="none")
    for model, rows, unit in (("rft/g0-s0", 7, "trajectories"), ("sweet/g0-s0", 76, "step pairs"),
                              ("mtdpo/g0-s0.tmp", 9, "trajectory pairs")):  # .tmp: still training, not listed
        path = run / "models" / model / "training_budget.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"command": "x", "unit": unit, "train_rows": rows, "optimizer_steps": rows,
                                    "samples_seen": 2 * rows, "epochs": 2.0, "learning_rate": 5e-4}))
    got = bench.training_budgets(run)
    assert [(b["model"], b["samples_seen"], b["epochs"]) for b in got] == [("rft/g0-s0", 14, 2.0),
                                                                          ("sweet/g0-s0", 152, 2.0)]
    report = bench.write_report(run, s)
    assert report["budgets"] == got and report["departures"] == {}
    md = (run / "results.md").read_text()
    assert "| sweet/g0-s0 | 76 step pairs | 2.00 | 152 | 76 | 0.0005 |" in md
    assert "Profile: quick." in md


def test_a_run_of_the_first_protocol_is_refused_with_where_to_report_it(bench, tmp_path, capsys):
    run = tmp_path / "old"
    run.mkdir()
    old = dict(bench.PROFILES["quick"], candidate_server="none", rft_steps=16, sweet_steps=16)
    (run / "settings.json").write_text(json.dumps(old))
    assert bench.main(["--profile", "quick", "--run-dir", str(run), "--list"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "protocol's first version (settings rft_steps, sweet_steps" in err
