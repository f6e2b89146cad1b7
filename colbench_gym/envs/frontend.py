"""ColBench frontend design: build a web page for a person who can only judge screenshots."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from colbench_gym.envs.base import ColBenchEnv, TurnEvidence
from colbench_gym.protocol import MAX_TURNS, ParsedAction, extract_html
from colbench_gym.simulators import HumanSimulator
from colbench_gym.verdicts.frontend import score


class ColBenchFrontendEnv(ColBenchEnv):
    """
    ## Description
    The frontend-design half of ColBench (Zhou et al., 2025, *SWEET-RL: Training Multi-Turn
    LLM Agents on Collaborative Reasoning Tasks*). A simulated person wants a web page and asks
    for it vaguely ("a landing page for my bakery, warm colours"); the page they really want is
    a hidden reference page (HTML + Tailwind CSS). The agent may show one draft per turn; the
    draft is rendered in headless Chromium and the person, who sees the draft's screenshot next
    to the reference's, describes the most outstanding differences. After at most 10 turns the
    agent submits its final page, scored by image similarity with the reference.

    ## Action Space
    `UnicodeText`: any string, the agent's whole turn. Text before `OUTPUT:` is private thought
    the person never sees. At most one `<html>…</html>` (else `<body>…</body>`) snippet per turn
    is rendered and shown (the first one). A turn containing `I WANT TO ANSWER:` ends the episode
    and what follows is the final page. Actions longer than 200,000 characters are cut
    (``info["action_truncated"]``); non-strings raise `TypeError`.

    ## Observation Space
    `UnicodeText`: the newest message from the person. The first observation is the problem
    description; later ones are the person's replies cut to 1000 characters; the final
    observation is `""`. `info["messages"]` holds the dialogue as chat messages. The reference
    page (HTML, screenshot or DOM) never appears in an observation or in `info`.

    ## Rewards
    0 on every non-final turn. On the final turn: the cosine similarity between the image
    embeddings of the final page's screenshot and the reference screenshot — CLIP ViT-B/32 with
    OpenAI's weights as in the paper (``scorer="clip"``), or, where those weights are not cached,
    the declared weight-free fallback (``scorer="auto"`` warns and uses it; ``info["scorer"]``
    always names the scorer). An answer without any HTML scores 0.

    ## Starting State
    A task from the configured task source: ``options={"task": record}`` (official record shape
    ``{"problem_description", "ground_truth"}`` with HTML ground truth), ``options={"task_index":
    i}``, or a draw from the environment's seeded generator. The reference is rendered at reset
    (cached by content hash, so only the first episode on a task pays for it). A reference that
    does not render, also when retried once, refuses the episode: `reset` raises
    `ReferenceRenderError` (an infrastructure failure, `rendering_error`) and `step` cannot be
    called until a reset succeeds — a failed reference is never scored against.

    ## Episode End
    Terminates when the agent writes `I WANT TO ANSWER:` or on its 10th turn (that turn counts
    as the answer, as in the paper). There is no truncation. The final `info` holds
    `similarity`, `scorer`, `scorer_is_clip`, `html_found`, `render_error`, `answer`, `ended_by`
    and `end_reason` (`ended_by`, or `rendering_error` when the reference page did not render);
    every turn's `info` says whether a draft was `rendered` (and `render_error`), and holds
    `simulator_model` and `simulator_usage` (the person's tokens this episode).
    Calling `step` after the end raises `EpisodeOverError`.

    ## Arguments
    ```python
    gym.make("ColBench-Frontend-v0", tasks="embedded:test", simulator="offline",
             simulator_kwargs=None, scorer="auto", renderer=None, max_turns=10, render_mode=None)
    ```
    * `tasks`: `"embedded:test"` (default), `"embedded:train"`, `"generated:train"`,
      `"generated:test"`, a path to an official frontend task JSONL, or a list of records.
    * `simulator`: `"offline"` (default; compares the rendered pages, no model), `"openai"` (a
      vision-language model on any OpenAI-compatible endpoint) or a `HumanSimulator`.
    * `scorer`: `"auto"`, `"clip"` (requires cached weights), `"clip-random"` (tests only),
      `"fallback"` or an `ImageScorer` instance.
    * `renderer`: a `colbench_gym.rendering.Renderer`; by default one browser shared by every
      environment in the process (`renderer_kwargs` builds a private one instead).
    * `render_mode`: `"ansi"`/`"human"` (dialogue text) or `"rgb_array"` (the last draft's
      screenshot, else the blank viewport).

    ## Version History
    * v0: Initial version.
    """

    kind = "frontend"
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        tasks: Any = None,
        simulator: str | HumanSimulator | None = "offline",
        simulator_kwargs: dict[str, Any] | None = None,
        scorer: Any = "auto",
        renderer: Any = None,
        renderer_kwargs: dict[str, Any] | None = None,
        max_turns: int = MAX_TURNS,
        render_mode: str | None = None,
    ) -> None:
        if renderer is not None and renderer_kwargs:
            raise ValueError("pass either renderer (an instance) or renderer_kwargs, not both")
        super().__init__(tasks, simulator, simulator_kwargs, max_turns, render_mode)
        self._scorer_spec = scorer
        self._scorer = None
        self._renderer = renderer
        self._renderer_kwargs = renderer_kwargs
        self._owns_renderer = bool(renderer_kwargs)
        self._reference = None
        self._last_draft = self._draft_before = None

    # ----------------------------------------------------------------- lazily built parts
    @property
    def renderer(self):
        if self._renderer is None:
            from colbench_gym.rendering import Renderer, shared_renderer  # noqa: PLC0415 - starts a browser

            self._renderer = Renderer(**self._renderer_kwargs) if self._owns_renderer else shared_renderer()
        return self._renderer

    @property
    def scorer(self):
        if self._scorer is None:
            from colbench_gym.scoring import shared_scorer  # noqa: PLC0415 - may import torch (CLIP)

            self._scorer = shared_scorer(self._scorer_spec)
        return self._scorer

    # ----------------------------------------------------------------- hooks
    def _on_reset(self) -> None:
        # A reference that does not render (even when retried) refuses the episode with
        # ReferenceRenderError: scored against, its blank image would reward a blank answer.
        self._reference = self._last_draft = self._draft_before = None
        self._reference = self.renderer.render_reference(self.task.ground_truth, dom=True)

    def _turn_evidence(self, parsed: ParsedAction) -> TurnEvidence:
        """Render the turn's first HTML snippet (if any) for the person; say in ``info`` whether it was."""
        self._draft_before = self._last_draft  # what render() shows again if this turn is undone
        ref = self._reference
        context: dict[str, Any] = {"reference_image": ref.image(), "reference_dom": ref.dom,
                                   "agent_html": None, "agent_image": None, "agent_dom": None}
        html = extract_html(parsed.message)
        if html is None:
            return TurnEvidence(context, {"rendered": False, "render_error": None})
        draft = self.renderer.render(html, dom=True)
        if draft.infrastructure:  # a blank because the browser failed: never shown to the person as the draft
            from colbench_gym.rendering.result import RendererError  # noqa: PLC0415 - loaded with the renderer

            raise RendererError(f"the agent's draft could not be rendered: {draft.error}")
        self._last_draft = draft
        context.update(agent_html=html, agent_image=draft.image(), agent_dom=draft.dom)
        if draft.error and not draft.dom:
            context["agent_render_error"] = draft.error
        return TurnEvidence(context, {"rendered": True, "render_error": draft.error})

    def _on_turn_undone(self) -> None:
        self._last_draft = self._draft_before

    def _score(self, answer: str) -> tuple[float, dict[str, Any]]:
        verdict = score(answer, self.task, scorer=self.scorer, renderer=self.renderer, reference=self._reference)
        if verdict.artefact is not None:
            self._last_draft = verdict.artefact
        return verdict.reward, verdict.info()

    def render(self):
        if self.render_mode == "rgb_array":
            if self._last_draft is not None:
                return np.asarray(self._last_draft.image())
            width, height = getattr(self._renderer, "viewport", (1280, 800))
            return np.full((height, width, 3), 255, dtype=np.uint8)
        return super().render()

    def close(self) -> None:
        if self._owns_renderer and self._renderer is not None:
            self._renderer.close()
        self._renderer = None if self._owns_renderer else self._renderer
        super().close()
