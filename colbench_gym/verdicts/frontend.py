"""Frontend answers: the final page rendered (:mod:`colbench_gym.rendering`) and compared with the
reference page's screenshot (:mod:`colbench_gym.scoring`: CLIP or the declared fallback)."""

from __future__ import annotations

from typing import Any

from colbench_gym.protocol import extract_answer_html
from colbench_gym.verdicts.verdict import Verdict


def score(answer: str, task: Any, *, scorer: Any = "auto", renderer: Any = None, reference: Any = None) -> Verdict:
    """Similarity of the answer's page to the reference page (reward = similarity; an answer
    without HTML scores 0).

    ``scorer``: a scorer or its spec (``"auto"``, ``"clip"`` ...); ``renderer``: the process's
    shared renderer by default; ``reference``: the reference page already rendered (the env renders
    it at reset), else it is rendered here. Unscored (``rendering_error``) when the reference page
    does not render, or the browser failed on the answer's page: a blank image then measures
    nothing of the answer, and is never scored against."""
    from colbench_gym.scoring import shared_scorer  # noqa: PLC0415 - may import torch (CLIP)

    if isinstance(scorer, str):
        scorer = shared_scorer(scorer)
    if renderer is None:
        from colbench_gym.rendering import shared_renderer  # noqa: PLC0415 - starts a browser

        renderer = shared_renderer()
    html = extract_answer_html(answer)
    # ``rendered`` speaks of drafts shown to the person: the final page is scored, never shown.
    evidence: dict[str, Any] = {"scorer": scorer.name, "scorer_is_clip": scorer.is_clip, "html_found": html is not None,
                                "rendered": False, "render_error": None, "similarity": 0.0}
    if html is None:
        return Verdict(reward=0.0, evidence=evidence)
    if reference is None:
        from colbench_gym.rendering import ReferenceRenderError  # noqa: PLC0415

        try:
            reference = renderer.render_reference(task.ground_truth)
        except ReferenceRenderError as exc:
            return Verdict(reward=0.0, evidence=evidence, end_reason="rendering_error",
                           detail=f"the reference page did not render ({exc})")
    final = renderer.render(html)
    evidence["render_error"] = final.error
    if final.infrastructure:  # the browser failed, not the page
        return Verdict(reward=0.0, evidence=evidence, end_reason="rendering_error",
                       detail=f"the answer's page could not be rendered ({final.error})", artefact=final)
    sim = float(scorer.similarity(final.image(), reference.image()))
    evidence["similarity"] = sim
    return Verdict(reward=sim, evidence=evidence, artefact=final)
