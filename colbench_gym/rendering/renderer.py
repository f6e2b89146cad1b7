"""Render HTML to screenshots with one headless Chromium, isolated renders and two page pools.

Why this shape: opening a browser (or even a browser context) per screenshot costs most of the
time of a render (a new context + page was measured at ~250 ms CPU here, the whole render of a
page at ~130 ms). One browser stays up, ``pool_size`` pages (each in its own browser context) are
reused, and every request the pages make is answered locally
(:mod:`colbench_gym.rendering.routing`), so Tailwind renders styled offline and nothing waits for
the network.

Security (a frontend reward is a screenshot similarity; see docs/frontend.md, threat model):
every render starts from a fresh JavaScript realm and stops the page's scripts before it is
measured and captured (:mod:`colbench_gym.rendering.isolation`); reference pages (``cache=True``)
are rendered on a pool of their own, with their own Tailwind compiler page, never on a page an
answer has used; the reference cache (:mod:`colbench_gym.rendering.cache`) is keyed by the HTML
and every render setting, stores only clean reference renders and verifies entries when read;
WebRTC cannot send UDP and no request leaves the machine.

Faults: a page that never finishes loading is cut at ``timeout`` and replaced; a crashed page is
replaced and retried; a browser that died *or stopped answering* (checked with a CDP ping after
any failure) is killed by its process group and relaunched, and the page retried — each render is
bounded in time. If Chromium cannot be (re)launched, :class:`RendererError` says so in one line.

Playwright's async API runs on a private event-loop thread and :class:`Renderer` exposes a
blocking, thread-safe façade (several environments can share one browser, it works in Jupyter).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import hashlib
import io
import os
import secrets
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from colbench_gym.rendering import isolation, routing
from colbench_gym.rendering.assets import WebAssets, locate
from colbench_gym.rendering.cache import ScreenshotCache, default_cache_dir
from colbench_gym.rendering.dom_js import DOM_JS
from colbench_gym.rendering.process import (  # noqa: F401 - CHROMIUM_ARGS, find_chromium re-exported
    CHROMIUM_ARGS,
    TOKEN_SWITCH,
    find_browser_pid,
    find_chromium,
    kill_browser,
)
from colbench_gym.rendering.result import ReferenceRenderError, RendererError, RenderResult

#: Bumped when rendering changes in a way that invalidates cached screenshots.
RENDER_VERSION = "4"  # 2: scripts stopped after the first frame, animations started by script cancelled;
# 3: measured only after the web fonts have loaded (before, a page could be measured short);
# 4: measured only after its <link> stylesheets have loaded (before, a page could be measured unstyled)
AGENT, REFERENCE = "agent", "reference"
#: Renders in a row that may share one document (each adds an isolated world to it).
REUSE_LIMIT = 32
#: A reference page that fails is rendered again this many times before its failure stands.
REFERENCE_RETRIES = 1
#: Launches tried when the browser starts but does not answer in time (a starved machine: in a
#: test suite run beside a job that took all memory, one launch missed Playwright's 90 s).
#: A launch that fails otherwise (no binary, a crash at start) is not retried.
LAUNCH_ATTEMPTS = 2


def _is_timeout(exc: BaseException) -> bool:
    """The builtin TimeoutError (asyncio's, since 3.11) or Playwright's own."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout  # noqa: PLC0415

    return isinstance(exc, (TimeoutError, PlaywrightTimeout))


class Renderer:
    """Headless Chromium with a pool of isolated pages for answers and one for references.

    Args:
        viewport: ``(width, height)`` of the window; screenshots are full-page at this width.
        pool_size: pages per pool (renders that can run at once).
        max_height: full-page screenshots are cut at this many pixels.
        timeout: seconds a page may take to load before it is cut off; also bounds every other
            step, so a hung browser is detected and replaced within a few timeouts.
        executable_path: Chromium to launch (default: :func:`find_chromium`).
        web_assets: folder of the offline Tailwind files (default: located by
            :func:`colbench_gym.rendering.assets.locate`; missing files raise a clear error).
            ``False`` renders without them (Tailwind pages come out unstyled).
        cache: a :class:`ScreenshotCache` for reference renders (``cache=True``);
            default: in memory plus :func:`default_cache_dir` on disk.
        max_dom_nodes: elements described in the DOM summary (``dom=True``).
        precompile: serve play-CDN pages CSS from a warm compiler page and v2 stylesheets
            purged to the page's classes (pixel-identical, much cheaper); ``False`` serves the
            Tailwind files as they are.
        image_format: ``"png"`` (lossless, default) or ``"jpeg"`` (cheaper to encode;
            ``jpeg_quality``), for bulk scoring where a few levels of colour noise do not matter.
        capture_width: scale screenshots to this width (layout still at ``viewport``), e.g. 320
            when the only consumer is CLIP, which sees 224 px; default: full resolution.
    """

    def __init__(self, *, viewport: tuple[int, int] = (1280, 800), pool_size: int = 2, max_height: int = 4000,
                 timeout: float = 10.0, executable_path: str | None = None,
                 web_assets: str | os.PathLike[str] | WebAssets | bool | None = None,
                 cache: ScreenshotCache | None = None, max_dom_nodes: int = 400, precompile: bool = True,
                 image_format: str = "png", jpeg_quality: int = 92, capture_width: int | None = None):
        if pool_size < 1:
            raise ValueError("pool_size must be >= 1")
        self.viewport = (int(viewport[0]), int(viewport[1]))
        self.pool_size, self.max_height, self.timeout = pool_size, int(max_height), float(timeout)
        self.max_dom_nodes = max_dom_nodes
        if image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {image_format!r}")
        if capture_width is not None and not 16 <= int(capture_width) <= self.viewport[0]:
            raise ValueError(f"capture_width must be between 16 and the viewport width, got {capture_width!r}")
        self.capture_width = int(capture_width) if capture_width else None
        self.image_format, self.jpeg_quality = image_format, int(jpeg_quality)
        self.precompile = precompile
        self.executable_path = find_chromium(executable_path)
        if web_assets is False:
            self.assets: WebAssets | None = None
        elif isinstance(web_assets, WebAssets):
            self.assets = web_assets
        else:
            self.assets = locate(web_assets)  # raises WebAssetsMissing with the install command
        self.cache = cache if cache is not None else ScreenshotCache(default_cache_dir())
        self.restarts = 0  # browser relaunches after a crash or a hang
        self.launch_retries = 0  # launches tried again after a start that timed out
        self.page_replacements = 0  # pages replaced after a crash, a timeout or a pop-up
        self.renders = 0
        self.fresh_documents = 0  # renders that navigated to a new document (the others reused one)
        self.browser_version = ""
        self.browser_pid: int | None = None  # the Chromium process (group leader) of this renderer
        self._token = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._pw = self._browser = self._browser_cdp = None
        self._free: dict[str, list] = {AGENT: [], REFERENCE: []}
        self._compilers: dict[str, Any] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._launch_lock: asyncio.Lock | None = None
        self._generation = 0
        self._closed = False
        self._pid = os.getpid()

    # ---------------------------------------------------------------- lifecycle
    def _forget_parent_browser(self) -> None:
        """After ``fork`` the loop thread and the browser belong to the parent process: start
        afresh here (vector environments and data loaders fork with renderers in memory)."""
        self._start_lock = threading.Lock()
        self._loop = self._thread = None
        self._pw = self._browser = self._browser_cdp = None
        self._free, self._compilers, self._slots, self._launch_lock = {AGENT: [], REFERENCE: []}, {}, {}, None
        self.browser_pid, self._token = None, ""
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
        try:
            return fut.result(timeout)
        except FutureTimeout:
            if fut.done():  # (3.11+: asyncio's and concurrent's TimeoutError are one class) raised inside
                raise RendererError("the browser did not answer in time (start-up or a page took too long)") from None
            fut.cancel()
            raise RendererError(f"rendering did not finish within {timeout:.0f}s (browser unresponsive)") from None

    def start(self) -> "Renderer":
        """Launch the browser now (it is otherwise launched by the first render)."""
        self._call(self._ensure_browser())
        return self

    def _lock(self) -> asyncio.Lock:
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        return self._launch_lock

    async def _ensure_browser(self) -> None:
        if self._browser is not None and self._browser.is_connected():
            return
        async with self._lock():
            if self._browser is not None and self._browser.is_connected():
                return
            if self._browser is not None:
                self.restarts += 1  # it died under us (crash, OOM kill): relaunch transparently
            await self._launch()

    async def _restart(self, generation: int) -> None:
        """Kill the (dead or hung) browser of ``generation`` and launch a new one, once."""
        async with self._lock():
            if generation != self._generation:
                return  # another render already replaced it
            self.restarts += 1
            await self._launch()

    def _launch_error(self, exc: BaseException) -> RendererError:
        return RendererError(
            f"could not launch Chromium ({self.executable_path or 'Playwright default'}): "
            f"{str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__}. "
            "Install Debian's chromium (`apt-get install chromium`) or set COLBENCH_CHROMIUM to a "
            "Chromium/Chrome binary; `playwright install chromium` also works where downloads are allowed.")

    async def _launch(self) -> None:
        from playwright.async_api import async_playwright  # noqa: PLC0415

        await self._shutdown_browser()
        if self._pw is None:
            self._pw = await async_playwright().start()
        for attempt in range(LAUNCH_ATTEMPTS):
            self._token = secrets.token_hex(8)  # each attempt's browser is found by its own token
            kwargs: dict[str, Any] = {"headless": True,
                                      "args": [*CHROMIUM_ARGS, TOKEN_SWITCH + self._token],
                                      "timeout": max(30.0, self.timeout * 3) * 1000}
            if self.executable_path:
                kwargs["executable_path"] = self.executable_path
            try:
                self._browser = await self._pw.chromium.launch(**kwargs)
                self._browser_cdp = await asyncio.wait_for(self._browser.new_browser_cdp_session(), self.timeout)
                break
            except Exception as exc:  # noqa: BLE001 - turn any launch failure into one clear message
                await self._shutdown_browser()
                if _is_timeout(exc) and attempt + 1 < LAUNCH_ATTEMPTS:
                    # it started but did not answer in time: a starved machine, not a missing browser
                    self.launch_retries += 1
                    continue
                raise self._launch_error(exc) from exc
        self.browser_pid = find_browser_pid(self._token)
        self.browser_version = self._browser.version
        self._generation += 1
        self._free = {AGENT: [], REFERENCE: []}
        self._compilers = {}
        try:  # warm the agent pool (best effort: pages are otherwise made when first needed)
            for _ in range(self.pool_size):
                self._free[AGENT].append(await asyncio.wait_for(self._new_page(AGENT), max(10.0, self.timeout * 2)))
        except Exception:  # noqa: BLE001 - a slow machine: the renders will make their pages
            pass

    async def _compiler(self, domain: str):
        """The Tailwind compiler page of a pool (references have their own), started lazily."""
        if not (self.precompile and self.assets is not None):
            return None
        comp = self._compilers.get(domain)
        if comp is None:
            from colbench_gym.rendering.precompile import PlayCompiler  # noqa: PLC0415

            # Starting the play script is a one-off: give it more time than a page, and start it
            # now in the background so the first page of the pool does not wait for it.
            comp = self._compilers[domain] = PlayCompiler(await self._new_context(domain), timeout=max(self.timeout, 10) * 2)
            asyncio.ensure_future(comp.css_for(set()))
        return comp

    async def _new_context(self, domain: str):
        # One context (one window) per page: a page sharing its window with a busy tab was
        # measured to wait whole seconds for its screenshot frame.
        context = await self._browser.new_context(
            viewport={"width": self.viewport[0], "height": self.viewport[1]}, device_scale_factor=1,
            java_script_enabled=True, bypass_csp=True, service_workers="block",
        )
        context._colbench_domain = domain  # noqa: SLF001 - read by the router
        await context.route("**/*", self._route)
        return context

    async def _new_page(self, domain: str):
        context = await self._new_context(domain)
        await self._compiler(domain)
        page = await context.new_page()
        page._colbench_context = context  # noqa: SLF001 - closed with the page when it is replaced
        page._colbench_domain = domain  # noqa: SLF001
        page._colbench_cdp = cdp = await context.new_cdp_session(page)  # noqa: SLF001 - capture, isolation
        page._colbench_frame_id = (await cdp.send("Target.getTargetInfo"))["targetInfo"]["targetId"]  # noqa: SLF001
        page.set_default_timeout(self.timeout * 1000)
        page._colbench_crashed = False  # noqa: SLF001 - set by the crash event below, or on any trouble
        page._colbench_generation = self._generation  # noqa: SLF001

        def _on_crash(p=page):
            p._colbench_crashed = True  # noqa: SLF001

        def _on_popup(other, p=page):
            if other is not p:  # window.open / target=_blank: close it, replace the whole context after
                p._colbench_crashed = True  # noqa: SLF001
                asyncio.ensure_future(other.close())

        page.on("crash", _on_crash)
        context.on("page", _on_popup)
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
            if url.startswith("https://cdn.tailwindcss.com"):
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
    def _page_of(route):
        """The pooled (top-level) page that made this request, or None."""
        try:
            frame = route.request.frame
            page = frame.page
        except Exception:  # noqa: BLE001 - a worker or a detached frame
            return None
        if frame.parent_frame is not None or getattr(page, "_colbench_compiler", False):
            return None
        return page

    def _purged(self, route) -> routing.LocalResponse | None:
        """A Tailwind v2 stylesheet cut to the rules the page can use (see rendering.purge)."""
        from colbench_gym.rendering.precompile import page_classes  # noqa: PLC0415
        from colbench_gym.rendering.purge import eligible, index_for  # noqa: PLC0415

        hit = routing.tailwind_file(route.request.url, self.assets)
        if hit is None or hit[1] != "text/css" or "tailwindcss-2" not in hit[0]:
            return None
        html = getattr(self._page_of(route), "_colbench_html", None)
        if html is None or not eligible(html):
            return None
        css = index_for(hit[0]).purge(page_classes(html))
        return routing.LocalResponse(css.encode("utf-8"), "text/css", kind="precompiled")

    async def _precompiled(self, route) -> routing.LocalResponse | None:
        """The play script replaced by CSS from the pool's compiler page, when provably equivalent."""
        from colbench_gym.rendering.precompile import eligible, page_classes  # noqa: PLC0415

        page = self._page_of(route)
        html = getattr(page, "_colbench_html", None)
        compiler = self._compilers.get(getattr(page, "_colbench_domain", None))
        if html is None or compiler is None or not eligible(html, route.request.url):
            return None
        css = await compiler.css_for(page_classes(html))
        if css is None:
            return None
        return routing.LocalResponse(compiler.script_for(css), "application/javascript", kind="precompiled")

    async def _shutdown_browser(self) -> None:
        browser, self._browser, self._browser_cdp, self._compilers = self._browser, None, None, {}
        pid, token = self.browser_pid, self._token
        if pid is None and token:  # a launch that failed half-way: its browser is found by its token
            pid = find_browser_pid(token)
        if browser is not None:
            try:
                await asyncio.wait_for(browser.close(), 3)
            except Exception:  # noqa: BLE001 - a dead or hung browser cannot be closed politely
                pass
        kill_browser(pid, token)  # whatever is left of it (a stopped browser ignores close)
        self.browser_pid = None

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
            kill_browser(self.browser_pid, self._token)
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
        """Hash of the HTML and every setting that changes the screenshot."""
        h = hashlib.sha256()
        for part in (RENDER_VERSION, f"{self.viewport}", str(self.max_height), str(self.assets is not None),
                     str(self.precompile), self.image_format, str(self.jpeg_quality if self.image_format == "jpeg" else ""),
                     str(self.capture_width or ""), str(self.max_dom_nodes), html):
            h.update(part.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        return h.hexdigest()[:40]

    def render(self, html: str, *, dom: bool = False, cache: bool = False) -> RenderResult:
        """Render one page; ``cache=True`` marks a *reference*: rendered in the reference pool and
        looked up / stored in the reference cache."""
        return self.render_many([html], dom=dom, cache=cache)[0]

    def render_reference(self, html: str, *, dom: bool = False) -> RenderResult:
        """Render a task's reference page (reference pool, reference cache), or raise
        :class:`ReferenceRenderError` when it failed, also when retried: a reference that did not
        render must never be scored against (it would be a blank page)."""
        result = self.render_many([html], dom=dom, cache=True)[0]
        if result.error:
            raise ReferenceRenderError(result.error, html)
        return result

    def _page_bound(self) -> float:
        """Upper bound on one page's render, restarts included (used for the outer deadline)."""
        return 3 * (self.timeout * 5 + 15 + 60) + 60  # three attempts, each with a ping and a relaunch

    def render_many(self, htmls: list[str], *, dom: bool = False, cache: bool = False) -> list[RenderResult]:
        """Render several pages using the whole pool at once; results keep the input order.
        ``cache=True``: the pages are references (reference pool, reference cache); one that fails
        is rendered again (:data:`REFERENCE_RETRIES`), and one that still fails comes back with its
        ``error`` set and is never cached: the caller must refuse to score against it
        (:meth:`render_reference` raises instead)."""
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
                                              format=hit.format, clean=True)
                    continue
            todo.append(i)
        if todo:
            domain = REFERENCE if cache else AGENT
            rendered = self._call(self._render_batch([htmls[i] for i in todo], dom, domain),
                                  timeout=self._page_bound() * (1 + len(todo) / self.pool_size))
            for _ in range(REFERENCE_RETRIES if cache else 0):
                failed = [k for k, res in enumerate(rendered) if res.error]
                if not failed:
                    break
                again = self._call(self._render_batch([htmls[todo[k]] for k in failed], dom, domain),
                                   timeout=self._page_bound() * (1 + len(failed) / self.pool_size))
                for k, res in zip(failed, again):
                    rendered[k] = res
            for i, res in zip(todo, rendered):
                if cache:
                    res.key = self.cache_key(htmls[i])
                    self.cache.put(res.key, res)  # refused unless clean
                results[i] = res
        return results  # type: ignore[return-value]

    async def _render_batch(self, htmls: list[str], dom: bool, domain: str) -> list[RenderResult]:
        await self._ensure_browser()
        return list(await asyncio.gather(*(self._render_one(h, dom, domain) for h in htmls)))

    async def _browser_answers(self) -> bool:
        """A CDP round trip to the browser process itself: False when it is dead or hung."""
        browser, cdp = self._browser, self._browser_cdp
        if browser is None or cdp is None or not browser.is_connected():
            return False
        try:
            # Generous: on a busy machine a tight deadline would take a slow browser for a hung one.
            await asyncio.wait_for(cdp.send("Browser.getVersion"), max(5.0, self.timeout))
            return True
        except Exception:  # noqa: BLE001
            return False

    async def _render_one(self, html: str, dom: bool, domain: str) -> RenderResult:
        sem = self._slots.setdefault(domain, asyncio.Semaphore(self.pool_size))
        last: str = ""
        async with sem:
            for attempt in range(3):
                await self._ensure_browser()
                generation = self._generation
                page = None
                t0 = time.perf_counter()
                try:
                    page = await self._take_page(domain)
                    result = await asyncio.wait_for(self._render_on(page, html, dom), self.timeout * 4 + 10)
                    result.elapsed = time.perf_counter() - t0
                    result.clean = domain == REFERENCE and result.ok and attempt == 0
                    self.renders += 1
                    if result.ok or await self._browser_answers():
                        return result
                    last = "the browser stopped answering"  # the "timeout" was the browser's fault
                except Exception as exc:  # noqa: BLE001 - crash, hang or death of the page or the browser
                    last = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
                    if page is not None:
                        page._colbench_crashed = True  # noqa: SLF001
                finally:
                    if page is not None:
                        await self._give_back(page, domain)
                if not await self._browser_answers():
                    await self._restart(generation)  # kill it (even if only hung) and relaunch
                elif attempt >= 1:
                    break  # the browser is fine: this page itself keeps crashing its tab
            else:  # the browser was dead or hung after every attempt: the page's doing, or the browser's?
                if not await self._renders_a_blank_page(domain):
                    return self._blank(f"render failed: the browser itself fails, a blank page included ({last})",
                                       infrastructure=True)
                last = f"it brings the browser down, and a blank page renders ({last})"
        return self._blank(f"render failed (the page crashed or hung its tab or the browser): {last}")

    async def _renders_a_blank_page(self, domain: str) -> bool:
        """Whether the (relaunched) browser renders an empty page now: tells a page that brings the
        browser down on every attempt (scored as the page: a policy must not escape a score by
        crashing the browser) from a browser that is down (``RenderResult.infrastructure``)."""
        page = None
        try:
            await self._ensure_browser()
            page = await self._take_page(domain)
            result = await asyncio.wait_for(self._render_on(page, "<html><body></body></html>", False),
                                            self.timeout * 4 + 10)
            return result.ok
        except Exception:  # noqa: BLE001 - the browser failed this one too
            if page is not None:
                page._colbench_crashed = True  # noqa: SLF001
            return False
        finally:
            if page is not None:
                await self._give_back(page, domain)

    async def _take_page(self, domain: str):
        free = self._free[domain]
        while free:
            page = free.pop()
            if page._colbench_generation == self._generation and not page.is_closed():  # noqa: SLF001
                return page
        return await asyncio.wait_for(self._new_page(domain), self.timeout * 2)

    async def _give_back(self, page, domain: str) -> None:
        """Back to the pool, or closed (with its context) when it crashed, hung or opened pop-ups."""
        if page._colbench_generation != self._generation:  # noqa: SLF001 - its browser was replaced
            return
        if not page._colbench_crashed and not page.is_closed():  # noqa: SLF001
            self._free[domain].append(page)
            return
        self.page_replacements += 1
        try:
            await asyncio.wait_for(page._colbench_context.close(), 3)  # noqa: SLF001 - closes the page too
        except Exception:  # noqa: BLE001
            pass

    def _blank(self, error: str, infrastructure: bool = False) -> RenderResult:
        from PIL import Image  # noqa: PLC0415

        buf = io.BytesIO()
        Image.new("RGB", self.viewport, (255, 255, 255)).save(buf, format="PNG")
        return RenderResult(buf.getvalue(), self.viewport[0], self.viewport[1], None, error=error,
                            infrastructure=infrastructure)

    async def _screenshot(self, page, clip: dict[str, int], timeout: float) -> bytes:
        """Full-page capture straight through CDP with Chromium's fast encoder.

        Measured here: pixel-identical to ``page.screenshot(full_page=True)`` and about a third
        less CPU per render (Playwright's path adds round trips and the slow zlib setting)."""
        scale = (self.capture_width / self.viewport[0]) if self.capture_width else 1
        params: dict[str, Any] = {"format": self.image_format, "captureBeyondViewport": True,
                                  "optimizeForSpeed": True, "clip": {**clip, "scale": scale}}
        if self.image_format == "jpeg":
            params["quality"] = self.jpeg_quality
        # With a whole Tailwind file in the page (2.9 MB stylesheet, or the play script's full
        # output), CDP's capture-beyond-viewport restyles the page and was measured 3x slower
        # than Playwright's own full-page path; those pages take that path. (The files may come
        # from the browser cache, so "did the page get cut-down CSS" is what is recorded.)
        full_tailwind = "tailwind" in (getattr(page, "_colbench_html", "") or "").lower() and not getattr(
            page, "_colbench_shortcut", False)
        if full_tailwind and scale == 1:
            return await page.screenshot(full_page=True, clip=clip, timeout=timeout * 1000, type=self.image_format)
        result = await asyncio.wait_for(page._colbench_cdp.send("Page.captureScreenshot", params), timeout)  # noqa: SLF001
        return base64.b64decode(result["data"])

    async def _static_css(self, page, html: str) -> tuple[bool, str | None]:
        """``(static, css)``: render ``html`` with JavaScript off all along (no script of its own;
        a play-CDN page gets its precompiled CSS inserted by us), else ``(False, None)``."""
        static, play_url = isolation.static_plan(html)
        if not static or play_url is None:
            return static, None
        from colbench_gym.rendering.precompile import eligible, page_classes  # noqa: PLC0415

        compiler = self._compilers.get(page._colbench_domain)  # noqa: SLF001
        if compiler is None or not eligible(html, play_url):
            return False, None
        css = await compiler.css_for(page_classes(html))
        return (css is not None), css

    @staticmethod
    async def _scrolled(page, world: int, timeout: float) -> bool:
        try:
            return await isolation.scrolled(page, world, timeout)
        except Exception:  # noqa: BLE001 - cannot tell: do not reuse the document
            return True

    async def _render_on(self, page, html: str, dom: bool) -> RenderResult:
        """One render on ``page``, always in a fresh document and realm (see :mod:`isolation`). A
        page without scripts (most WebSight pages) is rendered with JavaScript off from start to
        end and is loaded, styled, frozen and measured in one round trip; a page with scripts
        runs them until it has loaded and painted a frame, then they are stopped."""
        t = self.timeout
        error = None
        page._colbench_html = html  # noqa: SLF001 - read by the router (precompiled Tailwind)
        page._colbench_shortcut = False  # noqa: SLF001 - set by the router
        static, css = await self._static_css(page, html)
        if css is not None:
            page._colbench_shortcut = True  # noqa: SLF001 - cut-down CSS, not the whole Tailwind build
        page_left = getattr(page, "_colbench_reusable", 0)
        reuse = static and page_left > 0
        page._colbench_reusable = 0  # noqa: SLF001 - until this render has finished cleanly
        try:
            if reuse:  # the last render left nothing behind (see isolation.leaves_no_state)
                await isolation.write_document(page, html, t, scripts=False)
            else:
                await isolation.load_fresh(page, html, t, scripts=not static)
                self.fresh_documents += 1
        except asyncio.TimeoutError:  # a page stuck in its own script (or a hung browser: see _render_one)
            page._colbench_crashed = True  # noqa: SLF001
            return self._blank(f"page did not finish loading within {t:g}s")
        size = None
        try:
            world = await isolation.new_world(page, t)
            if static:  # loaded, styled, settled, frozen and measured in one call
                size = await isolation.static_ready_and_measure(page, world, t, css)
            else:
                await isolation.cdp_eval(page, world, isolation.LOADED_JS, t)
        except asyncio.TimeoutError:
            error = f"page did not finish loading within {t:g}s"
        except Exception as exc:  # noqa: BLE001 - the page navigated itself mid-load: capture what it shows
            if page._colbench_crashed or page.is_closed() or "crash" in str(exc).lower():  # noqa: SLF001
                raise RendererError("page crashed") from exc
            size = None
        if page._colbench_crashed:  # noqa: SLF001
            raise RendererError("page crashed")
        grace = min(t / 2, 2.0) if error else t
        try:
            if size is None:  # a page that ran scripts (or navigated itself): a world in its current document
                world = await isolation.new_world(page, grace)
                size = await isolation.stop_and_measure(page, world, grace)  # from here on, no page script runs
            height = max(self.viewport[1], min(int(size[1]) if size else 0, self.max_height))
            clip = {"x": 0, "y": 0, "width": self.viewport[0], "height": height}
            data, _ = await asyncio.gather(self._screenshot(page, clip, grace), isolation.forget_history(page, grace))
            summary = (await isolation.cdp_eval(page, world, isolation.call_js(DOM_JS, self.max_dom_nodes), grace)
                       if dom else None)
        except Exception as exc:  # noqa: BLE001 - a hung or broken page: give a blank page and replace it
            if page._colbench_crashed or "crash" in str(exc).lower() or "closed" in str(exc).lower():  # noqa: SLF001
                raise RendererError("page crashed") from exc
            page._colbench_crashed = True  # noqa: SLF001 - a page stuck in a script is not reusable
            return self._blank(error or f"could not capture the page: {exc.__class__.__name__}: {str(exc)[:200]}")
        if error:
            page._colbench_crashed = True  # noqa: SLF001 - the page may still be running a loop: replace it
        elif not static:  # it ran scripts: its workers and timers must not outlive the render
            try:
                await isolation.park(page, grace)
            except Exception:  # noqa: BLE001 - could not leave the document: replace the page (and its workers)
                page._colbench_crashed = True  # noqa: SLF001
        elif isolation.leaves_no_state(html) and not await self._scrolled(page, world, grace):
            # Each render adds an isolated world to a reused document: a fresh one now and then.
            page._colbench_reusable = page_left - 1 if reuse else REUSE_LIMIT  # noqa: SLF001
        if dom and not isinstance(summary, dict):
            summary = {"title": "", "width": self.viewport[0], "height": height, "body": None, "nodes": [], "truncated": False}
        if self.capture_width:
            from PIL import Image  # noqa: PLC0415

            width, height = Image.open(io.BytesIO(data)).size  # header only
        else:
            width = self.viewport[0]
        return RenderResult(data, width, height, summary, error=error, format=self.image_format)


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


__all__ = ["AGENT", "CHROMIUM_ARGS", "REFERENCE", "RENDER_VERSION", "ReferenceRenderError", "RenderResult", "Renderer", "RendererError",
           "ScreenshotCache", "default_cache_dir", "find_chromium", "shared_renderer"]
