"""Stages of the SWEET-RL example pipeline, shared by the scripts in this folder.

Every stage runs a ``sweet-agent`` command in a subprocess (optionally under ``accelerate
launch`` for multi-GPU training), writes its result into ``--workdir`` and is skipped when that
result already exists (``--force`` redoes it), so the per-stage scripts and the end-to-end
scripts share work: run_rft.py after run_sweet.py reuses the offline data and the zero-shot
evaluation.

Scales (``--scale``): ``cpu`` (default) finishes on a 2-core CPU in well under an hour with
Qwen2.5-Coder-0.5B-Instruct + LoRA on a few embedded tasks; ``paper`` selects the paper's
settings (Llama-3.1-8B-Instruct, full fine-tuning in bf16 under DeepSpeed ZeRO-3 on 8 GPUs,
lr 2e-7, batch 8, critic 4 epochs, actor 1 epoch, 16 candidates per turn). The training settings
of a scale are the commands' own presets (``--config cpu|paper``); any setting can be overridden
by its flag. A stage that finds nothing to train on is reported and skipped (its method gets no
row values), not a crash.
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

#: Rollout and evaluation settings per scale. Training settings are the commands' shipped presets
#: (``sweet-agent train-* --config cpu|paper``, sweet_agent/configs/<trainer>/); the flags below
#: marked "training" override them when given.
SCALES: dict[str, dict] = {
    "cpu": dict(  # noqa: C408 - keyword form reads as a settings table
        model="default", env="ColBench-Backend-v0", train_tasks="embedded:train", train_episodes=6, k=4,
        eval_tasks="embedded:test", eval_episodes=8, eval_k=1, simulator="offline", max_turns=10,
        max_new_tokens=256, rollout_dtype="bfloat16", temperature=0.7, launcher="",
    ),
    "paper": dict(  # noqa: C408 - keyword form reads as a settings table
        model="meta-llama/Llama-3.1-8B-Instruct", env="ColBench-Backend-v0", train_tasks="generated:train",
        train_episodes=5000, k=3, eval_tasks="generated:test", eval_episodes=1000, eval_k=1, simulator="openai",
        max_turns=10, max_new_tokens=1024, rollout_dtype="bfloat16", temperature=1.0,
        launcher=f"accelerate launch --config_file {ROOT / 'sweet_agent/configs/zero3.yaml'}",
    ),
}

#: Training overrides: pipeline flag -> (type, the commands' flag, which stages take it). Unset
#: (the default) = the preset's value.
TRAINING_FLAGS: dict[str, tuple[type, str, tuple[str, ...]]] = {
    "train_dtype": (str, "--dtype", ("critic", "actor", "rft", "mtdpo")),
    "batch_size": (int, "--per_device_train_batch_size", ("critic", "actor", "rft", "mtdpo")),
    "grad_accum": (int, "--gradient_accumulation_steps", ("critic", "actor", "rft", "mtdpo")),
    "max_length": (int, "--max_length", ("critic", "actor", "rft", "mtdpo")),
    "critic_lr": (float, "--learning_rate", ("critic",)),
    "critic_epochs": (float, "--num_train_epochs", ("critic",)),
    "actor_lr": (float, "--learning_rate", ("actor", "rft", "mtdpo")),
    "actor_epochs": (float, "--num_train_epochs", ("actor", "rft", "mtdpo")),
    "pair_rule": (str, "--pair_rule", ("critic", "rft", "mtdpo")),
    "num_candidates": (int, "--num_candidates", ("pairs",)),
    "pairs_per_turn": (int, "--pairs_per_turn", ("pairs",)),
    "turn_fraction": (float, "--turn_fraction", ("pairs",)),
    "candidate_tokens": (int, "--max_new_tokens", ("pairs",)),
    "report_to": (str, "--report_to", ("critic", "actor", "rft", "mtdpo")),
}

#: The paper's critic ablations (Table 3), each run end to end: critic -> step pairs -> actor -> evaluation.
ABLATIONS: dict[str, list[str]] = {
    "no-privileged": ["--use_privileged_info", "false"],
    "regression-head": ["--critic_type", "regression"],
    "no-normalisation": ["--normalize", "none"],
}

METHODS = ("zero-shot", "rft", "mtdpo", "sweet")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--workdir", default="runs/sweet_rl", help="where every stage writes (default: %(default)s)")
    ap.add_argument("--scale", default="cpu", choices=sorted(SCALES),
                    help="rollout settings below and the training commands' --config preset")
    ap.add_argument("--force", action="store_true", help="redo stages whose output exists")
    ap.add_argument("--offline-data", default=None, help="use this trajectory JSONL instead of collecting")
    ap.add_argument("--simulator-kwargs", default=None, help="JSON options of the simulator (e.g. an endpoint)")
    ap.add_argument("--seed", type=int, default=0)
    for key, val in SCALES["cpu"].items():
        flag = "--" + key.replace("_", "-")
        ap.add_argument(flag, type=type(val), default=None, help=f"(cpu: {val!r}; paper: {SCALES['paper'][key]!r})")
    ap.add_argument("--lora-r", type=int, default=None, help="training: LoRA rank (0 = full fine-tuning; default: preset)")
    for key, (typ, flag, stages) in TRAINING_FLAGS.items():
        ap.add_argument("--" + key.replace("_", "-"), type=typ, default=None,
                        help=f"training: {flag} of {'/'.join(stages)} (default: the preset's)")


def settings(args: argparse.Namespace) -> dict:
    s = dict(SCALES[args.scale])
    for key in s:
        v = getattr(args, key, None)
        if v is not None:
            s[key] = v
    s.update(workdir=Path(args.workdir), force=args.force, seed=args.seed, offline_data=args.offline_data,
             simulator_kwargs=args.simulator_kwargs, scale=args.scale, lora_r=getattr(args, "lora_r", None))
    s.update({k: getattr(args, k, None) for k in TRAINING_FLAGS})
    if s["pair_rule"] is None and "Frontend" in s["env"]:
        s["pair_rule"] = "top-bottom"  # CLIP similarity is continuous: nothing counts as "success"
    s["workdir"].mkdir(parents=True, exist_ok=True)
    return s


def _run(cmd: list[str], launcher: str = "") -> bool:
    """Run one ``sweet-agent`` command; ``False`` when it found nothing to train on (its one-line
    message says why), exit on any other failure."""
    from sweet_agent.training.command import NOTHING_TO_TRAIN

    base = shlex.split(launcher) + ["-m", "sweet_agent.cli"] if launcher else [sys.executable, "-m", "sweet_agent.cli"]
    full = base + [str(c) for c in cmd]
    print("$ " + " ".join(shlex.quote(c) for c in full), flush=True)
    t0 = time.time()
    proc = subprocess.run(full, cwd=ROOT, check=False)
    if proc.returncode == NOTHING_TO_TRAIN:
        print("! stage skipped: nothing to train on (see the message above)", flush=True)
        return False
    if proc.returncode != 0:
        raise SystemExit(f"stage failed (exit {proc.returncode}): {' '.join(full[:6])} ...")
    print(f"  ({time.time() - t0:.0f} s)", flush=True)
    return True


def _done(path: Path, s: dict) -> bool:
    if path.exists() and not s["force"]:
        print(f"= {path} exists, skipping (use --force to redo)")
        return True
    return False


def _train_flags(s: dict, stage: str) -> list[str]:
    """``--config <scale>`` plus the overrides given to the pipeline for this stage."""
    flags = ["--config", s["scale"], "--model_name_or_path", s["model"], "--seed", s["seed"]]
    if s.get("lora_r") is not None and stage != "pairs":
        r = s["lora_r"]
        flags += ["--use_peft", "true", "--lora_r", r, "--lora_alpha", 2 * r] if r > 0 else ["--use_peft", "false"]
    for key, (_, flag, stages) in TRAINING_FLAGS.items():
        if s.get(key) is not None and stage in stages:
            flags += [flag, s[key]]
            if flag == "--per_device_train_batch_size":
                flags += ["--per_device_eval_batch_size", s[key]]
    return flags


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


def train_critic(s: dict, data: Path, ablation: str | None = None) -> Path | None:
    from sweet_agent.critic.loading import META_FILE  # sweet_critic.json: written last, so the run finished

    out = s["workdir"] / ("critic" if ablation is None else f"critic-{ablation}")
    if (out / META_FILE).exists() and not s["force"]:
        print(f"= {out} exists, skipping")
        return out
    ok = _run(["train-critic", "--data", data, "--output_dir", out, *_train_flags(s, "critic"),
               *(ABLATIONS[ablation] if ablation else [])], s["launcher"])
    return out if ok else None


def step_pairs(s: dict, data: Path, critic: Path, ablation: str | None = None) -> Path | None:
    out = s["workdir"] / ("step_pairs.jsonl" if ablation is None else f"step_pairs-{ablation}.jsonl")
    if not _done(out, s):
        _run(["train-actor", "--only_pairs", "--data", data, "--critic", critic,
              "--output_dir", s["workdir"] / "sweet", "--pairs_out", out, *_train_flags(s, "pairs")])
    return out


def train_actor(s: dict, pairs: Path, ablation: str | None = None) -> Path | None:
    out = s["workdir"] / ("sweet" if ablation is None else f"sweet-{ablation}")
    if not _done(out / "config.json", s):
        if not _run(["train-actor", "--pairs_in", pairs, "--output_dir", out, *_train_flags(s, "actor")],
                    s["launcher"]):
            return None
    return out


def train_baseline(s: dict, method: str, data: Path) -> Path | None:
    out = s["workdir"] / method
    if not _done(out / "config.json", s):
        if not _run([f"train-{method}", "--data", data, "--output_dir", out, *_train_flags(s, method)],
                    s["launcher"]):
            return None
    return out


def sweet(s: dict, data: Path, ablation: str | None = None) -> Path | None:
    """SWEET-RL end to end (or one critic ablation): critic -> step pairs -> actor."""
    critic = train_critic(s, data, ablation)
    if critic is None:
        return None
    return train_actor(s, step_pairs(s, data, critic, ablation), ablation)


def evaluate(s: dict, method: str, policy: str | Path) -> dict:
    """Roll the policy out on held-out tasks and summarise (success, % tests passed)."""
    from sweet_agent.evaluation.report import summarize
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


def run_methods(s: dict, methods: list[str], ablations: list[str] | None = None) -> list[dict]:
    """Collect once, train each method (and each critic ablation), evaluate each, return table rows."""
    t0 = time.time()
    data = collect(s)
    rows = [evaluate(s, "zero-shot", s["model"])]
    targets = [(m, None) for m in methods] + [("sweet", a) for a in ablations or []]
    for m, ablation in targets:
        name = m if ablation is None else f"sweet-{ablation}"
        policy = sweet(s, data, ablation) if m == "sweet" else train_baseline(s, m, data)
        rows.append(evaluate(s, name, policy) if policy else {"method": name, "episodes": 0})
    print(f"\nmethod x metric on {s['eval_tasks']} ({s['eval_episodes']} tasks x {s['eval_k']}), "
          f"total {time.time() - t0:.0f} s:")
    print(table(rows, s["workdir"] / "results.json"))
    return rows
