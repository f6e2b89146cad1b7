"""Answer every request a rendered page makes, locally and at once.

Rendering must be deterministic and offline: a WebSight page asks for Tailwind on a CDN,
placeholder photos on picsum.photos, Google fonts, analytics... Waiting for any of them either
hangs (no network) or makes screenshots depend on the internet. :func:`respond` maps a request
URL to a local response:

- Tailwind CDN URLs -> the files of the npm packages in :mod:`colbench_gym.rendering.assets`;
- placeholder-image services (picsum, placeholder.com, placehold.co, dummyimage, unsplash
  source, placekitten, ...) -> a neutral PNG at the size the URL asks for, so the layout
  matches what the page would look like online;
- any other image -> a neutral PNG (size from the URL when it carries one, else 1x1, which
  the page's CSS usually resizes anyway); everything else -> an empty body of the right type.
"""

from __future__ import annotations

import hashlib
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qs, urlsplit

from colbench_gym.rendering.assets import WebAssets

MAX_SIDE = 2400  # placeholder images are capped (a URL asking for 100000x100000 gets this)


@dataclass(frozen=True)
class LocalResponse:
    body: bytes
    content_type: str
    status: int = 200
    kind: str = "other"  # tailwind | placeholder | image | empty


_IMAGE_EXT = re.compile(r"\.(png|jpe?g|gif|webp|svg|bmp|ico|avif)(\?|$)", re.I)
_WXH = re.compile(r"(?<![\d.])(\d{1,5})\s*[xX×]\s*(\d{1,5})(?![\d])")
_PATH_W_H = re.compile(r"/(\d{1,5})(?:/(\d{1,5}))?/?$")
_PLACEHOLDER_HOSTS = (
    "picsum.photos", "placeholder.com", "via.placeholder.com", "placehold.co", "placehold.it",
    "dummyimage.com", "source.unsplash.com", "placekitten.com", "placeimg.com", "loremflickr.com",
    "fakeimg.pl", "placebear.com", "baconmockup.com", "images.unsplash.com", "unsplash.it",
)


def _clamp(v: int) -> int:
    return max(1, min(int(v), MAX_SIDE))


def placeholder_size(url: str) -> tuple[int, int] | None:
    """The ``(width, height)`` a placeholder URL asks for, or None when it names none."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if "w" in query and query["w"][0].isdigit():
        w = int(query["w"][0])
        h = int(query["h"][0]) if "h" in query and query["h"][0].isdigit() else w
        return _clamp(w), _clamp(h)
    m = _WXH.search(parts.path)
    if m:
        return _clamp(int(m.group(1))), _clamp(int(m.group(2)))
    path = re.sub(r"\.(png|jpe?g|gif|webp)$", "", parts.path, flags=re.I)
    path = re.sub(r"^/(id|seed)/[^/]+", "", path)  # picsum /id/48/600/300, /seed/x/600/300
    m = _PATH_W_H.search(path)
    if m:
        w = int(m.group(1))
        return _clamp(w), _clamp(int(m.group(2)) if m.group(2) else w)
    return None


@lru_cache(maxsize=256)
def placeholder_png(width: int, height: int, tone: int = 0) -> bytes:
    """A flat grey-blue PNG with a slightly darker frame; tone varies per URL so images differ."""
    from PIL import Image, ImageDraw  # noqa: PLC0415 - pillow is a base dependency, import when used

    shades = [(203, 213, 225), (186, 198, 214), (214, 211, 209), (196, 207, 196)]
    fill = shades[tone % len(shades)]
    img = Image.new("RGB", (width, height), fill)
    if width > 4 and height > 4:
        ImageDraw.Draw(img).rectangle([0, 0, width - 1, height - 1], outline=tuple(c - 30 for c in fill))
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=1)
    return buf.getvalue()


@lru_cache(maxsize=16)
def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def tailwind_file(url: str, assets: WebAssets) -> tuple[str, str] | None:
    """``(local path, content type)`` for a Tailwind CDN URL, or None when it is not one."""
    parts = urlsplit(url)
    host, path = parts.netloc.lower(), parts.path
    if host == "cdn.tailwindcss.com":
        plugins = parse_qs(parts.query).get("plugins")
        js = assets.play_v3_with_plugins() if plugins else assets.play_v3
        return str(js), "application/javascript"
    if host not in ("cdn.jsdelivr.net", "unpkg.com", "cdnjs.cloudflare.com"):
        return None
    low = path.lower()
    if "@tailwindcss/browser" in low:
        return str(assets.browser_v4), "application/javascript"
    if "tailwindcss-cdn" in low:
        return str(assets.play_v3), "application/javascript"
    if re.search(r"/tailwindcss(@[^/]*)?/", low) or "/tailwindcss/" in low:
        if low.endswith(".js"):
            return str(assets.play_v3), "application/javascript"
        # v1/v2 dist stylesheets (and v3 links, which do not exist upstream: best effort v2).
        name = low.rsplit("/", 1)[-1] if low.endswith(".css") else "tailwind.min.css"
        return str(assets.css_v2(name)), "text/css"
    return None


def _content_type_for(url: str, resource_type: str) -> tuple[str, bool]:
    """Guess what the page expects: ``(content type, is_image)``."""
    if resource_type == "image" or _IMAGE_EXT.search(urlsplit(url).path):
        return "image/png", True
    return {
        "stylesheet": "text/css", "script": "application/javascript", "font": "font/woff2",
        "document": "text/html", "xhr": "application/json", "fetch": "application/json",
    }.get(resource_type, "text/plain"), False


def respond(url: str, resource_type: str, assets: WebAssets | None) -> LocalResponse:
    """The local answer to a request the page made (never touches the network)."""
    if assets is not None:
        hit = tailwind_file(url, assets)
        if hit is not None:
            return LocalResponse(_read(hit[0]), hit[1], kind="tailwind")
    host = urlsplit(url).netloc.lower()
    ctype, is_image = _content_type_for(url, resource_type)
    if is_image or any(host == h or host.endswith("." + h) for h in _PLACEHOLDER_HOSTS):
        size = placeholder_size(url)
        tone = int(hashlib.md5(url.encode()).hexdigest()[:2], 16)
        return LocalResponse(placeholder_png(*(size or (1, 1)), tone), "image/png",
                             kind="placeholder" if size else "image")
    if ctype == "text/html":
        return LocalResponse(b"<!doctype html><html><body></body></html>", ctype, kind="empty")
    return LocalResponse(b"", ctype, kind="empty")
