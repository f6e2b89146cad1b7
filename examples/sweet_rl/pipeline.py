"""Stages of the SWEET-RL example pipeline, shared by the scripts in this folder.

Every stage runs a ``sweet-agent`` command in a subprocess (optionally under ``accelerate
launch`` for multi-GPU training), writes its result into ``--workdir`` and is skipped when that
result already exists (``--force`` redoes it), so the per-stage scripts and the end-to-end
scripts share work: run_rft.py after run_sweet.py reuses the offline data and the zero-shot
evaluation.

Scales (``--scale``): ``cpu`` (default) finishes on a 2-core CPU in well under an hour with
Qwen2.5-Coder-0.5B-Instruct + LoRA on a few embedded tasks; ``paper`` selects the paper's
settings (Llama-3.1-8B-Instruct, full fine-tuning in bf16 under DeepSpeed ZeRO-3 on 8 GPUs,
lr 2e-7, batch 8, critic 4 epochs, actor 1 epoch, 16 candidates per turn). Any setting can be
overridden by its flag.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCALES: dict[str, dict] = {
    "cpu": dict(  # noqa: C408 - keyword form reads as a settings table
        model="default", env="ColBench-Backend-v0", train_tasks="embedded:train", train_episodes=6, k=4,
        eval_tasks="embedded:test", eval_episodes=8, eval_k=1, simulator="offline", max_turns=10,
        max_new_tokens=256, rollout_dtype="bfloat16", temperature=0.7,
        train_dtype="float32", lora_r=8, batch_size=2, grad_accum=1, max_length=1536,
        critic_lr=1e-4, critic_epochs=1.0, actor_lr=5e-5, actor_epochs=1.0,
        num_candidates=4, pairs_per_turn=1, turn_fraction=0.5, candidate_tokens=128,
        pair_rule="best",  # a 0.5B model rarely passes every test: use each task's best samples
        launcher="",
    ),
    "paper": dict(  # noqa: C408 - keyword form reads as a settings table
        model="meta-llama/Llama-3.1-8B-Instruct", env="ColBench-Backend-v0", train_tasks="generated:train",
        train_episodes=5000, k=3, eval_tasks="generated:test", eval_episodes=1000, eval_k=1, simulator="openai",
        max_turns=10, max_new_tokens=1024, rollout_dtype="bfloat16", temperature=1.0,
        train_dtype="bfloat16", lora_r=0, batch_size=1, grad_accum=1, max_length=8192,
        critic_lr=2e-7, critic_epochs=4.0, actor_lr=2e-7, actor_epochs=1.0,
        num_candidates=16, pairs_per_turn=1, turn_fraction=1.0, candidate_tokens=1024,
        pair_rule="success",
        launcher=f"accelerate launch --config_file {ROOT / 'sweet_agent/configs/zero3.yaml'}",
    ),
}

METHODS = ("zero-shot", "rft", "mtdpo", "sweet")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--workdir", default="runs/sweet_rl", help="where every stage writes (default: %(default)s)")
    ap.add_argument("--scale", default="cpu", choices=sorted(SCALES), help="preset of all settings below")
    ap.add_argument("--force", action="store_true", help="redo stages whose output exists")
    ap.add_argument("--offline-data", default=None, help="use this trajectory JSONL instead of collecting")
    ap.add_argument("--simulator-kwargs", default=None, help="JSON options of the simulator (e.g. an endpoint)")
    ap.add_argument("--seed", type=int, default=0)
    for key, val in SCALES["cpu"].items():
        flag = "--" + key.replace("_", "-")
        typ = type(val) if not isinstance(val, bool) else str
        ap.add_argument(flag, type=typ, default=None, help=f"(cpu: {val!r}; paper: {SCALES['paper'][key]!r})")


def settings(args: argparse.Namespace) -> dict:
    s = dict(SCALES[args.scale])
    for key in s:
        v = getattr(args, key, None)
        if v is not None:
            s[key] = v
    s.update(workdir=Path(args.workdir), force=args.force, seed=args.seed, offline_data=args.offline_data,
             simulator_kwargs=args.simulator_kwargs)
    s["workdir"].mkdir(parents=True, exist_ok=True)
    return s


def _run(cmd: list[str], launcher: str = "") -> None:
    base = shlex.split(launcher) + ["-m", "sweet_agent.cli"] if launcher else [sys.executable, "-m", "sweet_agent.cli"]
    full = base + [str(c) for c in cmd]
    print("$ " + " ".join(shlex.quote(c) for c in full), flush=True)
    t0 = time.time()
    proc = subprocess.run(full, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"stage failed (exit {proc.returncode}): {' '.join(full[:6])} ...")
    print(f"  ({time.time() - t0:.0f} s)", flush=True)


def _done(path: Path, s: dict) -> bool:
    if path.exists() and not s["force"]:
        print(f"= {path} exists, skipping (use --force to redo)")
        return True
    return False


def _train_flags(s: dict, lr: float, epochs: float) -> list[str]:
    return ["--dtype", s["train_dtype"], "--lora-r", s["lora_r"], "--batch-size", s["batch_size"],
            "--grad-accum", s["grad_accum"], "--max-length", s["max_length"], "--learning-rate", lr,
            "--epochs", epochs, "--seed", s["seed"]]


# ------------------------------------------------------------------------------------ stages
def collect(s: dict) -> Path:
    """Offline data: the base policy plays the training tasks, k samples each."""
    if s["offline_data"]:
        return Path(s["offline_data"])
    out = s["workdir"] / "offline.jsonl"
    if not _done(out, s):
        cmd = ["rollout", "--env", s["env"], "--tasks", s["train_tasks"], "--episodes", s["train_episodes"],
               "--k", s["k"], "--policy", s["model"], "--dtype", s["rollout_dtype"], "--simulator", s["simulator"],
               "--max-turns", s["max_turns"], "--max-new-tokens", s["max_new_tokens"],
               "--temperature", s["temperature"], "--seed", s["seed"], "--output", out, "--overwrite", "--no-progress"]
        if s["simulator_kwargs"]:
            cmd += ["--simulator-kwargs", s["simulator_kwargs"]]
        _run(cmd)
    return out


def _has_pairs(data: Path, rule: str) -> int:
    from sweet_agent.critic.pairs import build_trajectory_pairs
    from sweet_agent.critic.records import load_records

    return len(build_trajectory_pairs(load_records(data), rule=rule))


def train_critic(s: dict, data: Path, **ablation: str) -> Path | None:
    name = "critic" + "".join(f"-{k}-{v}" for k, v in ablation.items())
    out = s["workdir"] / name
    if (out / "sweet_critic.json").exists() and not s["force"]:
        print(f"= {out} exists, skipping")
        return out
    if not _has_pairs(data, s["pair_rule"]):
        print(f"! no critic pairs under --pair-rule {s['pair_rule']} (no task has a chosen and a worse trajectory)")
        return None
    extra = [f"--{k.replace('_', '-')}" + ("" if v is True else f"={v}") for k, v in ablation.items()]
    _run(["train-critic", "--data", data, "--model", s["model"], "--output-dir", out,
          *_train_flags(s, s["critic_lr"], s["critic_epochs"]), "--eval-fraction", "0.2",
          "--pair-rule", s["pair_rule"], *extra], s["launcher"])
    return out


def step_pairs(s: dict, data: Path, critic: Path) -> Path:
    out = s["workdir"] / "step_pairs.jsonl"
    if not _done(out, s):
        _run(["train-actor", "--only-pairs", "--data", data, "--critic", critic, "--model", s["model"],
              "--output-dir", s["workdir"] / "sweet", "--pairs-out", out, "--dtype", s["train_dtype"],
              "--num-candidates", s["num_candidates"], "--pairs-per-turn", s["pairs_per_turn"],
              "--turn-fraction", s["turn_fraction"], "--max-new-tokens", s["candidate_tokens"],
              "--seed", s["seed"]])
    return out


def train_actor(s: dict, pairs: Path) -> Path:
    out = s["workdir"] / "sweet"
    if not _done(out / "config.json", s):
        _run(["train-actor", "--pairs-in", pairs, "--model", s["model"], "--output-dir", out,
              *_train_flags(s, s["actor_lr"], s["actor_epochs"])], s["launcher"])
    return out


def train_baseline(s: dict, method: str, data: Path) -> Path | None:
    out = s["workdir"] / method
    if not _done(out / "config.json", s):
        if method == "mtdpo" and not _has_pairs(data, s["pair_rule"]):
            print("! no trajectory pairs for MT-DPO (no task has a chosen and a worse sample)")
            return None
        _run([f"train-{method}", "--data", data, "--model", s["model"], "--output-dir", out, "--pair-rule", s["pair_rule"],
              *_train_flags(s, s["actor_lr"], s["actor_epochs"])], s["launcher"])
    return out


def evaluate(s: dict, method: str, policy: str | Path) -> dict:
    """Roll the policy out on held-out tasks and summarise (success, % tests passed)."""
    from sweet_agent.evaluation import summarize
    from sweet_agent.trajectories import read_trajectories

    out = s["workdir"] / f"eval-{method}.jsonl"
    if not _done(out, s):
        cmd = ["rollout", "--env", s["env"], "--tasks", s["eval_tasks"], "--episodes", s["eval_episodes"],
               "--k", s["eval_k"], "--policy", policy, "--dtype", s["rollout_dtype"], "--simulator", s["simulator"],
               "--max-turns", s["max_turns"], "--max-new-tokens", s["max_new_tokens"],
               "--temperature", s["temperature"], "--seed", s["seed"] + 1000, "--output", out, "--overwrite",
               "--no-progress"]
        if s["simulator_kwargs"]:
            cmd += ["--simulator-kwargs", s["simulator_kwargs"]]
        _run(cmd)
    summ = summarize(read_trajectories(out))
    return {"method": method, "episodes": summ.episodes, "success": summ.success,
            "tests_passed": summ.tests_passed, "turns": summ.mean_turns}


def table(rows: list[dict], path: Path | None = None) -> str:
    def pct(x):
        return "  n/a" if x is None else f"{100 * x:5.1f}"

    lines = [f"| {'method':<10} | {'success %':>9} | {'tests passed %':>14} | {'turns':>5} | {'episodes':>8} |",
             f"|{'-' * 12}|{'-' * 11}|{'-' * 16}|{'-' * 7}|{'-' * 10}|"]
    for r in rows:
        turns = "  n/a" if r.get("turns") is None else f"{r['turns']:5.2f}"
        lines.append(f"| {r['method']:<10} | {pct(r.get('success')):>9} | {pct(r.get('tests_passed')):>14} | "
                     f"{turns:>5} | {r.get('episodes', 0):>8} |")
    text = "\n".join(lines)
    if path is not None:
        path.write_text(json.dumps(rows, indent=2))
    return text


def run_methods(s: dict, methods: list[str]) -> list[dict]:
    """Collect once, train each method, evaluate each, return table rows."""
    t0 = time.time()
    data = collect(s)
    rows = [evaluate(s, "zero-shot", s["model"])]
    for m in methods:
        if m == "sweet":
            critic = train_critic(s, data)
            policy = train_actor(s, step_pairs(s, data, critic)) if critic else None
        else:
            policy = train_baseline(s, m, data)
        rows.append(evaluate(s, m, policy) if policy else {"method": m, "episodes": 0})
    print(f"\nmethod x metric on {s['eval_tasks']} ({s['eval_episodes']} tasks x {s['eval_k']}), "
          f"total {time.time() - t0:.0f} s:")
    print(table(rows, s["workdir"] / "results.json"))
    return rows
