"""Which frontend answers may be read as image files: the one rule (issue 24, item 3).

The paper's release stores a frontend answer as the path of the screenshot its harness wrote.
Reading *any* path named by an answer let an answer that names a screenshot of the reference
score 1.0 in ``colbench evaluate frontend`` (while the environment, which never reads files,
scores it 0), and let ``sweet-agent view`` copy any local ``*.png`` — any file — into a site meant
to be shared. So an answer is read as an image only when all of this holds:

1. it is one line naming an image (``.png``, ``.jpg``, ``.jpeg``, ``.webp``);
2. the *producing run* wrote it, not the agent: the text is not in any of the agent's turns of
   the record's dialogue (an agent that writes a path as its answer is scored on its text, as the
   environment does: no HTML, 0), and the record has a dialogue at all;
3. it resolves (symlinks followed) to a regular file *inside the trajectory file's folder*;
   ``..`` components are refused outright, an absolute path only if it lands inside the folder;
4. the file is an image: its first bytes are a PNG, JPEG or WebP signature, it is at most
   :data:`MAX_IMAGE_BYTES`, and PIL decodes it completely (``verify`` then ``load``) to at most
   :data:`MAX_PIXELS` pixels.

``colbench evaluate frontend``, the release export (``sweet_agent/interop/release.py``) and
``sweet-agent view`` all ask :func:`run_image` / :func:`run_image_path`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
MAX_IMAGE_BYTES = 32 * 1024 * 1024
MAX_PIXELS = 1280 * 20000
_SIGNATURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")  # PNG, JPEG; WebP: RIFF....WEBP


def names_an_image(answer: Any) -> bool:
    """One line of at most 4096 characters ending in an image suffix."""
    if not isinstance(answer, str):
        return False
    text = answer.strip()
    return bool(text) and "\n" not in text and len(text) <= 4096 and text.lower().endswith(IMAGE_SUFFIXES)


def agent_wrote(answer: str, record: Mapping[str, Any]) -> bool:
    """Whether ``answer`` is the agent's own text: it appears in one of the agent's turns, or the
    record has no dialogue to tell (then nothing says the run wrote it)."""
    text = answer.strip()
    turns = record.get("dialogue_history")
    if not isinstance(turns, list) or not turns:
        return True
    for turn in turns:
        if isinstance(turn, Mapping) and turn.get("role") == "assistant":
            if any(isinstance(turn.get(k), str) and text in turn[k] for k in ("content", "output")):
                return True
    return False


def run_image_path(answer: Any, record: Mapping[str, Any], base_dir: str | os.PathLike[str] | None) -> Path | None:
    """The resolved path of the screenshot the producing run stored as ``record``'s answer, when
    rules 1-3 of the module allow reading it (the file is not opened here); else None."""
    if base_dir is None or not names_an_image(answer) or agent_wrote(answer, record):
        return None
    name = Path(answer.strip())
    if ".." in name.parts:
        return None
    try:
        base = Path(base_dir).resolve(strict=True)
        path = (name if name.is_absolute() else base / name).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, or a symlink loop
        return None
    if not path.is_relative_to(base) or not path.is_file():
        return None
    return path


def is_image_file(path: str | os.PathLike[str]) -> bool:
    """Rule 4: an image signature, a bounded size, and a complete decode by PIL."""
    return load_image_file(path) is not None


def load_image_file(path: str | os.PathLike[str]):
    """The file as an RGB PIL image when it passes rule 4; else None."""
    from PIL import Image  # noqa: PLC0415

    try:
        if os.path.getsize(path) > MAX_IMAGE_BYTES:
            return None
        with open(path, "rb") as fh:
            head = fh.read(12)
        if not (head.startswith(_SIGNATURES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")):
            return None
        with Image.open(path) as img:
            if img.format not in ("PNG", "JPEG", "WEBP") or img.width * img.height > MAX_PIXELS:
                return None
            img.verify()
        with Image.open(path) as img:  # verify() leaves the image unusable: decode it again, fully
            img.load()
            return img.convert("RGB")
    except Exception:  # noqa: BLE001 - truncated, corrupt or not an image at all
        return None


def run_image(answer: Any, record: Mapping[str, Any], base_dir: str | os.PathLike[str] | None):
    """The run's screenshot for ``record``'s answer as an RGB PIL image, when every rule of the
    module holds; else None (the answer is then scored from its text, as the environment does)."""
    path = run_image_path(answer, record, base_dir)
    return None if path is None else load_image_file(path)


__all__ = ["IMAGE_SUFFIXES", "MAX_IMAGE_BYTES", "MAX_PIXELS", "agent_wrote", "is_image_file", "load_image_file",
           "names_an_image", "run_image", "run_image_path"]
