"""The learning protocol's quick profile run end to end (issue 38: "a quick profile of v2 runs every
stage in minutes"): ``benchmarks/bench_learning.py --profile quick --model <tiny model>`` runs every
stage of ``--list`` as the real run does (rollouts, critics, Monte-Carlo values, the critic report,
step pairs, RFT / multi-turn DPO / SWEET-RL over the grid, selection on validation, the other seeds,
the oracle-credit actor, the three test splits, the report), so a bug in a late stage shows here in
minutes instead of hours into a ten-hour run. Its stages are forked from the benchmark's fork server
(``--stage-start forkserver``, the default: the same commands, without importing torch 77 times).

Why a hand-wired model: a random tiny model never writes a function, every episode scores 0, and
every trainer then stops with "nothing to train on" (exit 3): the critic, RFT and multi-turn DPO
stages fail and everything after them never runs. :func:`build_answerer` is a one-layer model whose
next token depends on the current token only (attention and MLP outputs zeroed, the output layer a
bigram table): after the chat template's assistant header it writes ``I WANT TO ANSWER: def f(x):
return x+1`` and, when sampled, stops after ``return x`` half the time. On the offline tasks
(:func:`write_tasks`: ``f(x) = x + 1``) the real grader gives 1 or 0, so samples of one task differ
and every trainer has data. Validation, test and embedded splits stay the profile's real task sets
(the model scores 0 there: selection then takes the earlier grid point, the tie rule). Nothing of
the product is stubbed: every stage is the real ``sweet-agent`` subprocess.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
import sys
from pathlib import Path

import pytest

from tests.benchmark_modules import load_benchmark

#: 79 stages: forked from the benchmark's fork server (sweet_agent.forkserver), ~4 min on 2 cores at load 4-6 (as 77
#: fresh processes each importing torch/transformers/TRL it took 17-20 min and was left out of `make test`)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
#: The trained methods' models (the critics train on trajectory pairs under their own epochs).
METHOD_MODELS = ("rft", "mtdpo", "sweet", "oracle")
ANSWER = "I WANT TO ANSWER: def f(x): return x+1"
#: The methods of the default v2 run (best-of-N and the frontend arm are optional arms, off).
METHODS = {"zero-shot", "rft", "mtdpo", "sweet", "oracle"}


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_learning", "bench_learning_quick_run")


def build_answerer(path: Path) -> Path:
    """A tiny causal LM that answers ``f(x) = x + 1`` right or wrong at random, whatever the prompt
    (see the module docstring): hidden size = vocabulary, embeddings the identity, attention and
    MLP outputs zero, so the logits are the output layer's column of the current token."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    sys.path.insert(0, str(ROOT / "tests" / "training"))
    from tiny_model import build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    ids = tok(ANSWER, add_special_tokens=False)["input_ids"]
    assert len(set(ids)) == len(ids), "the answer's tokens must be distinct for a bigram table to spell it"
    end, start = tok.eos_token_id, tok("\n", add_special_tokens=False)["input_ids"][-1]  # the header ends in "\n"
    n = len(tok)
    follow = {t: [end] for t in range(n)}  # any other token ends the turn
    follow[start] = [ids[0]]
    follow.update({a: [b] for a, b in zip(ids, ids[1:])})
    follow[ids[-3]] = [ids[-2], end]  # " x" -> "+1" or the end: right or wrong, one half each
    cfg = Qwen2Config(vocab_size=n, hidden_size=n, intermediate_size=4, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=False,
                      pad_token_id=tok.pad_token_id, eos_token_id=end, bos_token_id=None)
    model = Qwen2ForCausalLM(cfg)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(torch.eye(n))
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        head = torch.full((n, n), -30.0)
        for a, nexts in follow.items():
            head[nexts, a] = 0.0
        model.lm_head.weight.copy_(head / n ** 0.5)  # the final RMSNorm scales a one-hot row by sqrt(n)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = end
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def write_tasks(path: Path, n: int) -> Path:
    """Backend tasks in the official record shape whose reference is ``f(x) = x + 1``."""
    path.write_text("".join(json.dumps({
        "problem_description": f"Write a python function f(x) that gives the next ticket number after x at till {i}.",
        "ground_truth": "def f(x):\n    return x + 1\n", "test_cases": {"test1": "f(1)", "test2": f"f({i + 2})"}}) + "\n"
        for i in range(n)), encoding="utf-8")
    return path


def test_answerer_answers_right_or_wrong_half_the_time(tmp_path):
    """The fixture model does what the run below relies on, on a real agent prompt."""
    from sweet_agent.policies import load_policy
    from sweet_agent.policies.base import SamplingParams
    from sweet_agent.prompts import agent_messages, system_prompt

    policy = load_policy(str(build_answerer(tmp_path / "answerer")))
    conv = agent_messages([{"role": "user", "content": "Write a python function f(x) for my till."}],
                          system_prompt("backend", 3))
    texts = {g.text for g in policy.generate([conv] * 16, SamplingParams(temperature=1.0, max_new_tokens=48),
                                              list(range(16)))}
    assert texts == {ANSWER, ANSWER.removesuffix("+1")}


def test_quick_profile_runs_every_stage_with_a_local_model(bench, tmp_path, capsys):
    model = build_answerer(tmp_path / "answerer")
    run = tmp_path / "run"
    tasks = write_tasks(tmp_path / "tasks.jsonl", 6)
    args = ["--profile", "quick", "--run-dir", str(run), "--model", str(model), "--candidate-server", "none",
            # offline data and the held-out tasks of the critic report from the tasks above (4 tasks x 3 samples;
            # tasks 4-5 held out); every other setting is the quick profile's
            "--train-tasks", str(tasks), "--train-episodes", "4", "--k", "3",
            "--heldout-start", "4", "--heldout-episodes", "2"]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        code = bench.main([*args, "--jobs", "2"])
    finally:  # main() installs its stop handlers in this process
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    out = capsys.readouterr().out
    failed = re.findall(r"! (\S+) failed.*", out)
    assert code == 0 and not failed, (failed, out[-4000:])

    assert bench.main([*args, "--list"]) == 0
    check_complete_run(bench, run, model, capsys.readouterr().out.splitlines())


def check_complete_run(bench, run: Path, model: Path, listed: list[str]) -> None:
    """What a user checks after a run: ``listed`` (its ``--list``) all done, the report, the critic
    report and the stage times."""
    assert listed and all(line.startswith("done") for line in listed), [x for x in listed if not x.startswith("done")]
    names = {line.split()[1] for line in listed}

    settings = json.loads((run / "settings.json").read_text())
    assert settings["model"] == str(model.resolve()) and settings["profile"] == "quick"
    seeds = bench.seeds_of(settings)

    # --model reached every stage: each command names the local model (or a model trained from it), never "default"
    for log in sorted((run / "logs").glob("*.log")):
        cmd = shlex.split(log.read_text().splitlines()[0][2:]) if log.read_text().startswith("$ ") else []
        for flag in ("--policy", "--model_name_or_path", "--question_policy"):
            if flag in cmd:
                value = cmd[cmd.index(flag) + 1]
                assert value == str(model.resolve()) or value.startswith(str(run / "models")), (log.name, flag, value)

    # results.json: every method on every test split, three seeds each (zero-shot one run), the grid's choices
    report = json.loads((run / "results.json").read_text())
    for split in bench.RESULT_SPLITS:
        rows = {r["method"]: r for r in report[split]}
        assert set(rows) == METHODS, (split, sorted(rows))
        for m, row in rows.items():
            assert row["seeds"] == (1 if m == "zero-shot" else len(seeds)), (split, m)
            assert row["episodes"] > 0 and row["tests"]["mean"] is not None, (split, m)
        assert set(rows["sweet"]["tests"]["vs"]) == {"zero-shot", "rft", "mtdpo"}
        assert set(rows["oracle"]["tests"]["vs"]) == {"zero-shot", "sweet"}
    for m in bench.grid_methods(settings):
        points = [v for v in report["validation"] if v["method"] == m]
        assert len(points) == len(bench.grid_points(settings, m)) >= 2
        assert sum(v["chosen"] for v in points) == 1
        assert all(v["episodes"] == settings["val_episodes"] for v in points)
        selection = json.loads((run / "selection" / f"{m}.json").read_text())
        assert [v["point"] for v in points if v["chosen"]] == [selection["chosen"]]
    # every model trained with DPO says what it did to its pairs, from the log its trainer wrote beside it
    dpo = {d["model"].split("/")[0] for d in report["dpo_dynamics"] if d["logged_steps"] > 0}
    assert dpo == {"mtdpo", "sweet", "oracle"}, report["dpo_dynamics"]
    assert "### What DPO did to its pairs" in (run / "results.md").read_text()
    # every trained model says what its optimizer saw
    trained = {b["model"].split("/")[0] for b in report["budgets"]}
    assert {"critic", "critic-noref", "rft", "mtdpo", "sweet", "oracle"} <= trained
    # ... and every trained method made the same number of passes over its own data
    method_epochs = {b["epochs"] for b in report["budgets"] if b["model"].split("/")[0] in METHOD_MODELS}
    assert method_epochs == {settings["train_epochs"]}, report["budgets"]
    # ... in the same arithmetic, critics included (bf16 autocast on this CPU)
    assert {b["precision"] for b in report["budgets"]} == {settings["train_precision"]} == {"bf16"}

    # the critic report: per agent turn, SWEET's critic of every seed, the critic without the reference and
    # the release's step score, each against the Monte-Carlo values of the held-out turns
    critic = json.loads((run / "reports" / "critic-report.json").read_text())
    assert critic == report["critic_agreement"]
    scorers = {c["name"]: c for c in critic["scorers"]}
    assert set(scorers) == {*(f"sweet-s{sd}" for sd in seeds), f"noref-s{seeds[0]}", f"release-s{seeds[0]}"}
    for name, c in scorers.items():
        turns = {k: a for k, a in c["by_agent_turn"].items() if k != "all" and a["pairs"]}
        assert turns, name
        assert all(0.0 <= a["agreement"] <= 1.0 for a in turns.values()), name
    assert "step-level accuracy" in (run / "results.md").read_text()
    # the label check: every held-out candidate that goes on got a second completion (an answer keeps its one
    # grade), and the report on the pooled values scored no candidate again (every turn read from the journal)
    from sweet_agent.actor.mc_values import read_values_file

    one, _ = read_values_file(run / "mc" / "heldout.jsonl")
    two, meta = read_values_file(run / "mc" / "heldout-more.jsonl")
    assert meta["settings"]["mc"]["rollouts_per_candidate"] == 2 and len(one) == len(two)
    for a, b in zip(one, two):
        for ca, cb in zip(a["candidates"], b["candidates"]):
            assert ca["text"] == cb["text"] and cb["rewards"][:1] == ca["rewards"]
            assert len(cb["rewards"]) + cb["failed_rollouts"] == (1 if ca["terminal"] else 2)
    labels = json.loads((run / "reports" / "critic-report-labels.json").read_text())
    assert labels == report["critic_agreement_labels"] and labels["completions_per_candidate"] == 2
    assert labels["label_reliability"]["all"]["pairs"] >= 0
    first = {c["name"]: c["by_agent_turn"]["all"] for c in critic["scorers"]}
    for c in labels["scorers"]:
        assert any(f"{labels['turns']} turns' scores read back" in n for n in c["notes"]), (c["name"], c["notes"])
        if not any(x["failed_rollouts"] for r in two for x in r["candidates"]):  # the first draws are the k = 1 labels
            one_draw = c["first_completion"]
            assert (one_draw["agree"], one_draw["pairs"]) == (first[c["name"]]["agree"], first[c["name"]]["pairs"])
    assert "How noisy the Monte-Carlo labels are" in (run / "results.md").read_text()

    # timings.jsonl names every stage, with the commit it ran from
    timings = [json.loads(x) for x in (run / "timings.jsonl").read_text().splitlines()]
    assert {t["stage"] for t in timings} == names
    assert all(re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", t["commit"] or "") for t in timings)
