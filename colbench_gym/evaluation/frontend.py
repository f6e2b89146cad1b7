"""``colbench evaluate frontend IN.jsonl --output OUT.jsonl [--reference-run REF.jsonl]``.

Scores the final ``answer`` (HTML) of every offline trajectory record (``{"task": {...},
"answer": str, ...}``) against its task's reference page: both are rendered in the page pool
(references cached by content hash, on disk, across runs) and compared with the image scorer
(CLIP ViT-B/32 as in the paper, or the declared weight-free fallback — every output record and
the summary name the scorer). Writes the same records, in the same order, with ``reward`` (=
``similarity``), ``similarity``, ``scorer``, ``html_found`` and ``render_error`` set; OUT is
written atomically.

With ``--reference-run REF.jsonl`` (another agent's trajectories on the same tasks, e.g. the
paper's GPT-4o reference) the reference answers are scored the same way and each record also
gets ``reference_similarity`` and ``win`` (1 win, 0.5 tie, 0 loss; the rule and its tie tolerance
live in :mod:`colbench_gym.evaluation.metrics`); the summary reports the win rate, the paper's
frontend metric. Tasks are matched by content (``task_id``); the first reference record of a task
is the one compared against.

Each output record also gets ``end_reason`` and ``infrastructure_failure`` (the record's own,
:mod:`colbench_gym.tasks.accounting`): the mean similarity and the win rate are over the records
the agent is accountable for; infrastructure failures are counted apart, by reason. The tokens
and wall time the records carry are summed, and priced with ``--prices FILE``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from colbench_gym.evaluation.metrics import win_value
from colbench_gym.evaluation.records import INPUT_ERRORS, input_error, load_task_answers, no_episodes
from colbench_gym.evaluation.report import cost_lines, end_reason_lines
from colbench_gym.jsonl import check_output_writable, write_jsonl_atomic
from colbench_gym.protocol import extract_answer_html, extract_html
from colbench_gym.tasks import FrontendTask
from colbench_gym.tasks.accounting import (
    PriceTableError,
    is_infrastructure,
    is_infrastructure_failure,
    load_prices,
    record_end_reason,
)
from colbench_gym.tasks.answer_images import agent_wrote, run_image
from colbench_gym.verdicts.frontend import score_many


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="offline trajectory JSONL, one {task, answer, ...} record per line")
    parser.add_argument("--output", "-o", required=True, help="where to write the scored records (JSONL)")
    parser.add_argument("--reference-run", default=None, metavar="REF.jsonl",
                        help="trajectories of a reference agent on the same tasks: also report the win rate")
    parser.add_argument("--scorer", default="auto", choices=("auto", "clip", "fallback", "clip-random"),
                        help="auto: CLIP if its weights are cached, else the declared fallback (default)")
    parser.add_argument("--batch-size", type=int, default=16, help="pages rendered/embedded per batch")
    parser.add_argument("--pool-size", type=int, default=2, help="browser pages rendering at once")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a page may take to load")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--prices", metavar="FILE", default=None,
                        help='price table for the cost line: JSON {"MODEL": {"prompt": USD_PER_1M_TOKENS, '
                             '"completion": USD_PER_1M_TOKENS}}')


def dialogue_html(record: dict[str, Any]) -> str | None:
    """The last page the agent wrote in the dialogue (what the release rendered as its answer)."""
    for turn in reversed(record.get("dialogue_history") or []):
        if isinstance(turn, dict) and turn.get("role") == "assistant":
            for key in ("content", "output"):
                html = extract_html(turn[key]) if isinstance(turn.get(key), str) else None
                if html is not None:
                    return html
    return None


def score_answers(items: list[tuple[dict[str, Any], FrontendTask, str]], renderer, scorer, batch_size: int = 16,
                  progress=None, base_dir: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """``{similarity, html_found, render_error, answer_source, reference_error, browser_failed}``
    per item (``browser_failed``: the browser, not the page, failed to render the answer: no score).

    A task whose reference page did not render (also when retried: see
    :meth:`~colbench_gym.rendering.Renderer.render_many`) is not scored at all: its
    ``reference_error`` says why and ``similarity`` is None (a failed reference is a blank page,
    against which a blank answer would score 1).

    The answer is scored from, in order: the screenshot the producing run stored as the answer
    (the release's shape; read only under the rule of :mod:`colbench_gym.tasks.answer_images`:
    written by the run, not the agent, inside ``base_dir``, the trajectory file's folder, and
    really an image), its HTML, and, for an answer the run wrote (a screenshot path whose file is
    gone or refused, the release's "No answer"), the last HTML in the dialogue. An answer the
    agent wrote is scored from its own text only, as the environment scores it: without HTML it
    gets 0. With nothing to score ``similarity`` is None (``answer_source`` None): the caller
    keeps a stored reward rather than replacing it by 0.
    """
    results: list[dict[str, Any]] = []
    for start in range(0, len(items), batch_size):
        chunk = items[start:start + batch_size]
        refs = renderer.render_many([t.ground_truth for _, t, _ in chunk], cache=True)
        answers: list[str] = []
        images: list[Any] = []
        sources: list[str | None] = []
        for (record, _, a), ref in zip(chunk, refs):
            img = run_image(a, record, base_dir) if ref.ok else None
            text, source = ("", "image") if img is not None else (a, "answer")
            if img is None and extract_answer_html(a) is None and not agent_wrote(a, record):
                html = dialogue_html(record)  # the run wrote the answer: the last page the agent wrote
                text, source = (html, "dialogue") if html is not None else ("", None)
            answers.append(text)
            images.append(img)
            sources.append(source if ref.ok else None)  # nothing is scored against a reference that did not render
        verdicts = score_many(answers, [t for _, t, _ in chunk], scorer=scorer, renderer=renderer,
                              references=refs, images=images)
        for ref, verdict, source in zip(refs, verdicts, sources):
            # a shot the browser failed to take (dead or hung on every attempt) is a blank that says
            # nothing of the answer: not scored, the record fails with rendering_error
            failed = ref.ok and not verdict.scored
            # nothing to score (no page, no screenshot, a run's answer): None, the caller keeps a stored reward
            sim = verdict.reward if verdict.scored and source is not None else None
            results.append({"similarity": sim, "html_found": ref.ok and verdict.evidence["html_found"],
                            "render_error": verdict.evidence["render_error"], "answer_source": source,
                            "reference_error": ref.error, "browser_failed": failed})
        if progress is not None:
            progress.update(len(chunk))
    return results


def run(args: argparse.Namespace) -> int:
    if args.batch_size < 1 or args.pool_size < 1:
        return input_error("--batch-size and --pool-size must be >= 1")
    try:
        prices = load_prices(args.prices) if args.prices else None
        # every record read and validated first, so a bad line fails before any work
        items = load_task_answers(args.input, FrontendTask, "final page")
        ref_items = load_task_answers(args.reference_run, FrontendTask, "final page") if args.reference_run else []
    except PriceTableError as exc:
        return input_error(exc)
    except INPUT_ERRORS as exc:
        return input_error(exc)
    if not items:
        return no_episodes(args.input)
    check_output_writable(args.output)  # before any grading: a bad --output must not cost the run
    from tqdm.auto import tqdm  # noqa: PLC0415

    from colbench_gym.rendering import Renderer, RendererError, WebAssetsMissing  # noqa: PLC0415
    from colbench_gym.scoring import make_scorer  # noqa: PLC0415
    from colbench_gym.scoring.clip import ClipWeightsUnavailable  # noqa: PLC0415

    try:
        scorer = make_scorer(args.scorer)
    except ClipWeightsUnavailable as exc:
        print(f"error: {exc}\n(use --scorer fallback for the declared weight-free scorer)", file=sys.stderr)
        return 1
    ref_first: dict[str, tuple[dict[str, Any], FrontendTask, str]] = {}
    for item in ref_items:
        if not is_infrastructure_failure(item[0]):  # a reference episode that failed is no reference
            ref_first.setdefault(item[1].task_id, item)
    ref_list = list(ref_first.values())
    try:
        with Renderer(pool_size=args.pool_size, timeout=args.timeout) as renderer, \
                tqdm(total=len(items) + len(ref_list), desc="scoring", unit="page", disable=args.no_progress,
                     file=sys.stderr) as bar:
            scores = score_answers(items, renderer, scorer, args.batch_size, bar, Path(args.input).parent)
            ref_scores = score_answers(ref_list, renderer, scorer, args.batch_size, bar,
                                       Path(args.reference_run).parent if args.reference_run else None)
    except (RendererError, WebAssetsMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    kept = 0
    for (record, _, _), s in zip([*items, *ref_list], [*scores, *ref_scores]):
        if s["reference_error"] or s["browser_failed"]:  # no score at all, and no stored reward passed off as ours
            continue
        if s["similarity"] is None:  # nothing to score: keep a stored reward, never replace it by 0
            stored = record.get("reward")
            keep = isinstance(stored, (int, float)) and not isinstance(stored, bool)
            s["similarity"], s["kept_stored"] = (float(stored), True) if keep else (0.0, False)
            kept += keep
    ref_sim = {item[1].task_id: s["similarity"] for item, s in zip(ref_list, ref_scores)
               if not s["reference_error"] and not s["browser_failed"]}
    out, wins, missing = [], [], 0
    for (record, task, _), s in zip(items, scores):
        rec = dict(record)
        rec.update(reward=s["similarity"], similarity=s["similarity"], scorer=scorer.name,
                   html_found=s["html_found"], render_error=s["render_error"], answer_source=s["answer_source"])
        if s.get("kept_stored"):
            rec.update(scorer=None, similarity=None)  # not scored here: the stored reward stays
        reason = record_end_reason(record)
        if s["reference_error"] or s["browser_failed"]:
            reason = "rendering_error"  # it failed here, whatever the producing run recorded
        rec.update(end_reason=reason, infrastructure_failure=is_infrastructure(reason),
                   reference_error=s["reference_error"])
        if rec["infrastructure_failure"]:  # no score (the rule of colbench_gym.tasks.accounting)
            rec.update(reward=None, similarity=None)
        if args.reference_run:
            theirs = ref_sim.get(task.task_id)
            if rec["infrastructure_failure"]:  # no score of ours: no win either (left out of the rate)
                rec.update(reference_similarity=theirs, win=None)
            elif theirs is None:
                missing += 1
                rec.update(reference_similarity=None, win=None)
            else:
                w = win_value(s["similarity"], theirs)
                wins.append(w)
                rec.update(reference_similarity=theirs, win=w)
        out.append(rec)
    write_jsonl_atomic(args.output, out)
    accountable = [r for r in out if not r["infrastructure_failure"]]
    n = len(accountable)
    mean = sum(r["reward"] for r in accountable) / n if n else 0.0
    print(f"scored {len(out)} answers -> {args.output}")
    from_images = sum(r["answer_source"] == "image" for r in out)
    from_dialogue = sum(r["answer_source"] == "dialogue" for r in out)
    if from_images or from_dialogue or kept:
        print(f"answers scored from their screenshot: {from_images}, from the last HTML in the dialogue: "
              f"{from_dialogue}; nothing to score, stored reward kept: {kept}")
    print(f"scorer: {scorer.name}" + ("" if scorer.is_clip else "  (NOT CLIP: not comparable with the paper's numbers)"))
    if not n:  # no mean of nothing: 0.0 would read as an agent whose pages all missed
        print(f"mean similarity: n/a (no scored episodes: all {len(out)} failed for infrastructure reasons)")
    else:
        print(f"mean similarity: {mean:.4f}   answers with HTML: {sum(r['html_found'] for r in accountable)}/{n}")
    failed_refs = sum(bool(r["reference_error"]) for r in out)
    if failed_refs:
        print(f"reference pages that did not render (also when retried): {failed_refs} records not scored "
              "(reward null, reference_error says why); rerun them, e.g. with a larger --timeout")
    reasons, why = end_reason_lines(out)
    print(reasons)
    if len(out) > n:
        print(f"infrastructure failures: {len(out) - n} of {len(out)} records ({why}), not the agent's: left out of "
              "the similarity and win rate")
    for line in cost_lines(items, prices):
        print(line)
    if args.reference_run:
        rate = f"{100 * sum(wins) / len(wins):.1f}%" if wins else "n/a"
        note = f"   ({missing} answers have no reference-run record for their task)" if missing else ""
        print(f"win rate vs {args.reference_run}: {rate} over {len(wins)} answers "
              f"(wins {sum(w == 1.0 for w in wins)}, ties {sum(w == 0.5 for w in wins)}, "
              f"losses {sum(w == 0.0 for w in wins)}){note}")
    return 0
