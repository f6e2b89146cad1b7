"""Frontend answers: the final page rendered (:mod:`colbench_gym.rendering`) and compared with the
reference page's screenshot (:mod:`colbench_gym.scoring`: CLIP or the declared fallback).

Two entries, one rule: :func:`score` scores one answer (the env, the harnesses, ``--regrade``);
:func:`score_many` scores a file's worth at once (``colbench evaluate frontend``): references and
answers rendered in batches over the whole page pool, similarities embedded in one call, which a
loop over :func:`score` would not do. What an answer earns is decided in :func:`_verdict` for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colbench_gym.protocol import extract_answer_html
from colbench_gym.verdicts.verdict import Verdict


def _parts(scorer: Any, renderer: Any) -> tuple[Any, Any]:
    """The scorer (a spec like ``"auto"`` made into the process's shared one) and the renderer
    (the process's shared one by default)."""
    from colbench_gym.scoring import shared_scorer  # noqa: PLC0415 - may import torch (CLIP)

    if isinstance(scorer, str):
        scorer = shared_scorer(scorer)
    if renderer is None:
        from colbench_gym.rendering import shared_renderer  # noqa: PLC0415 - starts a browser

        renderer = shared_renderer()
    return scorer, renderer


def _evidence(scorer: Any, html_found: bool) -> dict[str, Any]:
    # ``rendered`` speaks of drafts shown to the person: the final page is scored, never shown.
    return {"scorer": scorer.name, "scorer_is_clip": scorer.is_clip, "html_found": html_found,
            "rendered": False, "render_error": None, "similarity": 0.0}


def _verdict(evidence: dict[str, Any], *, reference_error: str | None = None, final: Any = None,
             similarity: float | None = None) -> Verdict:
    """The rule. Unscored (``rendering_error``) when the reference page did not render, or the
    browser (not the page) failed on the answer's page: a blank image then measures nothing of
    the answer, and is never scored against. Else reward = similarity; an answer without a page
    (no HTML, no screenshot) scores 0."""
    if reference_error is not None:
        return Verdict(reward=0.0, evidence=evidence, end_reason="rendering_error",
                       detail=f"the reference page did not render ({reference_error})")
    if final is not None:
        evidence["render_error"] = final.error
        if final.infrastructure:  # the browser failed, not the page
            return Verdict(reward=0.0, evidence=evidence, end_reason="rendering_error",
                           detail=f"the answer's page could not be rendered ({final.error})", artefact=final)
    if similarity is None:
        return Verdict(reward=0.0, evidence=evidence, artefact=final)
    evidence["similarity"] = float(similarity)
    return Verdict(reward=float(similarity), evidence=evidence, artefact=final)


def score(answer: str, task: Any, *, scorer: Any = "auto", renderer: Any = None, reference: Any = None) -> Verdict:
    """Similarity of the answer's page to the reference page (reward = similarity; an answer
    without HTML scores 0, without rendering anything).

    ``scorer``: a scorer or its spec (``"auto"``, ``"clip"`` ...); ``renderer``: the process's
    shared renderer by default; ``reference``: the reference page already rendered (the env renders
    it at reset), else it is rendered here."""
    scorer, renderer = _parts(scorer, renderer)
    html = extract_answer_html(answer)
    evidence = _evidence(scorer, html is not None)
    if html is None:
        return _verdict(evidence)
    if reference is None:
        from colbench_gym.rendering import ReferenceRenderError  # noqa: PLC0415

        try:
            reference = renderer.render_reference(task.ground_truth)
        except ReferenceRenderError as exc:
            return _verdict(evidence, reference_error=str(exc))
    final = renderer.render(html)
    similarity = None if final.infrastructure else scorer.similarity(final.image(), reference.image())
    return _verdict(evidence, final=final, similarity=similarity)


def score_many(answers: Sequence[str], tasks: Sequence[Any], *, scorer: Any = "auto", renderer: Any = None,
               references: Sequence[Any] | None = None, images: Sequence[Any] | None = None) -> list[Verdict]:
    """:func:`score` for many answers at once, in order: one :class:`Verdict` per answer.

    ``references``: the tasks' reference pages already rendered (``render_many(..., cache=True)``),
    else they are rendered here in one batch; an item whose reference failed is unscored
    (``rendering_error``) whatever its answer. ``images``: per item, a screenshot of the answer
    taken already (the paper release stores its answers so), compared in place of the answer's
    page, or None. The answers' pages are rendered in one batch (no disk cache: answers rarely
    repeat) and every pair's similarity is embedded in one call."""
    if len(answers) != len(tasks):
        raise ValueError(f"{len(answers)} answers but {len(tasks)} tasks")
    scorer, renderer = _parts(scorer, renderer)
    n = len(answers)
    if references is None:
        references = renderer.render_many([t.ground_truth for t in tasks], cache=True)
    images = list(images) if images is not None else [None] * n
    htmls = [None if img is not None else extract_answer_html(a or "") for a, img in zip(answers, images)]
    todo = [i for i in range(n) if references[i].ok and htmls[i] is not None]
    finals = dict(zip(todo, renderer.render_many([htmls[i] for i in todo]))) if todo else {}
    pairs = [i for i in range(n) if references[i].ok
             and (images[i] is not None or (i in finals and not finals[i].infrastructure))]
    sims = scorer.similarities([images[i] if images[i] is not None else finals[i].image() for i in pairs],
                               [references[i].image() for i in pairs]) if pairs else []
    by_pair = dict(zip(pairs, sims))
    return [_verdict(_evidence(scorer, htmls[i] is not None), reference_error=references[i].error,
                     final=finals.get(i), similarity=by_pair.get(i)) for i in range(n)]
