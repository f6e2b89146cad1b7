"""``sweet-agent view``: build the static trajectory viewer for one or more runs.

The site opens from ``file://`` with no server and no network: a summary with 95 % bootstrap
intervals, per-task and paired run comparisons, filters and search, and per episode the
transcript (private thought apart from what the person saw, questions and answers marked), the
final answer, per-test verdicts (backend) or screenshots (frontend), and — with ``--critic`` —
the critic's advantage of every agent turn, the most credited turn highlighted.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from sweet_agent.evaluation.metrics import episode_metrics, paired_comparison, summarize_episodes
from sweet_agent.viewer.episodes import ViewOptions, build_episodes, task_title
from sweet_agent.viewer.site import write_site


@dataclass
class ViewConfig:
    """Options of ``sweet-agent view`` (each field is a flag of the same name)."""

    runs: list[str] = field(default_factory=list, metadata={"help": "trajectory JSONL files (the first is the baseline "
                                                                    "of the paired comparisons)"})
    output: str = field(default="", metadata={"help": "directory the site is written to"})
    names: list[str] = field(default_factory=list, metadata={"help": "a display name per run (default: file names)"})
    critic: str | None = field(default=None, metadata={"help": "a `sweet-agent train-critic` output: annotate every "
                                                               "agent turn with its advantage"})
    critic_dtype: str = field(default="float32", metadata={"help": "dtype to load the critic in"})
    device: str = field(default="auto", metadata={"help": "where the critic runs: auto (CUDA, then MPS, then CPU), "
                                                          "or cpu, cuda, cuda:N, mps"})
    show_expected: bool = field(default=False, metadata={"help": "show the reference's value of every hidden test"})
    no_tests: bool = field(default=False, metadata={"help": "do not grade backend answers again for per-test verdicts"})
    no_screenshots: bool = field(default=False, metadata={"help": "do not render frontend pages"})
    plots: list[str] = field(default_factory=list, metadata={"help": "training output dirs to plot and link "
                                                                     "(see `sweet-agent plot`)"})
    seed: int = field(default=0, metadata={"help": "seed of the bootstrap intervals"})


def critic_credit(critic_dir: str, dtype: str = "float32", device: str | None = "auto"):
    """A function ``record -> per-agent-turn advantages`` backed by a trained critic (on
    ``device``: :func:`sweet_agent.devices.resolve_device`)."""
    from sweet_agent.critic.advantages import turn_advantages
    from sweet_agent.critic.loading import load_critic
    from sweet_agent.training_data import records as R

    loaded = load_critic(critic_dir, dtype, device=device)

    def credit(rec: Mapping[str, Any]) -> list[float] | None:
        try:
            msgs = R.dialogue_messages(dict(rec))
            system = (rec.get("meta") or {}).get("system_prompt")
            if system and not (msgs and msgs[0]["role"] == "system"):
                msgs = [{"role": "system", "content": system}, *msgs]  # what the policy saw
            priv = R.privileged_info(dict(rec)) if loaded.use_privileged_info else None
            return turn_advantages(loaded.model, loaded.ref, loaded.tokenizer, msgs, priv, loaded.normalize)
        except Exception as exc:  # one unscorable record is shown without credit
            print(f"[view] critic could not score an episode ({type(exc).__name__}: {exc})")
            return None

    return credit, loaded.meta


def build_payload(cfg: ViewConfig, runs: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
                  out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Everything the page shows, as plain data."""
    names = list(cfg.names) + [Path(p).stem for p, _ in runs][len(cfg.names):]
    credit, critic_meta = (critic_credit(cfg.critic, cfg.critic_dtype, cfg.device) if cfg.critic else (None, None))
    opts = ViewOptions(show_expected=cfg.show_expected, tests=not cfg.no_tests, screenshots=not cfg.no_screenshots)
    episodes = build_episodes(runs, out_dir, opts, credit=credit, progress=progress)
    metrics = [[episode_metrics(r, i) for i, r in enumerate(recs)] for _, recs in runs]
    tasks = {ep["task_id"]: ep["task"] for ep in episodes}
    summaries = [{"run": i, "episodes": len(m), "failed": sum(e.failed for e in m),
                  "metrics": {k: v.to_dict() for k, v in summarize_episodes(m, seed=cfg.seed).items()}}
                 for i, m in enumerate(metrics)]
    comparisons = [{"a": 0, "b": i, **paired_comparison(metrics[0], metrics[i], seed=cfg.seed).to_dict()}
                   for i in range(1, len(metrics))]
    plots: list[dict[str, str]] = []
    if cfg.plots:
        from sweet_agent.viewer.plots import plot_runs

        for path in plot_runs(cfg.plots, out_dir / "plots"):
            plots.append({"title": path.stem.replace("_", " "), "file": f"plots/{path.name}"})
    return {
        "version": 1, "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "runs": [{"name": names[i], "path": str(p), "episodes": len(recs)} for i, (p, recs) in enumerate(runs)],
        "summaries": summaries, "comparisons": comparisons, "tasks": tasks, "plots": plots,
        "show_expected": cfg.show_expected,
        "critic": ({"name": Path(cfg.critic).name, "normalize": critic_meta.get("normalize", "turn"),
                    "privileged": critic_meta.get("use_privileged_info", True)} if cfg.critic else None),
        "episodes": episodes,
    }


def build_site(cfg: ViewConfig, progress: bool = True) -> Path:
    """Read the runs, build the payload and write the site; returns the path of ``index.html``."""
    from sweet_agent.trajectories import read_trajectories

    if not cfg.runs:
        raise SystemExit("view: name at least one trajectory JSONL file")
    if not cfg.output:
        raise SystemExit("view: pass --output DIR (where the site is written)")
    if len(cfg.names) > len(cfg.runs):
        raise SystemExit(f"view: {len(cfg.names)} --names for {len(cfg.runs)} runs; give at most one name per run")
    runs = []
    for path in cfg.runs:
        if not Path(path).is_file():
            raise SystemExit(f"view: {path} does not exist; pass a trajectory JSONL file written by `sweet-agent rollout`")
        # validated like every reader (colbench_gym.tasks.records): a NaN reward, a reward of 5 or a
        # "success": "yes" is one error naming file, line and field, never a page built on it
        runs.append((path, read_trajectories(path, require_reward=False)))
    out = Path(cfg.output)
    return write_site(out, build_payload(cfg, runs, out, progress=progress))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags generated from :class:`ViewConfig` (one declaration of every default)."""
    for f in fields(ViewConfig):
        flag = "--" + f.name.replace("_", "-")
        help_text = f.metadata.get("help", "")
        default = f.default_factory() if callable(f.default_factory) else f.default  # type: ignore[misc]
        if f.name == "runs":
            parser.add_argument("runs", nargs="+", metavar="RUN.jsonl", help=help_text)
        elif isinstance(default, bool):
            parser.add_argument(flag, action="store_true", default=default, help=help_text)
        elif isinstance(default, list):
            parser.add_argument(flag, nargs="+", default=default, help=help_text)
        else:
            kind = int if isinstance(default, int) else str
            parser.add_argument(flag, type=kind, default=default, required=f.name == "output", help=help_text)


def run(args: argparse.Namespace) -> int:
    cfg = ViewConfig(**{f.name: getattr(args, f.name) for f in fields(ViewConfig)})
    index = build_site(cfg)
    print(f"[view] {index.resolve()}  (open it in a browser: file://{index.resolve()})")
    return 0


__all__ = ["ViewConfig", "build_payload", "build_site", "critic_credit", "task_title"]
