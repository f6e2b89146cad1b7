"""Learning benchmark, the pre-registered protocol: does step-level credit (SWEET-RL) beat zero-shot,
rejection fine-tuning, multi-turn DPO and critic-guided best-of-N, with selection on a validation
split, three training seeds per method and intervals that include the seeds' variance?

    make bench-learning                                  # = python benchmarks/bench_learning.py
    python benchmarks/bench_learning.py --list           # stages, dependencies, which are done
    python benchmarks/bench_learning.py --only select-rft
    python benchmarks/bench_learning.py --report-only    # tables + plot from what exists
    make bench-learning ARGS="--profile quick"           # every stage at toy size, in minutes

The protocol (docs/training.md, "Learning benchmark protocol"; v2's changes and results in
docs/results/learning-v2.md) is this file; the variants tried while building it are the findings
log of docs/results/learning-v1.md, not code here.

- **Splits**: offline data from ``collab:train`` (one data-collection seed); every choice is made
  on ``collab:val`` (disjoint from train and test by structural key,
  :mod:`colbench_gym.tasks.collab_generator`); ``collab:test`` tasks 1000.. (never evaluated
  before this protocol) and ``embedded:test`` are played once per method and training seed, at
  the end. The frontend arm plays ``generated:train|test`` frontend tasks with the offline
  frontend simulator and the weight-free similarity score.
- **Grid** (:data:`GRID`): the same number of settings for every method; each setting is trained
  with training seed 0 and played on validation; :func:`select` picks one by the rule fixed
  here (highest mean fraction of tests passed; ties: higher success; then the earlier, more
  conservative setting) and reads validation files only (a record of any other split is an
  error). The chosen setting is trained again with the other seeds.
- **Statistics** (:mod:`sweet_agent.evaluation.metrics`, the one implementation): success, % tests, turns
  and questions per episode, the mean over training seeds with a hierarchical bootstrap interval
  (seeds, then tasks); paired differences of every method against zero-shot and of SWEET-RL
  against each baseline (:func:`sweet_agent.evaluation.metrics.hierarchical_difference`).
- **Stages** (a small DAG, ``--jobs`` at a time): each writes its output atomically (rollouts to a
  ``.partial`` file resumed on restart then renamed; trainers into ``<dir>.tmp`` renamed at the
  end; selections and reports through a temporary file) and is skipped when its output exists,
  so an interrupted run continues where it stopped; a lock per stage lets a second invocation
  (``--only``) run beside the first. Commands that depend on a selection are built when the
  stage starts. After every finished stage the report is rewritten from what exists.
- **SWEET-RL as the paper runs it** (:data:`PAPER_PAIRS`, :func:`departures`): every agent turn
  of the offline data paired, the base policy's own samples at temperature 1 with the rollouts'
  length (8 per turn on a CPU; the paper 16), sampled once and scored by every training seed's
  critic (``--candidates_file``), 4 top-half/bottom-half pairs per turn, actor DPO + NLL 0.01.
  A profile that departs is a named ablation (:data:`ABLATIONS`) and the report says so.
- **Budgets in epochs**: RFT, multi-turn DPO and SWEET-RL's actor each train ``train_epochs``
  over their own data at the same learning-rate grid; every model's ``training_budget.json``
  (samples seen, epochs, optimizer steps) is in the report.
- **Best-of-N** uses a critic trained *without* the privileged reference (at test time the
  agent has no reference; a critic reading it would be an oracle, not a decoder).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from colbench_gym.jsonl import write_bytes_atomic, write_text_atomic  # noqa: E402 - after the sys.path set-up above
from colbench_gym.tasks.loaders import parse_jsonl_lines  # noqa: E402
from sweet_agent.evaluation.metrics import (  # noqa: E402 - after the sys.path set-up above
    PAIR_TURN_KINDS,
    EpisodeMetrics,
    episode_metrics,
    hierarchical_bootstrap,
    hierarchical_difference,
    mean,
    metric_values,
    pair_turn_kind,
    paired_difference,
    seed_values,
)
from sweet_agent.forkserver import STATUS_UNKNOWN, ForkedCommand, can_fork, ensure_running  # noqa: E402
from sweet_agent.training.budget import TRAINING_LOG_FILE  # noqa: E402
from sweet_agent.training.command import NOTHING_TO_TRAIN  # noqa: E402
from sweet_agent.training.saving import last_checkpoint  # noqa: E402
from sweet_agent.trajectories import record_prefilled_turns  # noqa: E402

# ------------------------------------------------------------------------------ the protocol
#: Methods in table order. zero-shot has nothing to tune and no training seed.
METHODS = ("zero-shot", "rft", "mtdpo", "sweet", "oracle", "best-of-n")
LABELS = {"zero-shot": "zero-shot", "rft": "RFT", "mtdpo": "multi-turn DPO", "sweet": "SWEET-RL",
          "oracle": "oracle-credit actor (Monte-Carlo pairs)", "best-of-n": "best-of-N (critic w/o reference)"}
#: The LoRA adapter `make demo` plays (SWEET-RL of an earlier run, on the default model): validated
#: on each run's val tasks (stage ``val-shipped``), and replaced only by a SWEET-RL policy that
#: passes more of them (:func:`demo_adapter_verdict`).
SHIPPED_ADAPTER = ROOT / "examples" / "adapters" / "sweet-collab-qwen2.5-coder-0.5b"
#: The baselines SWEET-RL is compared with, pair by pair.
BASELINES = ("zero-shot", "rft", "mtdpo", "best-of-n")
#: The result splits a method is tested on (``Layout.result``), in report order.
RESULT_SPLITS = ("test", "collab", "embedded")
#: The frontend arm's methods (small scale: the settings chosen on the backend validation split).
FRONTEND_METHODS = ("zero-shot", "rft", "sweet")

#: Per tuned method: the setting each grid point changes, in order from the most conservative
#: (smaller learning rate, fewer candidates); a tie in :func:`select` goes to the earlier one.
#: Every method has the same number of points (checked), so no method gets more tuning.
GRID: dict[str, dict[str, str]] = {"rft": {"learning_rate": "grid_lr"}, "mtdpo": {"learning_rate": "grid_lr"},
                                   "sweet": {"learning_rate": "grid_lr"}, "best-of-n": {"best_of": "grid_best_of"}}

#: Settings of a run; ``--profile quick`` shrinks every per-run size for a smoke run (never the
#: shape: every method, the grid, the selection, every seed and split, and SWEET-RL's pair
#: construction). Every profile runs SWEET-RL as the paper and its release do wherever a CPU
#: allows (:data:`PAPER_PAIRS`, :func:`departures`); a profile that departs is named
#: ``ablation-...`` and declares what it changes (:data:`ABLATIONS`), and the report says it.
#: Every trained method (RFT, multi-turn DPO, SWEET-RL's actor) gets ``train_epochs`` over its
#: own data and the same learning-rate grid; the critics ``critic_epochs``.
PROFILES: dict[str, dict[str, Any]] = {
    "full": dict(  # noqa: C408 - a settings table
        profile="full",
        # protocol v2 (issue 38): collab-multi tasks (2-4 hidden details, some stated in the request, partial credit
        # per detail), six agent turns (colbench_gym.tasks.collab_multi.MAX_TURNS) for every task set
        model="default", max_turns=6, max_new_tokens=128, max_length=1536, concurrency=12,
        # offline data: one data-collection seed, 64 tasks x 3 samples = 192 episodes (4x v1's 48); the behaviour
        # policy prefills a question opener at each of agent turns 1-5 with its own probability, each drawn on its
        # own: episodes that answer at once, ask once, ask about every detail, and ask until the turn limit
        train_tasks="collab-multi:train", train_episodes=64, k=3, explore_rates="0.5,0.4,0.3,0.2,0.1",
        train_temperature=0.8, data_seed=0,
        # validation (all selection); test: collab-multi:test tasks 1000-1099 and collab:test tasks 1100-1199 (both
        # never evaluated before), once per method and seed; the 30 embedded ColBench tasks
        val_tasks="collab-multi:val", val_episodes=40, test_tasks="collab-multi:test", test_start=1000,
        test_episodes=100, collab_test_tasks="collab:test", collab_test_start=1100, collab_test_episodes=100,
        embedded_tasks="embedded:test", embedded_episodes=30, eval_temperature=0.0, eval_seed=1000,
        train_seeds="0,1,2",
        # the grid: two points per method (GRID); the same learning rates for every trained method
        grid_lr="2.5e-4,5e-4", grid_best_of="2,4",
        # budgets in epochs, the same for every trained method over its own data: one (the paper's actor budget;
        # two did not fit the 10 h of 2 cores), critics one
        train_epochs=1.0, critic_epochs=1.0, critic_lr=2e-4,
        # every training stage (critics, actors, baselines) in bf16 mixed precision, as the paper's GPUs train: on
        # these CPUs (avx512_bf16) a 768-token forward and backward of the 0.5B model with LoRA took 19.5-21.4 s
        # against 39-48 s in fp32 (one thread). The LoRA weights and the optimizer stay fp32; scoring and decoding
        # run in the model's fp32
        train_precision="bf16",
        # SWEET-RL's step pairs as the paper's release builds them: every agent turn of a share of the trajectories
        # (the release: 10 %), the policy's own samples at temperature 1 with the rollouts' length, 4
        # top-half/bottom-half pairs per turn, actor DPO + NLL 0.01. 8 candidates instead of the paper's 16 (a
        # CPU). Question openers join a quarter of the candidates at every agent turn (not in the paper: the 0.5B
        # policy rarely asks on its own). Sampled once (candidate seed = data_seed), scored by every seed's critic.
        num_candidates=8, pairs_per_turn=4, candidate_tokens=128, candidate_temperature=1.0, pair_turns=0,
        pair_trajectories=0.1, explore_candidates=0.25, sweet_nll_weight=0.01,
        # the critic's step-level accuracy (sweet-agent mc-values + critic-report): behaviour-policy episodes on
        # collab-multi:train tasks no critic trains on (500-515), each turn's candidates valued by k completions
        # (k = 1: an answer candidate is graded exactly, a question by one completion; at k = 2 one agent turn took
        # ~5 min on the loaded 2 cores, ~6 h for the 115 turns of both Monte-Carlo stages);
        # the oracle-credit actor trains on the paired trajectories' turns labelled by their own Monte-Carlo values
        heldout_start=500, heldout_episodes=16, mc_rollouts=1,
        # how noisy those one-completion labels are: label_check more completions of every held-out candidate that
        # goes on (mc-values --extend: the same candidates, new draws), and the critic report again on the pooled
        # values, with the agreement of two independent labels and each critic's noise-corrected agreement
        label_check=1,
        # who samples step-pair candidates: "auto" = on a machine without a GPU, with the default
        # model and llama-cpp-python installed, a llama.cpp server this benchmark starts on the
        # model's GGUF (scripts/llama_server.py: a turn's candidates in one batch); "llama" = that,
        # or an error; "none" = the policy in process. candidates_from "openai:MODEL" with
        # candidates_base_url uses a server you run (train-actor --candidates_from).
        candidate_server="auto", candidates_from="", candidates_base_url="",
        # that server batches concurrent requests and keeps finished dialogues' prompts (--batch-requests), and
        # mc-values keeps 8 completions in flight instead of 2: 1.81x the completions per second of one request at
        # a time (benchmarks/bench_llama_server.py, idle 2 cores). Sampling as before, but a batched row rounds
        # differently, so the samples are not reproducible from the seed (a Monte-Carlo estimate either way)
        server_batching=True,
        # critic-guided best-of-N: an optional arm in v2 (v1: 0 % at N = 2 and 4, 40 % of v1's sampling time)
        best_of_n=False, best_of_policy="", best_of_base_url="",
        # the frontend arm: left out of v2 (its per-run sizes do not fit beside the backend's in 10 h of 2 cores;
        # docs/results/learning-v2.md); frontend_arm=True runs it with v1's shape
        frontend_arm=False,
        frontend_train_tasks="generated:train", frontend_train_episodes=8, frontend_k=2,
        frontend_test_tasks="generated:test", frontend_test_episodes=20, frontend_max_turns=2,
        frontend_max_new_tokens=384, frontend_max_length=1536,
        # the frontend step pairs' candidate length: a page needs the rollouts' length (the
        # protocol's first run used the backend's 96, which cut every page off inside its <head>)
        frontend_candidate_tokens=384,
    ),
    "quick": dict(  # noqa: C408
        profile="quick",
        model="default", max_turns=3, max_new_tokens=48, max_length=1024, concurrency=4,
        train_tasks="collab-multi:train", train_episodes=4, k=2, explore_rates="0.5,0.5", train_temperature=0.8,
        data_seed=0,
        val_tasks="collab-multi:val", val_episodes=2, test_tasks="collab-multi:test", test_start=1000, test_episodes=2,
        collab_test_tasks="collab:test", collab_test_start=1100, collab_test_episodes=1,
        embedded_tasks="embedded:test", embedded_episodes=1, eval_temperature=0.0, eval_seed=1000,
        train_seeds="0,1,2",
        grid_lr="5e-5,1e-4", grid_best_of="2,3",
        train_epochs=1.0, critic_epochs=1.0, critic_lr=1e-4, train_precision="bf16",
        num_candidates=8, pairs_per_turn=4, candidate_tokens=48, candidate_temperature=1.0, pair_turns=0,
        pair_trajectories=0.5, explore_candidates=0.25, sweet_nll_weight=0.01,
        heldout_start=500, heldout_episodes=2, mc_rollouts=1, label_check=1,
        candidate_server="auto", candidates_from="", candidates_base_url="", server_batching=True,
        best_of_n=False, best_of_policy="", best_of_base_url="", frontend_arm=False,
        frontend_train_tasks="generated:train", frontend_train_episodes=1, frontend_k=2,
        frontend_test_tasks="generated:test", frontend_test_episodes=1, frontend_max_turns=1,
        frontend_max_new_tokens=48, frontend_max_length=1536, frontend_candidate_tokens=48,
    ),
}
#: Named ablations: a profile of its own, the full one with the settings it departs in (its name
#: says so; :func:`check_profiles` refuses a profile whose departures it does not declare).
ABLATIONS: dict[str, dict[str, Any]] = {
    # the actor loss of the protocol's first run: mostly supervised training on the critic's choice
    "ablation-nll1": {"sweet_nll_weight": 1.0},
}
PROFILES.update({name: {**PROFILES["full"], **changes, "profile": name} for name, changes in ABLATIONS.items()})

#: SWEET-RL's pair construction and actor loss as the paper and its release run them (the
#: settings :func:`departures` checks; docs/sweet-rl.md, "paper / release -> flag").
PAPER_PAIRS = {"pairs_per_turn": 4, "candidate_temperature": 1.0, "sweet_nll_weight": 0.01, "pair_turns": 0}
#: The release pairs every agent turn of this share of the offline trajectories (the paper's text:
#: every turn); ``pair_trajectories`` below it departs.
RELEASE_PAIRED_TRAJECTORIES = 0.1
#: Candidates per agent turn: the paper samples 16; a CPU profile at least this many.
MIN_CANDIDATES = 8


def methods_of(s: Mapping[str, Any]) -> tuple[str, ...]:
    """The methods a run plays: best-of-N only with ``best_of_n`` (an optional arm since v2)."""
    return tuple(m for m in METHODS if m != "best-of-n" or s.get("best_of_n", True))


def grid_methods(s: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(m for m in GRID if m in methods_of(s))


def departures(s: Mapping[str, Any]) -> dict[str, str]:
    """``{setting: what it departs in}`` for every setting of ``s`` in which SWEET-RL's step pairs
    or actor loss depart from the paper and its release (beyond the 8 candidates of a CPU
    profile and the question openers every profile adds, which docs/sweet-rl.md lists)."""
    out = {}
    if s["num_candidates"] < MIN_CANDIDATES:
        out["num_candidates"] = f"{s['num_candidates']} candidates per agent turn (the paper 16, a CPU profile >= 8)"
    if s["pairs_per_turn"] != PAPER_PAIRS["pairs_per_turn"]:
        out["pairs_per_turn"] = f"{s['pairs_per_turn']} pairs per turn (the release's 4)"
    if s["candidate_temperature"] != PAPER_PAIRS["candidate_temperature"]:
        out["candidate_temperature"] = f"candidates at temperature {s['candidate_temperature']:g} (the paper's 1)"
    if s["sweet_nll_weight"] != PAPER_PAIRS["sweet_nll_weight"]:
        out["sweet_nll_weight"] = f"actor NLL weight {s['sweet_nll_weight']:g} (the paper's 0.01)"
    if s["pair_turns"]:
        out["pair_turns"] = f"only agent turns 1-{s['pair_turns']} paired (the paper: every agent turn)"
    if s.get("pair_trajectories", 1.0) < RELEASE_PAIRED_TRAJECTORIES:
        out["pair_trajectories"] = (f"every turn of {100 * s['pair_trajectories']:g} % of the trajectories paired "
                                    f"(the release: {100 * RELEASE_PAIRED_TRAJECTORIES:g} %)")
    for key, length, arm in (("candidate_tokens", "max_new_tokens", "backend"),
                             ("frontend_candidate_tokens", "frontend_max_new_tokens", "frontend")):
        if s[key] < s[length]:
            out[key] = f"{arm} candidates cut at {s[key]} tokens (the rollouts' {s[length]})"
    return out


def check_profiles() -> None:
    """Every shipped profile pairs as the paper does, or is a named ablation that declares each
    of its departures (and nothing else)."""
    for name, prof in PROFILES.items():
        declared = set(ABLATIONS.get(name, {}))
        found = set(departures(prof))
        if found != declared or (declared and not name.startswith("ablation-")):
            raise SystemExit(f"error: profile {name!r} departs from the paper in {sorted(found)} but declares "
                             f"{sorted(declared)} (ABLATIONS; a departing profile is named ablation-...)")


#: What a run directory written before a setting existed ran with, given its other settings: it
#: resumes and reports with that value (not the profile's new default), so the settings check
#: does not refuse it.
LEGACY_SETTINGS: dict[str, Callable[[dict], Any]] = {
    "candidate_server": lambda old: "none",  # sampled in process
    "frontend_candidate_tokens": lambda old: old.get("candidate_tokens"),  # the backend's length
    "server_batching": lambda old: False,  # one request at a time
    "train_precision": lambda old: "auto",  # the trainers' own choice: bf16 on a bf16 GPU, fp32 elsewhere
    # the label-noise check was added while protocol v2 ran: it measures (two stages of its own after the critic
    # report) and changes no other stage, so a run that began without it runs it too
    "label_check": lambda old: 1,
}
#: Settings of the protocol's first run (step budgets, a window of paired turns) that no longer
#: exist: a run directory holding them is reported by the commit it ran from.
RETIRED_SETTINGS = ("rft_steps", "mtdpo_steps", "critic_steps", "sweet_steps", "explore_rate", "explore_turns")

_print_lock = threading.RLock()  # say() is also called from the signal handler


def say(msg: str) -> None:
    with _print_lock:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _flag_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _floats(text: str) -> list[float]:
    return [float(x) for x in str(text).split(",") if x.strip()]


def seeds_of(s: Mapping[str, Any]) -> list[int]:
    return [int(x) for x in str(s["train_seeds"]).split(",") if x.strip()]


def grid_points(s: Mapping[str, Any], method: str) -> list[dict[str, float]]:
    """The settings of ``method``'s grid, in order (see :data:`GRID`)."""
    (name, key), = GRID[method].items()
    return [{name: v} for v in _floats(s[key])]


#: ``train_precision``: what every training stage computes in (``--bf16``; weights stay fp32 either way);
#: ``auto``: the trainers' own choice (bf16 on a bf16 GPU, fp32 elsewhere), what a run made before the setting did.
PRECISIONS = ("bf16", "fp32", "auto")


def _cpu_autocast(s: Mapping[str, Any]) -> list[str]:
    """``--use_cpu true`` where bf16 is asked for on a machine without an accelerator: transformers
    refuses bf16 there unless told the run is on the CPU (then it trains under CPU autocast). The
    trainers keep refusing an unmarked bf16 on a CPU, which catches a GPU preset run by mistake."""
    from sweet_agent.devices import resolve_device

    return ["--use_cpu", "true"] if s["train_precision"] == "bf16" and resolve_device() == "cpu" else []


def check_grid(s: Mapping[str, Any]) -> None:
    sizes = {m: len(grid_points(s, m)) for m in GRID}
    if len(set(sizes.values())) != 1 or min(sizes.values()) < 1:
        raise SystemExit(f"error: every method needs the same number of grid points, got {sizes}")


# ------------------------------------------------------------------------------ selection
class SelectionError(ValueError):
    """Selection was given something other than validation results."""


def record_splits(rec: Mapping[str, Any]) -> set[str]:
    """The splits a trajectory record says it was played on: its task's ``source``
    (``collab:val``) and its rollout's ``meta.tasks`` (``collab:val``, ``embedded:test``)."""
    out = set()
    for spec in ((rec.get("task") or {}).get("source"), (rec.get("meta") or {}).get("tasks")):
        if isinstance(spec, str) and ":" in spec and not spec.endswith(".jsonl"):
            out.add(spec.rpartition(":")[2])
    return out


def read_validation(path: Path) -> list[dict[str, Any]]:
    """The records of a validation result file; :class:`SelectionError` (one line) when any record
    is from another split or says none (selection never reads test results)."""
    recs = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        rec = json.loads(line)
        splits = record_splits(rec)
        if splits != {"val"}:
            raise SelectionError(f"{path}: record {i} is from split {'/'.join(sorted(splits)) or 'unknown'}, not val; "
                                 "selection reads validation results only")
        recs.append(rec)
    return recs


def select(val_files: Sequence[Path]) -> dict[str, Any]:
    """The rule fixed in advance: the grid point whose validation episodes pass the highest mean
    fraction of tests; ties -> higher success; then the earlier (more conservative) point.

    Takes only validation result files, one per grid point in grid order; refuses any record that
    is not from a validation split (:func:`read_validation`).
    """
    scores = []
    for i, path in enumerate(val_files):
        eps = [episode_metrics(r, j) for j, r in enumerate(read_validation(path))]
        tests, success = mean(metric_values(eps, "tests_passed")), mean(metric_values(eps, "success"))
        scores.append({"point": i, "file": str(path), "episodes": len(eps),
                       "tests_passed": tests, "success": success})
    if not scores:
        raise SelectionError("no validation result files given")
    best = max(scores, key=lambda r: (r["tests_passed"] if r["tests_passed"] is not None else -1.0,
                                      r["success"] if r["success"] is not None else -1.0, -r["point"]))
    return {"chosen": best["point"], "rule": "max val tests passed; ties: success, then earlier grid point",
            "val": scores}


# ------------------------------------------------------------------------------ stages
@dataclass
class Stage:
    name: str
    output: Path
    deps: tuple[str, ...]
    cmd: list[str] | Callable[[], list[str]] | None = None  # a command (built now or when the stage starts)
    fn: Callable[[], None] | None = None  # or a python step that writes ``output`` atomically itself
    tmp: Path | None = None  # where the command writes; renamed to ``output`` on success
    resumable: bool = False  # a rollout: keep the partial file across restarts
    priority: int = 0
    finish: Callable[[], None] | None = None  # instead of renaming ``tmp``: checks and moves the output itself
    extra: dict[str, Any] = field(default_factory=dict)

    def done(self) -> bool:
        return self.output.exists()

    def command(self) -> list[str] | None:
        return self.cmd() if callable(self.cmd) else self.cmd


def _sa(*args: Any) -> list[str]:
    return [sys.executable, "-m", "sweet_agent.cli", *map(str, args)]


class Layout:
    """Where every stage writes in a run directory."""

    def __init__(self, run: Path):
        self.run = run
        self.data = run / "offline.jsonl"
        self.paired = run / "offline-paired.jsonl"  # the trajectories whose every agent turn is paired
        self.heldout = run / "heldout.jsonl"  # behaviour episodes on tasks no critic trains on
        self.frontend_data = run / "offline-frontend.jsonl"
        self.models = run / "models"
        self.mc = run / "mc"
        self.critic_report = run / "reports" / "critic-report.json"
        self.critic_report_labels = run / "reports" / "critic-report-labels.json"  # label_check's report

    def val(self, m: str, point: int | None = None) -> Path:
        return self.run / "val" / (f"{m}.jsonl" if point is None else f"{m}-g{point}.jsonl")

    def selection(self, m: str) -> Path:
        return self.run / "selection" / f"{m}.json"

    def result(self, split: str, m: str, seed: int | None) -> Path:
        """``split``: test, collab, embedded or frontend."""
        return self.run / split / (f"{m}.jsonl" if seed is None else f"{m}-s{seed}.jsonl")

    def chosen(self, m: str) -> int:
        return int(json.loads(self.selection(m).read_text())["chosen"])

    def chosen_model(self, m: str, seed: int, first_seed: int) -> Path:
        """Method ``m``'s model for a training seed once validation has chosen: the chosen grid
        point's own for the first seed (the grid trains on it), else that seed's run of the setting."""
        return self.models / m / (f"g{self.chosen(m)}-s{seed}" if seed == first_seed else f"s{seed}")


def build_stages(s: dict[str, Any], run: Path) -> dict[str, Stage]:
    L = Layout(run)
    seeds = seeds_of(s)
    first_seed = seeds[0]
    stages: dict[str, Stage] = {}
    methods = methods_of(s)

    def indices(start: int, n: int) -> str:
        return ",".join(str(i) for i in range(start, start + n))

    test_indices = indices(s["test_start"], s["test_episodes"])

    def rollout(name: str, out: Path, deps: tuple[str, ...], priority: int, *, tasks: str, policy: Any,
                episodes: int | None = None, indices: str | None = None, k: int = 1, temperature: float | None = None,
                seed: int | None = None, env: str = "ColBench-Backend-v0", frontend: bool = False,
                extra: Callable[[], list[Any]] | list[Any] = ()) -> None:
        part = out.with_name(out.name + ".partial")

        def cmd() -> list[str]:
            pol = policy() if callable(policy) else policy
            where = ["--task-indices", indices] if indices else ["--episodes", episodes]
            turns = s["frontend_max_turns"] if frontend else s["max_turns"]
            tokens = s["frontend_max_new_tokens"] if frontend else s["max_new_tokens"]
            return _sa("rollout", "--env", env, "--tasks", tasks, *where, "--k", k, "--policy", pol,
                       "--simulator", "offline", "--max-turns", turns, "--max-new-tokens", tokens,
                       "--temperature", s["eval_temperature"] if temperature is None else temperature,
                       "--seed", s["eval_seed"] if seed is None else seed, "--concurrency", s["concurrency"],
                       "--output", part, "--resume", "--no-progress", *(extra() if callable(extra) else extra))
        stages[name] = Stage(name, out, deps, cmd, tmp=part, resumable=True, priority=priority,
                             finish=lambda: finish_rollout(part, out))

    def train(name: str, command: str, out: Path, deps: tuple[str, ...], priority: int, seed: int,
              args: Callable[[], list[Any]] | list[Any], *, epochs: float, frontend: bool = False) -> None:
        tmp = out.with_name(out.name + ".tmp")
        # Rows over 1,024 tokens train with activation checkpointing, and their critic / actor stages
        # one at a time: protocol v2's backend critic (1,536 tokens, 6-turn dialogues) held 16 GB a
        # step without it and was OOM-killed beside other stages on this 23 GB machine (a memory
        # setting: the same gradients, more compute; with it the critic held ~4 GB).
        long_rows = frontend or s["max_length"] > 1024

        def cmd() -> list[str]:
            # the LoRA adapter alone (~17 MB): ~27 merged 0.5B copies would take ~60 GB of disk.
            # Frontend rows are long HTML (1,536 tokens): without activation checkpointing the
            # critic's step took 24 GB and was killed on a 23 GB machine (docs/training.md).
            # The budget is epochs over the stage's own data (training_budget.json records what it saw).
            # the preset names the default model: --model_name_or_path makes --model the base of every trainer
            # (a critic's reference model and the step-pair stage's sampling policy are that base too)
            return _sa(command, "--config", "cpu", "--model_name_or_path", s["model"], "--output_dir", tmp,
                       "--num_train_epochs", epochs, "--max_steps", -1,
                       "--max_length", s["frontend_max_length"] if frontend else s["max_length"],
                       *(["--gradient_checkpointing", "true"] if long_rows else []),
                       # long rows: a checkpoint every step (the LoRA adapter and its optimizer state, ~62 MB, a
                       # second to write against 190-520 s a step), and a restart (a sitting's end) resumes from
                       # the newest complete one instead of starting a 2-hour stage over
                       *(["--save_strategy", "steps", "--save_steps", 1, "--save_total_limit", 1,
                          "--resume_from_checkpoint", "last"] if long_rows else ["--save_strategy", "no"]),
                       # the critic's held-out evaluation follows its save strategy unless named: once, at the end
                       # (every step it would cost more than the training itself)
                       *(["--eval_strategy", "epoch"] if long_rows and command == "train-critic" else []),
                       "--report_to", "none", "--seed", seed, "--merge_adapter", "false",
                       *([] if s["train_precision"] == "auto" else ["--bf16", str(s["train_precision"] == "bf16").lower()]),
                       *_cpu_autocast(s),
                       *(args() if callable(args) else args))
        # ~11 GB each even so: two at once took all 23 GB of this machine (ONE_AT_A_TIME)
        big = long_rows and command in ("train-critic", "train-actor")
        stages[name] = Stage(name, out, deps, cmd, tmp=tmp, priority=priority, resumable=long_rows,
                             extra={ONE_AT_A_TIME: "long-row-training"} if big else {})

    def pairs(name: str, out: Path, deps: tuple[str, ...], priority: int, seed: int, data: Path, critic: Path,
              extra: list[Any], *, tokens: int, candidates: Path) -> None:
        """SWEET-RL's step pairs of training seed ``seed``: every agent turn (or the first
        ``pair_turns``), ``num_candidates`` of the base policy's samples at ``candidate_temperature``
        (sampled once, with the data seed, into ``candidates``: the first seed's stage writes
        them and every other seed's critic scores the same ones), ``pairs_per_turn`` pairs."""
        tmp = out.with_name(out.name + ".tmp")

        def cmd() -> list[str]:  # built when the stage starts: the benchmark's own server has a port by then
            url = CANDIDATE_SERVER.base_url if CANDIDATE_SERVER is not None else s["candidates_base_url"]
            frm = ["--candidates_from", CANDIDATE_MODEL if CANDIDATE_SERVER is not None else s["candidates_from"]]
            frm = (frm if frm[1] else []) + (["--candidates_base_url", url] if url else [])
            # --resume: an interrupted stage (or one whose turns failed) samples only the turns its journal lacks
            return _sa("train-actor", "--config", "cpu", "--model_name_or_path", s["model"], "--only_pairs",
                       "--data", data, "--critic", critic,
                       "--pairs_out", tmp, "--output_dir", out.with_name(out.name + ".scratch"),
                       "--num_candidates", s["num_candidates"], "--pairs_per_turn", s["pairs_per_turn"],
                       "--temperature", s["candidate_temperature"], "--max_new_tokens", tokens,
                       "--turn_fraction", 1.0, "--first_turns", s["pair_turns"], "--skip_turns", 0,
                       "--seed", seed, "--candidate_seed", s["data_seed"], "--candidates_file", candidates,
                       "--resume", *extra, *frm)

        stages[name] = Stage(name, out, deps, cmd, tmp=tmp, resumable=True, priority=priority,
                             finish=lambda: finish_pairs(tmp, out), extra={"candidates": True})

    # -- offline data (one data-collection seed) and zero-shot
    rollout("collect", L.data, (), 100, tasks=s["train_tasks"], policy=s["model"], episodes=s["train_episodes"],
            k=s["k"], temperature=s["train_temperature"], seed=s["data_seed"],
            extra=["--explore-rates", s["explore_rates"]])
    rollout("val-zero-shot", L.val("zero-shot"), (), 95, tasks=s["val_tasks"], policy=s["model"],
            episodes=s["val_episodes"])
    if s["model"] == "default" and SHIPPED_ADAPTER.is_dir():
        # the demo's adapter on this protocol's validation tasks: what SWEET-RL's chosen point must beat to replace
        # it (demo_adapter_verdict); a validation rollout like the grid's, read by no selection
        rollout("val-shipped", L.val("shipped"), (), 10, tasks=s["val_tasks"], policy=SHIPPED_ADAPTER,
                episodes=s["val_episodes"])

    # -- the trajectories SWEET pairs (every agent turn of a seeded share of them, as the release) and the
    #    Monte-Carlo values the oracle-credit actor and the critic report read
    stages["paired-data"] = Stage("paired-data", L.paired, ("collect",), priority=99,
                                  fn=lambda: write_paired_subset(L.data, L.paired, s["pair_trajectories"], s["data_seed"]))
    rollout("collect-heldout", L.heldout, (), 90, tasks=s["train_tasks"],
            policy=s["model"], indices=indices(s["heldout_start"], s["heldout_episodes"]),
            temperature=s["train_temperature"], seed=s["data_seed"], extra=["--explore-rates", s["explore_rates"]])

    def mc_values(name: str, out: Path, data: Path, deps: tuple[str, ...], priority: int,
                  extend: Path | None = None) -> None:
        """``sweet-agent mc-values``: each agent turn's candidates (sampled like the step pairs') valued by
        ``mc_rollouts`` completions of the behaviour policy against the same simulator (answers graded once)."""
        tmp = out.with_name(out.name + ".tmp")

        def cmd() -> list[str]:  # built when the stage starts: the benchmark's candidate server has a port by then
            # the candidates and completions from the step pairs' sampler (the llama.cpp server on the same
            # weights when the run has one: the in-process policy on one core took ~5 min a turn); the question
            # openers continued by the local model (an endpoint cannot continue a forced start)
            policy = (["--policy", CANDIDATE_MODEL, "--base_url", CANDIDATE_SERVER.base_url, "--question_policy", s["model"]]
                      if CANDIDATE_SERVER is not None else ["--policy", s["model"]])
            more = ["--extend", extend, "--rollouts_per_candidate", s["label_check"]] if extend else \
                ["--rollouts_per_candidate", s["mc_rollouts"]]
            return _sa("mc-values", "--data", data, "--output", tmp, "--num_candidates", s["num_candidates"],
                       *more, "--explore_candidates", s["explore_candidates"],
                       "--seed", s["data_seed"], *policy, "--max_new_tokens", s["candidate_tokens"],
                       "--temperature", s["candidate_temperature"], "--rollout_temperature", s["train_temperature"],
                       "--max_turns", s["max_turns"], "--simulator", "offline", "--reward_mode", "fraction",
                       # a server answering one request at a time is kept busy by two in flight (eight queued past
                       # the client's 120 s timeout and were retried); one that batches them decodes eight together
                       "--concurrency", 2 if CANDIDATE_SERVER is not None and not s.get("server_batching") else 8,
                       "--resume", "--no_progress")
        stages[name] = Stage(name, out, deps, cmd, tmp=tmp, resumable=True, priority=priority,
                             finish=lambda: finish_values(tmp, out), extra={"candidates": True})

    mc_values("mc-heldout", L.mc / "heldout.jsonl", L.heldout, ("collect-heldout",), 85)
    mc_values("mc-train", L.mc / "train.jsonl", L.paired, ("paired-data",), 57)

    # -- per seed: the critics and SWEET's step pairs (every agent turn of the paired trajectories; one set of
    #    candidates for every seed). The critic without the reference: the critic report's column (first seed)
    #    and, with best_of_n, best-of-N's scorer (every seed).
    shared = run / "candidates" / "backend.jsonl"
    for sd in seeds:
        critic, noref = L.models / "critic" / f"s{sd}", L.models / "critic-noref" / f"s{sd}"
        train(f"train-critic-s{sd}", "train-critic", critic, ("collect",), 80 - sd, sd,
              ["--data", L.data, "--pair_rule", "reward", "--learning_rate", s["critic_lr"]], epochs=s["critic_epochs"])
        if sd == first_seed or "best-of-n" in methods:
            # right after SWEET's critics (one training at a time): the critic report, which needs all of them,
            # then comes before the methods' trainings rather than after them
            train(f"train-critic-noref-s{sd}", "train-critic", noref, ("collect",), 77 - sd, sd,
                  ["--data", L.data, "--pair_rule", "reward", "--learning_rate", s["critic_lr"],
                   "--no_use_privileged_info"], epochs=s["critic_epochs"])
        # the first seed's stage samples the candidates; the others wait for its file and score it
        after = () if sd == first_seed else (f"pairs-s{first_seed}",)
        pairs(f"pairs-s{sd}", run / "pairs" / f"s{sd}.jsonl", (f"train-critic-s{sd}", "paired-data", *after), 78 - sd,
              sd, L.paired, critic, ["--explore_candidates", s["explore_candidates"], "--explore_turns", 0],
              tokens=s["candidate_tokens"], candidates=shared)

    # -- the critic's step-level accuracy on held-out tasks: SWEET's critics, the critic without the reference, and
    #    the release's step score, each against the Monte-Carlo values
    critics = [a for sd in seeds for a in ("--critic", f"sweet-s{sd}={L.models / 'critic' / f's{sd}'}")]
    critic_deps = (*(f"train-critic-s{sd}" for sd in seeds), f"train-critic-noref-s{first_seed}")

    def critic_report(name: str, out: Path, values: Path, deps: tuple[str, ...], priority: int) -> None:
        report_tmp = out.with_name(out.name + ".tmp")
        stages[name] = Stage(
            name, out, (*deps, *critic_deps),
            _sa("critic-report", "--values", values, *critics,
                "--critic", f"noref-s{first_seed}={L.models / 'critic-noref' / f's{first_seed}'}",
                "--release", f"release-s{first_seed}={L.models / 'critic' / f's{first_seed}'}",
                "--ci", "turn-bootstrap", "--json", report_tmp,
                # every scored turn journalled: a stage killed with its session goes on where it stopped; the
                # label check's report scores the same candidates, so it reads them all back from here
                "--scores-journal", L.critic_report.with_name("critic-report.scores.jsonl")),
            tmp=report_tmp, priority=priority)

    critic_report("critic-report", L.critic_report, L.mc / "heldout.jsonl", ("mc-heldout",), 79)
    if s.get("label_check"):
        # the same held-out candidates with label_check more completions each (new draws), then the report on the
        # pooled values: how often two one-completion labels agree, and each critic's noise-corrected agreement
        more = L.mc / "heldout-more.jsonl"
        mc_values("mc-heldout-more", more, L.heldout, ("mc-heldout",), 56, extend=L.mc / "heldout.jsonl")
        critic_report("critic-report-labels", L.critic_report_labels, more, ("mc-heldout-more", "critic-report"), 55)

    def method_train(m: str, out: Path, sd: int, setting: Callable[[], dict[str, float]], deps: tuple[str, ...],
                     prio: int) -> None:
        def args() -> list[Any]:
            lr = setting()["learning_rate"]
            if m == "rft":
                return ["--data", L.data, "--pair_rule", "best", "--learning_rate", lr]
            if m == "mtdpo":  # one pair per forward (same effective batch): two full trajectories OOM-ed beside others
                return ["--data", L.data, "--pair_rule", "reward", "--learning_rate", lr,
                        "--per_device_train_batch_size", 1, "--gradient_accumulation_steps", 2]
            if m == "oracle":  # SWEET's actor on the same turns, pairs labelled by their Monte-Carlo values
                return ["--pair_labels", "monte-carlo", "--mc_values", L.mc / "train.jsonl",
                        "--pairs_per_turn", s["pairs_per_turn"],
                        "--learning_rate", lr, "--loss_weights", 1.0, s["sweet_nll_weight"]]
            return ["--pairs_in", stages[f"pairs-s{sd}"].output, "--learning_rate", lr,
                    "--loss_weights", 1.0, s["sweet_nll_weight"]]
        command = {"rft": "train-rft", "mtdpo": "train-mtdpo", "sweet": "train-actor", "oracle": "train-actor"}[m]
        extra_deps = {"sweet": (f"pairs-s{sd}",), "oracle": ("mc-train",)}.get(m, ("collect",))
        train(f"train-{m}-{out.name}", command, out, deps + extra_deps, prio, sd, args, epochs=s["train_epochs"])

    bon_policy = s["best_of_policy"] or s["model"]
    bon_url = ["--base-url", s["best_of_base_url"]] if s["best_of_base_url"] else []

    # -- the grid (training seed `first_seed`), validation, selection; then the other seeds
    prio = {"rft": 70, "mtdpo": 55, "sweet": 65, "best-of-n": 40}
    for m in grid_methods(s):
        points = grid_points(s, m)
        for i, point in enumerate(points):
            if m == "best-of-n":
                rollout(f"val-{m}-g{i}", L.val(m, i), (f"train-critic-noref-s{first_seed}",), prio[m] - i,
                        tasks=s["val_tasks"], policy=bon_policy, episodes=s["val_episodes"],
                        temperature=max(s["eval_temperature"], 0.7),
                        extra=["--best-of", int(point["best_of"]), "--critic", L.models / "critic-noref" / f"s{first_seed}",
                               *bon_url])
                continue
            out = L.models / m / f"g{i}-s{first_seed}"
            method_train(m, out, first_seed, lambda p=point: p, (), prio[m] - i)
            rollout(f"val-{m}-g{i}", L.val(m, i), (f"train-{m}-{out.name}",), prio[m] - i, tasks=s["val_tasks"],
                    policy=out, episodes=s["val_episodes"])
        val_stages = tuple(f"val-{m}-g{i}" for i in range(len(points)))
        stages[f"select-{m}"] = Stage(
            f"select-{m}", L.selection(m), val_stages, priority=prio[m] + 5,
            fn=lambda m=m, n=len(points): write_text_atomic(L.selection(m), json.dumps(
                select([L.val(m, i) for i in range(n)]), indent=2)))

        def chosen(m: str = m) -> dict[str, float]:
            return grid_points(s, m)[L.chosen(m)]

        for sd in seeds[1:]:
            if m != "best-of-n":
                method_train(m, L.models / m / f"s{sd}", sd, chosen, (f"select-{m}",), prio[m] - 10)

    # -- the oracle-credit actor: no grid of its own (an upper bound, not a contender): SWEET-RL's chosen setting,
    #    every seed
    def sweet_choice() -> dict[str, float]:
        return grid_points(s, "sweet")[L.chosen("sweet")]

    for sd in seeds:
        method_train("oracle", L.models / "oracle" / f"s{sd}", sd, sweet_choice, ("select-sweet",), 50 - sd)

    def policy_of(m: str, sd: int) -> Callable[[], Path] | str:
        if m == "best-of-n":
            return bon_policy
        if m == "zero-shot":
            return s["model"]
        if m == "oracle":
            return L.models / m / f"s{sd}"
        return lambda: L.chosen_model(m, sd, first_seed)

    def deps_of(m: str, sd: int) -> tuple[str, ...]:
        if m == "zero-shot":
            return ()
        if m == "best-of-n":
            return (f"select-{m}", f"train-critic-noref-s{sd}")
        if m == "oracle":
            return (f"train-oracle-s{sd}",)
        if sd == first_seed:  # the chosen grid point's model: every point until validation has chosen one (a
            # point not chosen is then read by no stage, so a fresh machine does not train it again)
            if L.selection(m).is_file():
                return (f"select-{m}", f"train-{m}-g{L.chosen(m)}-s{sd}")
            return (f"select-{m}", *(f"train-{m}-g{i}-s{sd}" for i in range(len(grid_points(s, m)))))
        return (f"select-{m}", f"train-{m}-s{sd}")

    def bon_extra(sd: int) -> Callable[[], list[Any]]:
        return lambda: ["--best-of", int(grid_points(s, "best-of-n")[L.chosen("best-of-n")]["best_of"]),
                        "--critic", L.models / "critic-noref" / f"s{sd}", *bon_url]

    # -- the end: test (tasks never evaluated before, two families) and embedded, once per method and seed
    collab_indices = indices(s["collab_test_start"], s["collab_test_episodes"])
    for m in methods:
        for sd in ([None] if m == "zero-shot" else seeds):
            tag = m if sd is None else f"{m}-s{sd}"
            kw: dict[str, Any] = dict(policy=policy_of(m, sd if sd is not None else first_seed))
            if m == "best-of-n":
                kw.update(temperature=max(s["eval_temperature"], 0.7), extra=bon_extra(sd))
            deps = deps_of(m, sd if sd is not None else first_seed)
            rollout(f"test-{tag}", L.result("test", m, sd), deps, 30, tasks=s["test_tasks"], indices=test_indices, **kw)
            rollout(f"collab-{tag}", L.result("collab", m, sd), deps, 25, tasks=s["collab_test_tasks"],
                    indices=collab_indices, **kw)
            rollout(f"embedded-{tag}", L.result("embedded", m, sd), deps, 20, tasks=s["embedded_tasks"],
                    episodes=s["embedded_episodes"], **kw)

    if "sweet" in methods and "val-shipped" in stages:
        # the model --export-adapter ships, played again on the val tasks the shipped adapter played: the demo's
        # verdict compares these two (demo_adapter_verdict). It is val-sweet-g<chosen>'s model unless that model
        # was trained again after its validation (a replaced machine): then only this measures what would ship
        rollout("val-demo", L.val("demo"), deps_of("sweet", first_seed), 10, tasks=s["val_tasks"],
                policy=policy_of("sweet", first_seed), episodes=s["val_episodes"])
        finish_demo_rollout = stages["val-demo"].finish

        def finish_demo() -> None:  # say which weights played, before the output appears (demo_adapter_verdict)
            write_text_atomic(demo_played_file(run), json.dumps({"weights_sha256": weights_fingerprint(
                demo_model(run, s))}, indent=2))
            finish_demo_rollout()

        stages["val-demo"].finish = finish_demo

    # -- the frontend arm: settings chosen on the backend validation split, small scale (optional since v2)
    if not s.get("frontend_arm", True):
        return stages
    fe = "ColBench-Frontend-v0"
    rollout("collect-frontend", L.frontend_data, (), 50, tasks=s["frontend_train_tasks"], policy=s["model"],
            episodes=s["frontend_train_episodes"], k=s["frontend_k"], temperature=s["train_temperature"],
            seed=s["data_seed"], env=fe, frontend=True)
    for sd in seeds:
        fm = L.models / "frontend"
        train(f"train-frontend-rft-s{sd}", "train-rft", fm / "rft" / f"s{sd}", ("collect-frontend", "select-rft"), 12, sd,
              lambda: ["--data", L.frontend_data, "--pair_rule", "best", "--learning_rate",
                       grid_points(s, "rft")[L.chosen("rft")]["learning_rate"]], epochs=s["train_epochs"], frontend=True)
        train(f"train-frontend-critic-s{sd}", "train-critic", fm / "critic" / f"s{sd}", ("collect-frontend",), 12, sd,
              ["--data", L.frontend_data, "--pair_rule", "reward", "--learning_rate", s["critic_lr"]],
              epochs=s["critic_epochs"], frontend=True)
        after = () if sd == first_seed else (f"pairs-frontend-s{first_seed}",)
        pairs(f"pairs-frontend-s{sd}", run / "pairs" / f"frontend-s{sd}.jsonl", (f"train-frontend-critic-s{sd}", *after),
              11, sd, L.frontend_data, fm / "critic" / f"s{sd}", [], tokens=s["frontend_candidate_tokens"],
              candidates=run / "candidates" / "frontend.jsonl")
        train(f"train-frontend-sweet-s{sd}", "train-actor", fm / "sweet" / f"s{sd}",
              (f"pairs-frontend-s{sd}", "select-sweet"), 10, sd,
              lambda sd=sd: ["--pairs_in", run / "pairs" / f"frontend-s{sd}.jsonl", "--learning_rate",
                             grid_points(s, "sweet")[L.chosen("sweet")]["learning_rate"],
                             "--loss_weights", 1.0, s["sweet_nll_weight"]], epochs=s["train_epochs"], frontend=True)
    for m in FRONTEND_METHODS:
        for sd in ([None] if m == "zero-shot" else seeds):
            deps = () if sd is None else (f"train-frontend-{m}-s{sd}",)
            pol = s["model"] if sd is None else L.models / "frontend" / m / f"s{sd}"
            rollout(f"frontend-{m if sd is None else f'{m}-s{sd}'}", L.result("frontend", m, sd), deps, 5,
                    tasks=s["frontend_test_tasks"], policy=pol, episodes=s["frontend_test_episodes"], env=fe,
                    frontend=True)
    return stages


# ------------------------------------------------------------------------------ running
#: The llama.cpp server this benchmark started for step-pair candidates (``candidate_server``), or None.
CANDIDATE_SERVER: Any = None
#: The model name the step-pair stages ask it for (train-actor --candidates_from).
CANDIDATE_MODEL = "openai:qwen2.5-coder-0.5b-instruct"
LLAMA_INSTALL = 'pip install "llama-cpp-python==0.3.36"'


def resolve_candidate_server(s: dict[str, Any]) -> str:
    """``candidate_server`` as this run uses it: ``llama`` (start scripts/llama_server.py on the
    default model's GGUF) or ``none`` (the policy in process, or a server given by
    ``candidates_from``). ``auto`` is ``llama`` on a machine without a GPU when the model is the
    default one and llama-cpp-python is installed: there the server samples a turn's candidates
    in one batch on all cores, while the stage's in-process ``generate`` gets one core of two.
    The resolved value is what the run directory's settings remember, so a resumed run cannot
    switch backends silently."""
    import importlib.util

    want = s["candidate_server"]
    if want not in ("auto", "llama", "none"):
        raise SystemExit(f"error: --candidate-server must be auto, llama or none, got {want!r}")
    if s["candidates_from"] or want == "none":
        return "none"
    have = importlib.util.find_spec("llama_cpp") is not None
    if want == "llama":
        if not have:
            raise SystemExit(f"error: --candidate-server llama needs llama-cpp-python: install it once with "
                             f"`{LLAMA_INSTALL}` (compiles llama.cpp, 20-35 min on 2 cores) or pass --candidate-server none")
        if s["model"] != "default":
            raise SystemExit("error: --candidate-server llama serves the default model's GGUF; with another --model "
                             "run your own server (--candidates-from openai:MODEL --candidates-base-url URL)")
        return "llama"
    from sweet_agent.devices import resolve_device

    if s["model"] != "default" or resolve_device("auto") != "cpu":
        return "none"
    if not have:
        say(f"step-pair candidates from the policy in process: llama-cpp-python is not installed (`{LLAMA_INSTALL}` "
            "once, or `make llama-cpp`, gives the faster llama.cpp server path)")
        return "none"
    return "llama"


def finish_rollout(part: Path, out: Path) -> None:
    """A rollout stage's output, once every planned episode has a score: an episode that failed
    for infrastructure reasons (the simulator, the grader, ...) leaves the stage unfinished, and the
    next run's ``--resume`` plays it again. Otherwise a method would be scored on fewer tasks than
    the others, and the paired comparisons would silently drop those tasks. An episode that
    failed the same way after ``MAX_REPLAYS`` replays (a task no grader can use fails for every
    method alike) is accepted, and said, so that one bad task cannot stall the protocol."""
    from sweet_agent.trajectories import (
        MAX_REPLAYS,
        is_infrastructure_failure,
        iter_trajectories,
        replaced_path,
        replay_counts,
    )

    failed = [r["meta"].get("episode_id") for r in iter_trajectories(part, require_reward=False)
              if is_infrastructure_failure(r)]
    tries = replay_counts(part)
    bad = [e for e in failed if tries[e] < MAX_REPLAYS]
    if bad:
        raise RuntimeError(f"{len(bad)} episodes failed for infrastructure reasons (episodes {bad[:8]}); "
                           "run again to play them again")
    if failed:
        say(f"! {out.name}: {len(failed)} episodes failed for infrastructure reasons after {MAX_REPLAYS} replays "
            f"(episodes {failed[:8]}); kept as failed (no score)")
    os.replace(part, out)
    if replaced_path(part).exists():  # the replaced records stay beside the output, under its name
        os.replace(replaced_path(part), replaced_path(out))


def write_paired_subset(data: Path, out: Path, share: float, seed: int) -> None:
    """The trajectories SWEET-RL's step pairs (and the oracle's Monte-Carlo values) use: every agent
    turn of a seeded ``share`` of the offline trajectories (at least one), as the paper's release
    pairs every turn of 10 % of them. The lines are copied as they are, in file order."""
    import random

    lines = [x for x in data.read_text(encoding="utf-8").splitlines() if x.strip()]
    if not lines:
        raise RuntimeError(f"{data} holds no trajectories")
    keep = sorted(random.Random(seed).sample(range(len(lines)), max(1, round(share * len(lines)))))
    write_text_atomic(out, "".join(lines[i] + "\n" for i in keep))


def finish_values(tmp: Path, out: Path) -> None:
    """A Monte-Carlo values stage's output and its ``.meta.json``, moved together once every turn is
    valued (a failed turn leaves the stage unfinished: ``--resume`` plays it again)."""
    from sweet_agent.actor.mc_values import journal_path, meta_path

    if journal_path(tmp).exists():
        raise RuntimeError(f"{tmp.name}: turns are still missing (journal {journal_path(tmp).name}); run again to resume")
    os.replace(meta_path(tmp), meta_path(out))
    os.replace(tmp, out)


def finish_pairs(tmp: Path, out: Path) -> None:
    """A step-pair stage's output, once every one of its turns was sampled: a turn that failed
    after the retries leaves the stage unfinished (the next run resumes only those turns) instead
    of a pair file silently missing them. The pair file moves with its metadata."""
    from sweet_agent.actor.pair_files import meta_path, read_pair_meta

    failed = read_pair_meta(tmp).get("failed_turns") or []
    if failed:
        raise RuntimeError(f"{len(failed)} turns failed after retries (turns {failed[:8]}); run again to resume them")
    os.replace(meta_path(tmp), meta_path(out))
    os.replace(tmp, out)


def candidate_server(stages: dict[str, Stage], want: set[str], run: Path, s: Mapping[str, Any]) -> Any:
    """The llama.cpp server for the step-pair stages still to run (a context manager; a null one
    when none is needed). Its threads sleep when idle (``OMP_WAIT_POLICY=PASSIVE``): it shares the
    cores with the other stage and with the critic scoring its own candidates."""
    import contextlib

    if s["candidate_server"] != "llama" or not any(
            stages[n].extra.get("candidates") and not stages[n].done() for n in want):
        return contextlib.nullcontext()
    sys.path.insert(0, str(ROOT / "scripts"))
    from llama_server import ServerProcess

    from sweet_agent.policies.default_model import gguf_path

    return ServerProcess.batched(gguf_path(), os.cpu_count() or 2, run / "logs" / "llama-server.log",
                                 env={"OMP_WAIT_POLICY": "PASSIVE"}, model_name=CANDIDATE_MODEL.partition(":")[2],
                                 batch_requests=bool(s.get("server_batching")))


def _lock(run: Path, name: str) -> Path | None:
    """A per-stage lock: the benchmark's pid, then the stage's process group once it started.
    None when a live benchmark holds it. A stale lock (its benchmark is gone) whose stage group
    still runs (an orphan of a benchmark that was SIGKILLed) has that group stopped first, so two
    copies of a stage never write the same files."""
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
                pid, group, started, commit = ((lock.read_text() or "0").split() + ["", "", ""])[:4]
                os.kill(int(pid), 0)
                return None  # held by a live process
            except (ValueError, ProcessLookupError, PermissionError):
                _stop_orphan(group, name)
                _log_interrupted(run, name, lock, started, commit or None)
                lock.unlink(missing_ok=True)  # stale
    return None


def _log_interrupted(run: Path, name: str, lock: Path, started: str, commit: str | None = None) -> None:
    """A stale lock's stage ran from ``started`` until the lock's last heartbeat (its benchmark was
    killed, e.g. at a sitting's end): that sitting's time goes into timings.jsonl as ``interrupted``,
    under the commit that sitting ran (the lock's; "unknown" for a lock written before it held one)
    and without a load average (the load now is not the load it ran at)."""
    try:
        began, last = float(started), lock.stat().st_mtime
    except (ValueError, OSError):
        return  # written before the lock held a start time, or never started
    if last > began:
        _log_timing(run, name, last - began, ended="interrupted", at=last, commit=commit or "unknown")
        say(f"~ {name}: its previous sitting ran {last - began:.0f} s until that benchmark was killed (timings.jsonl)")


def _stop_orphan(group: str, name: str) -> None:
    """SIGTERM (then SIGKILL after 30 s) the process group ``group`` left running by a benchmark
    that is gone."""
    if not group.strip().isdigit() or int(group) <= 1 or int(group) == os.getpgrp():
        return  # never the caller's own group (killpg(0) is the caller's)
    pgid = int(group)
    for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        say(f"~ {name}: stopping the stage left running by a benchmark that is gone (group {pgid}, {sig.name})")
        deadline = time.time() + wait_s
        while time.time() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.5)


_JOBS = 1
#: A stage's ``extra`` key naming a group of which at most one stage runs at a time, whatever
#: ``--jobs`` allows (stages too large in memory to run beside each other).
ONE_AT_A_TIME = "one_at_a_time"
#: Set by SIGINT / SIGTERM: no stage starts any more, the running ones are stopped.
STOP = threading.Event()
_running: dict[int, subprocess.Popen | ForkedCommand] = {}
_running_lock = threading.Lock()
#: How a ``sweet-agent`` stage starts (``--stage-start``): ``forkserver`` forks it from a process that
#: imported torch / transformers / TRL once (:mod:`sweet_agent.forkserver`: the quick profile's ~77
#: stages spent most of their ~20 minutes importing them), ``subprocess`` runs ``python -m
#: sweet_agent.cli`` afresh. Either way the stage has its own process group, log and environment.
STAGE_START = "forkserver"
#: The environment every stage gets on top of the benchmark's.
STAGE_ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _stop_group(proc: subprocess.Popen | ForkedCommand) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


#: After a stop, a stage still running is sent SIGTERM again every STOP_RESEND_S seconds and
#: killed (SIGKILL, its whole group) after STOP_GRACE_S: a SIGTERM that reached a stage while it
#: was starting up was once lost, and the stage trained on.
STOP_RESEND_S, STOP_GRACE_S = 20.0, 120.0


def _wait_or_stop(proc: subprocess.Popen | ForkedCommand, lock: Path | None = None) -> None:
    """Wait for a stage's process, touching its ``lock`` every HEARTBEAT_S seconds; once the run is
    stopping, SIGTERM its group again every STOP_RESEND_S seconds and SIGKILL it after STOP_GRACE_S."""
    stopped_at = sent_at = None
    beat = time.monotonic()
    while True:
        try:
            proc.wait(timeout=1.0)
            return
        except subprocess.TimeoutExpired:
            if lock is not None and time.monotonic() - beat >= HEARTBEAT_S:
                beat = time.monotonic()
                try:
                    os.utime(lock)
                except OSError:
                    pass
            if not STOP.is_set():
                continue
        now = time.monotonic()
        stopped_at = stopped_at if stopped_at is not None else now
        sent_at = sent_at if sent_at is not None else now  # request_stop sent the first one
        if now - stopped_at >= STOP_GRACE_S:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        elif now - sent_at >= STOP_RESEND_S:
            _stop_group(proc)
            sent_at = now


def request_stop(signum: int, _frame: Any = None) -> None:
    """Stop the run: every running stage's process group gets SIGTERM (what they wrote stays:
    rollouts resume from their partial files, step pairs from their journals); a second signal
    kills them."""
    again = STOP.is_set()
    STOP.set()
    say(f"{signal.Signals(signum).name}: stopping the running stages" + (" (killing them)" if again else ""))
    with _running_lock:
        procs = list(_running.values())
    for proc in procs:
        if again:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            _stop_group(proc)


def _threads_per_stage() -> int:
    return max(1, (os.cpu_count() or 1) // _JOBS)


def code_commit() -> str | None:
    """The commit the benchmark's code is at (which commit ran a stage goes into timings.jsonl), with
    ``+dirty`` when tracked files differ from it; None outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def _last_line(log: Path) -> str:
    """The last non-empty line a stage wrote (a trainer's one-line reason for stopping)."""
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def nothing_to_train(run: Path, done: set[str]) -> dict[str, str]:
    """``{stage: why}`` of the training stages that stopped because their data gave them no rows
    (exit ``NOTHING_TO_TRAIN``) and are not in ``done`` since: their method's rows are missing from
    the tables, and the report must say why rather than leave them out silently."""
    path = run / "nothing-to-train.jsonl"
    if not path.exists():
        return {}
    out = {d["stage"]: d["why"] for d in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if d}
    return {k: v for k, v in out.items() if k not in done}


#: How a stage's sitting ended in timings.jsonl (``ended``; an entry without it is ``done``): a stage
#: that resumes over several sittings has one entry per sitting, and its time is their sum.
ENDED = ("done", "stopped", "interrupted")
#: While a stage runs its lock file is touched this often: after a benchmark killed outright (SIGKILL
#: at a sitting's end) the next run reads from it how long the stage ran in that sitting.
HEARTBEAT_S = 60.0


def _log_timing(run: Path, name: str, seconds: float, ended: str = "done", at: float | None = None,
                commit: str | None = None) -> None:
    """One sitting of a stage into timings.jsonl. ``commit`` given: a past sitting logged later (its
    own commit; the load average then is unknown, so none is written)."""
    if ended not in ENDED:
        raise ValueError(f"a sitting ends {ENDED}, not {ended!r}")
    entry = {"stage": name, "seconds": round(seconds, 1),
             "finished": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(at))}
    if commit is None:
        entry["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    entry["commit"] = commit or code_commit()
    if ended != "done":
        entry["ended"] = ended
    with (run / "timings.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


def stage_times(timings: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{stage: {"seconds": summed over its sittings, "sittings": n, "done": bool}}`` in first-seen order."""
    out: dict[str, dict[str, Any]] = {}
    for t in timings:
        row = out.setdefault(t["stage"], {"seconds": 0.0, "sittings": 0, "done": False})
        row["seconds"] += t["seconds"]
        row["sittings"] += 1
        row["done"] = row["done"] or t.get("ended", "done") == "done"
    return out


def run_stage(st: Stage, run: Path) -> bool:
    lock = _lock(run, st.name)
    if lock is None:
        say(f"~ {st.name}: another invocation runs it")
        return False
    try:
        if st.done():
            return True
        log = run / "logs" / f"{st.name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        st.output.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        if st.fn is not None:
            say(f"> {st.name}")
            try:
                st.fn()
            except Exception as exc:  # noqa: BLE001 - reported, the stage counts as failed
                log.open("a", encoding="utf-8").write(f"{type(exc).__name__}: {exc}\n")
                say(f"! {st.name} failed: {exc}")
                return False
            _log_timing(run, st.name, time.time() - t0)
            say(f"= {st.name} done")
            return True
        if st.tmp is not None and not st.resumable and st.tmp.exists():
            shutil.rmtree(st.tmp) if st.tmp.is_dir() else st.tmp.unlink()
        cmd = st.command() or []
        say(f"> {st.name} (log: {log})")
        env = {**os.environ, **STAGE_ENV}
        # stages run side by side on a small machine: one intra-op thread each (two torch threads
        # per process on an oversubscribed CPU mostly wait for each other)
        env.setdefault("OMP_NUM_THREADS", str(_threads_per_stage()))
        with open(log, "a", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(shlex.quote(str(c)) for c in cmd) + "\n")
            fh.flush()
            # its own process group: a stop (Ctrl-C, SIGTERM) ends the stage and everything it started
            if STAGE_START == "forkserver" and can_fork(cmd):
                proc = ForkedCommand(cmd, log=log, cwd=ROOT, env=env)  # the same, without ~15 s of imports
            else:
                proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)
            with _running_lock:
                _running[proc.pid] = proc
            try:
                # the stage's group and start, for a resume after a SIGKILL (its heartbeat: the lock's mtime)
                lock.write_text(f"{os.getpid()} {proc.pid} {t0:.1f} {code_commit() or 'unknown'}")
                if STOP.is_set():
                    _stop_group(proc)
                _wait_or_stop(proc, lock)
            finally:
                with _running_lock:
                    _running.pop(proc.pid, None)
        if proc.returncode != 0 and STOP.is_set():
            _log_timing(run, st.name, time.time() - t0, ended="stopped")
            say(f"~ {st.name} stopped after {time.time() - t0:.0f} s (the next run continues it)")
            return False
        if proc.returncode == NOTHING_TO_TRAIN:  # the data gave this trainer no rows: the report says so
            why = _last_line(log)
            with (run / "nothing-to-train.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"stage": st.name, "why": why, "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
            say(f"! {st.name}: nothing to train on ({why}); the stages after it do not run and the report names it")
            return False
        if proc.returncode != 0:
            lost = " (or its status was lost: the fork server died)" if isinstance(proc, ForkedCommand) and \
                proc.returncode == STATUS_UNKNOWN else ""
            say(f"! {st.name} failed (exit {proc.returncode}{lost}) after {time.time() - t0:.0f} s; see {log}")
            return False
        if st.finish is not None:
            try:
                st.finish()
            except Exception as exc:  # noqa: BLE001 - reported, the stage counts as failed (and resumes)
                say(f"! {st.name}: {exc}")
                return False
        elif st.tmp is not None:
            os.replace(st.tmp, st.output)
        _log_timing(run, st.name, time.time() - t0)
        say(f"= {st.name} done in {time.time() - t0:.0f} s")
        return True
    finally:
        lock.unlink(missing_ok=True)


#: ``--records DIR``: where every finished stage's records are saved (:func:`save_records`), or None.
RECORDS: Path | None = None
#: How often a running benchmark keeps its training stages' newest checkpoints (``--weights``), besides after every stage.
WEIGHTS_EVERY_S = 900.0


def _keep_weights(stages: Mapping[str, Stage], run: Path) -> None:
    try:
        if kept := save_weights(stages, run, WEIGHTS):
            say(f"weights: kept {', '.join(kept)} in {WEIGHTS}")
    except OSError as exc:  # a full disk must not stop the stages: the run itself holds them
        say(f"! weights not kept in {WEIGHTS}: {exc}")


def run_all(stages: dict[str, Stage], run: Path, jobs: int, only: set[str] | None, settings: dict) -> None:
    global CANDIDATE_SERVER
    want = {n for n in stages if only is None or n in only}
    failed: set[str] = set()
    running: dict[Future, str] = {}
    with candidate_server(stages, want, run, settings) as server, ThreadPoolExecutor(max_workers=jobs) as pool:
        if server is not None:
            CANDIDATE_SERVER = server
            say(f"step-pair candidates from {server.name} at {server.base_url} (up in {server.started_in:.0f} s; "
                f"log: {server.log})")
        while True:
            busy = set(running.values())
            ready = [] if STOP.is_set() else sorted(
                (stages[n] for n in want if n not in busy and n not in failed and not stages[n].done()
                 and all(stages[d].done() for d in stages[n].deps)), key=lambda st: -st.priority)
            while ready and len(running) < jobs:
                st = ready.pop(0)
                group = st.extra.get(ONE_AT_A_TIME)
                if group and any(stages[n].extra.get(ONE_AT_A_TIME) == group for n in running.values()):
                    continue  # a stage of its memory group runs: it waits, another may take the slot
                if st.extra.get("candidates") and server is not None and not server.alive():
                    say(f"! {server.name} exited (see {server.log}); starting it again")
                    try:
                        server.__enter__()
                    except SystemExit as exc:  # it does not start: stop cleanly rather than wait on the rest
                        say(f"! {exc}; stopping the run")
                        request_stop(signal.SIGTERM)
                        break
                running[pool.submit(run_stage, st, run)] = st.name
            if not running:
                break
            finished, _ = wait(running, timeout=WEIGHTS_EVERY_S if WEIGHTS is not None else None,
                               return_when=FIRST_COMPLETED)
            if WEIGHTS is not None:
                _keep_weights(stages, run)
            for fut in finished:
                name = running.pop(fut)
                if not fut.result():
                    failed.add(name)
                try:
                    write_report(run, settings)
                except Exception as exc:  # noqa: BLE001 - a report from partial results must not stop the stages
                    say(f"! report not written: {type(exc).__name__}: {exc}")
                if RECORDS is not None:
                    try:
                        if saved := save_records(stages, run, RECORDS):
                            say(f"records: {len(saved)} file(s) saved to {RECORDS}")
                    except OSError as exc:  # a full disk must not stop the stages: the run itself holds them
                        say(f"! records not saved to {RECORDS}: {exc}")
    blocked = sorted(n for n in want if not stages[n].done())
    say("stopped; the same command continues" if STOP.is_set() else
        "all stages done" if not blocked else f"not done: {', '.join(blocked)}")


# ------------------------------------------------------------------------------ records
#: The run's own files that a record set keeps beside the stages' outputs.
RUN_FILES = ("settings.json", "timings.jsonl", "nothing-to-train.jsonl")
#: Where a finished oracle-credit actor keeps the step pairs it trained on (``train-actor
#: --pair_labels monte-carlo`` writes them into its output directory).
ORACLE_PAIRS = "step_pairs.jsonl"
#: What a record set keeps of a finished training stage: what its optimizer saw, the critic's
#: held-out evaluation and the oracle's step pairs, never its weights, its adapter's config or its
#: checkpoints (a model folder restored from records holds no adapter, and says so to anything
#: that tries to load it).
MODEL_RECORDS = ("training_budget.json", TRAINING_LOG_FILE, "sweet_critic.json", ORACLE_PAIRS,
                 ORACLE_PAIRS + ".meta.json")


def training_log(model: Path) -> list[dict[str, Any]] | None:
    """A trained model's log history: its ``training_log.json`` (written by the trainer), else
    the newest complete checkpoint's ``trainer_state.json`` (models trained before the trainers
    wrote the log; a resumed training's state carries the earlier sittings' entries), else None."""
    f = model / TRAINING_LOG_FILE
    if f.is_file():
        return json.loads(f.read_text(encoding="utf-8"))["log_history"]
    ckpt = last_checkpoint(str(model))
    if ckpt is None:
        return None
    return json.loads((Path(ckpt) / "trainer_state.json").read_text(encoding="utf-8")).get("log_history", [])


def keep_training_log(model: Path) -> bool:
    """Write ``training_log.json`` into a finished model folder that has none, from its newest
    checkpoint (:func:`training_log`), so the records keep it. Returns whether it wrote one."""
    if (model / TRAINING_LOG_FILE).is_file() or not (log := training_log(model)):
        return False
    write_text_atomic(model / TRAINING_LOG_FILE, json.dumps(
        {"command": None, "log_history": log, "from": Path(last_checkpoint(str(model))).name + "/trainer_state.json"},
        indent=2))
    return True


def _record_files(stages: Mapping[str, Stage], run: Path) -> list[Path]:
    files = [run / f for f in RUN_FILES if (run / f).is_file()]
    for st in stages.values():
        if not st.done():
            continue
        if st.output.is_file():  # with its sidecars (values' and pairs' .meta.json, a rollout's .replaced)
            files += sorted(p for p in st.output.parent.iterdir() if p.is_file() and p.name.startswith(st.output.name)
                            and not (st.tmp is not None and p.name.startswith(st.tmp.name)))
        elif st.output.is_dir():
            files += sorted(p for p in st.output.rglob("*.json*") if p.is_file() and p.name in MODEL_RECORDS
                            and not any(part.startswith("checkpoint-") for part in p.relative_to(st.output).parts))
    files += sorted((run / "candidates").glob("*.jsonl"))  # sampled once, scored by every seed's critic
    # the critic reports' scores journal: the label check's report reads every score back from it (a critic
    # trained again on a fresh machine has another fingerprint and is scored afresh)
    files += sorted((run / "reports").glob("*.scores.jsonl"))
    return files


def _progress_files(st: Stage) -> list[Path]:
    """What an unfinished resumable stage has written so far that its command resumes from: a
    rollout's ``.partial`` file, a Monte-Carlo or step-pair stage's journal beside its ``.tmp``
    (append-only files; a training stage's checkpoints are weights, not kept)."""
    if not st.resumable or st.tmp is None or st.done() or not st.tmp.parent.is_dir():
        return []
    return sorted(p for p in st.tmp.parent.iterdir() if p.name.startswith(st.tmp.name) and p.is_file())


def _complete_lines(data: bytes) -> bytes:
    """An append-only file read while its stage writes: up to its last whole line."""
    return data[: data.rfind(b"\n") + 1]


def save_records(stages: Mapping[str, Stage], run: Path, dest: Path) -> list[str]:
    """Copy what the finished stages leave, weights aside, to ``dest`` (``<path in the run>.gz``),
    and what unfinished resumable stages have so far (:func:`_progress_files`, whole lines only).

    WHY: a sitting's machine can be replaced by a fresh one (it happened to protocol v2 after
    23 h of stages); the records are small enough to commit, and :func:`restore_records` puts
    them back so the run continues where the records end. gzip without a timestamp: an unchanged
    file gives the same bytes, so git sees no change. Returns the paths written."""
    written = []
    for st in _training_stages(stages):
        if st.done() and st.output.is_dir():
            keep_training_log(st.output)
    progress = {p for st in stages.values() for p in _progress_files(st)}
    for st in stages.values():  # a finished stage's progress records are spent
        if st.done() and st.tmp is not None and (dest / st.tmp.parent.relative_to(run)).is_dir():
            for old in (dest / st.tmp.parent.relative_to(run)).glob(st.tmp.name + "*.gz"):
                if old.is_file():
                    old.unlink()
    for src in _record_files(stages, run) + sorted(progress):
        rel = src.relative_to(run).as_posix()
        out = dest / (rel + ".gz")
        raw = src.read_bytes()
        # a .jsonl may be appended to while this reads it (timings, a running stage's journal)
        data = gzip.compress(_complete_lines(raw) if src in progress or src.suffix == ".jsonl" else raw, mtime=0)
        if out.exists() and out.read_bytes() == data:
            continue
        write_bytes_atomic(out, data)
        written.append(rel)
    return written


def _training_stages(stages: Mapping[str, Stage]) -> list[Stage]:
    """The stages that train a model into a folder (``<dir>.tmp`` renamed at the end)."""
    return [st for st in stages.values() if st.tmp is not None and st.tmp.name.endswith(".tmp") and not st.output.suffix]


def _readers(stages: Mapping[str, Stage], name: str) -> set[str]:
    """The stages that need ``name``'s output, directly or through the stages that need them."""
    out: set[str] = set()
    todo = [name]
    while todo:
        n = todo.pop()
        for st in stages.values():
            if n in st.deps and st.name not in out:
                out.add(st.name)
                todo.append(st.name)
    return out


def restore_records(stages: Mapping[str, Stage], src: Path, run: Path) -> tuple[list[str], list[str]]:
    """Put a record set back into ``run`` where the run lacks the file (what exists is never replaced).

    A training stage's records come back only when every stage that reads its model (its
    ``deps``) is done: its weights are not in the records, so a stage still to use them must train
    again (it then runs, because its output is missing). The progress of a stage downstream of a training stage that
    trains again is not restored: it was made with the lost model (a resumed rollout would mix
    two models' episodes; a step-pair journal records its critic's hash and would refuse).
    Returns (restored paths, training stages whose records wait for them to train again)."""
    if not src.is_dir():
        raise SystemExit(f"error: --records {src} is not a directory of records; give the folder save_records wrote")

    def put(gz: Path, target: Path) -> None:
        write_bytes_atomic(target, gzip.decompress(gz.read_bytes()))
        restored.append(target.relative_to(run).as_posix())

    trainers = {st.output: st for st in _training_stages(stages)}
    restored: list[str] = []
    models, progress = [], []
    for gz in sorted(src.rglob("*.gz")):
        target = run / gz.relative_to(src).as_posix()[:-3]
        if target.exists():
            continue
        owner = next((st for d, st in trainers.items() if target.is_relative_to(d)), None)
        resumes = next((st for st in stages.values() if st.tmp is not None and st.tmp.parent == target.parent
                        and target.name.startswith(st.tmp.name)), None)
        if owner is not None:
            models.append((owner, target, gz))
        elif resumes is not None:
            if not resumes.done():  # (the progress of a finished stage is spent)
                progress.append((resumes, target, gz))
        else:
            put(gz, target)
    ready = {owner.name for owner, _, _ in models
             if all(st.done() for st in stages.values() if owner.name in st.deps)}
    for owner, target, gz in models:
        if owner.name in ready:
            put(gz, target)
    retrain = [st.name for st in trainers.values() if not st.done()]
    stale = set().union(*(_readers(stages, n) for n in retrain))
    for st, target, gz in progress:
        if st.name not in stale:
            put(gz, target)
    return restored, sorted({owner.name for owner, _, _ in models} - ready)


# ------------------------------------------------------------------------------ weights
#: ``--weights DIR``: where the weights the records leave out are kept while a stage still needs them, or None.
WEIGHTS: Path | None = None
#: What a kept folder holds last: every file's size and sha256 (a folder without it, or that does not match it,
#: is incomplete and is never restored).
WEIGHTS_MANIFEST = "KEPT.json"
#: What marks a weights folder as one run's (:func:`weights_owner`).
WEIGHTS_RUN = "RUN.json"
#: A kept folder being copied: ``<name>.copying-<pid>``.
COPYING = ".copying-"


def _manifest(folder: Path, skip: Callable[[Path], bool] = lambda p: False) -> dict[str, Any]:
    """Every file's size and sha256 (but the manifest's own, and those ``skip`` names by relative path)."""
    from sweet_agent.policies.default_model import sha256_file

    return {"files": {rel.as_posix(): {"bytes": p.stat().st_size, "sha256": sha256_file(p)}
                      for p in sorted(folder.rglob("*")) if p.is_file() and p.name != WEIGHTS_MANIFEST
                      and not skip(rel := p.relative_to(folder))}}


def _copy_verified(src: Path, dest: Path, *, skip: Callable[[Path], bool] = lambda p: False,
                   manifest: bool = True) -> None:
    """``src`` to ``dest`` (which must not exist) through a temporary folder renamed at the end, with
    its manifest (``manifest``); ``skip``: files and folders of ``src`` left out (by their path
    relative to it). An OSError when ``src`` changed while it was copied (a trainer rotating a
    checkpoint away): the copy would be torn, however intact its manifest."""
    def listing(folder: Path, skipped: Callable[[Path], bool]) -> dict[str, int]:
        return {p.relative_to(folder).as_posix(): p.stat().st_size for p in folder.rglob("*")
                if p.is_file() and not skipped(p.relative_to(folder))}

    part = dest.with_name(f"{dest.name}{COPYING}{os.getpid()}")  # (a --report-only beside the run may copy too)
    shutil.rmtree(part, ignore_errors=True)
    try:
        shutil.copytree(src, part, ignore=lambda d, names: [n for n in names if skip((Path(d) / n).relative_to(src))])
        if not src.is_dir() or listing(src, lambda r: any(skip(Path(*r.parts[:i + 1])) for i in range(len(r.parts)))) \
                != listing(part, lambda r: False):
            raise OSError(f"{src} changed while it was copied")
        if manifest:
            write_text_atomic(part / WEIGHTS_MANIFEST, json.dumps(_manifest(part), indent=1))
        os.replace(part, dest)
    except (OSError, shutil.Error) as exc:
        shutil.rmtree(part, ignore_errors=True)
        raise OSError(str(exc)) from None


def _intact(folder: Path) -> bool:
    """Whether a kept folder is whole: its manifest is there and every file matches it."""
    try:
        kept = json.loads((folder / WEIGHTS_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return kept == _manifest(folder)


def _step(folder: Path) -> int:
    """A ``checkpoint-N`` folder's N (-1 for anything else)."""
    head, _, n = folder.name.partition("checkpoint-")
    return int(n) if not head and n.isdigit() else -1


def _stale_copy(folder: Path) -> bool:
    """A temporary copy whose process is gone (killed mid-copy)."""
    _, sep, pid = folder.name.rpartition(COPYING)
    if not sep or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def weights_owner(run: Path, dest: Path) -> str | None:
    """None when ``dest`` keeps this run's weights (or none yet: it is then marked as this run's),
    else one line saying whose they are. WHY: kept folders are matched by their path in the run
    directory; another run (another profile, another setting) pointed at the same folder would take
    them for its own finished stages and delete them as spent."""
    import hashlib

    settings = json.loads((run / "settings.json").read_text(encoding="utf-8"))
    mine = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
    mark = dest / WEIGHTS_RUN
    try:
        theirs = json.loads(mark.read_text(encoding="utf-8")).get("settings_sha256")
    except FileNotFoundError:
        dest.mkdir(parents=True, exist_ok=True)
        write_text_atomic(mark, json.dumps({"settings_sha256": mine, "run": str(run.resolve())}, indent=1))
        return None
    except (OSError, ValueError) as exc:
        return f"--weights {dest}: {mark.name} is not readable ({exc}); give another folder"
    if theirs != mine:
        return (f"--weights {dest} keeps the weights of a run with other settings ({mark.name}); give this run its "
                "own folder")
    return None


def _chosen_sweet(run: Path, stages: Mapping[str, Stage]) -> str | None:
    """The training stage of SWEET-RL's validation-chosen point (``--export-adapter`` reads its model)."""
    try:
        chosen = Layout(run).chosen("sweet")
    except (OSError, ValueError, KeyError):
        return None
    return next((n for n in stages if n.startswith(f"train-sweet-g{chosen}-s")), None)


def save_weights(stages: Mapping[str, Stage], run: Path, dest: Path) -> list[str]:
    """Keep in ``dest`` the weights a fresh machine would otherwise train again: the model of every
    finished training stage that a pending stage still reads (its checkpoints aside; SWEET-RL's
    chosen point always, for ``--export-adapter``), and the newest complete checkpoint of every
    unfinished one (what ``--resume_from_checkpoint last`` resumes from). A kept model whose
    readers are all done is removed, and a kept checkpoint once a later one is kept.

    WHY beside the records and not in them: a LoRA adapter of the 0.5B model is ~17 MB and a
    checkpoint with its optimizer state ~62 MB, too much to commit each sitting, while a SWEET-RL
    actor takes ~3.3 h on these cores, longer than a sitting: a run continued on a fresh machine
    from records alone would train it again every sitting and never finish. ``dest`` is a folder
    outside the run's clone that a replaced work tree or machine may keep, marked as this run's
    (:func:`weights_owner`). Each kept folder carries a manifest of sizes and sha256
    (:data:`WEIGHTS_MANIFEST`), written last; a kept model that no longer matches the run's (trained
    again) is copied again. A stage whose copy fails is said and the others go on. Returns the
    folders written."""
    if problem := weights_owner(run, dest):
        raise OSError(problem)
    written, failed = [], []
    export = _chosen_sweet(run, stages)
    for st in _training_stages(stages):
        try:
            written += _keep_stage(st, stages, run, dest, export=st.name == export)
        except OSError as exc:
            failed.append(f"{st.name}: {exc}")
    if failed:
        say(f"! weights not kept for {'; '.join(failed)}")
    return written


def _keep_stage(st: Stage, stages: Mapping[str, Stage], run: Path, dest: Path, *, export: bool) -> list[str]:
    written = []
    rel = st.output.relative_to(run)
    kept = dest / rel
    # a model's checkpoints, and its training log (the records keep that; written into a finished model by
    # keep_training_log, it must not make the kept copy look stale)
    no_checkpoints = lambda p: p.parts[0].startswith("checkpoint-") or p.as_posix() == TRAINING_LOG_FILE  # noqa: E731
    spent = st.done() and not export and not any(st.name in r.deps and not r.done() for r in stages.values())
    if st.done() and not spent:
        current = (kept / WEIGHTS_MANIFEST).is_file() and json.loads(
            (kept / WEIGHTS_MANIFEST).read_text(encoding="utf-8")) == _manifest(st.output, no_checkpoints)
        if not current:
            shutil.rmtree(kept, ignore_errors=True)
            _copy_verified(st.output, kept, skip=no_checkpoints)
            written.append(rel.as_posix())
    elif kept.exists():
        shutil.rmtree(kept)
    ckpts = dest / st.tmp.relative_to(run)
    newest = None if st.done() else last_checkpoint(str(st.tmp))
    if newest is not None and _step(Path(newest)) > max(
            (_step(k) for k in ckpts.glob("checkpoint-*") if (k / WEIGHTS_MANIFEST).is_file()), default=-1):
        _copy_verified(Path(newest), ckpts / Path(newest).name)  # (an OSError leaves the kept one as it was)
        written.append((st.tmp.relative_to(run) / Path(newest).name).as_posix())
    if ckpts.is_dir():
        kept_steps = [_step(k) for k in ckpts.iterdir() if (k / WEIGHTS_MANIFEST).is_file()]
        for old in ckpts.iterdir():
            if st.done() or _stale_copy(old) or (old / WEIGHTS_MANIFEST).is_file() and _step(old) < max(kept_steps):
                shutil.rmtree(old, ignore_errors=True)
        if not any(ckpts.iterdir()):
            ckpts.rmdir()
    return written


def restore_weights(stages: Mapping[str, Stage], src: Path, run: Path) -> list[str]:
    """Put kept weights back where the run lacks them: a finished model (its stage is then done),
    or an unfinished stage's newest intact checkpoint (it resumes from it). Only intact folders
    (their manifest matches); what the run has is never replaced (to train a stage again, delete
    its kept copy too). Returns what it restored."""
    restored = []
    for st in _training_stages(stages):
        kept = src / st.output.relative_to(run)
        if not st.done() and (kept / WEIGHTS_MANIFEST).is_file():
            if _intact(kept):
                _copy_verified(kept, st.output, skip=lambda p: p.as_posix() == WEIGHTS_MANIFEST, manifest=False)
                restored.append(st.output.relative_to(run).as_posix())
            else:
                say(f"! {kept} does not match its manifest: not restored ({st.name} trains again)")
        ckpts = src / st.tmp.relative_to(run)
        if st.done() or not ckpts.is_dir() or last_checkpoint(str(st.tmp)) is not None:
            continue
        for ck in sorted(ckpts.glob("checkpoint-*"), key=_step, reverse=True):
            if (ck / WEIGHTS_MANIFEST).is_file() and _intact(ck):
                st.tmp.mkdir(parents=True, exist_ok=True)
                _copy_verified(ck, st.tmp / ck.name, skip=lambda p: p.as_posix() == WEIGHTS_MANIFEST, manifest=False)
                restored.append((st.tmp.relative_to(run) / ck.name).as_posix())
                break
    return restored


# ------------------------------------------------------------------------------ report
#: The report's columns (the keys of results.json) -> the field of
#: :class:`sweet_agent.evaluation.metrics.EpisodeMetrics` each one averages.
COLUMNS = {"success": "success", "tests": "tests_passed", "turns": "turns", "questions": "questions"}
FRONTEND_COLUMNS = {"similarity": "similarity", "turns": "turns", "questions": "questions"}


def _load(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["meta"]["episode_id"]] = rec
    return out


def _measure(recs: dict[str, dict[str, Any]]) -> dict[str, EpisodeMetrics]:
    return {eid: episode_metrics(rec, i) for i, (eid, rec) in enumerate(recs.items())}


def runs_of(run: Path, split: str, m: str) -> dict[Any, dict[str, EpisodeMetrics]]:
    """``{training seed: {episode id: metrics}}`` of one method on one result split (zero-shot: one run)."""
    d = run / split
    if m == "zero-shot":
        got = _measure(_load(d / "zero-shot.jsonl"))
        return {"-": got} if got else {}
    out = {}
    for f in sorted(d.glob(f"{m}-s*.jsonl")):
        seed = f.stem.rpartition("-s")[2]
        if seed.isdigit() and (got := _measure(_load(f))):
            out[int(seed)] = got
    return out


def _cell(est: Any) -> dict[str, Any]:
    return {"mean": est.mean, "ci95": [est.low, est.high], "tasks": est.n}


def method_table(run: Path, split: str = "test", methods: Sequence[str] = METHODS,
                 columns: Mapping[str, str] = COLUMNS) -> list[dict[str, Any]]:
    """Per method: the mean over its training seeds with a hierarchical interval, the paired
    difference to zero-shot, and (SWEET-RL) to each baseline; all from :mod:`sweet_agent.evaluation.metrics`."""
    all_runs = {m: runs_of(run, split, m) for m in methods}
    rows = []
    for m in methods:
        runs = all_runs[m]
        if not runs:
            continue
        row: dict[str, Any] = {"method": m, "label": LABELS[m], "seeds": len(runs),
                               "episodes": sum(len(r) for r in runs.values())}
        for key, metric in columns.items():
            vals = seed_values(runs, metric)
            row[key] = _cell(hierarchical_bootstrap(vals))
            # SWEET-RL against every baseline; the oracle-credit actor against SWEET-RL (how much better credit buys)
            against = BASELINES if m == "sweet" else ("zero-shot", "sweet") if m == "oracle" else ("zero-shot",)
            others = [b for b in against if b != m and all_runs.get(b)]
            for b in others:
                d = hierarchical_difference(seed_values(all_runs[b], metric), vals, seed=1)
                row[key].setdefault("vs", {})[b] = _cell(d)
        eps = [e for r in runs.values() for e in r.values() if not e.failed]
        row["asked_rate"] = sum(e.questions > 0 for e in eps) / len(eps) if eps else None
        rows.append(row)
    return rows


def validation_table(run: Path, s: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The grid, what each point scored on validation, and what was chosen."""
    L = Layout(run)
    out = []
    for m in grid_methods(s):
        sel = json.loads(L.selection(m).read_text()) if L.selection(m).exists() else None
        for i, point in enumerate(grid_points(s, m)):
            eps = list(_measure(_load(L.val(m, i))).values())
            out.append({"method": m, "point": i, "setting": point, "episodes": len(eps),
                        "tests_passed": mean(metric_values(eps, "tests_passed")),
                        "success": mean(metric_values(eps, "success")),
                        "questions": mean(metric_values(eps, "questions")),
                        "chosen": None if sel is None else sel["chosen"] == i})
    return out


def demo_model(run: Path, s: Mapping[str, Any]) -> Path:
    """The model ``--export-adapter`` ships by default and stage ``val-demo`` plays: SWEET-RL's
    validation-chosen grid point, first training seed (its selection must exist)."""
    return Layout(run).chosen_model("sweet", seeds_of(s)[0], seeds_of(s)[0])


def demo_played_file(run: Path) -> Path:
    """Beside val-demo's output (so its records keep it): the fingerprint of the weights it played."""
    return Layout(run).val("demo").with_name("demo.jsonl.weights.json")


def weights_fingerprint(model: Path) -> str | None:
    """sha256 of a trained model's weights (its LoRA adapter's, else its own), None when absent."""
    from sweet_agent.policies.default_model import sha256_file

    for f in (model / "adapter" / "adapter_model.safetensors", model / "model.safetensors"):
        if f.is_file():
            return sha256_file(f)
    return None


def _jsonl_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of a JSON-lines file that may be appended to while it is read (an interrupted
    last line is skipped; see ``parse_jsonl_lines``); none when it does not exist."""
    if not path.exists():
        return []
    with path.open("rb") as fh:
        return [rec for _, rec in parse_jsonl_lines(fh, str(path), torn_tail=True, error=ValueError)]


def shippable_weights(adapter: Path) -> bytes:
    """A LoRA adapter's weights as ``--export-adapter`` ships them: rounded once to bfloat16, as
    safetensors bytes (the same bytes every time, so their sha256 identifies a shipped copy)."""
    import torch
    from safetensors.torch import load_file, save

    return save({k: v.to(torch.bfloat16) for k, v in load_file(str(adapter / "adapter_model.safetensors")).items()})


def is_shipped(model: Path, shipped: Path | None = None) -> bool | None:
    """Whether the demo's adapter (``shipped``) already holds ``model``'s weights as exported (its
    PROVENANCE's sha256 against :func:`shippable_weights`); None when either side is absent."""
    import hashlib

    prov = (shipped or SHIPPED_ADAPTER) / "PROVENANCE.json"
    if not (model / "adapter" / "adapter_model.safetensors").is_file() or not prov.is_file():
        return None
    return json.loads(prov.read_text()).get("weights_sha256") == hashlib.sha256(
        shippable_weights(model / "adapter")).hexdigest()


def demo_adapter_verdict(run: Path, s: Mapping[str, Any]) -> dict[str, Any] | None:
    """Whether SWEET-RL's validation-chosen policy should replace the demo's adapter. The model
    ``--export-adapter`` would ship (:func:`demo_model`; stage ``val-demo``) and the shipped
    adapter (stage ``val-shipped``) played the same val tasks greedily, and the rule is the
    selection's (mean fraction of tests passed; a tie keeps the shipped adapter). ``validated`` is
    the chosen point's own validation run, beside it: the same model unless it was trained again
    since. ``stale``: the weights val-demo played (:func:`demo_played_file`) are not the model's
    now (trained again after it played; or no fingerprint was written) — then nothing is replaced.
    Where the model's weights are absent (a report written from records alone) the fingerprint
    cannot be checked and is trusted. ``shipped_now``: the demo's adapter already holds these
    weights (:func:`is_shipped`: the verdict was acted on; val-shipped played the one before). None
    until both runs are known."""
    L = Layout(run)
    if not (L.val("shipped").exists() and L.val("demo").exists() and L.selection("sweet").exists()):
        return None
    point = L.chosen("sweet")
    fingerprint = demo_played_file(run)
    played = json.loads(fingerprint.read_text()).get("weights_sha256") if fingerprint.is_file() else None
    now = weights_fingerprint(demo_model(run, s))
    stale = played is None or (now is not None and played != now)
    sides, measured = {}, {}
    for name, path in (("sweet", L.val("demo")), ("shipped", L.val("shipped")), ("validated", L.val("sweet", point))):
        measured[name] = _measure(_load(path)) if path.exists() else {}
        eps = list(measured[name].values())
        sides[name] = {"episodes": len(eps), "tests_passed": mean(metric_values(eps, "tests_passed")),
                       "success": mean(metric_values(eps, "success"))}
    if sides["sweet"]["tests_passed"] is None or sides["shipped"]["tests_passed"] is None:
        return None
    # how far apart on the same tasks (the rule reads the means alone; this says how much a verdict can mean)
    diff = paired_difference(measured["shipped"], measured["sweet"], "tests_passed").to_dict()
    replace = not stale and sides["sweet"]["tests_passed"] > sides["shipped"]["tests_passed"]
    return {"sweet_point": point, **sides, "stale": stale, "weights_sha256": played, "difference": diff,
            "replace": replace, "shipped_now": is_shipped(demo_model(run, s)) if replace else None}


def row_agent_turn(row: Mapping[str, Any]) -> int:
    """A step pair's agent turn (1-based): its ``agent_turn``, else (pair files from before it)
    one more than the agent turns in its prompt. Never the dialogue position ``turn_index``."""
    if isinstance(row.get("agent_turn"), int):
        return row["agent_turn"]
    return 1 + sum(1 for m in row.get("prompt") or [] if isinstance(m, Mapping) and m.get("role") == "assistant")


def critic_choices(run: Path) -> list[dict[str, Any]]:
    """Per pair file and agent turn (1-based; ``turn_index`` beside it is the dialogue position):
    pairs, and how often their labels chose a question over an answer: each seed's critic
    (``pairs/sN.jsonl``) and, beside them, the Monte-Carlo values' own choices (the oracle-credit
    actors' pairs, ``models/oracle/sN/step_pairs.jsonl``, labelled ``oracle-sN``).

    WHY: SWEET-RL's actor learns whatever its pairs prefer; set beside the pairs labelled by the
    values, the table shows where the critic's credit and the values' part (e.g. asking at the
    first turn) before any policy is played. ``chosen`` and ``rejected`` count each side's kinds
    (:data:`PAIR_TURN_KINDS`): what DPO pushes up and down, whatever it is paired with."""
    out = []
    files = [(f, f.name) for f in sorted((run / "pairs").glob("*.jsonl"))]
    files += [(f, f"oracle-{f.parent.name}") for f in sorted((run / "models" / "oracle").glob(f"s*/{ORACLE_PAIRS}"))
              if not f.parent.name.endswith(".tmp")]  # a training still running has written its pairs already
    for f, label in files:
        if not f.name.endswith(".jsonl") or ".tmp" in f.name:  # a stage still running: its file and journal
            continue
        per: dict[int, dict[str, Any]] = {}
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            kinds = [pair_turn_kind(row[side]) for side in ("chosen", "rejected")]
            c = per.setdefault(row_agent_turn(row), {"turn_index": row.get("turn_index"), "pairs": 0,
                                                     "question_vs_answer": 0, "chose_question": 0,
                                                     "chosen": dict.fromkeys(PAIR_TURN_KINDS, 0),
                                                     "rejected": dict.fromkeys(PAIR_TURN_KINDS, 0), "candidates_from": []})
            c["pairs"] += 1
            for side, kind in zip(("chosen", "rejected"), kinds):
                c[side][kind] += 1
            if row.get("candidates_from") and row["candidates_from"] not in c["candidates_from"]:
                c["candidates_from"].append(row["candidates_from"])
            if set(kinds) == {"question", "answer"}:
                c["question_vs_answer"] += 1
                c["chose_question"] += kinds[0] == "question"
        weights = pair_critic_fingerprint(f)
        out += [{"file": label, "agent_turn": t, **c, "critic_fingerprint": weights} for t, c in sorted(per.items())]
    return out


def choices_markdown(choices: Sequence[Mapping[str, Any]]) -> str:
    """:func:`critic_choices` as a table: a row per pair file, a column per agent turn, each cell
    "chose the question in q of n" question-against-answer pairs (all the turn's pairs)."""
    turns = sorted({int(c["agent_turn"]) for c in choices})
    rows: dict[str, dict[str, Any]] = {}
    for c in choices:
        row = rows.setdefault(c["file"], {"cells": {}, "from": [], "critic": c.get("critic_fingerprint")})
        row["cells"][int(c["agent_turn"])] = f"{c['chose_question']} of {c['question_vs_answer']} ({c['pairs']})"
        row["from"] += [x for x in c.get("candidates_from") or [] if x not in row["from"]]

    def name(f: str, critic: str | None) -> str:
        if f.startswith("oracle-"):
            return f"Monte-Carlo values ({f}: the oracle-credit actor's pairs)"
        return f"critic {Path(f).stem} (pairs/{f}" + (f"; critic {critic[:12]}" if critic else "") + ")"

    head = "| step pairs | " + " | ".join(f"agent turn {t}" for t in turns) + " | candidates from |"
    lines = [head, "|" + "---|" * (len(turns) + 2)] + [
        f"| {name(f, r['critic'])} | " + " | ".join(r["cells"].get(t, "–") for t in turns)
        + f" | {', '.join(r['from']) or '?'} |" for f, r in rows.items()]
    return ("### What the step pairs prefer: a question or an answer\n\n" + "\n".join(lines)
            + "\n\nEach cell: the pairs offering a question against an answer in which the label chose the question, "
              "of all such pairs (all the turn's pairs). A critic's pairs are what SWEET-RL's actor of that seed "
              "learns from; the Monte-Carlo values' are the oracle-credit actor's, on the same trajectories' turns.")


def pairs_push_markdown(choices: Sequence[Mapping[str, Any]]) -> str:
    """What each pair set pushes towards, per kind of turn: times chosen minus times rejected, at
    agent turn 1, at the later turns, and in all.

    WHY: DPO raises every chosen turn and lowers every rejected one; a policy conditions on the turn
    only as far as it learns to, so a kind rejected more often than chosen overall can fall at the
    first turn too, even where the first turn's own pairs prefer it (question against answer)."""
    rows: dict[str, dict[str, dict[str, int]]] = {}
    for c in choices:
        if "chosen" not in c:
            continue
        row = rows.setdefault(c["file"], {w: dict.fromkeys(PAIR_TURN_KINDS, 0) for w in ("1", "later", "all")})
        for kind in PAIR_TURN_KINDS:
            net = c["chosen"][kind] - c["rejected"][kind]
            row["1" if int(c["agent_turn"]) == 1 else "later"][kind] += net
            row["all"][kind] += net
    if not rows:
        return ""

    def cell(counts: Mapping[str, int]) -> str:
        return " / ".join(f"{counts[k]:+d}" for k in PAIR_TURN_KINDS)

    lines = ["| step pairs | agent turn 1 | agent turns 2 on | all turns |", "|---|---|---|---|"] + [
        f"| {'Monte-Carlo values (' + f + ')' if f.startswith('oracle-') else 'critic ' + Path(f).stem} | "
        f"{cell(r['1'])} | {cell(r['later'])} | {cell(r['all'])} |" for f, r in rows.items()]
    return ("### What the step pairs push towards: times chosen minus times rejected\n\n" + "\n".join(lines)
            + "\n\nEach cell: question / answer / other (a turn that neither asks nor answers: a draft or a statement), "
              "each kind's times on the chosen side minus its times on the rejected side, over every pair. DPO raises "
              "the chosen turn and lowers the rejected one; a policy tells the turns apart only as far as it learns to.")


def pair_critic_fingerprint(pairs: Path) -> str | None:
    """The fingerprint of the critic that scored a step-pair file (its meta), None when the file
    predates it or has no meta."""
    from sweet_agent.actor.pair_files import PairFileError, read_pair_meta

    try:
        return ((read_pair_meta(pairs).get("settings") or {}).get("critic") or {}).get("fingerprint")
    except PairFileError:
        return None


def critic_mismatches(choices: Sequence[Mapping[str, Any]], agreement: Mapping[str, Any] | None) -> list[str]:
    """Where the critic report scored another critic than the one that made a seed's step pairs
    (``pairs/sN.jsonl`` against the report's ``sweet-sN`` and ``release-sN`` columns): a critic
    trained again after a lost machine. Unknown fingerprints (older files) are no mismatch."""
    made = {Path(c["file"]).stem: c.get("critic_fingerprint") for c in choices}
    out = []
    for col in (agreement or {}).get("scorers", []):
        kind, _, stem = str(col.get("name", "")).partition("-")
        if kind in ("sweet", "release") and made.get(stem) and col.get("fingerprint") \
                and made[stem] != col["fingerprint"]:
            out.append(f"{col['name']} scored critic {col['fingerprint'][:12]}, but pairs/{stem}.jsonl was scored by "
                       f"{made[stem][:12]}")
    return out


def training_budgets(run: Path) -> list[dict[str, Any]]:
    """Every trained model's ``training_budget.json`` (what its optimizer saw), by stage."""
    out = []
    for f in sorted((run / "models").glob("**/training_budget.json")):
        if any(part.endswith(".tmp") for part in f.relative_to(run).parts):
            continue  # a stage still running
        b = json.loads(f.read_text(encoding="utf-8"))
        out.append({"model": str(f.parent.relative_to(run / "models")), **b})
    return out


def dpo_dynamics(run: Path) -> list[dict[str, Any]]:
    """Per finished model trained with DPO (multi-turn DPO, SWEET-RL's actor, the oracle-credit
    actor): what its optimizer did to its pairs, from its log (:func:`training_log`), over the
    first and the second half of its logged steps: the share of pairs whose margin had grown over
    the reference's (``rewards/accuracies``: not whether the policy ranks the chosen turn first)
    and TRL's ``rewards/chosen`` and ``rewards/rejected`` (beta x (log pi - log pi_ref), summed
    over the turn's tokens; multi-turn DPO's over the trajectory's agent tokens), and how many
    logged steps found the chosen side below the starting model. Entries logged while the actor
    still equalled its reference (both rewards exactly 0: TRL counts those ties as wrong) are left
    out of the means.

    WHY: DPO can widen the margin by making both sides less likely, the rejected faster; a
    policy whose chosen turns (e.g. questions) lost likelihood does not start playing them, so
    whether an actor learned its pairs and whether it learned to play them are different
    questions. TRL logs a step's metrics from its forward pass, before the step's update: for a
    one-epoch run each logged pair is one the optimizer has not trained on yet."""
    out = []
    for b in training_budgets(run):  # the finished models (a stage still running is left out there)
        model = run / "models" / b["model"]
        log = [h for h in (training_log(model) or []) if "rewards/chosen" in h and "rewards/rejected" in h]
        log = [h for h in log if float(h["rewards/chosen"]) != 0 or float(h["rewards/rejected"]) != 0]
        if not log:
            continue
        half = (len(log) + 1) // 2

        def means(rows: list[dict[str, Any]]) -> dict[str, float]:
            return {k: sum(float(r[f"rewards/{k}"]) for r in rows) / len(rows)
                    for k in ("accuracies", "chosen", "rejected", "margins") if all(f"rewards/{k}" in r for r in rows)}

        out.append({"model": str(model.relative_to(run / "models")), "logged_steps": len(log),
                    "first_half": means(log[:half]), "second_half": means(log[half:]) if log[half:] else None,
                    "chosen_fell": sum(float(r["rewards/chosen"]) < 0 for r in log)})
    return out


def dpo_dynamics_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    def cell(d: Mapping[str, float] | None, k: str, pct: bool = False) -> str:
        if not d or k not in d:
            return "n/a"
        return f"{100 * d[k]:.0f}" if pct else f"{d[k]:+.2f}"

    return ("### What DPO did to its pairs (each model's training log)\n\n| model | logged steps | pairs whose "
            "margin grew % | rewards/chosen | rewards/rejected | steps whose chosen fell |\n|---|---|---|---|---|---|\n"
            + "\n".join(f"| {r['model']} | {r['logged_steps']} | {cell(r['first_half'], 'accuracies', True)} → "
                        f"{cell(r['second_half'], 'accuracies', True)} | {cell(r['first_half'], 'chosen')} → "
                        f"{cell(r['second_half'], 'chosen')} | {cell(r['first_half'], 'rejected')} → "
                        f"{cell(r['second_half'], 'rejected')} | {r['chosen_fell']} of {r['logged_steps']} |"
                        for r in rows)
            + "\n\nMeans over the first half of the logged steps → the second half. TRL logs a step's metrics from "
              "its forward pass, before the step's update, so in a one-epoch run they are on pairs the optimizer "
              "has not trained on yet (other pairs of the same turn, which share candidates, may have been). "
              "Entries logged while the actor still equalled its reference (both rewards 0) are left out. Pairs "
              "whose margin grew: rewards/accuracies, the share of pairs whose chosen-minus-rejected log-ratio "
              "is above the reference's (not whether the policy ranks the chosen turn first). rewards/chosen and "
              "rewards/rejected are beta × (log π − log π_ref) summed over the turn's tokens (multi-turn DPO: the "
              "trajectory's agent tokens): below 0, the actor "
              "made that side less likely than the model it started from. A margin that grows while the chosen side "
              "falls moves probability away from the rejected turns, not necessarily towards the chosen ones.")


def offline_summary(path: Path) -> dict[str, Any] | None:
    """What the behaviour policy collected: episodes with a prefilled question vs without, and
    how many episodes had which agent turns prefilled (``"1,2"``: the first two; ``""``: none)."""
    from sweet_agent.policies.exploration import prefilled_agent_turns

    recs = list(_load(path).values())
    if not recs:
        return None
    out: dict[str, Any] = {"episodes": len(recs), "prefilled_agent_turns": {}}
    for r in recs:
        key = ",".join(map(str, prefilled_agent_turns(r)))
        out["prefilled_agent_turns"][key] = out["prefilled_agent_turns"].get(key, 0) + 1
    for name, group in (("explored", [r for r in recs if record_prefilled_turns(r)]),
                        ("own", [r for r in recs if not record_prefilled_turns(r)])):
        stats = [episode_metrics(r) for r in group]
        out[name] = {"episodes": len(group)} | ({
            key: mean(metric_values(stats, metric)) for key, metric in COLUMNS.items()} if group else {})
    return out


def _fmt_num(x: float | None, pct: bool) -> str:
    return "n/a" if x is None else ("{:.1f}" if pct else "{:.2f}").format((100 if pct else 1) * x)


def _fmt(cell: dict[str, Any], pct: bool, vs: str | None = "zero-shot") -> str:
    if cell["mean"] is None:  # no episode has this metric (e.g. ungraded)
        return "n/a"
    text = f"{_fmt_num(cell['mean'], pct)} [{_fmt_num(cell['ci95'][0], pct)}, {_fmt_num(cell['ci95'][1], pct)}]"
    d = (cell.get("vs") or {}).get(vs) if vs else None
    if d and d["mean"] is not None:
        sig = "*" if d["ci95"][0] > 0 or d["ci95"][1] < 0 else ""
        text += f" (Δ {'+' if d['mean'] >= 0 else ''}{_fmt_num(d['mean'], pct)}{sig})"
    return text


_HEAD = {"success": ("success %", True), "tests": ("tests passed %", True), "similarity": ("similarity", False),
         "turns": ("turns", False), "questions": ("questions / episode", False)}


def markdown(rows: list[dict[str, Any]], title: str, columns: Mapping[str, str] = COLUMNS) -> str:
    lines = [f"### {title}", "", "| method | seeds | episodes | " + " | ".join(_HEAD[c][0] for c in columns) + " |",
             "|---" * (3 + len(columns)) + "|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['seeds']} | {r['episodes']} | "
                     + " | ".join(_fmt(r[c], _HEAD[c][1]) for c in columns) + " |")
    lines += ["", "Mean over training seeds [95 % hierarchical bootstrap CI: seeds, then tasks]; (Δ paired "
              "difference to zero-shot on the same tasks, * = its 95 % CI excludes 0)."]
    sweet = next((r for r in rows if r["method"] == "sweet"), None)
    if sweet and any(sweet[c].get("vs") for c in columns):
        lines += ["", "SWEET-RL minus each baseline (same tasks; each side's seeds resampled):", "",
                  "| baseline | " + " | ".join(_HEAD[c][0] for c in columns) + " |", "|---" * (1 + len(columns)) + "|"]
        for b in BASELINES:
            cells = [(sweet[c].get("vs") or {}).get(b) for c in columns]
            if any(cells):
                lines.append(f"| {LABELS[b]} | " + " | ".join(
                    "n/a" if not d or d["mean"] is None else
                    f"{_fmt_num(d['mean'], _HEAD[c][1])} [{_fmt_num(d['ci95'][0], _HEAD[c][1])}, "
                    f"{_fmt_num(d['ci95'][1], _HEAD[c][1])}]" + ("*" if d["ci95"][0] > 0 or d["ci95"][1] < 0 else "")
                    for c, d in zip(columns, cells)) + " |")
    oracle = next((r for r in rows if r["method"] == "oracle"), None)
    if oracle and any((oracle[c].get("vs") or {}).get("sweet") for c in columns):
        cells = [(oracle[c].get("vs") or {}).get("sweet") for c in columns]
        lines += ["", "Oracle-credit actor minus SWEET-RL (the same step-level DPO with Monte-Carlo credit): " + "; ".join(
            f"{_HEAD[c][0]} " + ("n/a" if not d or d["mean"] is None else
                                 f"{_fmt_num(d['mean'], _HEAD[c][1])} [{_fmt_num(d['ci95'][0], _HEAD[c][1])}, "
                                 f"{_fmt_num(d['ci95'][1], _HEAD[c][1])}]"
                                 + ("*" if d["ci95"][0] > 0 or d["ci95"][1] < 0 else ""))
            for c, d in zip(columns, cells)) + "."]
    return "\n".join(lines)


def critic_agreement(path: Path) -> dict[str, Any] | None:
    """The critic report of the run (``sweet-agent critic-report``'s JSON), or None before it ran."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def mc_prefers(run: Path) -> dict[str, dict[str, Any]]:
    """``{values file: sweet-agent critic-report's mc_preferences}`` for each finished Monte-Carlo
    stage of the run: which way its values point between going on and answering, per agent turn,
    known as soon as the values are (no critic involved)."""
    from sweet_agent.actor.critic_report import mc_preferences
    from sweet_agent.actor.mc_values import MCValuesError, read_values_file

    out = {}
    for name in ("heldout", "train"):
        try:
            rows, _ = read_values_file(Layout(run).mc / f"{name}.jsonl")
        except MCValuesError:
            continue
        out[name] = mc_preferences(rows)
    return out


def mc_prefers_markdown(prefers: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per values file and agent turn: the ask-answer pairs in which going on is worth more /
    less / the same, and the mean value of the candidates that go on and of those that answer."""
    lines = ["### What the Monte-Carlo values prefer (no critic involved)", "",
             "| values | agent turn | turns | ask-answer pairs | going on worth more | answering worth more | same "
             "| value going on (% tests) | value answering (% tests) |", "|---" * 9 + "|"]
    for name, table in prefers.items():
        for k, v in table.items():
            mean = v["mean_value"]
            lines.append(f"| {name} | {'all' if k == 'all' else k} | {v['turns']} | {v['ask_answer_pairs']} | "
                         f"{v['goes_on_higher']} | {v['answer_higher']} | {v['ties']} | "
                         f"{_fmt_num(mean['goes_on'], True)} ({v['candidates']['goes_on']}) | "
                         f"{_fmt_num(mean['answers'], True)} ({v['candidates']['answers']}) |")
    lines += ["", "Distinct candidate texts of each turn with a value (a value: its completions' mean % of tests passed); "
              "an ask-answer pair is one candidate that goes on (a question, or anything but an answer) against one "
              "that answers (`I WANT TO ANSWER:`); (candidates)."]
    return "\n".join(lines)


def critic_agreement_markdown(rep: Mapping[str, Any]) -> str:
    """One row per step score, one column per agent turn (and all): agreement with the Monte-Carlo
    values on held-out pairs [95 % interval] (pairs)."""
    turns = sorted({k for c in rep["scorers"] for k in c["by_agent_turn"]}, key=lambda k: (k == "all", str(k)))
    lines = [f"### The critic's step-level accuracy ({rep['turns']} held-out agent turns, "
             f"{rep.get('rollouts_per_candidate')} completions per candidate; chance 0.5)", "",
             "| step score | " + " | ".join(_agreement_column(rep, k) for k in turns) + " |",
             "|---" * (1 + len(turns)) + "|"]
    for c in rep["scorers"]:
        cells = []
        for k in turns:
            a = c["by_agent_turn"].get(k)
            if not a or not a["pairs"]:
                cells.append("–")
                continue
            iv = a.get("ci") or [None, None]
            cells.append(f"{_fmt_num(a['agreement'], True)} [{_fmt_num(iv[0], True)}, {_fmt_num(iv[1], True)}] "
                         f"({a['pairs']})")
        lines.append(f"| {c['name']} ({c['kind']}) | " + " | ".join(cells) + " |")
    lines += ["", "Agreement % of the step score's order of two candidates of one turn with their Monte-Carlo values "
              f"(held-out tasks; [{rep['ci']['about']}]; (pairs))."]
    few = [k for k in turns if k != "all" and 0 < _turns_at(rep, k) < FEW_TURNS]
    if few and rep["ci"].get("method") == "turn-bootstrap":
        which = f"Agent turn {few[0]} has" if len(few) == 1 else f"Agent turns {', '.join(few)} have"
        lines[-1] += (f" {which} fewer than {FEW_TURNS} held-out turns each: an interval resampling so few turns is "
                      "a rough guide; the all-turns column is the one to read.")
    return "\n".join(lines)


def label_noise_markdown(rep: Mapping[str, Any]) -> str:
    """The label check (``critic-report`` on values with two or more completions per candidate):
    how often two independent one-completion labels agree, what that makes a one-completion
    label's accuracy, and per step score its agreement with one-completion labels, corrected for
    that noise, and with the pooled labels."""
    rel = rep["label_reliability"]
    lines = [f"### How noisy the Monte-Carlo labels are ({rep['turns']} held-out agent turns, "
             f"{rep.get('completions_per_candidate')} completions per going-on candidate)", "",
             "| agent turn | pairs | two labels agree | one label right (c) |", "|---" * 4 + "|"]
    for k, v in rel.items():
        if v["pairs"]:
            iv = v.get("ci") or [None, None]
            lines.append(f"| {k} | {v['pairs']} | {_fmt_num(v['agreement'], True)} [{_fmt_num(iv[0], True)}, "
                         f"{_fmt_num(iv[1], True)}] | {_fmt_num(v['label_accuracy'], True)} |")
    lines += ["", "Pairs with a going-on candidate whose first and second completions both order them; c = (1 + "
              "sqrt(2a - 1)) / 2 under symmetric, independent noise: a score that knew every true ordering would "
              "agree with one-completion labels on about c of the pairs.", "",
              "| step score | one-completion labels (the k = 1 report) | corrected for the noise | pooled labels |",
              "|---" * 4 + "|"]
    for c in rep["scorers"]:
        f, a = c.get("first_completion") or {}, c["by_agent_turn"].get("all") or {}
        if not f.get("pairs"):
            continue
        fixed = "–" if f.get("corrected") is None else (
            f"{_fmt_num(f['corrected'], True)} [{_fmt_num(f['corrected_ci'][0], True)}, "
            f"{_fmt_num(f['corrected_ci'][1], True)}]")
        pooled = "–" if not a.get("pairs") else (
            f"{_fmt_num(a['agreement'], True)} [{_fmt_num(a['ci'][0], True)}, {_fmt_num(a['ci'][1], True)}] "
            f"({a['pairs']})")
        lines.append(f"| {c['name']} ({c['kind']}) | {_fmt_num(f['agreement'], True)} [{_fmt_num(f['ci'][0], True)}, "
                     f"{_fmt_num(f['ci'][1], True)}] ({f['pairs']}) | {fixed} | {pooled} |")
    lines += ["", f"All agent turns, held-out tasks, {rep['ci']['about']}. Corrected: pairs of two answers (exact labels) "
              "as observed, the others (obs − (1 − c)) / (2c − 1) with the all-turns c on the pairs the score orders; "
              "its interval from the same resampling or the mapped Wilson one (c's own uncertainty not in it). c errs "
              "high, so the correction errs small; it rescales and cannot move an interval that holds chance off it."]
    return "\n".join(lines)


#: Below this many held-out turns an agent turn's resampled interval is flagged as a rough guide.
FEW_TURNS = 10


def _turns_at(rep: Mapping[str, Any], k: str) -> int:
    return int((rep.get("values_by_agent_turn") or {}).get(k, {}).get("turns") or 0)


def _agreement_column(rep: Mapping[str, Any], k: str) -> str:
    name = "all turns" if k == "all" else f"agent turn {k}"
    n = _turns_at(rep, k)
    return f"{name} ({n} turns)" if n else name


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    names = [r["label"] for r in rows]
    for ax, (key, lab, k) in zip(axes, [("tests", "tests passed %", 100), ("success", "success %", 100),
                                         ("questions", "questions / episode", 1)]):
        means = [k * (r[key]["mean"] or 0) for r in rows]
        err = [[k * ((r[key]["mean"] or 0) - (r[key]["ci95"][0] or 0)) for r in rows],
               [k * ((r[key]["ci95"][1] or 0) - (r[key]["mean"] or 0)) for r in rows]]
        ax.bar(range(len(rows)), means, yerr=err, capsize=4, color="#4c72b0")
        ax.set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=8)
        ax.set_title(lab)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110)
    plt.close(fig)
    write_bytes_atomic(path, png.getvalue())


def write_report(run: Path, settings: dict) -> dict[str, Any]:
    test = method_table(run, "test")
    collab = method_table(run, "collab")
    emb = method_table(run, "embedded")
    agreement = critic_agreement(Layout(run).critic_report)
    labels = critic_agreement(Layout(run).critic_report_labels)
    prefers = mc_prefers(run)
    front = method_table(run, "frontend", FRONTEND_METHODS, FRONTEND_COLUMNS)
    val = validation_table(run, settings)
    timings = _jsonl_entries(run / "timings.jsonl")
    load = os.getloadavg()
    offline = offline_summary(run / "offline.jsonl")
    choices = critic_choices(run)
    budgets = training_budgets(run)
    dynamics = dpo_dynamics(run)
    gone = departures(settings) if all(k in settings for k in PAPER_PAIRS) else {}
    report = {"settings": settings, "departures": gone, "grid": {m: grid_points(settings, m) for m in GRID},
              "validation": val, "offline_data": offline, "test": test, "collab": collab, "embedded": emb,
              "frontend": front, "critic_agreement": agreement, "critic_agreement_labels": labels,
              "mc_prefers": prefers,
              "critic_choices": choices, "critic_mismatches": critic_mismatches(choices, agreement), "budgets": budgets,
              "dpo_dynamics": dynamics, "demo_adapter": demo_adapter_verdict(run, settings),
              "timings": timings, "loadavg_at_report": [round(x, 2) for x in load],
              "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    write_text_atomic(run / "results.json", json.dumps(report, indent=2, default=str))
    s = settings
    by_design = [f"the CPU's {s['num_candidates']} candidates per agent turn (the paper 16)",
                 "the question openers among them"]
    if s.get("pair_trajectories", 1.0) < 1:  # the release's share, not a departure from it (departures())
        by_design.append(f"every agent turn of {100 * s['pair_trajectories']:g} % of the trajectories paired (the "
                         "release's share; the paper's text pairs every trajectory)")
    md = [f"Profile: {s.get('profile', 'unnamed')}. SWEET-RL's step pairs and actor loss depart from the paper and its "
          "release in: " + ("; ".join(gone.values()) if gone else "nothing but " + ", ".join(by_design[:-1])
                            + " and " + by_design[-1]) + " (docs/sweet-rl.md lists every difference)."]
    md += [markdown(test, f"Test {s['test_tasks']} (tasks {s['test_start']}–{s['test_start'] + s['test_episodes'] - 1}, "
                         f"training seeds {s['train_seeds']})")]
    if collab and "collab_test_tasks" in s:
        md.append(markdown(collab, f"Test {s['collab_test_tasks']} (tasks {s['collab_test_start']}–"
                                   f"{s['collab_test_start'] + s['collab_test_episodes'] - 1}, one detail each)"))
    if emb:
        md.append(markdown(emb, f"Embedded ColBench {s['embedded_tasks']} ({s['embedded_episodes']} tasks)"))
    if agreement:
        md.append(critic_agreement_markdown(agreement))
        wrong = report["critic_mismatches"]
        if wrong:
            md.append("**The critic report did not score the critics that made SWEET-RL's step pairs** (trained again "
                      "in between; its agreement is not theirs): " + "; ".join(wrong) + ".")
    if labels and labels.get("label_reliability"):
        md.append(label_noise_markdown(labels))
    if prefers:
        md.append(mc_prefers_markdown(prefers))
    if front:
        md.append(markdown(front, f"Frontend arm {s['frontend_test_tasks']} ({s['frontend_test_episodes']} tasks, "
                                  "offline frontend simulator, weight-free similarity)", FRONTEND_COLUMNS))
    if val:
        md.append("### Validation (" + s["val_tasks"] + f", {s['val_episodes']} tasks, training seed "
                  f"{seeds_of(s)[0]}): the grid and the choice\n\n| method | setting | episodes | tests passed % | "
                  "success % | questions / episode | chosen |\n|---|---|---|---|---|---|---|\n" + "\n".join(
                      f"| {LABELS[v['method']]} | {', '.join(f'{k}={x:g}' for k, x in v['setting'].items())} | "
                      f"{v['episodes']} | {_fmt_num(v['tests_passed'], True)} | {_fmt_num(v['success'], True)} | "
                      f"{_fmt_num(v['questions'], False)} | {'yes' if v['chosen'] else ''} |" for v in val))
    demo = report["demo_adapter"]
    if demo and demo["stale"]:
        md.append("Demo adapter (`make demo`): **no verdict**: stage val-demo played other weights than the model "
                  f"`--export-adapter` ships now (it was trained again since, or no fingerprint was written); delete "
                  f"{Layout(run).val('demo').relative_to(run)} and run the stage again.")
    elif demo:
        md.append(f"Demo adapter (`make demo`): on the same {demo['sweet']['episodes']} validation tasks the model "
                  "`--export-adapter` ships (SWEET-RL's chosen grid point, first training seed; stage val-demo) passes "
                  f"{_fmt_num(demo['sweet']['tests_passed'], True)} % of the tests "
                  f"({_fmt_num(demo['sweet']['success'], True)} % success; its validation run "
                  f"{_fmt_num(demo['validated']['tests_passed'], True)} %), the shipped adapter "
                  f"{_fmt_num(demo['shipped']['tests_passed'], True)} % ({_fmt_num(demo['shipped']['success'], True)} %; "
                  f"paired difference {_fmt_num(demo['difference']['mean'], True)} [{_fmt_num(demo['difference']['low'], True)}, "
                  f"{_fmt_num(demo['difference']['high'], True)}] over {demo['difference']['n']} tasks): "
                  + (f"replaced: examples/adapters/{SHIPPED_ADAPTER.name} now holds these weights (the shipped "
                     "adapter above is the one they replaced)." if demo["replace"] and demo.get("shipped_now") else
                     "**replace it** (`--export-adapter DIR`, then copy DIR over examples/adapters/"
                     f"{SHIPPED_ADAPTER.name})." if demo["replace"] else "keep the shipped adapter (a tie keeps it)."))
    elif Layout(run).val("shipped").exists() and Layout(run).selection("sweet").exists():
        md.append("Demo adapter (`make demo`): pending: stage val-demo (the weights `--export-adapter` ships, on the "
                  "val tasks the shipped adapter played) has not finished.")
    if choices:
        md.append(choices_markdown(choices))
        if push := pairs_push_markdown(choices):
            md.append(push)
    if budgets:
        md.append("Training budgets (training_budget.json of each model: epochs over its own data, samples seen, "
                  "optimizer steps, learning rate, arithmetic):\n\n| model | rows | epochs | samples seen | steps | lr | "
                  "precision |\n|---|---|---|---|---|---|---|\n" + "\n".join(
                      f"| {b['model']} | {b['train_rows']} {b['unit']} | {b['epochs']:.2f} | {b['samples_seen']} | "
                      f"{b['optimizer_steps']} | {b['learning_rate']:g} | {b.get('precision', 'fp32')} |"
                      for b in budgets))
    if dynamics:
        md.append(dpo_dynamics_markdown(dynamics))
    if offline:
        md.append("Offline data (behaviour policy, " + f"{offline['episodes']} episodes): " + "; ".join(
            f"{name} turns ({offline[name]['episodes']} episodes): tests passed {100 * offline[name]['tests']:.1f} %, "
            f"success {100 * offline[name]['success']:.1f} %" for name in ("explored", "own")
            if offline[name]["episodes"]) + " (explored = some agent turn prefilled with a question opener); "
            "episodes by prefilled agent turns: " + ", ".join(
                f"{k or 'none'}: {n}" for k, n in sorted(offline.get("prefilled_agent_turns", {}).items())) + ".")
    times = stage_times(timings)
    stopped = nothing_to_train(run, {k for k, v in times.items() if v["done"]})  # a stage done later has its timing
    if stopped:
        md.append("**Stages that found nothing to train on** (their method's rows are missing above, and the stages "
                  "after them did not run): " + "; ".join(f"{k}: {v}" for k, v in sorted(stopped.items())) + ".")
    md.append("Stage times (s, summed over the sittings a stage ran in): " + ", ".join(
        f"{k} {v['seconds']:.0f}" + (f" ({v['sittings']} sittings)" if v["sittings"] > 1 else "")
        + ("" if v["done"] else " (not done)") for k, v in times.items()))
    md.append(f"Load average when written: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} ({os.cpu_count()} cores).")
    write_text_atomic(run / "results.md", "\n\n".join(md) + "\n")
    if test:
        try:
            plot(test, run / "results.png", f"test {s['test_tasks']}: mean over seeds and 95 % hierarchical CI")
        except Exception as exc:  # noqa: BLE001 - a plot must not stop the benchmark
            say(f"! plot failed: {exc}")
    return report


# ------------------------------------------------------------------------------ the demo's adapter
def export_adapter(run: Path, out: Path, method: str = "sweet", seed: int | None = None) -> dict[str, Any]:
    """Copy the LoRA adapter of ``method`` (training seed ``seed``, default the first: the
    validation-chosen grid point's own model) out of a run directory as a small, shippable PEFT
    folder: weights in bfloat16 (~9 MB for the default 0.5B model at r 8), no tokenizer (its base
    has it), and ``PROVENANCE.json`` saying what made it — the benchmark command line of the
    training stage, the code commit, the grid point and its validation numbers, the run's
    settings and the weights' sha256. Refuses a run whose selection for ``method`` is missing.
    Written to a temporary folder and renamed, so ``out`` is whole or absent."""
    import hashlib

    s = json.loads((run / "settings.json").read_text())
    seed = seeds_of(s)[0] if seed is None else seed
    L = Layout(run)
    if not L.selection(method).exists():
        raise SystemExit(f"error: {run} has no selection for {method} yet ({L.selection(method)}); run the benchmark "
                         "until its validation stages are done")
    sel = json.loads(L.selection(method).read_text())
    point = sel["chosen"]
    model = L.chosen_model(method, seed, seeds_of(s)[0])
    adapter = model / "adapter"
    if not (adapter / "adapter_config.json").is_file():
        raise SystemExit(f"error: {model} holds no LoRA adapter (adapter/adapter_config.json)")
    stage = f"train-{method}-{model.name}"
    log = run / "logs" / f"{stage}.log"
    # the sitting that finished the training: its command line (the log's last; earlier sittings may have run
    # from another clone) and its commit (timings.jsonl; a run without per-sitting commits: RUN.commit)
    command = next((line[2:].strip() for line in reversed(log.read_text(encoding="utf-8").splitlines())
                    if line.startswith("$ ")), None) if log.exists() else None
    timings = run / "timings.jsonl"
    done = [t for t in _jsonl_entries(timings)
            if t.get("stage") == stage and t.get("ended", "done") == "done" and t.get("commit")]
    commit_file = run.parent / f"{run.name}.commit"
    commit = done[-1]["commit"] if done else commit_file.read_text().strip() if commit_file.exists() else None
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "adapter_model.safetensors").write_bytes(shippable_weights(adapter))
    cfg = json.loads((adapter / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = s["model"]  # "default": found on any machine (policies.checkpoints)
    (tmp / "adapter_config.json").write_text(json.dumps(cfg, indent=2))
    blob = (tmp / "adapter_model.safetensors").read_bytes()
    val = next((v for v in sel["val"] if v["point"] == point), {})
    # val-demo plays SWEET-RL's first seed's model, and its numbers are these weights' only if it played them
    demo = demo_adapter_verdict(run, s) if method == "sweet" and seed == seeds_of(s)[0] else None
    info = {"method": LABELS[method], "training_seed": seed, "grid_point": grid_points(s, method)[point],
            "validation": {k: val.get(k) for k in ("episodes", "tests_passed", "success")},
            # these very weights on the same val tasks (stage val-demo), if played: the validation above is of
            # the grid point's model when it was chosen, which a model trained again since need not repeat
            "validation_of_these_weights": demo["sweet"] if demo and not demo["stale"] else None,
            "selection_rule": sel.get("rule"), "stage": stage, "command": command,
            "commit": commit,
            "settings": s, "weights_sha256": hashlib.sha256(blob).hexdigest(), "weights_bytes": len(blob),
            "dtype": "bfloat16 (trained in float32; rounded once for shipping)",
            "summary": f"{LABELS[method]}, training seed {seed}, "
                       + ", ".join(f"{k} {v:g}" for k, v in grid_points(s, method)[point].items())
                       + " (chosen on validation)",
            "reproduce": f"python benchmarks/bench_learning.py --run-dir RUN && python benchmarks/bench_learning.py "
                         f"--run-dir RUN --export-adapter {out}"}
    (tmp / "PROVENANCE.json").write_text(json.dumps(info, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return info


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run-dir", default=None,
                    help="where every stage writes (default: runs/learning, runs/learning-<profile> for other profiles)")
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES))
    ap.add_argument("--jobs", type=int, default=2, help="stages run at once (default: %(default)s)")
    ap.add_argument("--only", default=None, help="comma-separated stage names (their missing deps are not run)")
    ap.add_argument("--report-only", action="store_true",
                    help="just rewrite the report from what exists (and, with --records, the records; a running "
                         "benchmark may go on beside it)")
    ap.add_argument("--list", action="store_true", help="list stages and whether they are done")
    ap.add_argument("--stage-start", choices=("forkserver", "subprocess"), default="forkserver",
                    help="how sweet-agent stages start: forked from a process that imported torch/transformers/TRL "
                         "once (default), or as a fresh `python -m sweet_agent.cli` each (not a protocol setting: "
                         "the same commands either way)")
    ap.add_argument("--weights", metavar="DIR", default=None,
                    help="a folder outside the run's clone where the weights the records leave out are kept while a "
                         "stage still needs them (finished models, each unfinished training stage's newest "
                         "checkpoint, each with a sha256 manifest), and restored from on a fresh machine")
    ap.add_argument("--records", metavar="DIR", default=None,
                    help="a folder to commit that keeps the run's records, weights aside: put back into the run "
                         "directory first where missing, saved again after every finished stage (a fresh machine "
                         "continues the run from it; a training stage whose model a pending stage needs trains again)")
    ap.add_argument("--export-adapter", metavar="DIR", default=None,
                    help="write SWEET-RL's validation-chosen LoRA adapter (first training seed) to DIR as a small "
                         "shippable folder with its PROVENANCE.json (what `make demo` plays), then exit")
    for key, val in PROFILES["full"].items():
        if key != "profile":
            ap.add_argument("--" + key.replace("_", "-"), type=_flag_bool if isinstance(val, bool) else type(val),
                            default=None, help=f"(full: {val!r})")
    args = ap.parse_args(argv)
    check_profiles()
    s = dict(PROFILES[args.profile])
    s.update({k: getattr(args, k) for k in s if k != "profile" and getattr(args, k, None) is not None})
    check_grid(s)
    if s["train_precision"] not in PRECISIONS:
        print(f"error: --train-precision {s['train_precision']!r}: use one of {', '.join(PRECISIONS)}", file=sys.stderr)
        return 2
    if s["model"] != "default" and Path(s["model"]).expanduser().exists():
        # every stage runs from the repository root: a local model is named by its absolute path
        s["model"] = str(Path(s["model"]).expanduser().resolve())
    own = set(departures(PROFILES[args.profile]))
    if set(departures(s)) - own:  # a flag made this run depart: its name says so
        s["profile"] = f"{args.profile}-departs"
        print(f"note: this run departs from the paper's SWEET-RL in: {'; '.join(departures(s).values())}; its profile is "
              f"recorded as {s['profile']!r} and the report says so", file=sys.stderr)
    run = Path(args.run_dir or ("runs/learning" if args.profile == "full" else f"runs/learning-{args.profile}"))
    run.mkdir(parents=True, exist_ok=True)
    settings_file = run / "settings.json"
    kept = Path(args.records) / "settings.json.gz" if args.records else None
    if kept is not None and kept.is_file() and not settings_file.exists():  # a run continued from its records
        write_text_atomic(settings_file, gzip.decompress(kept.read_bytes()).decode("utf-8"))
    old = json.loads(settings_file.read_text()) if settings_file.exists() else None
    for key, legacy in LEGACY_SETTINGS.items() if old is not None else ():
        if key not in old:
            old[key] = legacy(old)
        if getattr(args, key) is None:
            s[key] = old[key]  # a resumed run keeps what it ran with (the candidate backend too)
    if old is None or args.candidate_server is not None:
        s["candidate_server"] = resolve_candidate_server(s)
    # (a resumed run keeps its backend; it needs the bindings only while a step-pair stage is still to run: below)
    if old is not None:
        retired = [k for k in RETIRED_SETTINGS if k in old]
        if retired:
            print(f"error: {run} was made by the protocol's first version (settings {', '.join(retired)} are gone: step "
                  "budgets, agent turns 1-2 paired); report or resume it from the commit it ran from "
                  f"({run.parent / (run.name + '.commit')} or benchmarks/results/learning/commit.txt); use another "
                  "--run-dir for this version", file=sys.stderr)
            return 2
        if old != s:
            diff = {k: (old.get(k), s.get(k)) for k in set(old) | set(s) if old.get(k) != s.get(k)}
            print(f"error: {run} was made with other settings {diff}; use another --run-dir", file=sys.stderr)
            return 2
    else:
        write_text_atomic(settings_file, json.dumps(s, indent=2))
    stages = build_stages(s, run)
    global WEIGHTS
    WEIGHTS = Path(args.weights).resolve() if args.weights else None
    if WEIGHTS is not None and (problem := weights_owner(run, WEIGHTS)):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if WEIGHTS is not None and (back := restore_weights(stages, WEIGHTS, run)):
        print(f"weights: {', '.join(back)} restored from {WEIGHTS}", file=sys.stderr)
    if args.records:
        global RECORDS
        RECORDS = Path(args.records).resolve()
        if RECORDS.is_dir():
            restored, redo = restore_records(stages, RECORDS, run)
            if restored:  # a restored selection narrows what the first seed's stages read: restore against that
                stages = build_stages(s, run)
                again, redo = restore_records(stages, RECORDS, run)
                restored += again
            if restored:
                print(f"records: {len(restored)} file(s) restored from {RECORDS}"
                      + (f"; trains again (weights are not kept): {', '.join(redo)}" if redo else ""), file=sys.stderr)
        if not (args.list or args.report_only):
            RECORDS.mkdir(parents=True, exist_ok=True)
    if s["candidate_server"] == "llama" and not (args.list or args.report_only) and any(
            st.extra.get("candidates") and not st.done() for st in stages.values()):
        resolve_candidate_server(s)  # one line if the bindings are gone
    if args.export_adapter:
        info = export_adapter(run, Path(args.export_adapter))
        print(f"{args.export_adapter}: {info['summary']}; {info['weights_bytes'] / 1e6:.1f} MB of weights "
              f"(sha256 {info['weights_sha256'][:12]}), validation tests passed {_fmt_num(info['validation']['tests_passed'], True)} %")
        demo = demo_adapter_verdict(run, s)
        print("against the shipped demo adapter: " + (
            "not measured (stages val-shipped and val-demo have not both run)" if demo is None else
            "no verdict: val-demo played other weights than these (run it again)" if demo["stale"] else
            f"these weights {_fmt_num(demo['sweet']['tests_passed'], True)} % (stage val-demo), the shipped adapter "
            f"{_fmt_num(demo['shipped']['tests_passed'], True)} % on the same validation tasks: "
            + (("better; the demo's adapter already holds these weights" if demo.get("shipped_now") else
                "better, replace it") if demo["replace"] else "not better, keep the shipped adapter")))
        return 0
    if args.list:
        for st in sorted(stages.values(), key=lambda x: -x.priority):
            print(f"{'done' if st.done() else '    '}  {st.name:<28} <- {', '.join(st.deps) or '-'}")
        return 0
    if not args.report_only:
        only = set(args.only.split(",")) if args.only else None
        if only and (unknown := only - set(stages)):
            print(f"error: unknown stages {sorted(unknown)}; see --list", file=sys.stderr)
            return 2
        global _JOBS, STAGE_START
        _JOBS = max(1, args.jobs)
        STAGE_START = args.stage_start
        if STAGE_START == "forkserver":  # the server's imports read what the stages get (and so does a restart of it)
            os.environ.update(STAGE_ENV)
            ensure_running()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, request_stop)
        run_all(stages, run, _JOBS, only, s)
        if STOP.is_set():
            try:
                write_report(run, s)
            except Exception as exc:  # noqa: BLE001 - partial results; the stages are what matters
                say(f"! report not written: {type(exc).__name__}: {exc}")
            return 130
    report = write_report(run, s)
    if RECORDS is not None and args.report_only:  # what exists now, running stages' progress included
        print(f"records: {len(save_records(stages, run, RECORDS))} file(s) saved to {RECORDS}", file=sys.stderr)
    if WEIGHTS is not None and args.report_only:
        _keep_weights(stages, run)
    print((run / "results.md").read_text())
    return 0 if report["test"] else 1


if __name__ == "__main__":
    sys.exit(main())
