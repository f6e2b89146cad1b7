"""What a render produces: :class:`RenderResult` (one screenshot) and :class:`RendererError`.

Apart from :mod:`colbench_gym.rendering.renderer` so that the cache, the scorers and the CLI can
handle screenshots without importing the browser machinery.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_bytes_atomic


class RendererError(RuntimeError):
    """The browser could not be started or keeps failing."""


class ReferenceRenderError(RuntimeError):
    """A task's *reference* page did not render (timed out, crashed), even when retried.

    The task cannot be scored then: a failed reference is a blank (or half-drawn) image, and
    scoring against it would reward a blank answer. Environments refuse the episode with this
    error and evaluators record the task as failed, with the reason, never as a score. It is an
    infrastructure failure (``end_reason`` ``rendering_error``), not the agent's."""

    end_reason = "rendering_error"

    def __init__(self, reason: str, html: str = ""):
        self.reason = reason
        where = f" ({len(html)} characters of HTML beginning {html[:60]!r})" if html else ""
        super().__init__(f"the reference page{where} did not render, also when retried: {reason}. "
                         "The task cannot be scored; check the page (a script that never lets it load?) or "
                         "raise the renderer's timeout on a loaded machine")


@dataclass
class RenderResult:
    """One screenshot. ``data`` is the encoded image (``format``: PNG, or JPEG when the renderer
    was built with ``image_format="jpeg"``). ``error`` is set when the page failed to load fully
    (then ``data`` holds what was on screen at the deadline, or a blank page). ``clean`` is set by
    the renderer only for error-free renders in the reference pool (the only ones it caches).
    ``infrastructure`` is set when the failure was the browser's, not the page's (it stopped
    answering on every attempt, relaunched each time, and then failed an empty page too): the
    blank image then says nothing of the page, and nothing may be scored from it (end reason
    ``rendering_error``). A page that brings the browser down while an empty page renders is the
    page's failure (scored), or a policy could escape its score by crashing the browser."""

    data: bytes
    width: int
    height: int
    dom: dict[str, Any] | None = None
    error: str | None = None
    elapsed: float = 0.0
    cached: bool = False
    key: str = ""
    format: str = "png"
    clean: bool = False
    infrastructure: bool = False
    _image: Any = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None

    def image(self):
        """The screenshot as an RGB :class:`PIL.Image.Image` (decoded once)."""
        if self._image is None:
            from PIL import Image  # noqa: PLC0415

            self._image = Image.open(io.BytesIO(self.data)).convert("RGB")
        return self._image

    @property
    def png(self) -> bytes:
        """The screenshot as PNG bytes (re-encoded when it was captured as JPEG)."""
        if self.format == "png":
            return self.data
        buf = io.BytesIO()
        self.image().save(buf, format="PNG")
        return buf.getvalue()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the screenshot atomically; a ``.png`` path always gets PNG bytes."""
        write_bytes_atomic(path, self.png if Path(path).suffix.lower() == ".png" else self.data)
