"""Attacks on the frontend reward through the renderer, each tried with a real Chromium.

The reward is a screenshot similarity; an answer's page runs JavaScript. Each test is an attack
class from issue 10 (threat model table in docs/frontend.md): it must fail on a renderer whose
pooled pages keep state across renders, and pass when every render is isolated.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from colbench_gym.rendering import Renderer, ScreenshotCache

pytestmark = pytest.mark.browser

SECRET = "SECRET-7f3a9c"
#: The reference page the attacker wants to copy: red, with a secret in its text.
REFERENCE = (f'<html><body style="margin:0;background:rgb(200,0,0)"><h1 style="color:white">{SECRET}</h1>'
             '<div style="height:300px;background:rgb(0,0,150)"></div></body></html>')
#: A script makes a page render with JavaScript on: then only the fresh document stands between
#: an earlier page's timers and this one (with JavaScript off, stopped scripts protect it already).
SCRIPT = "<script>window.__ours = 1;</script>"


def scripted(html: str) -> str:
    return html.replace("</body>", SCRIPT + "</body>")


#: An answer that records every page it can see, through every channel a page has.
SPY = """<html><body style="background:white"><p>spy</p><script>
const grab = () => {
  const h = document.documentElement ? document.documentElement.outerHTML : '';
  if (!h.includes('SECRET-')) return;
  window.__stash = h;
  try { window.name = h; } catch (e) {}
  try { localStorage.setItem('stash', h); } catch (e) {}
  try { sessionStorage.setItem('stash', h); } catch (e) {}
  try { new BroadcastChannel('spy').postMessage(h); } catch (e) {}
  try { history.pushState({ h }, ''); } catch (e) {}
};
setInterval(grab, 1);
const loop = () => { grab(); requestAnimationFrame(loop); }; loop();
try { new MutationObserver(grab).observe(document, { subtree: true, childList: true, characterData: true }); } catch (e) {}
try {
  const w = new Worker(URL.createObjectURL(new Blob(["let h = ''; onmessage = (e) => { if (e.data) h = e.data; else postMessage(h); };"])));
  window.__worker = w; setInterval(() => { if (window.__stash) w.postMessage(window.__stash); }, 1);
} catch (e) {}
</script></body></html>"""

#: A later answer that shows whatever any channel kept (else it stays white). Its own source never
#: holds the marker, so a surviving spy cannot overwrite its loot with this page.
REPLAY = """<html><body style="background:white"><p>replay</p><script>
const show = (h) => { if (h && h.includes('SECRET' + '-')) { document.open(); document.write(h); document.close(); } };
let h = window.__stash || window.name;
try { h = h || localStorage.getItem('stash'); } catch (e) {}
try { h = h || sessionStorage.getItem('stash'); } catch (e) {}
try { h = h || (history.state && history.state.h); } catch (e) {}
show(h);
try { new BroadcastChannel('spy').onmessage = (e) => show(e.data); } catch (e) {}
try { if (window.__worker) { window.__worker.onmessage = (e) => show(e.data); window.__worker.postMessage(null); } } catch (e) {}
</script></body></html>"""


def _px(res, x, y):
    return res.image().getpixel((x, y))


def _red(rgb) -> bool:
    return rgb[0] > 150 and rgb[1] < 80 and rgb[2] < 80


@pytest.mark.parametrize("victim_scripts", [True, False], ids=["scripted", "script-free"])
@pytest.mark.parametrize("victim", ["reference", "answer"])
def test_answer_cannot_replay_a_page_rendered_before_it(browser_ready, tmp_path, victim, victim_scripts):
    """Spy renders, then the victim page (the task's reference, or another answer), then a replay
    answer that shows whatever the spy recorded. One page in the pool: the worst case for reuse.
    A scripted victim runs with JavaScript on, so only the fresh document keeps the spy out."""
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(tmp_path / "shots")) as r:
        r.render(SPY)  # (whether the spy itself finishes loading in time does not matter)
        ref = r.render(scripted(REFERENCE) if victim_scripts else REFERENCE, cache=victim == "reference")
        assert ref.ok and _red(_px(ref, 5, 5))
        time.sleep(0.3)  # the spy's timers get every chance to run
        replay = r.render(REPLAY, dom=True)
        text = " ".join(n.get("text") or "" for n in replay.dom["nodes"])
        assert SECRET not in text, "a later answer reproduced a page rendered before it"
        assert _px(replay, 5, 5) == (255, 255, 255)


def test_every_render_starts_from_a_fresh_realm(browser_ready):
    """What a page leaves behind — globals, timers, window.name, history, workers — is gone for the next."""
    leave = """<html><body><script>
      window.__left = 'globals'; window.name = 'name-channel';
      for (let i = 0; i < 7; i++) history.pushState({ i }, '');
      setInterval(() => { if (document.body) document.body.setAttribute('data-timer', 'alive'); }, 1);
      new MutationObserver(() => { document.body && document.body.setAttribute('data-observer', 'alive'); })
        .observe(document, { subtree: true, childList: true });
      const w = new Worker(URL.createObjectURL(new Blob(["setInterval(() => postMessage(1), 1)"])));
      w.onmessage = () => { document.body && document.body.setAttribute('data-worker', 'alive'); };
    </script><p>left</p></body></html>"""
    probe = """<html><body><p id="out"></p><script>
      document.getElementById('out').textContent = JSON.stringify({
        global: typeof window.__left, name: window.name, history: history.length });
    </script></body></html>"""
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(None)) as r:
        assert r.render(leave).ok
        time.sleep(0.2)
        res = r.render(probe, dom=True)
        seen = json.loads(next(n["text"] for n in res.dom["nodes"] if n.get("text", "").startswith("{")))
        assert seen["global"] == "undefined" and seen["name"] == "" and seen["history"] <= 2
        time.sleep(0.2)
        attrs = r._call(_body_attributes(r))
        assert not {"data-timer", "data-observer", "data-worker"} & set(attrs), attrs


async def _body_attributes(renderer):
    page = renderer._free["agent"][0]
    return await page.evaluate("() => document.body ? document.body.getAttributeNames() : []")


@pytest.mark.parametrize("reference_scripts", [True, False], ids=["scripted", "script-free"])
def test_lingering_timer_cannot_poison_a_reference_or_its_cache(browser_ready, tmp_path, reference_scripts):
    """An answer whose timer repaints every page it finds must not touch the next reference,
    and what goes to the on-disk reference cache must be the clean reference. A scripted reference
    runs with JavaScript on, so only the fresh document keeps the timer away from it."""
    poison = """<html><body><script>
      setInterval(() => { document.documentElement.style.background = 'rgb(255,0,0)';
                          if (document.body) document.body.style.background = 'rgb(255,0,0)'; }, 1);
    </script></body></html>"""
    reference = '<html><body style="margin:0;background:rgb(0,0,150)"><p style="color:white">ref</p></body></html>'
    if reference_scripts:
        reference = scripted(reference)
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(tmp_path / "shots")) as r:
        assert r.render(poison).ok
        time.sleep(0.2)
        ref = r.render(reference, cache=True)
        assert ref.ok and _px(ref, 5, 5) == (0, 0, 150)
        key = r.cache_key(reference)
        # nor the next answer on the poisoned page itself (one page in the pool): a scripted answer
        # runs with JavaScript on, so only its fresh document keeps the timer out
        assert r.render(poison).ok
        time.sleep(0.2)
        answer = r.render(scripted('<html><body style="margin:0;background:rgb(0,150,0)"><p>answer</p></body></html>'))
        assert answer.ok and _px(answer, 5, 5) == (0, 150, 0)
    on_disk = ScreenshotCache(tmp_path / "shots").get(key)
    assert on_disk is not None and on_disk.image().getpixel((5, 5)) == (0, 0, 150)


def test_reference_cache_stores_only_clean_reference_renders_and_verifies_reads(browser_ready, tmp_path):
    shots = tmp_path / "shots"
    page = '<html><body style="margin:0;background:rgb(10,120,10)"><p>ok</p></body></html>'
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(shots)) as r:
        r.render(page)  # an answer render: never cached
        assert not list(shots.glob("*.img"))
        first = r.render(page, cache=True)
        assert first.clean and len(list(shots.glob("*.img"))) == 1
        key = r.cache_key(page)
        # the same HTML under other render settings is another entry
        with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(shots), viewport=(800, 600)) as other:
            assert other.cache_key(page) != key
    # a tampered image (a poisoned entry) is rejected on read, not trusted
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (first.width, first.height), (255, 0, 0)).save(buf, format="PNG")
    (shots / f"{key}.img").write_bytes(buf.getvalue())
    fresh = ScreenshotCache(shots)
    assert fresh.get(key) is None and fresh.rejected == 1
    with Renderer(pool_size=1, timeout=10, cache=fresh) as r:
        again = r.render(page, cache=True)
        assert not again.cached and _px(again, 5, 5) == (10, 120, 10)
    assert ScreenshotCache(shots).get(key).image().getpixel((5, 5)) == (10, 120, 10)  # rewritten clean


def test_page_cannot_react_to_or_animate_the_capture(browser_ready):
    """Scripts are stopped and animations frozen before the page is measured and captured: a page
    that watches for the capture (our freeze style, the capture's resize) or animates itself with
    the Web Animations API shows its plain state."""
    html = """<html><head><style>body { margin: 0; background: rgb(0, 0, 150); height: 1200px; }</style></head><body>
      <div id="box" style="height:100px;background:rgb(0,150,0)"></div><script>
      const red = () => { document.body.style.background = 'rgb(255,0,0)'; };
      new MutationObserver(red).observe(document.head, { childList: true });
      window.addEventListener('resize', red);
      new ResizeObserver((e) => { if (performance.now() > 0 && window.__armed) red(); }).observe(document.documentElement);
      requestAnimationFrame(() => requestAnimationFrame(() => { window.__armed = true; }));
      document.getElementById('box').animate([{ background: 'rgb(255,0,0)' }, { background: 'rgb(255,0,0)' }],
                                             { duration: 1e9 });
    </script></body></html>"""
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(None)) as r:
        for _ in range(2):
            res = r.render(html, dom=True)
            assert res.ok
            assert _px(res, 5, 5) == (0, 150, 0), "the box was animated in the capture"
            assert _px(res, 5, 600) == (0, 0, 150), "the page reacted to the capture"


def test_capture_and_dom_summary_see_the_same_stopped_page(browser_ready):
    """A page that keeps changing itself is captured in one state, and the DOM summary the
    simulator reads (taken after the capture) describes that same state."""
    html = """<html><body style="margin:0"><script>
      let i = 0; const colours = ['rgb(255, 0, 0)', 'rgb(0, 0, 255)'];
      setInterval(() => { document.body.style.background = colours[++i % 2]; }, 0);
    </script><p>flip</p></body></html>"""
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(None)) as r:
        for _ in range(4):
            res = r.render(html, dom=True)
            shot = _px(res, 5, 300)
            said = res.dom["body"]["bg"]
            assert said == f"rgb({shot[0]}, {shot[1]}, {shot[2]})", (said, shot)


def test_webrtc_and_sockets_cannot_reach_a_local_listener(browser_ready):
    """STUN (UDP) and TURN/WebSocket (TCP) to 127.0.0.1 bypass request routing and DNS: the
    browser must send nothing to a real local UDP or TCP listener."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        udp.bind(("127.0.0.1", 0))
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(8)
        udp.settimeout(0.2)
        tcp.settimeout(0.2)
        uport, tport = udp.getsockname()[1], tcp.getsockname()[1]
        html = f"""<html><body><p id="s">start</p><script>
          const pc = new RTCPeerConnection({{ iceServers: [{{ urls: 'stun:127.0.0.1:{uport}' }},
            {{ urls: 'turn:127.0.0.1:{uport}?transport=udp', username: 'u', credential: 'p' }},
            {{ urls: 'turn:127.0.0.1:{tport}?transport=tcp', username: 'u', credential: 'p' }}] }});
          pc.createDataChannel('x');
          pc.createOffer().then((o) => pc.setLocalDescription(o));
          try {{ new WebSocket('ws://127.0.0.1:{tport}/'); }} catch (e) {{}}
          document.getElementById('s').textContent = 'peer-connection-made';
        </script></body></html>"""
        with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(None)) as r:
            res = r.render(html, dom=True)
            assert any(n.get("text") == "peer-connection-made" for n in res.dom["nodes"])
            got: list[str] = []
            deadline = time.monotonic() + 3.0  # ICE gathering runs off the page's main thread
            while time.monotonic() < deadline and not got:
                try:
                    udp.recvfrom(4096)
                    got.append("udp")
                except (TimeoutError, socket.timeout):
                    pass
                try:
                    tcp.accept()[0].close()
                    got.append("tcp")
                except (TimeoutError, socket.timeout):
                    pass
        assert got == [], f"the page reached a local listener over {got}"
    finally:
        udp.close()
        tcp.close()


def test_popups_are_closed_and_their_page_replaced(browser_ready):
    """A pop-up outlives the document that opened it; it must not survive into the next render."""
    opener = """<html><body><script>
      const w = window.open('about:blank');
      if (w) w.document.write("<script>setInterval(() => { try { opener.document.body.style.background = 'red'; } catch (e) {} }, 1)<\\/script>");
    </script><p>opener</p></body></html>"""
    plain = '<html><body style="margin:0;background:rgb(0,0,150)"><p>next</p></body></html>'
    with Renderer(pool_size=1, timeout=10, cache=ScreenshotCache(None)) as r:
        r.render(opener)
        time.sleep(0.2)
        res = r.render(plain)
        assert _px(res, 5, 5) == (0, 0, 150)
        assert r.page_replacements >= 1
        pages = r._call(_all_pages(r))
        assert pages == 1 + (1 if r._compilers.get("agent") and r._compilers["agent"]._page else 0)


async def _all_pages(renderer):
    return sum(len(c.pages) for c in renderer._browser.contexts)


#: The page rendered after each attacker: tall and blue, so a navigation, a blocked style or a
#: moved scroll position shows in its size or pixels.
_NEXT = ('<html><head><meta charset="utf-8"><style>body{margin:0;background:rgb(0,0,200)}</style></head>'
         '<body><div style="height:2000px">next</div><img src="https://picsum.photos/seed/1/300/200"></body></html>')


@pytest.fixture(scope="module")
def next_alone(browser_ready):
    """``_NEXT`` rendered in a renderer of its own: what every case below must reproduce (one
    browser for the module's six cases instead of one each)."""
    with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as alone:
        return alone.render(_NEXT)


@pytest.mark.parametrize("leftover", [
    # a refresh scheduled by a script-free page: with the document reused it navigated the next
    # page away mid-render (measured: 800 px captured instead of 2000)
    '<meta http-equiv="refresh" content="0.3;url=https://placehold.co/1280x800">',
    # a policy that outlives document.open(): would block the next page's style and images
    """<meta http-equiv="Content-Security-Policy" content="style-src 'none'; img-src 'none'">""",
    '<meta name="color-scheme" content="dark">',
    '<div style="height:3000px"></div><input autofocus>',  # scrolls the window to the field
    '<base href="https://placehold.co/">',
    '<iframe srcdoc="<p>inner</p>"></iframe>',
])
def test_script_free_page_leaves_nothing_for_the_next_render(next_alone, leftover):
    """Script-free pages may share a document (the renderer skips the navigation when nothing of
    the last page can outlive its content); a page with anything that could must not change
    the next render by a pixel."""
    attacker = f'<html><head>{leftover}</head><body style="background:white"><p>attacker</p></body></html>'
    expected = next_alone
    assert expected.ok
    with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as r:
        for _ in range(2):
            r.render(attacker)
            time.sleep(0.4)  # give a scheduled refresh its time
            got = r.render(_NEXT)
            assert got.ok and (got.width, got.height) == (expected.width, expected.height)
            assert got.image().tobytes() == expected.image().tobytes()


def test_script_free_pages_share_a_document_and_render_as_if_alone(browser_ready):
    """The document reuse the renderer does for harmless script-free pages (most WebSight pages)
    is real and changes no pixel against rendering each page in a renderer of its own."""
    from colbench_gym.rendering.isolation import leaves_no_state
    from colbench_gym.tasks.frontend_generator import generate_frontend_task

    htmls = [generate_frontend_task(i, "test").ground_truth for i in range(6)]
    assert all(leaves_no_state(h) for h in htmls)
    with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as r:
        shared = [r.render(h) for h in htmls]
        assert all(s.ok for s in shared)
        assert r.fresh_documents == 1  # one navigation, then the same document for all six
    for h, got in zip(htmls, shared):
        with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as alone:
            want = alone.render(h)
        assert got.image().tobytes() == want.image().tobytes()


def test_pages_with_scripts_or_leftovers_never_share_a_document(browser_ready):
    from colbench_gym.rendering.isolation import leaves_no_state

    plain = '<html><body><p>plain</p></body></html>'
    assert leaves_no_state(plain)
    for bad in ('<p onclick="x()">', '<script>1</script>', '<meta http-equiv="refresh" content="1">', '<video autoplay>',
                '<object data="x">', '<dialog open>', '<div popover>', '<meta name="referrer" content="no-referrer">'):
        assert not leaves_no_state(f'<html><body>{bad}</body></html>'), bad
    with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as r:
        r.render(plain)
        r.render(plain)
        r.render('<html><body><script>document.body.style.background = "red"</script></body></html>')
        r.render(plain)
        assert r.fresh_documents == 3  # the first, the scripted page and the page after it
