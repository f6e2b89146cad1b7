"""The renderer with the real Chromium: offline Tailwind (both forms), pool, failures, cache, CLI."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from colbench_gym.rendering import Renderer, ScreenshotCache, WebAssetsMissing, locate
from colbench_gym.rendering import assets as assets_mod
from colbench_gym.rendering.routing import placeholder_size, respond, tailwind_file
from tests.html_pages import V2, V3, V4, page

pytestmark = pytest.mark.browser


def _px(result, x, y):
    return result.image().getpixel((x, y))


def _close(a, b, tol=3):
    return all(abs(int(p) - int(q)) <= tol for p, q in zip(a, b))


STYLED = '<div class="{hdr} h-24 w-full"></div><p class="p-4">hello</p>'


@pytest.mark.parametrize("head,body,hdr,body_rgb,hdr_rgb", [
    # Tailwind 2 stylesheet link (WebSight's usual form): red-500 #ef4444, blue-700 #1d4ed8
    (V2, "bg-red-500", "bg-blue-700", (239, 68, 68), (29, 78, 216)),
    # Tailwind 3 play CDN script: amber-100 #fef3c7, emerald-700 #047857
    (V3, "bg-amber-100", "bg-emerald-700", (254, 243, 199), (4, 120, 87)),
])
def test_tailwind_cdn_pages_render_styled_offline(renderer, head, body, hdr, body_rgb, hdr_rgb):
    res = renderer.render(page(head, body, STYLED.format(hdr=hdr)))
    assert res.ok and res.width == 1280 and res.height >= 800
    assert _close(_px(res, 640, 40), hdr_rgb), _px(res, 640, 40)  # inside the header strip
    assert _close(_px(res, 640, 600), body_rgb), _px(res, 640, 600)  # page background


def test_tailwind_v4_browser_build_is_served(renderer):
    res = renderer.render(page(V4, "bg-black", STYLED.format(hdr="bg-white")))
    assert _px(res, 640, 600) == (0, 0, 0) and _px(res, 640, 40) == (255, 255, 255)


def test_without_assets_the_same_page_is_unstyled(browser_ready):
    with Renderer(web_assets=False, pool_size=1) as bare:
        res = bare.render(page(V2, "bg-red-500", STYLED.format(hdr="bg-blue-700")))
    assert _px(res, 640, 600) == (255, 255, 255)  # proves the colour above came from our assets


def test_placeholder_images_have_requested_size_and_no_network_wait(renderer, monkeypatch):
    """No wait on the (absent) network: every external request of the page is answered by the local
    router, once, with the kind of response it needs (counted, not timed: the machine is shared)."""
    from colbench_gym.rendering import routing

    answered: list[tuple[str, str]] = []
    local = routing.respond

    def counting(url, resource_type, assets):
        resp = local(url, resource_type, assets)
        answered.append((url, resp.kind))
        return resp

    monkeypatch.setattr(routing, "respond", counting)  # the router looks it up at every request
    external = {"https://picsum.photos/id/48/300/200": "placeholder",
                "https://via.placeholder.com/150x80.png": "placeholder",
                "http://10.255.255.1/never.jpg": "image",
                "https://fonts.googleapis.com/css?family=Inter": "empty",
                "https://example.com/embed": "empty",
                "https://www.googletagmanager.com/gtag.js": "empty"}
    html = page(V3, "", '<img id="a" src="https://picsum.photos/id/48/300/200">'
                        '<img src="https://via.placeholder.com/150x80.png">'
                        '<img src="http://10.255.255.1/never.jpg"><link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Inter">'
                        '<iframe src="https://example.com/embed"></iframe><script src="https://www.googletagmanager.com/gtag.js"></script>')
    res = renderer.render(html, dom=True)
    assert res.ok  # every request answered locally: nothing waits for the (absent) network
    assert sorted((u, k) for u, k in answered if u in external) == sorted(external.items())  # each once
    assert ("https://cdn.tailwindcss.com/", "tailwind") in answered  # the page has scripts: the real play CDN
    assert {u for u, _ in answered} <= {*external, "https://cdn.tailwindcss.com/"}  # nothing else asked
    imgs = [n for n in res.dom["nodes"] if n["tag"] == "img"]
    assert (imgs[0]["w"], imgs[0]["h"]) == (300, 200)
    assert (imgs[1]["w"], imgs[1]["h"]) == (150, 80)
    # ... and at once: the router's handler runs to its answer in one step, never suspending on a timer,
    # a lock or the network (a stall added to external requests fails here, however loaded the machine)
    for (url, _), rtype in zip(external.items(), ("image", "image", "image", "stylesheet", "document", "script")):
        route = _FakeRoute(url, rtype)
        assert asyncio.run(_runs_in_one_step(renderer._route(route))), f"the router suspended before answering {url}"
        assert route.answers == [200], url


async def _runs_in_one_step(coro) -> bool:
    """Whether ``coro`` finishes without suspending once (inside a running loop, as the router runs)."""
    try:
        coro.send(None)
    except StopIteration:
        return True
    coro.close()
    return False


class _FakeRoute:
    """A Playwright route whose answer completes at once (what the router awaits is its own answer)."""

    def __init__(self, url: str, resource_type: str):
        from types import SimpleNamespace

        self.request = SimpleNamespace(url=url, resource_type=resource_type, frame=None)
        self.answers: list[int] = []

    async def fulfill(self, *, status, body, headers):
        self.answers.append(status)

    async def continue_(self):
        raise AssertionError(f"{self.request.url} was sent to the network")


def test_pool_pages_are_reused(renderer):
    renderer.start()
    before = renderer.page_replacements
    pages_before = renderer._call(_pages_of(renderer))
    results = renderer.render_many([page(V3, f"bg-{c}-500", f"<p>{c}</p>") for c in ("red", "blue", "green", "pink", "gray", "teal")])
    assert [r.ok for r in results] == [True] * 6
    # same order as the input, distinct content
    assert _close(_px(results[0], 10, 700), (239, 68, 68)) and _close(_px(results[1], 10, 700), (59, 130, 246))
    assert renderer._call(_pages_of(renderer)) == pages_before and len(pages_before) == 2
    assert renderer.page_replacements == before


async def _pages_of(renderer):
    """The answer pool's pages (not the reference pool's, not the Tailwind compiler pages)."""
    return sorted(id(p) for c in renderer._browser.contexts for p in c.pages
                  if getattr(p, "_colbench_domain", None) == "agent")


@pytest.mark.parametrize("html", ["", "<<<not html <div><p>unclosed", "\x00\x01 binary \ufffd junk </html></body>",
                                  "<html><body><div>" * 400, "<script>throw new Error('boom')</script><p>after</p>"])
def test_bad_html_still_renders(renderer, html):
    res = renderer.render(html, dom=True)
    assert res.ok and res.image().size[0] == 1280 and isinstance(res.dom["nodes"], list)


@pytest.mark.slow
def test_page_that_never_finishes_loading_is_cut_and_pool_recovers(browser_ready):
    with Renderer(pool_size=1, timeout=1.5) as r:
        t0 = time.perf_counter()
        res = r.render('<html><body><p>stuck</p><script>while (true) {}</script></body></html>')
        assert not res.ok and "did not finish loading" in res.error
        assert time.perf_counter() - t0 < 10
        assert r.page_replacements == 1
        again = r.render(page("", "", '<div style="background:#123456;height:200px"></div>'))
        assert again.ok and _px(again, 50, 50) == (18, 52, 86)
        looping = r.render('<html><body><p>x</p><script>setTimeout(() => location.reload(), 5)</script></body></html>')
        assert looping.image().size[0] == 1280  # a self-reloading page still yields a screenshot


async def _crash_one_page(renderer):
    p = renderer._free["agent"].pop()
    try:
        await p.goto("chrome://crash", timeout=3000)
    except Exception:  # noqa: BLE001 - the navigation dies with the page
        pass
    for _ in range(50):
        if p._colbench_crashed:
            break
        import asyncio
        await asyncio.sleep(0.05)
    crashed = p._colbench_crashed
    await renderer._give_back(p, "agent")
    return crashed


def _group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (from /proc: the group a renderer's browser leads)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                state, _, pgrp = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[:3]
            except (OSError, ValueError):
                continue
            if int(pgrp) == pgid and state != "Z":
                out.append(int(d))
    return out


@pytest.mark.slow
def test_crashed_page_and_killed_browser_restart_transparently(browser_ready, renderer):
    """Kills only the browser this test's renderer started (its process group), never a process
    found by name: the session's shared renderer (``renderer``) keeps its browser throughout."""
    ok = page("", "", '<div style="background:#123456;height:200px"></div>')
    renderer.start()
    shared, restarts = renderer.browser_pid, renderer.restarts
    assert shared is not None and _group(shared)
    with Renderer(pool_size=2, timeout=5) as r:
        assert r.render(ok).ok
        assert r._call(_crash_one_page(r)) is True
        assert r.page_replacements == 1
        assert all(res.ok and _px(res, 50, 50) == (18, 52, 86) for res in r.render_many([ok, ok, ok]))
        old = r.browser_pid
        assert old is not None and old != shared and os.getpgid(old) == old  # it leads its own group
        pids = _group(old)
        assert old in pids, "expected Chromium processes under this test"
        os.killpg(old, signal.SIGKILL)
        while _group(old):  # gone (the renderer reaps its browser), however loaded the machine
            time.sleep(0.05)
        res = r.render(ok)
        assert res.ok and _px(res, 50, 50) == (18, 52, 86)
        assert r.restarts == 1 and r.browser_pid not in (None, old)
    assert renderer.browser_pid == shared and shared in _group(shared)  # the other renderer's browser lives on
    assert renderer.render(ok).ok and renderer.restarts == restarts


def test_reference_cache_by_content_hash(browser_ready, tmp_path):
    cache = ScreenshotCache(tmp_path / "shots")
    with Renderer(pool_size=1, cache=cache) as r:
        html = page(V2, "bg-green-200", "<h1>cached</h1>")
        first = r.render(html, dom=True, cache=True)
        second = r.render(html, dom=True, cache=True)
        assert not first.cached and second.cached and second.png == first.png
        assert r.renders == 1
        assert len(list((tmp_path / "shots").glob("*.img"))) == 1
    # a fresh process-level cache over the same folder hits on disk
    again = ScreenshotCache(tmp_path / "shots").get(first.key)
    assert again is not None and again.png == first.png and again.dom == first.dom


def test_routing_rules():
    a = locate()
    assert tailwind_file("https://cdn.tailwindcss.com", a)[0] == str(a.play_v3)
    assert tailwind_file("https://cdn.tailwindcss.com/3.4.1?plugins=forms,typography", a)[0] == str(a.play_v3_with_plugins())
    assert tailwind_file("https://unpkg.com/tailwindcss@^2/dist/tailwind.min.css", a)[1] == "text/css"
    assert tailwind_file("https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.css", a)[0].endswith("tailwind.css")
    assert tailwind_file("https://unpkg.com/@tailwindcss/browser@4", a)[0] == str(a.browser_v4)
    assert tailwind_file("https://cdn.jsdelivr.net/npm/bootstrap@5/dist/css/bootstrap.min.css", a) is None
    assert placeholder_size("https://picsum.photos/id/48/600/300") == (600, 300)
    assert placeholder_size("https://picsum.photos/200") == (200, 200)
    assert placeholder_size("https://placehold.co/640x360?text=Hi") == (640, 360)
    assert placeholder_size("https://images.unsplash.com/photo-1?w=400&h=300") == (400, 300)
    assert placeholder_size("https://picsum.photos/99999/5") == (2400, 5)
    png = respond("https://dummyimage.com/120x40/000/fff", "image", a)
    assert Image.open(__import__("io").BytesIO(png.body)).size == (120, 40)
    assert respond("https://fonts.gstatic.com/x.woff2", "font", a).body == b""


def test_missing_assets_error_names_the_install_command(tmp_path, monkeypatch):
    with pytest.raises(WebAssetsMissing, match="colbench_gym.rendering.assets install"):
        locate(tmp_path / "nothing")
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm anywhere
    with pytest.raises(WebAssetsMissing, match="npm"):
        assets_mod.install(tmp_path / "target", quiet=True)
    with pytest.raises(WebAssetsMissing):
        Renderer(web_assets=tmp_path / "nothing")


def test_render_cli(browser_ready, tmp_path):
    src = tmp_path / "page.html"
    src.write_text(page(V3, "bg-rose-600", "<h1 class='text-white'>cli</h1>"))
    out = tmp_path / "shot.png"
    proc = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "render", str(src), "--output", str(out),
                           "--width", "800", "--height", "600", "--dom", str(tmp_path / "dom.json")],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    im = Image.open(out)
    assert im.size == (800, 600) and _close(im.convert("RGB").getpixel((400, 500)), (225, 29, 72))
    assert (tmp_path / "dom.json").read_text().startswith("{")
    missing = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "render", str(tmp_path / "nope.html"),
                              "--output", str(out)], check=False, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "no such file" in missing.stderr


@pytest.mark.slow
@pytest.mark.parametrize("form", ["tailwind.min.css", "cdn.tailwindcss.com"])
def test_tailwind_shortcuts_render_pixel_identical_pages(browser_ready, form):
    """Precompiled play-CDN CSS and purged v2 stylesheets must not change a single pixel."""
    from colbench_gym.tasks.frontend_generator import generate_frontend_task
    htmls = [h for h in (generate_frontend_task(i, "test").ground_truth for i in range(40)) if form in h][:10]
    # include a page whose classes use escapes (fractions, variants, arbitrary values on v3)
    extra = '<div class="w-1/2 md:w-1/3 hover:bg-red-500 space-x-4 py-0.5 bg-gray-200"><span>a</span><span>b</span></div>'
    head = ('<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">'
            if form.endswith(".css") else '<script src="https://cdn.tailwindcss.com"></script>')
    htmls.append(f'<html><head>{head}</head><body class="p-4">{extra}<p class="text-[13px] text-[#123456]">x</p></body></html>')
    with Renderer(pool_size=2, precompile=False, cache=ScreenshotCache(None), timeout=30) as plain, \
            Renderer(pool_size=2, precompile=True, cache=ScreenshotCache(None), timeout=30) as fast:
        slow_shots = plain.render_many(htmls)
        fast_shots = fast.render_many(htmls)
        if form == "cdn.tailwindcss.com":
            comp = fast._compilers["agent"]
            assert comp is not None and comp.compiles >= 5 and comp.failures == 0
    assert all(s.ok for s in slow_shots + fast_shots)
    # compare pixels (the two paths may encode the PNG differently)
    same = [s.image().size == f.image().size and s.image().tobytes() == f.image().tobytes()
            for s, f in zip(slow_shots, fast_shots)]
    assert same == [True] * len(htmls)


def test_pages_with_scripts_get_the_real_tailwind(renderer):
    # page JavaScript adds a class after load: only the real play script can style it
    html = ('<html><head><script src="https://cdn.tailwindcss.com"></script></head><body>'
            '<div id="x" class="h-24"></div><script>document.getElementById("x").classList.add("bg-fuchsia-600")</script>'
            '</body></html>')
    res = renderer.render(html)
    assert _close(_px(res, 640, 40), (192, 38, 211))


def test_jpeg_screenshots_for_bulk_scoring(browser_ready, tmp_path):
    with Renderer(pool_size=1, image_format="jpeg", cache=ScreenshotCache(None)) as r:
        res = r.render(page(V2, "bg-red-500", "<p>x</p>"))
    assert res.format == "jpeg" and res.data[:2] == b"\xff\xd8"
    assert _close(_px(res, 640, 600), (239, 68, 68), tol=6)
    res.save(tmp_path / "shot.png")
    assert (tmp_path / "shot.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="image_format"):
        Renderer(image_format="gif")


@pytest.mark.slow
def test_renderer_survives_fork(browser_ready):
    """A forked child (vector envs, data loaders) gets its own browser instead of hanging."""
    import multiprocessing as mp

    with Renderer(pool_size=1, cache=ScreenshotCache(None)) as r:
        assert r.render(page("", "", "<p>parent</p>")).ok
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        proc = ctx.Process(target=_child_render, args=(r, q))
        proc.start()
        proc.join(120)
        assert proc.exitcode == 0 and q.get(timeout=5) == (True, 1280)
        assert r.render(page("", "", "<p>parent again</p>")).ok  # the parent's browser is untouched


def _child_render(renderer, q):
    res = renderer.render(page("", "", '<div style="background:#123456;height:100px"></div>'))
    q.put((res.ok, res.image().size[0]))
    renderer.close()


def test_no_request_leaves_the_machine(renderer):
    """WebSockets bypass request routing: they must fail at once instead of connecting."""
    html = ('<html><body><p id="s">start</p><script>'
            'const ws = new WebSocket("wss://echo.example.org/");'
            'ws.onerror = () => { document.getElementById("s").textContent = "ws-failed"; };'
            'ws.onopen = () => { document.getElementById("s").textContent = "ws-open"; };'
            '</script></body></html>')
    renderer.start()

    async def outcome():
        from colbench_gym.rendering.isolation import set_scripts

        page = renderer._free["agent"].pop()
        try:
            await set_scripts(page, True, 5)
            await page.set_content(html)
            await page.wait_for_function("document.getElementById('s').textContent !== 'start'", timeout=3000)
            return await page.evaluate("document.getElementById('s').textContent")
        finally:
            page._colbench_crashed = True  # scripts ran outside a render: replace the page
            await renderer._give_back(page, "agent")

    assert renderer._call(outcome()) == "ws-failed"
    res = renderer.render('<img src="https://picsum.photos/50/40">', dom=True)
    assert [n["w"] for n in res.dom["nodes"] if n["tag"] == "img"] == [50]  # routed requests still work


def test_script_free_page_is_measured_after_every_image_reached_layout(renderer):
    """``readyState == "complete"`` can come before the last image's size reaches layout; a page
    measured then was captured short (800-2310 px instead of 3435 in 5 of 24 renders before the
    fix), so the same answer got different screenshots -- and rewards -- from run to run."""
    imgs = "".join(f'<img style="display:block" src="https://picsum.photos/seed/{i}/1200/{100 + i}">' for i in range(30))
    html = page(V2, "m-0", imgs)
    expected = sum(100 + i for i in range(30))
    heights = [res.height for _ in range(4) for res in renderer.render_many([html] * 3)]
    assert heights == [expected] * 12
