"""``sweet-agent plot``: training curves from the trainers' own ``trainer_state.json`` log history.

Every ``train-*`` command is a transformers ``Trainer``, which records each logging step in
``trainer_state.json``; this reads that file (in the run directory, else its newest
``checkpoint-*``) and draws one PNG per logged metric, every run as its own line, so a critic's
pairwise accuracy, tie rate and margin, DPO's reward margins and accuracies, or GRPO's reward per
step can be compared across runs at a glance. matplotlib with the non-interactive Agg backend:
no display needed.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_bytes_atomic

#: Logged keys that are bookkeeping, not curves.
_SKIP = {"epoch", "step", "total_flos", "train_runtime", "train_samples_per_second", "train_steps_per_second",
         "eval_runtime", "eval_samples_per_second", "eval_steps_per_second", "num_tokens"}


class PlotError(ValueError):
    """A run directory holds no trainer log."""


def find_trainer_state(run_dir: str | Path) -> Path:
    """``RUN/trainer_state.json``, else the one of the newest ``RUN/checkpoint-N``."""
    run = Path(run_dir)
    direct = run / "trainer_state.json"
    if direct.is_file():
        return direct
    checkpoints = sorted(run.glob("checkpoint-*/trainer_state.json"),
                         key=lambda p: int(re.sub(r"\D", "", p.parent.name) or 0))
    if checkpoints:
        return checkpoints[-1]
    raise PlotError(f"{run}: no trainer_state.json (nor checkpoint-*/trainer_state.json); pass the --output-dir "
                    "of a `sweet-agent train-*` run")


def read_curves(run_dir: str | Path) -> dict[str, list[tuple[float, float]]]:
    """``metric -> [(step, value), ...]`` from a run's log history."""
    path = find_trainer_state(run_dir)
    try:
        history = json.loads(path.read_text(encoding="utf-8")).get("log_history", [])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise PlotError(f"{path}: not a readable trainer state ({exc})") from None
    curves: dict[str, list[tuple[float, float]]] = {}
    for entry in history:
        if not isinstance(entry, dict):
            continue
        step = entry.get("step")
        for key, value in entry.items():
            if key in _SKIP or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            curves.setdefault(key, []).append((float(step if step is not None else len(curves.get(key, []))),
                                               float(value)))
    return curves


def _safe_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("_") or "metric"


def plot_runs(run_dirs: Sequence[str | Path], out_dir: str | Path, names: Sequence[str] | None = None) -> list[Path]:
    """One PNG per metric logged by any of ``run_dirs``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [(names[i] if names and i < len(names) else Path(d).name, read_curves(d)) for i, d in enumerate(run_dirs)]
    keys = sorted({k for _, curves in runs for k in curves})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for key in keys:
        fig, ax = plt.subplots(figsize=(5.0, 3.2), dpi=100)
        for name, curves in runs:
            pts = curves.get(key)
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, marker="o" if len(pts) < 30 else None, markersize=3, label=name)
        ax.set_xlabel("step")
        ax.set_title(key)
        ax.grid(alpha=0.3)
        if len(runs) > 1:
            ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / f"{_safe_name(key)}.png"
        png = io.BytesIO()
        fig.savefig(png, format="png")
        plt.close(fig)
        write_bytes_atomic(path, png.getvalue())
        written.append(path)
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="output dirs of `sweet-agent train-*` runs")
    parser.add_argument("--output", required=True, help="directory for the PNG files")
    parser.add_argument("--names", nargs="+", default=None, help="a legend name per run (default: directory names)")


def run(args: argparse.Namespace) -> int:
    try:
        written = plot_runs(args.runs, args.output, args.names)
    except PlotError as exc:
        raise SystemExit(f"plot: {exc}") from None
    for path in written:
        print(path)
    print(f"[plot] {len(written)} plots in {args.output}")
    return 0


def summary(run_dir: str | Path) -> dict[str, Any]:
    """Last value of every curve (for printing next to the plots)."""
    return {k: v[-1][1] for k, v in read_curves(run_dir).items()}
