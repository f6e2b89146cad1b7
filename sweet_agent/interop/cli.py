"""``sweet-agent export --format release|paper-offline IN --output OUT``.

``release`` writes the paper release's exact shapes (see :mod:`sweet_agent.interop.release`) so
its scripts (``evaluate_code.py``, ``evaluate_html.py``, ``sample_best_of_n.py`` and the pair
builders) run on our rollouts; ``paper-offline`` (the default) writes our own shape, the paper's
offline file plus ``success``/``meta``, and turns a release file into it (``input`` parsed into
``prompt_messages``, the system prompt into ``meta``). Every other field is kept either way.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colbench_gym.jsonl import write_jsonl_atomic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN", help="trajectory JSONL (ours or the release's)")
    parser.add_argument("--output", "-o", required=True, metavar="OUT", help="where to write the exported JSONL")
    parser.add_argument("--format", choices=("paper-offline", "release"), default="paper-offline",
                        help="release: the paper release's shapes; paper-offline: ours (default)")
    parser.add_argument("--tokenizer", default=None,
                        help="model/tokenizer whose chat template renders each agent turn's 'input' "
                             "(default: the policy named in each record's meta.policy)")
    parser.add_argument("--drop-incomplete", action="store_true",
                        help="release: drop tasks with fewer samples than the others instead of refusing")


def _tokenizer_for(name: str):
    from transformers import AutoTokenizer

    from sweet_agent.policies.checkpoints import tokenizer_dir
    from sweet_agent.policies.default_model import resolve_model_path

    if name.startswith("openai:"):
        raise ValueError(f"policy {name!r} is an API model: pass --tokenizer with a local tokenizer of that model")
    return AutoTokenizer.from_pretrained(tokenizer_dir(resolve_model_path(name.split("+", 1)[0])))


def export_release(records: list[dict], out: Path, *, tokenizer: str | None = None, drop_incomplete: bool = False,
                   base_dir: Path | None = None) -> dict:
    """Write ``records`` to ``out`` in the release's shapes; return the report."""
    from colbench_gym.tasks.accounting import is_infrastructure_failure
    from sweet_agent.interop.release import chat_renderer, is_frontend, k_block_order, render_answers, to_release_record

    # an episode that failed for infrastructure reasons has no score: the release's scripts would
    # train on whatever number or blank it carries, so it is not exported (rerun it with --resume)
    scored = [r for r in records if not is_infrastructure_failure(r)]
    ordered, report = k_block_order(scored, drop_incomplete=drop_incomplete)
    report["infrastructure_failures"] = len(records) - len(scored)
    renderers: dict[str, object] = {}

    def render_for(rec: dict):
        needs = any(t["role"] == "assistant" and not isinstance(t.get("input"), str) for t in rec["dialogue_history"])
        if not needs:
            return None
        name = tokenizer or (rec.get("meta") or {}).get("policy")
        if not name:
            return None  # to_release_record says what to pass
        if name not in renderers:
            renderers[name] = chat_renderer(_tokenizer_for(name))
        return renderers[name]

    frontend = [i for i, r in enumerate(ordered) if is_frontend(r, f"record {i}")]
    pngs: dict[int, tuple[str, bool]] = {}
    if frontend:
        image_dir = out.parent / f"{out.stem}_images"
        paths = render_answers([ordered[i] for i in frontend], image_dir, base_dir=base_dir)
        pngs = dict(zip(frontend, paths))
        report["images"] = str(image_dir)
    exported = [to_release_record(r, render_for(r), pngs.get(i)) for i, r in enumerate(ordered)]
    write_jsonl_atomic(out, exported)
    return report


def run(args: argparse.Namespace) -> int:
    from colbench_gym.rendering.result import RendererError
    from sweet_agent.interop.release import check_release_assumptions, from_release_record
    from sweet_agent.trajectories import TrajectoryFormatError, iter_paper_offline, read_trajectories

    out = Path(args.output)
    try:
        if args.format == "paper-offline":
            raw = read_trajectories(args.input, require_reward=False)
            records = [from_release_record(r, c) for r, c in zip(raw, iter_paper_offline(args.input))]
            write_jsonl_atomic(out, records)
            print(f"exported {len(records)} records (paper-offline) -> {out}")
            return 0
        records = read_trajectories(args.input, require_reward=False)
        report = export_release(records, out, tokenizer=args.tokenizer, drop_incomplete=args.drop_incomplete,
                                base_dir=Path(args.input).parent)
    except (FileNotFoundError, TrajectoryFormatError, ValueError, OSError, RendererError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"exported {report['records']} records (release: {report['tasks']} tasks x k={report['k']}, "
          f"record i and i + {report['tasks']} the same task) -> {out}")
    if report["infrastructure_failures"]:
        print(f"left out {report['infrastructure_failures']} records of episodes that failed for infrastructure "
              "reasons (no score; play them again with `sweet-agent rollout --resume`)")
    if report["dropped_tasks"]:
        print(f"dropped {len(report['dropped_tasks'])} tasks with fewer than {report['k']} samples:")
        for d in report["dropped_tasks"][:10]:
            print(f"  - {d['samples']} samples: {d['task']}")
    if report.get("images"):
        print(f"frontend answers rendered to {report['images']}/")
    problems = check_release_assumptions(read_trajectories(out, require_reward=False))
    if problems:  # a bug of ours, never the user's: say so loudly
        print("warning: the exported file breaks assumptions of the release's scripts:\n  "
              + "\n  ".join(problems[:10]), file=sys.stderr)
        return 1
    return 0

