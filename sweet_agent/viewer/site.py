"""Write the viewer as a static site: ``index.html``, ``assets/``, ``data.js``, ``shots/``, ``plots/``.

WHY a data *script* and not a JSON file: pages opened from ``file://`` may not ``fetch`` files
next to them, but they may load a ``<script src>``. The data script assigns one object literal
whose every ``<``, ``>``, ``&`` and line separator is a ``\\u`` escape, so no text inside a
trajectory can end the script or start markup; the page itself only ever writes text with
``textContent`` and allows scripts from its own files alone (a Content-Security-Policy meta tag).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_text_atomic

ASSETS = Path(__file__).parent / "assets"
DATA_FILE = "data.js"
_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def safe_json(obj: Any) -> str:
    """JSON text that is also inert inside any HTML or JavaScript context."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, esc in _ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def write_site(out_dir: str | Path, payload: dict[str, Any]) -> Path:
    """Write the site for ``payload`` (runs, summaries, comparisons, episodes); returns ``index.html``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "assets").mkdir(exist_ok=True)
    for name in ("app.js", "app.css"):
        shutil.copyfile(ASSETS / name, out / "assets" / name)
    write_text_atomic(out / DATA_FILE, f"window.COLBENCH_VIEW = {safe_json(payload)};\n")
    index = out / "index.html"
    write_text_atomic(index, (ASSETS / "index.html").read_text(encoding="utf-8"))
    return index
