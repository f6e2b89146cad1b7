"""Learning benchmark: does training change the agent? Zero-shot, RFT, multi-turn DPO, SWEET-RL
and critic-guided best-of-N on the same data, the same held-out tasks and the same seeds.

    make bench-learning                        # = python benchmarks/bench_learning.py
    python benchmarks/bench_learning.py --run-dir runs/learning --jobs 2
    python benchmarks/bench_learning.py --report-only      # tables + plot from what exists

WHY this shape:

- **Tasks where asking pays** (``collab:train`` / ``collab:test``,
  :mod:`colbench_gym.tasks.collab_generator`): one hidden detail decides the answer and the code
  is simple, so the default 0.5B model can solve a task once it asks. On the general generated
  tasks it passes ~5 % of tests whatever it does and no method has anything to learn.
- **Exploration** (:mod:`sweet_agent.policies.exploration`): the model never asks unprompted, so
  the offline data is collected by a behaviour policy that prefills half of the first turns with
  a question opener; the trajectories record it (``meta.exploration``).
- **Learning signal in the fraction of tests passed** (binary success of a 0.5B model is rare:
  zero-shot it solves none of the held-out tasks, docs/training.md): rollouts use
  ``reward = tests passed / tests``, preference pairs are higher-vs-lower reward
  (``--pair_rule reward``), RFT keeps each task's best samples (``best``); success is reported
  beside.
- **Stages** (a small DAG, ``--jobs`` at a time): each writes its output atomically (rollouts to
  a ``.partial`` file resumed on restart then renamed; trainers into ``<dir>.tmp`` renamed at
  the end) and is skipped when its output exists, so an interrupted run continues where it
  stopped; a lock file per stage lets a second invocation (e.g. ``--only``) run beside the first.
  After every finished stage the report (JSON, markdown, PNG) is rewritten from what exists.
- **Statistics**: per method, success %, tests passed %, mean turns and questions per episode
  with 95 % bootstrap CIs over episodes, and the *paired* difference to zero-shot (same episode
  id: same task, same seed) with its bootstrap CI. Each episode is measured, and each interval
  drawn, by :mod:`sweet_agent.metrics`, as in the viewer and ``sweet-agent evaluate`` (a question
  is a non-answer agent turn containing ``?``).
- **Best-of-N** uses the critic trained *without* the privileged reference: at test time the
  agent has no reference solution, and a critic that reads it would leak the answer into the
  choice (an oracle, not a decoder). See docs/training.md, "Learning benchmark".
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sweet_agent.metrics import (  # noqa: E402 - after the sys.path set-up above
    EpisodeMetrics,
    bootstrap_ci,
    episode_metrics,
    mean,
    metric_values,
    paired_difference,
)

#: Settings of a run; ``--profile quick`` shrinks everything for a smoke run.
PROFILES: dict[str, dict[str, Any]] = {
    "full": dict(  # noqa: C408 - a settings table
        model="default", train_tasks="collab:train", train_episodes=16, k=3, explore_rate=0.5, explore_turns=1,
        train_temperature=0.8, eval_tasks="collab:test", eval_episodes=40, eval_temperature=0.0,
        embedded_tasks="embedded:test", embedded_episodes=30, max_turns=3, max_new_tokens=128,
        max_steps=16, max_length=1024, actor_lr=1e-4, critic_lr=2e-4, num_candidates=2, turn_fraction=0.1,
        candidate_tokens=96, best_of=4, concurrency=12, seed=0,
        # trajectory-pair trainers cost ~210 s per step of 2 pairs here (4 sequences x policy + reference)
        critic_steps=6, mtdpo_steps=6,
        # step pairs cost ~130 s per turn with 4 candidates, as much with 2 at load 40: 2 on a tenth of the turns
        sweet_steps=8,
        # RFT at a LoRA learning rate 5x higher: at 1e-4 the model answered better but never asked greedily
        rft_hi_lr=5e-4,
        # half of a first turn's step-pair candidates start with a question opener: the target policy
        # never asks, and with its own samples only none of 18 candidates was a question (last run)
        explore_candidates=0.5,
        # the same 5x for SWEET's actor (at 1e-4 neither RFT nor SWEET changed the greedy first turn)
        sweet_hi_lr=5e-4,
        # second SWEET attempt (third run): pairs on every trajectory's first agent turn only, where
        # asking is decided (48 pairs, not 9 of which 3 offered a question), one epoch of them; once
        # with the paper's NLL weight on the chosen turn (0.01) and once with weight 1, which keeps the
        # chosen turn's opener (at 0.01 SWEET-5x learned "I WANT TO ANSWER: What is ...?")
        first_turns=1, sweet_first_steps=24, sweet_nll_weight=1.0,
    ),
    "quick": dict(  # noqa: C408
        model="default", train_tasks="collab:train", train_episodes=4, k=2, explore_rate=0.5, explore_turns=1,
        train_temperature=0.8, eval_tasks="collab:test", eval_episodes=4, eval_temperature=0.0,
        embedded_tasks="embedded:test", embedded_episodes=2, max_turns=2, max_new_tokens=96,
        max_steps=2, max_length=768, actor_lr=5e-5, critic_lr=1e-4, num_candidates=2, turn_fraction=0.5,
        candidate_tokens=48, best_of=2, concurrency=4, seed=0, critic_steps=2, mtdpo_steps=2, rft_hi_lr=5e-4, sweet_steps=2,
        sweet_hi_lr=5e-4,
        explore_candidates=0.5,
        first_turns=1, sweet_first_steps=2, sweet_nll_weight=1.0,
    ),
}

#: Methods in table order; ``policy`` names the model directory (or "base").
METHODS = ("zero-shot", "rft", "rft-hi", "mtdpo", "mtdpo-hi", "sweet", "sweet-hi", "sweet-first", "sweet-nll", "sweet-two", "sweet-two-mid",
           "best-of-n")
LABELS = {"zero-shot": "zero-shot", "rft": "RFT", "rft-hi": "RFT (5x learning rate)", "mtdpo": "multi-turn DPO",
          "mtdpo-hi": "multi-turn DPO (5x learning rate)", "sweet": "SWEET-RL", "sweet-hi": "SWEET-RL (5x learning rate)",
          "sweet-first": "SWEET-RL (first-turn pairs, 5x lr)",
          "sweet-nll": "SWEET-RL (first-turn pairs, 5x lr, NLL weight 1)",
          "sweet-two": "SWEET-RL (turn 1 + 2 pairs, 5x lr, NLL weight 1)",
          "sweet-two-mid": "SWEET-RL (turn 1 + 2 pairs, 2.5x lr, NLL weight 1)",
          "best-of-n": "best-of-N (critic w/o reference)"}

_print_lock = threading.Lock()


def say(msg: str) -> None:
    with _print_lock:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ------------------------------------------------------------------------------ stages
@dataclass
class Stage:
    name: str
    output: Path
    deps: tuple[str, ...]
    cmd: list[str] | None = None  # a sweet-agent command; None = python callable
    tmp: Path | None = None  # where the command writes; renamed to ``output`` on success
    resumable: bool = False  # a rollout: keep the partial file across restarts
    priority: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def done(self) -> bool:
        return self.output.exists()


def _sa(*args: Any) -> list[str]:
    return [sys.executable, "-m", "sweet_agent.cli", *map(str, args)]


def build_stages(s: dict[str, Any], run: Path) -> dict[str, Stage]:
    data = run / "offline.jsonl"
    models = run / "models"
    ev = run / "eval"
    stages: dict[str, Stage] = {}

    def rollout(name: str, out: Path, tasks: str, episodes: int, k: int, policy: str, temperature: float,
                seed: int, deps: tuple[str, ...], priority: int, extra: list[str] = ()) -> None:
        part = out.with_name(out.name + ".partial")
        cmd = _sa("rollout", "--env", "ColBench-Backend-v0", "--tasks", tasks, "--episodes", episodes, "--k", k,
                  "--policy", policy, "--simulator", "offline", "--max-turns", s["max_turns"],
                  "--max-new-tokens", s["max_new_tokens"], "--temperature", temperature, "--seed", seed,
                  "--concurrency", s["concurrency"], "--output", part, "--resume", "--no-progress", *extra)
        stages[name] = Stage(name, out, deps, cmd, tmp=part, resumable=True, priority=priority)

    def train(name: str, command: str, out: Path, deps: tuple[str, ...], priority: int, *args: Any,
              steps: int | None = None) -> None:
        tmp = out.with_name(out.name + ".tmp")
        cmd = _sa(command, "--config", "cpu", "--output_dir", tmp, "--max_steps", steps or s["max_steps"],
                  "--max_length", s["max_length"], "--save_strategy", "no", "--report_to", "none",
                  "--seed", s["seed"], *args)
        stages[name] = Stage(name, out, deps, cmd, tmp=tmp, priority=priority)

    rollout("collect", data, s["train_tasks"], s["train_episodes"], s["k"], s["model"], s["train_temperature"],
            s["seed"], (), 100, ["--explore-rate", s["explore_rate"], "--explore-turns", s["explore_turns"]])
    eval_seed = s["seed"] + 1000
    policies = {"zero-shot": s["model"], "rft": models / "rft", "rft-hi": models / "rft-hi", "mtdpo": models / "mtdpo",
                "mtdpo-hi": models / "mtdpo-hi",
                "sweet": models / "sweet", "sweet-hi": models / "sweet-hi", "sweet-first": models / "sweet-first",
                "sweet-nll": models / "sweet-nll", "sweet-two": models / "sweet-two",
                "sweet-two-mid": models / "sweet-two-mid"}
    train("train-rft", "train-rft", models / "rft", ("collect",), 80, "--data", data, "--pair_rule", "best",
          "--learning_rate", s["actor_lr"])
    train("train-rft-hi", "train-rft", models / "rft-hi", ("collect",), 50, "--data", data, "--pair_rule", "best",
          "--learning_rate", s["rft_hi_lr"])
    train("train-critic", "train-critic", models / "critic", ("collect",), 70, "--data", data,
          "--pair_rule", "reward", "--learning_rate", s["critic_lr"], steps=s["critic_steps"])
    train("train-mtdpo", "train-mtdpo", models / "mtdpo", ("collect",), 60, "--data", data,
          "--pair_rule", "reward", "--learning_rate", s["actor_lr"],
          # one pair per forward (same effective batch): two pairs of full trajectories with policy and
          # reference in float32 took 9 GB here and were OOM-killed beside the other stages
          "--per_device_train_batch_size", 1, "--gradient_accumulation_steps", 2, steps=s["mtdpo_steps"])
    # the baselines' 5x rate is RFT's (rft_hi_lr): every method compared at the rate that made RFT ask
    train("train-mtdpo-hi", "train-mtdpo", models / "mtdpo-hi", ("collect",), 30, "--data", data,
          "--pair_rule", "reward", "--learning_rate", s["rft_hi_lr"],
          "--per_device_train_batch_size", 1, "--gradient_accumulation_steps", 2, steps=s["mtdpo_steps"])
    pairs = run / "step_pairs.jsonl"
    part = pairs.with_name(pairs.name + ".tmp")
    stages["step-pairs"] = Stage("step-pairs", pairs, ("train-critic",), _sa(
        "train-actor", "--config", "cpu", "--only_pairs", "--data", data, "--critic", models / "critic",
        "--pairs_out", part, "--output_dir", run / "models" / "sweet.pairs-scratch",
        "--num_candidates", s["num_candidates"], "--turn_fraction", s["turn_fraction"],
        "--max_new_tokens", s["candidate_tokens"], "--seed", s["seed"],
        "--explore_candidates", s["explore_candidates"], "--explore_turns", s["explore_turns"]), tmp=part, priority=65)
    train("train-sweet", "train-actor", models / "sweet", ("step-pairs",), 64, "--pairs_in", pairs,
          "--learning_rate", s["actor_lr"], steps=s.get("sweet_steps"))
    train("train-sweet-hi", "train-actor", models / "sweet-hi", ("step-pairs",), 48, "--pairs_in", pairs,
          "--learning_rate", s["sweet_hi_lr"], steps=s.get("sweet_steps"))
    first = run / "step_pairs_first.jsonl"
    part = first.with_name(first.name + ".tmp")
    stages["step-pairs-first"] = Stage("step-pairs-first", first, ("train-critic",), _sa(
        "train-actor", "--config", "cpu", "--only_pairs", "--data", data, "--critic", models / "critic",
        "--pairs_out", part, "--output_dir", run / "models" / "sweet-first.pairs-scratch",
        "--num_candidates", s["num_candidates"], "--first_turns", s["first_turns"], "--turn_fraction", 1.0,
        "--max_new_tokens", s["candidate_tokens"], "--seed", s["seed"],
        "--explore_candidates", s["explore_candidates"], "--explore_turns", s["explore_turns"]), tmp=part, priority=46)
    train("train-sweet-first", "train-actor", models / "sweet-first", ("step-pairs-first",), 45, "--pairs_in", first,
          "--learning_rate", s["sweet_hi_lr"], steps=s["sweet_first_steps"])
    train("train-sweet-nll", "train-actor", models / "sweet-nll", ("step-pairs-first",), 44, "--pairs_in", first,
          "--learning_rate", s["sweet_hi_lr"], "--loss_weights", 1.0, s["sweet_nll_weight"],
          steps=s["sweet_first_steps"])
    # third SWEET attempt: first-turn pairs alone taught "always ask" (both weights repeated their
    # question at all 3 turns). Add pairs for the turn after the question from the policy's own
    # candidates (answers; question candidates only at the first turn, as above: offered a question
    # there too, the critic chose asking again in 24 of 28 pairs) and train with NLL weight 1, so the
    # chosen answers teach answering once the person replied. Same settings, one turn further.
    second = run / "step_pairs_second.jsonl"
    part = second.with_name(second.name + ".tmp")
    n = s["first_turns"]
    stages["step-pairs-second"] = Stage("step-pairs-second", second, ("train-critic",), _sa(
        "train-actor", "--config", "cpu", "--only_pairs", "--data", data, "--critic", models / "critic",
        "--pairs_out", part, "--output_dir", run / "models" / "sweet-two.pairs-scratch",
        "--num_candidates", s["num_candidates"], "--skip_turns", n, "--first_turns", n + 1, "--turn_fraction", 1.0,
        "--max_new_tokens", s["candidate_tokens"], "--seed", s["seed"] + 1,
        "--explore_candidates", s["explore_candidates"], "--explore_turns", s["explore_turns"]), tmp=part, priority=41)
    train("train-sweet-two", "train-actor", models / "sweet-two", ("step-pairs-first", "step-pairs-second"), 40,
          "--pairs_in", f"{first},{second}", "--learning_rate", s["sweet_hi_lr"],
          "--loss_weights", 1.0, s["sweet_nll_weight"])
    # at 5x it asked at every turn: the same pairs at half that rate
    train("train-sweet-two-mid", "train-actor", models / "sweet-two-mid", ("step-pairs-first", "step-pairs-second"),
          38, "--pairs_in", f"{first},{second}", "--learning_rate", s["sweet_hi_lr"] / 2,
          "--loss_weights", 1.0, s["sweet_nll_weight"])
    train("train-critic-noref", "train-critic", models / "critic-noref", ("collect",), 20, "--data", data,
          "--pair_rule", "reward", "--learning_rate", s["critic_lr"], "--no_use_privileged_info",
          steps=s["critic_steps"])
    prio = {"zero-shot": 90, "rft": 75, "sweet": 63, "mtdpo": 55, "rft-hi": 49, "sweet-hi": 47, "sweet-nll": 43, "mtdpo-hi": 29,
            "sweet-two": 39, "sweet-two-mid": 37,
            "sweet-first": 42}
    deps = {"zero-shot": (), "rft": ("train-rft",), "mtdpo": ("train-mtdpo",), "mtdpo-hi": ("train-mtdpo-hi",), "sweet": ("train-sweet",),
            "rft-hi": ("train-rft-hi",), "sweet-hi": ("train-sweet-hi",), "sweet-first": ("train-sweet-first",),
            "sweet-nll": ("train-sweet-nll",), "sweet-two": ("train-sweet-two",),
            "sweet-two-mid": ("train-sweet-two-mid",)}
    for m, pol in policies.items():
        rollout(f"eval-{m}", ev / f"{m}.jsonl", s["eval_tasks"], s["eval_episodes"], 1, pol, s["eval_temperature"],
                eval_seed, deps[m], prio[m])
    rollout("eval-best-of-n", ev / "best-of-n.jsonl", s["eval_tasks"], s["eval_episodes"], 1, s["model"],
            max(s["eval_temperature"], 0.7), eval_seed, ("train-critic-noref",), 15,
            ["--best-of", s["best_of"], "--critic", models / "critic-noref"])
    for m, pol in policies.items():
        rollout(f"embedded-{m}", ev / f"embedded-{m}.jsonl", s["embedded_tasks"], s["embedded_episodes"], 1, pol,
                s["eval_temperature"], eval_seed, deps[m], prio[m] - 50)
    return stages


# ------------------------------------------------------------------------------ running
def _lock(run: Path, name: str) -> Path | None:
    """A per-stage lock (pid inside); None when a live process holds it."""
    lock = run / "locks" / f"{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            return lock
        except FileExistsError:
            try:
                pid = int(lock.read_text() or "0")
                os.kill(pid, 0)
                return None  # held by a live process
            except (ValueError, ProcessLookupError, PermissionError):
                lock.unlink(missing_ok=True)  # stale
    return None


_JOBS = 1


def _threads_per_stage() -> int:
    return max(1, (os.cpu_count() or 1) // _JOBS)


def run_stage(st: Stage, run: Path) -> bool:
    lock = _lock(run, st.name)
    if lock is None:
        say(f"~ {st.name}: another invocation runs it")
        return False
    try:
        if st.done():
            return True
        if st.tmp is not None and not st.resumable and st.tmp.exists():
            shutil.rmtree(st.tmp) if st.tmp.is_dir() else st.tmp.unlink()
        log = run / "logs" / f"{st.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        st.output.parent.mkdir(parents=True, exist_ok=True)
        say(f"> {st.name} (log: {log})")
        t0 = time.time()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        # stages run side by side on a small machine: one intra-op thread each (two torch threads
        # per process on an oversubscribed CPU mostly wait for each other)
        env.setdefault("OMP_NUM_THREADS", str(_threads_per_stage()))
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(shlex.quote(c) for c in st.cmd or []) + "\n")
            fh.flush()
            proc = subprocess.run(st.cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env, check=False)
        if proc.returncode != 0:
            say(f"! {st.name} failed (exit {proc.returncode}) after {time.time() - t0:.0f} s; see {log}")
            return False
        if st.tmp is not None:
            os.replace(st.tmp, st.output)
        (run / "timings.jsonl").open("a").write(json.dumps({"stage": st.name, "seconds": round(time.time() - t0, 1),
                                                             "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
        say(f"= {st.name} done in {time.time() - t0:.0f} s")
        return True
    finally:
        lock.unlink(missing_ok=True)


def run_all(stages: dict[str, Stage], run: Path, jobs: int, only: set[str] | None, settings: dict) -> None:
    want = {n for n in stages if only is None or n in only}
    failed: set[str] = set()
    running: dict[Future, str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while True:
            busy = set(running.values())
            ready = sorted((stages[n] for n in want if n not in busy and n not in failed and not stages[n].done()
                            and all(stages[d].done() for d in stages[n].deps)), key=lambda st: -st.priority)
            while ready and len(running) < jobs:
                st = ready.pop(0)
                running[pool.submit(run_stage, st, run)] = st.name
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                name = running.pop(fut)
                if not fut.result():
                    failed.add(name)
                write_report(run, settings)
    blocked = sorted(n for n in want if not stages[n].done())
    say("all stages done" if not blocked else f"not done: {', '.join(blocked)}")


# ------------------------------------------------------------------------------ report
#: The report's columns (the keys of results.json) -> the field of
#: :class:`sweet_agent.metrics.EpisodeMetrics` each one averages.
COLUMNS = {"success": "success", "tests": "tests_passed", "turns": "turns", "questions": "questions"}


def _load(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                if rec.get("error"):
                    continue
                out[rec["meta"]["episode_id"]] = rec
    return out


def _measure(recs: dict[str, dict[str, Any]]) -> dict[str, EpisodeMetrics]:
    return {eid: episode_metrics(rec) for eid, rec in recs.items()}


def method_table(run: Path, prefix: str = "") -> list[dict[str, Any]]:
    rows = []
    base = _measure(_load(run / "eval" / f"{prefix}zero-shot.jsonl"))
    for m in METHODS:
        stats = _measure(_load(run / "eval" / f"{prefix}{m}.jsonl"))
        if not stats:
            continue
        row: dict[str, Any] = {"method": m, "label": LABELS[m], "episodes": len(stats)}
        for key, metric in COLUMNS.items():
            est = bootstrap_ci(metric_values(stats.values(), metric))
            row[key] = {"mean": est.mean, "ci95": [est.low, est.high]}
            if m != "zero-shot" and base:
                d = paired_difference(base, stats, metric, seed=1)
                row[key]["paired_diff_vs_zero_shot"] = {"mean": d.mean, "ci95": [d.low, d.high], "episodes": d.n}
        row["asked_rate"] = sum(st.questions > 0 for st in stats.values()) / len(stats)
        rows.append(row)
    return rows


def offline_summary(run: Path) -> dict[str, Any] | None:
    """What the behaviour policy collected: episodes with a prefilled question vs without."""
    recs = list(_load(run / "offline.jsonl").values())
    if not recs:
        return None
    out: dict[str, Any] = {"episodes": len(recs)}
    for name, group in (("explored", [r for r in recs if r["meta"].get("exploration")]),
                        ("own", [r for r in recs if not r["meta"].get("exploration")])):
        stats = [episode_metrics(r) for r in group]
        out[name] = {"episodes": len(group)} | ({
            key: mean(metric_values(stats, metric)) for key, metric in COLUMNS.items()} if group else {})
    return out


def _fmt(cell: dict[str, Any], pct: bool) -> str:
    if cell["mean"] is None:  # no episode has this metric (e.g. ungraded)
        return "n/a"
    k = 100 if pct else 1
    f = "{:.1f}" if pct else "{:.2f}"
    text = f"{f.format(k * cell['mean'])} [{f.format(k * cell['ci95'][0])}, {f.format(k * cell['ci95'][1])}]"
    d = cell.get("paired_diff_vs_zero_shot")
    if d and d["mean"] is not None:
        sig = "*" if d["ci95"][0] > 0 or d["ci95"][1] < 0 else ""
        text += f" (Δ {'+' if d['mean'] >= 0 else ''}{f.format(k * d['mean'])}{sig})"
    return text


def markdown(rows: list[dict[str, Any]], title: str) -> str:
    lines = [f"### {title}", "",
             "| method | episodes | success % | tests passed % | turns | questions / episode |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['episodes']} | {_fmt(r['success'], True)} | {_fmt(r['tests'], True)} | "
                     f"{_fmt(r['turns'], False)} | {_fmt(r['questions'], False)} |")
    lines += ["", "Mean [95 % bootstrap CI]; (Δ paired difference to zero-shot on the same tasks and seeds, "
              "* = its 95 % CI excludes 0)."]
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    names = [r["label"] for r in rows]
    for ax, (key, lab, k) in zip(axes, [("tests", "tests passed %", 100), ("success", "success %", 100),
                                         ("questions", "questions / episode", 1)]):
        means = [k * r[key]["mean"] for r in rows]
        err = [[k * (r[key]["mean"] - r[key]["ci95"][0]) for r in rows], [k * (r[key]["ci95"][1] - r[key]["mean"]) for r in rows]]
        ax.bar(range(len(rows)), means, yerr=err, capsize=4, color="#4c72b0")
        ax.set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=8)
        ax.set_title(lab)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_report(run: Path, settings: dict) -> dict[str, Any]:
    held = method_table(run)
    emb = method_table(run, "embedded-")
    timings = [json.loads(x) for x in (run / "timings.jsonl").read_text().splitlines()] if (run / "timings.jsonl").exists() else []
    load = os.getloadavg()
    offline = offline_summary(run)
    report = {"settings": settings, "offline_data": offline, "held_out": held, "embedded": emb, "timings": timings,
              "loadavg_at_report": [round(x, 2) for x in load], "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _write_atomic(run / "results.json", json.dumps(report, indent=2, default=str))
    md = [markdown(held, f"Held-out {settings['eval_tasks']} ({settings['eval_episodes']} tasks x 1, seed "
                         f"{settings['seed'] + 1000})")]
    if emb:
        md.append(markdown(emb, f"Embedded ColBench {settings['embedded_tasks']} ({settings['embedded_episodes']} tasks)"))
    if offline:
        md.append("Offline data (behaviour policy, " + f"{offline['episodes']} episodes): " + "; ".join(
            f"{name} turns ({offline[name]['episodes']} episodes): tests passed {100 * offline[name]['tests']:.1f} %, "
            f"success {100 * offline[name]['success']:.1f} %" for name in ("explored", "own")
            if offline[name]["episodes"]) + " (explored = first turn prefilled with a question opener).")
    md.append("Stage times (s): " + ", ".join(f"{t['stage']} {t['seconds']:.0f}" for t in timings))
    md.append(f"Load average when written: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (2 cores).")
    _write_atomic(run / "results.md", "\n\n".join(md) + "\n")
    if held:
        try:
            plot(held, run / "results.png", f"held-out {settings['eval_tasks']}: mean and 95 % bootstrap CI")
        except Exception as exc:  # noqa: BLE001 - a plot must not stop the benchmark
            say(f"! plot failed: {exc}")
    return report


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-dir", default=None,
                    help="where every stage writes (default: runs/learning, runs/learning-<profile> for other profiles)")
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES))
    ap.add_argument("--jobs", type=int, default=2, help="stages run at once (default: %(default)s)")
    ap.add_argument("--only", default=None, help="comma-separated stage names (their missing deps are not run)")
    ap.add_argument("--report-only", action="store_true", help="just rewrite the report from what exists")
    ap.add_argument("--list", action="store_true", help="list stages and whether they are done")
    for key, val in PROFILES["full"].items():
        ap.add_argument("--" + key.replace("_", "-"), type=type(val), default=None, help=f"(full: {val!r})")
    args = ap.parse_args(argv)
    s = dict(PROFILES[args.profile])
    s.update({k: getattr(args, k) for k in s if getattr(args, k, None) is not None})
    run = Path(args.run_dir or ("runs/learning" if args.profile == "full" else f"runs/learning-{args.profile}"))
    run.mkdir(parents=True, exist_ok=True)
    settings_file = run / "settings.json"
    if settings_file.exists():
        old = json.loads(settings_file.read_text())
        if old != s:
            diff = {k: (old.get(k), s.get(k)) for k in set(old) | set(s) if old.get(k) != s.get(k)}
            print(f"error: {run} was made with other settings {diff}; use another --run-dir", file=sys.stderr)
            return 2
    else:
        _write_atomic(settings_file, json.dumps(s, indent=2))
    stages = build_stages(s, run)
    if args.list:
        for st in sorted(stages.values(), key=lambda x: -x.priority):
            print(f"{'done' if st.done() else '    '}  {st.name:<22} <- {', '.join(st.deps) or '-'}")
        return 0
    if not args.report_only:
        only = set(args.only.split(",")) if args.only else None
        if only and (unknown := only - set(stages)):
            print(f"error: unknown stages {sorted(unknown)}; see --list", file=sys.stderr)
            return 2
        global _JOBS
        _JOBS = max(1, args.jobs)
        run_all(stages, run, _JOBS, only, s)
    report = write_report(run, s)
    print((run / "results.md").read_text())
    return 0 if report["held_out"] else 1


if __name__ == "__main__":
    sys.exit(main())
