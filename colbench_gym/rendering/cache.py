"""The reference screenshot cache: by a hash of the HTML and every render setting, verified on read.

Reference pages are rendered once per machine, not once per episode or evaluation, so a poisoned
entry would poison every later score against that task. Hence:

- the key (:meth:`colbench_gym.rendering.Renderer.cache_key`) hashes the HTML *and* every setting
  that changes pixels (render version, viewport, height cap, Tailwind assets, precompiled CSS,
  image format, capture width), so a screenshot made under other settings is never reused;
- only *clean* renders are stored: rendered in the reference pool (never on a page an answer has
  used), without error (:attr:`RenderResult.clean` is set by the renderer, nobody else);
- each entry records the SHA-256 of its image and DOM summary and its own key; an entry whose
  bytes, key or image header do not match is ignored (and re-rendered) instead of trusted.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from colbench_gym.jsonl import write_bytes_atomic, write_text_atomic

if TYPE_CHECKING:  # pragma: no cover
    from colbench_gym.rendering.result import RenderResult


def _digest(data: bytes, dom) -> str:
    h = hashlib.sha256(data)
    h.update(b"\x00")
    h.update(json.dumps(dom, sort_keys=True, ensure_ascii=True).encode())
    return h.hexdigest()


class ScreenshotCache:
    """Reference screenshots (+ DOM summaries) in memory (LRU) and optionally on disk."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, max_items: int = 512):
        self.directory = Path(directory).expanduser() if directory else None
        self.max_items = max_items
        self._mem: OrderedDict[str, RenderResult] = OrderedDict()
        self._lock = threading.Lock()
        self.rejected = 0  # entries on disk that failed verification
        if self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> RenderResult | None:
        with self._lock:
            hit = self._mem.get(key)
            if hit is not None:
                self._mem.move_to_end(key)
                return hit
        if self.directory:
            result = self._read(key)
            if result is not None:
                self._remember(key, result)
            return result
        return None

    def _read(self, key: str) -> RenderResult | None:
        from PIL import Image  # noqa: PLC0415

        from colbench_gym.rendering.result import RenderResult  # noqa: PLC0415

        img, meta = self.directory / f"{key}.img", self.directory / f"{key}.json"
        if not (img.is_file() and meta.is_file()):
            return None
        try:
            info = json.loads(meta.read_text(encoding="utf-8"))
            data = img.read_bytes()
            width, height, fmt, dom = int(info["width"]), int(info["height"]), str(info["format"]), info.get("dom")
            ok = (info.get("key") == key and info.get("sha256") == _digest(data, dom)
                  and Image.open(io.BytesIO(data)).size == (width, height))  # header only: cheap
        except (OSError, ValueError, KeyError, TypeError):
            ok = False
        if not ok:
            self.rejected += 1
            return None
        return RenderResult(data, width, height, dom, key=key, format=fmt, clean=True)

    def put(self, key: str, result: RenderResult) -> bool:
        """Store a clean reference render; anything else (errors, answer renders) is refused."""
        if not (result.ok and result.clean):
            return False
        self._remember(key, result)
        if self.directory:
            meta = {"key": key, "width": result.width, "height": result.height, "format": result.format,
                    "dom": result.dom, "sha256": _digest(result.data, result.dom)}
            write_bytes_atomic(self.directory / f"{key}.img", result.data)
            write_text_atomic(self.directory / f"{key}.json", json.dumps(meta))  # written last: the commit
        return True

    def _remember(self, key: str, result: RenderResult) -> None:
        with self._lock:
            self._mem[key] = result
            self._mem.move_to_end(key)
            while len(self._mem) > self.max_items:
                self._mem.popitem(last=False)

    def __len__(self) -> int:
        return len(self._mem)


def default_cache_dir() -> Path | None:
    """``$COLBENCH_CACHE_DIR/screenshots`` when set, else ``~/.cache/colbench/screenshots``;
    ``COLBENCH_CACHE_DIR=off`` keeps the cache in memory only."""
    root = os.environ.get("COLBENCH_CACHE_DIR")
    if root and root.lower() in ("off", "none", "0"):
        return None
    base = Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "colbench"
    return base / "screenshots"
