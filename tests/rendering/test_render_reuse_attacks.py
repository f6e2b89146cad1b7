"""Attacks on document reuse (9eda3f7) and on other state shared by one pool's renders.

Each failed on 986ae09 (a real leak found by a security review of 9eda3f7; measured numbers are
in each docstring). Each renders an attacker page, then a victim page on the same one-page pool, and compares the victim pixel for pixel with the victim rendered alone in a
renderer of its own (issue 10: nothing an answer runs can observe or influence any other render).
"""

from __future__ import annotations

import pytest

from colbench_gym.rendering import Renderer, ScreenshotCache
from colbench_gym.rendering.isolation import leaves_no_state, static_plan

TW2 = "https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css"
PLAY = '<script src="https://cdn.tailwindcss.com"></script>'

#: A victim with a sticky header and a fixed background: where they are painted depends on the
#: window's scroll position (a page rendered alone starts at 0, 0).
STICKY = ('<html><head><style>body{margin:0;font-family:sans-serif}'
          ' header{position:sticky;top:0;background:rgb(51,51,51);color:#fff;padding:16px}'
          ' section{height:400px;margin:16px;background:#eee}'
          ' .hero{height:400px;background:url(https://picsum.photos/1280/400) fixed}</style></head><body>'
          '<header>Site</header><div class="hero"></div>' + '<section>s</section>' * 8 + '</body></html>')


def _alone(html: str):
    with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as r:
        return r.render(html)


def _after(pages: list[str]):
    """The last page rendered after the others on one pooled page."""
    with Renderer(pool_size=1, cache=ScreenshotCache(None), timeout=30) as r:
        for html in pages[:-1]:
            r.render(html)
        return r.render(pages[-1])


def _assert_same(got, want) -> None:
    assert got.ok and (got.width, got.height) == (want.width, want.height)
    assert got.image().convert("RGB").tobytes() == want.image().convert("RGB").tobytes()


@pytest.mark.browser
@pytest.mark.parametrize("scroller", [
    # CSS alone scrolls the window (no script, no autofocus, no fragment): a mandatory snap point
    '<html style="scroll-snap-type:y mandatory"><body style="margin:0"><div style="height:200px"></div>'
    '<div style="height:1200px;scroll-snap-align:start"></div></body></html>',
    # ... or an initial scroll target
    '<html><body style="margin:0"><div style="height:200px"></div>'
    '<div style="height:1200px;scroll-initial-target:nearest"></div></body></html>',
])
def test_scroll_position_does_not_carry_into_a_reused_document(browser_ready, scroller):
    """Failed on 986ae09: ``document.open`` keeps the window's scroll offset, so the victim is
    captured scrolled by 200 px: its sticky header is painted at y=200 instead of 0 (measured:
    322,530 pixels differ, pixel (5, 5) white instead of the header's rgb(51,51,51)). A page with
    a fixed element (nav bar) is hit the same way; scroll-snap on x shifts it horizontally."""
    assert leaves_no_state(scroller)
    _assert_same(_after([scroller, STICKY]), _alone(STICKY))


@pytest.mark.browser
def test_link_preload_does_not_hand_its_stylesheet_to_the_next_page(browser_ready):
    """Failed on 986ae09: a ``<link rel=preload as=style>`` of the common Tailwind v2 URL is answered
    with CSS purged to the *attacker's* classes; the preload outlives ``document.open`` and the
    next page on the same document that links that URL is given it instead of its own (measured:
    the victim's bg-red-500 box comes out white, 65,536 pixels differ; still so with three
    other pages rendered in between)."""
    attacker = f'<html><head><link rel="preload" as="style" href="{TW2}"></head><body><p>a</p></body></html>'
    victim = (f'<html><head><link href="{TW2}" rel="stylesheet"></head>'
              '<body><div class="bg-red-500 h-64 w-64 p-8 text-3xl">b</div></body></html>')
    plain = '<html><body><p>c</p></body></html>'
    assert not leaves_no_state(attacker)  # the defence: a page with a preload never shares its document
    _assert_same(_after([attacker, plain, victim]), _alone(victim))


@pytest.mark.browser
def test_tailwind_classes_of_one_page_do_not_style_another(browser_ready):
    """Failed on 986ae09 (not a reuse leak: the pool's Tailwind compiler page, see precompile.py,
    accumulates every page's classes). An arbitrary variant whose selector list matches elements
    without the class, ``[:is(&,body)]:bg-red-500``, compiles to ``:is(.cls,body){...}``; every
    later play-CDN page of the agent pool gets that rule, even after fresh documents (measured:
    victim's body red with 100 px padding instead of white, 993,788 pixels differ)."""
    attacker = f'<html><head>{PLAY}</head><body><div class="[:is(&,body)]:bg-red-500 [:is(&,body)]:p-[100px]">a</div></body></html>'
    scripted = '<html><body><script>document.body.textContent = "s"</script></body></html>'
    victim = f'<html><head>{PLAY}</head><body><div class="p-4 bg-blue-500 h-32 text-white">b</div></body></html>'
    assert leaves_no_state(attacker)
    _assert_same(_after([attacker, scripted, victim]), _alone(victim))


@pytest.mark.parametrize("html", [
    '<img src="https://x.test/a.gif"onload="document.body.style.background=\'red\'">',  # no space after a quoted value
    '<body/onload="document.body.style.background=\'red\'">',  # "/" separates attributes too
])
def test_event_handlers_without_whitespace_before_them_are_scripts(html):
    """Failed on 986ae09 (fidelity, not isolation): ``_NEEDS_JS`` wants whitespace before ``on...=``,
    but the HTML parser also takes an attribute right after a quoted value or a ``/``. Such pages
    are rendered with JavaScript off and their handlers never run (measured: the first page comes
    out white; with a space before ``onload`` it comes out red)."""
    assert not static_plan(html)[0]
