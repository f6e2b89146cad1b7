"""Render HTML to PNG screenshots with one headless Chromium and a pool of reusable pages.

Why this shape: opening a browser (or even a page) per screenshot, as the paper's release does
with Selenium, costs most of the time of a render. One browser stays up; ``pool_size`` pages in
one browser context are reused (``set_content`` + screenshot); every request the pages make is
answered locally (:mod:`colbench_gym.rendering.routing`), so Tailwind renders styled offline and
no render waits for the network.

Playwright's async API runs on a private event-loop thread and :class:`Renderer` exposes a
blocking, thread-safe façade. That lets several environments (threads) share one browser, lets
:meth:`Renderer.render_many` use all pages at once, and works inside Jupyter (where Playwright's
sync API refuses to run because a loop is already running).

Failures are contained: a page that never finishes loading is cut at ``timeout`` and whatever
is on screen is captured (or an error result returned); a crashed page is replaced; a browser
that died is relaunched and the render retried once — all transparently to the caller.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import hashlib
import io
import json
import os
import shutil
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench_gym.rendering import routing
from colbench_gym.rendering.assets import WebAssets, locate
from colbench_gym.rendering.dom_js import DOM_JS

#: Flags that make Debian's Chromium start fast and stay off the network (see DESIGN.md).
CHROMIUM_ARGS = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--font-render-hinting=none",
    # pooled pages are all "background" tabs but one: never throttle their timers or frames
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows", "--disable-extensions",
    # Every request is answered by our router before DNS is needed; this makes anything that
    # bypasses it (preconnect hints, WebSockets, WebRTC) fail at once instead of touching the net.
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
#: Bumped when rendering changes in a way that invalidates cached screenshots.
RENDER_VERSION = "1"
_DOM_JS = DOM_JS
#: Freeze CSS animations/transitions at their end state and hide the caret before a screenshot
#: (deterministic screenshots). Playwright's own ``animations="disabled"`` does this too but was
#: measured to cost up to seconds per screenshot on pages whose styles were injected by script.
_FREEZE_JS = """() => { const s = document.createElement('style'); s.setAttribute('data-colbench', 'freeze');
  s.textContent = '*, *::before, *::after { animation-duration: 0s !important; animation-delay: 0s !important;'
    + ' transition-duration: 0s !important; transition-delay: 0s !important; caret-color: transparent !important; }';
  (document.head || document.documentElement).append(s); return true; }"""
#: One animation frame after "load": lets script-driven styling (Tailwind play/v4 builds) land.
_SETTLE_JS = "() => new Promise(r => requestAnimationFrame(() => r(true)))"


class RendererError(RuntimeError):
    """The browser could not be started or keeps failing."""


@dataclass
class RenderResult:
    """One screenshot. ``data`` is the encoded image (``format``: PNG, or JPEG when the renderer
    was built with ``image_format="jpeg"``). ``error`` is set when the page failed to load fully
    (then ``data`` holds what was on screen at the deadline, or a blank page)."""

    data: bytes
    width: int
    height: int
    dom: dict[str, Any] | None = None
    error: str | None = None
    elapsed: float = 0.0
    cached: bool = False
    key: str = ""
    format: str = "png"
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
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(self.png if path.suffix.lower() == ".png" else self.data)
        os.replace(tmp, path)


def find_chromium(explicit: str | None = None) -> str | None:
    """Chromium to launch: ``explicit``, ``$COLBENCH_CHROMIUM``, else a system Chromium/Chrome on
    PATH. ``None`` means "let Playwright use its own downloaded browser"."""
    for cand in (explicit, os.environ.get("COLBENCH_CHROMIUM")):
        if cand:
            if not (os.path.isfile(cand) or shutil.which(cand)):
                raise RendererError(f"Chromium executable {cand!r} does not exist")
            return shutil.which(cand) or cand
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class ScreenshotCache:
    """Screenshots (+ DOM summaries) by content hash: in memory (LRU) and optionally on disk.

    Reference pages are rendered once per machine, not once per episode or evaluation.
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, max_items: int = 512):
        self.directory = Path(directory).expanduser() if directory else None
        self.max_items = max_items
        self._mem: OrderedDict[str, RenderResult] = OrderedDict()
        self._lock = threading.Lock()
        if self.directory:
            self.directory.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> RenderResult | None:
        with self._lock:
            hit = self._mem.get(key)
            if hit is not None:
                self._mem.move_to_end(key)
                return hit
        if self.directory:
            img, meta = self.directory / f"{key}.img", self.directory / f"{key}.json"
            if img.is_file() and meta.is_file():
                try:
                    info = json.loads(meta.read_text(encoding="utf-8"))
                    result = RenderResult(img.read_bytes(), info["width"], info["height"], info.get("dom"), key=key,
                                          format=info.get("format", "png"))
                except (OSError, ValueError, KeyError):
                    return None
                self._remember(key, result)
                return result
        return None

    def put(self, key: str, result: RenderResult) -> None:
        if not result.ok:
            return  # never cache failures: the next try may succeed
        self._remember(key, result)
        if self.directory:
            meta = {"width": result.width, "height": result.height, "format": result.format, "dom": result.dom}
            for suffix, data in (("img", result.data), ("json", json.dumps(meta).encode())):
                path = self.directory / f"{key}.{suffix}"
                tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_bytes(data)
                os.replace(tmp, path)

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


class Renderer:
    """Headless Chromium with a pool of pages; blocking, thread-safe API.

    Args:
        viewport: ``(width, height)`` of the window; screenshots are full-page at this width.
        pool_size: pages kept open (renders that can run at once).
        max_height: full-page screenshots are cut at this many pixels.
        timeout: seconds a page may take to load before it is cut off.
        executable_path: Chromium to launch (default: :func:`find_chromium`).
        web_assets: folder of the offline Tailwind files (default: located by
            :func:`colbench_gym.rendering.assets.locate`; missing files raise a clear error).
            ``False`` renders without them (Tailwind pages come out unstyled).
        cache: a :class:`ScreenshotCache` for :meth:`render` calls with ``cache=True``;
            default: in memory plus :func:`default_cache_dir` on disk.
        max_dom_nodes: elements described in the DOM summary (``dom=True``).
        precompile: serve play-CDN pages CSS from a warm compiler page and v2 stylesheets
            purged to the page's classes (pixel-identical, much cheaper); ``False`` serves the
            Tailwind files as they are.
        image_format: ``"png"`` (lossless, default) or ``"jpeg"`` (cheaper to encode;
            ``jpeg_quality``), for bulk scoring where a few levels of colour noise do not matter.
    """

    def __init__(self, *, viewport: tuple[int, int] = (1280, 800), pool_size: int = 2, max_height: int = 4000,
                 timeout: float = 10.0, executable_path: str | None = None,
                 web_assets: str | os.PathLike[str] | WebAssets | bool | None = None,
                 cache: ScreenshotCache | None = None, max_dom_nodes: int = 400, precompile: bool = True,
                 image_format: str = "png", jpeg_quality: int = 92):
        if pool_size < 1:
            raise ValueError("pool_size must be >= 1")
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.pool_size, self.max_height, self.timeout = pool_size, int(max_height), float(timeout)
        self.max_dom_nodes = max_dom_nodes
        if image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {image_format!r}")
        self.image_format, self.jpeg_quality = image_format, int(jpeg_quality)
        self.precompile = precompile
        self._compiler = None
        self.executable_path = find_chromium(executable_path)
        if web_assets is False:
            self.assets: WebAssets | None = None
        elif isinstance(web_assets, WebAssets):
            self.assets = web_assets
        else:
            self.assets = locate(web_assets)  # raises WebAssetsMissing with the install command
        self.cache = cache if cache is not None else ScreenshotCache(default_cache_dir())
        self.restarts = 0  # browser relaunches after a crash
        self.page_replacements = 0  # pages replaced after a crash or a timeout
        self.renders = 0
        self.browser_version = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._pw = self._browser = None
        self._pages: asyncio.Queue | None = None
        self._generation = 0
        self._closed = False
        self._pid = os.getpid()

    # ---------------------------------------------------------------- lifecycle
    def _forget_parent_browser(self) -> None:
        """After ``fork`` the loop thread and the browser belong to the parent process: start
        afresh here (vector environments and data loaders fork with renderers in memory)."""
        self._start_lock = threading.Lock()
        self._loop = self._thread = None
        self._pw = self._browser = self._compiler = None
        self._pages = None
        self._pid = os.getpid()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._pid != os.getpid():
            self._forget_parent_browser()
        with self._start_lock:
            if self._closed:
                raise RendererError("this Renderer is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="colbench-renderer", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _call(self, coro, timeout: float | None = None):
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        return fut.result(timeout)

    def start(self) -> "Renderer":
        """Launch the browser now (it is otherwise launched by the first render)."""
        self._call(self._ensure_browser())
        return self

    async def _ensure_browser(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            return
        if self._browser is not None:
            self.restarts += 1  # it died under us (crash, OOM kill): relaunch transparently
        await self._launch()

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright  # noqa: PLC0415

        await self._shutdown_browser()
        if self._pw is None:
            self._pw = await async_playwright().start()
        kwargs: dict[str, Any] = {"headless": True, "args": list(CHROMIUM_ARGS)}
        if self.executable_path:
            kwargs["executable_path"] = self.executable_path
        try:
            self._browser = await self._pw.chromium.launch(**kwargs)
        except Exception as exc:  # noqa: BLE001 - turn any launch failure into one clear message
            raise RendererError(
                f"could not launch Chromium ({self.executable_path or 'Playwright default'}): {exc}. "
                "Install Debian's chromium (`apt-get install chromium`) or set COLBENCH_CHROMIUM to a "
                "Chromium/Chrome binary; `playwright install chromium` also works where downloads are allowed."
            ) from exc
        self.browser_version = self._browser.version
        if self.precompile and self.assets is not None:
            from colbench_gym.rendering.precompile import PlayCompiler  # noqa: PLC0415

            self._compiler = PlayCompiler(await self._new_context(), timeout=self.timeout)
        self._generation += 1
        self._pages = asyncio.Queue()
        for _ in range(self.pool_size):
            self._pages.put_nowait(await self._new_page())

    async def _new_context(self):
        # One context (one window) per page: a page sharing its window with a busy tab was
        # measured to wait whole seconds for its screenshot frame.
        context = await self._browser.new_context(
            viewport={"width": self.viewport[0], "height": self.viewport[1]}, device_scale_factor=1,
            java_script_enabled=True, bypass_csp=True, service_workers="block",
        )
        await context.route("**/*", self._route)
        return context

    async def _new_page(self):
        context = await self._new_context()
        page = await context.new_page()
        page._colbench_context = context  # noqa: SLF001 - closed with the page when it is replaced
        page._colbench_cdp = await context.new_cdp_session(page)  # noqa: SLF001 - fast screenshots
        page.set_default_timeout(self.timeout * 1000)
        page._colbench_crashed = False  # noqa: SLF001 - flag set by the crash event below
        page._colbench_generation = self._generation  # noqa: SLF001

        def _on_crash(p=page):
            p._colbench_crashed = True  # noqa: SLF001

        page.on("crash", _on_crash)
        page.on("dialog", lambda d: asyncio.ensure_future(d.dismiss()))  # alert() must not block a render
        return page

    async def _route(self, route) -> None:
        req = route.request
        url = req.url
        if url.startswith(("data:", "blob:", "about:")):
            await route.continue_()
            return
        resp = None
        if self.precompile and self.assets is not None:
            if self._compiler is not None and url.startswith("https://cdn.tailwindcss.com"):
                resp = await self._precompiled(route)
            elif req.resource_type == "stylesheet":
                resp = self._purged(route)
        if resp is None:
            resp = routing.respond(url, req.resource_type, self.assets)
        elif resp.kind == "precompiled":
            try:  # this page got cut-down Tailwind CSS: see _screenshot
                req.frame.page._colbench_shortcut = True  # noqa: SLF001
            except Exception:  # noqa: BLE001 - a worker or detached frame
                pass
        try:
            # Static files may be cached by the browser; per-page answers (precompiled CSS) never.
            caching = "no-store" if resp.kind == "precompiled" else "public, max-age=31536000"
            await route.fulfill(status=resp.status, body=resp.body,
                                headers={"content-type": resp.content_type, "access-control-allow-origin": "*",
                                         "cache-control": caching})
        except Exception:  # noqa: BLE001 - the page went away while we answered; nothing to do
            pass

    @staticmethod
    def _page_html(route) -> str | None:
        """The HTML being rendered by the (top-level) page that made this request."""
        try:
            frame = route.request.frame
            page = frame.page
        except Exception:  # noqa: BLE001 - a worker or a detached frame
            return None
        if frame.parent_frame is not None or getattr(page, "_colbench_compiler", False):
            return None
        return getattr(page, "_colbench_html", None)

    def _purged(self, route) -> routing.LocalResponse | None:
        """A Tailwind v2 stylesheet cut to the rules the page can use (see rendering.purge)."""
        from colbench_gym.rendering.precompile import page_classes  # noqa: PLC0415
        from colbench_gym.rendering.purge import eligible, index_for  # noqa: PLC0415

        hit = routing.tailwind_file(route.request.url, self.assets)
        if hit is None or hit[1] != "text/css" or "tailwindcss-2" not in hit[0]:
            return None
        html = self._page_html(route)
        if html is None or not eligible(html):
            return None
        css = index_for(hit[0]).purge(page_classes(html))
        return routing.LocalResponse(css.encode("utf-8"), "text/css", kind="precompiled")

    async def _precompiled(self, route) -> routing.LocalResponse | None:
        """The play script replaced by CSS from the compiler page, when provably equivalent."""
        from colbench_gym.rendering.precompile import eligible, page_classes  # noqa: PLC0415

        html = self._page_html(route)
        if html is None or not eligible(html, route.request.url):
            return None
        css = await self._compiler.css_for(page_classes(html))
        if css is None:
            return None
        return routing.LocalResponse(self._compiler.script_for(css), "application/javascript", kind="precompiled")

    async def _shutdown_browser(self) -> None:
        browser, self._browser, self._compiler = self._browser, None, None
        if browser is not None:
            try:
                await asyncio.wait_for(browser.close(), 5)
            except Exception:  # noqa: BLE001 - a dead browser cannot be closed politely
                pass

    def close(self) -> None:
        """Close the browser and stop the loop thread (idempotent)."""
        if self._pid != os.getpid():  # a forked copy: the parent owns that browser
            self._forget_parent_browser()
            self._closed = True
            return
        with self._start_lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None:
            return

        async def _stop():
            await self._shutdown_browser()
            if self._pw is not None:
                try:
                    await asyncio.wait_for(self._pw.stop(), 5)
                except Exception:  # noqa: BLE001
                    pass
                self._pw = None

        try:
            asyncio.run_coroutine_threadsafe(_stop(), loop).result(15)
        except Exception:  # noqa: BLE001 - closing must never raise
            pass
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)

    def __enter__(self) -> "Renderer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # ---------------------------------------------------------------- rendering
    def cache_key(self, html: str) -> str:
        h = hashlib.sha256()
        for part in (RENDER_VERSION, f"{self.viewport}", str(self.max_height), str(self.assets is not None),
                     self.image_format, str(self.jpeg_quality if self.image_format == "jpeg" else ""), html):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return h.hexdigest()[:32]

    def render(self, html: str, *, dom: bool = False, cache: bool = False) -> RenderResult:
        """Render one page; ``cache=True`` looks the page up by content hash first (references)."""
        return self.render_many([html], dom=dom, cache=cache)[0]

    def render_many(self, htmls: list[str], *, dom: bool = False, cache: bool = False) -> list[RenderResult]:
        """Render several pages using the whole pool at once; results keep the input order."""
        for i, html in enumerate(htmls):
            if not isinstance(html, str):
                raise TypeError(f"html[{i}] must be a str, got {type(html).__name__}")
        results: list[RenderResult | None] = [None] * len(htmls)
        todo: list[int] = []
        for i, html in enumerate(htmls):
            if cache:
                hit = self.cache.get(self.cache_key(html))
                if hit is not None and (hit.dom is not None or not dom):
                    results[i] = RenderResult(hit.data, hit.width, hit.height, hit.dom, cached=True, key=hit.key,
                                              format=hit.format)
                    continue
            todo.append(i)
        if todo:
            # Generous outer deadline: every page is individually bounded by self.timeout.
            rendered = self._call(self._render_batch([htmls[i] for i in todo], dom),
                                  timeout=(self.timeout * 3 + 30) * (1 + len(todo) / self.pool_size))
            for i, res in zip(todo, rendered):
                if cache:
                    res.key = self.cache_key(htmls[i])
                    self.cache.put(res.key, res)
                results[i] = res
        return results  # type: ignore[return-value]

    async def _render_batch(self, htmls: list[str], dom: bool) -> list[RenderResult]:
        await self._ensure_browser()
        return list(await asyncio.gather(*(self._render_one(h, dom) for h in htmls)))

    async def _render_one(self, html: str, dom: bool) -> RenderResult:
        last_exc: Exception | None = None
        for _attempt in range(2):
            await self._ensure_browser()
            pages = self._pages
            page = await pages.get()
            t0 = time.perf_counter()
            try:
                result = await self._render_on(page, html, dom)
                result.elapsed = time.perf_counter() - t0
                self.renders += 1
                return result
            except Exception as exc:  # noqa: BLE001 - page/browser crashed mid-render: recover and retry
                last_exc = exc
                page._colbench_crashed = True  # noqa: SLF001
            finally:
                await self._recycle(page, pages)
        return self._blank(f"render failed twice (page or browser crashed): {last_exc}")

    async def _recycle(self, page, pages: asyncio.Queue) -> None:
        """Put a page back in the pool, replacing it when it crashed or hung."""
        if page._colbench_generation != self._generation:  # noqa: SLF001 - its browser was replaced
            return
        if not page._colbench_crashed and not page.is_closed():  # noqa: SLF001
            pages.put_nowait(page)
            return
        self.page_replacements += 1
        try:
            await asyncio.wait_for(page._colbench_context.close(), 3)  # noqa: SLF001 - closes the page too
        except Exception:  # noqa: BLE001
            pass
        try:
            if self._browser is None or not self._browser.is_connected():
                raise RuntimeError("browser gone")
            pages.put_nowait(await asyncio.wait_for(self._new_page(), self.timeout))
        except Exception:  # noqa: BLE001 - the browser itself is gone: relaunch with a fresh pool
            self.restarts += 1
            await self._launch()

    def _blank(self, error: str) -> RenderResult:
        from PIL import Image  # noqa: PLC0415

        buf = io.BytesIO()
        Image.new("RGB", self.viewport, (255, 255, 255)).save(buf, format="PNG")
        return RenderResult(buf.getvalue(), self.viewport[0], self.viewport[1], None, error=error)

    async def _eval(self, page, script: str, arg: Any = None, default: Any = None, timeout: float | None = None):
        """Evaluate in the page; a navigation in the middle (pages that reload or redirect
        themselves) is not an error — the caller gets ``default`` and captures what is shown."""
        try:
            return await asyncio.wait_for(page.evaluate(script, arg), timeout or self.timeout)
        except asyncio.TimeoutError:
            raise
        except Exception as exc:  # noqa: BLE001
            msg = str(exc)
            navigated = "context was destroyed" in msg or "navigation" in msg.lower()
            if navigated and not page._colbench_crashed:  # noqa: SLF001
                return default
            raise

    async def _screenshot(self, page, clip: dict[str, int], timeout: float) -> bytes:
        """Full-page capture straight through CDP with Chromium's fast encoder.

        Measured here: pixel-identical to ``page.screenshot(full_page=True)`` and about a third
        less CPU per render (Playwright's path adds round trips and the slow zlib setting)."""
        params: dict[str, Any] = {"format": self.image_format, "captureBeyondViewport": True,
                                  "optimizeForSpeed": True, "clip": {**clip, "scale": 1}}
        if self.image_format == "jpeg":
            params["quality"] = self.jpeg_quality
        cdp = getattr(page, "_colbench_cdp", None)
        # With a whole Tailwind file in the page (2.9 MB stylesheet, or the play script's full
        # output), CDP's capture-beyond-viewport restyles the page and was measured 3x slower
        # than Playwright's own full-page path; those pages take that path. (The files may come
        # from the browser cache, so "did the page get cut-down CSS" is what is recorded.)
        full_tailwind = "tailwind" in (getattr(page, "_colbench_html", "") or "").lower() and not getattr(
            page, "_colbench_shortcut", False)
        if cdp is None or full_tailwind:
            return await page.screenshot(full_page=True, clip=clip, timeout=timeout * 1000, type=self.image_format)
        result = await asyncio.wait_for(cdp.send("Page.captureScreenshot", params), timeout)
        return base64.b64decode(result["data"])

    async def _render_on(self, page, html: str, dom: bool) -> RenderResult:
        from playwright.async_api import TimeoutError as PWTimeout  # noqa: PLC0415

        error = None
        try:
            page._colbench_html = html  # noqa: SLF001 - read by the router (precompiled Tailwind)
            page._colbench_shortcut = False  # noqa: SLF001 - set by the router
            await page.set_content(html, wait_until="load", timeout=self.timeout * 1000)
            await self._eval(page, _SETTLE_JS)
        except (PWTimeout, asyncio.TimeoutError):
            error = f"page did not finish loading within {self.timeout:g}s"
        if page._colbench_crashed:  # noqa: SLF001
            raise RendererError("page crashed")
        grace = min(self.timeout / 2, 2.0) if error else self.timeout
        try:
            size = None if error else await self._eval(
                page, "() => [document.documentElement.scrollWidth, Math.max(document.documentElement.scrollHeight,"
                " document.body ? document.body.scrollHeight : 0)]")
            height = max(self.viewport[1], min(int(size[1]) if size else 0, self.max_height))
            clip = {"x": 0, "y": 0, "width": self.viewport[0], "height": height}
            if not error:
                await self._eval(page, _FREEZE_JS, timeout=grace)
            png = await self._screenshot(page, clip, grace)
            summary = await self._eval(page, _DOM_JS, self.max_dom_nodes, timeout=grace) if dom else None
        except Exception as exc:  # noqa: BLE001 - a hung or broken page: give a blank page and replace it
            if page._colbench_crashed or "crash" in str(exc).lower():  # noqa: SLF001
                raise RendererError("page crashed") from exc
            page._colbench_crashed = True  # noqa: SLF001 - a page stuck in a script is not reusable
            return self._blank(error or f"could not capture the page: {exc.__class__.__name__}: {str(exc)[:200]}")
        if error:
            page._colbench_crashed = True  # noqa: SLF001 - the page may still be running a loop: replace it
        if dom and summary is None:
            summary = {"title": "", "width": self.viewport[0], "height": height, "body": None, "nodes": [], "truncated": False}
        return RenderResult(png, self.viewport[0], height, summary, error=error, format=self.image_format)


_shared: Renderer | None = None
_shared_lock = threading.Lock()


def shared_renderer(**kwargs: Any) -> Renderer:
    """A process-wide renderer (one browser for every environment in the process)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:  # noqa: SLF001
            _shared = Renderer(**kwargs)
            atexit.register(_shared.close)  # close the browser politely at interpreter exit
        return _shared
