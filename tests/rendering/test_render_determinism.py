"""Issue 24, item 8: the same page gives the same screenshot however slowly its stylesheet comes.

``test_tailwind_shortcuts_render_pixel_identical_pages[tailwind.min.css]`` failed in a full
``make test`` and passed alone; the suite's ``identical`` pair scored 0.668 for two references
under load. The cause: a page was measured as soon as ``readyState`` said "complete", which, for
a document written by ``Page.setDocumentContent``, does not wait for its ``<link>`` stylesheets.
When the (purged) Tailwind v2 stylesheet came late — a loaded machine — the page was measured
unstyled and its screenshot cut at that height (848 px page captured at 800). A reward that
changes with the machine's load is a defect of the reward, so this test delays the stylesheet on
purpose instead of hoping for load.
"""

from __future__ import annotations

import asyncio

import pytest

from colbench_gym.rendering import Renderer, ScreenshotCache
from tests.html_pages import V2

pytestmark = pytest.mark.browser

BODY = ("<nav class='bg-white shadow px-8 py-5 flex justify-between'><span class='text-xl'>Name</span></nav>"
        "<section class='bg-blue-600 text-white px-12 py-20'><h2 class='text-5xl font-bold'>Title</h2>"
        "<p class='mt-4 text-xl'>Text</p></section>"
        "<section class='px-12 py-16'><div class='grid grid-cols-2 gap-8'>"
        + "".join(f"<div class='bg-white p-6 rounded-lg shadow h-48'>Card {i}</div>" for i in range(4))
        + "</div></section><footer class='bg-gray-900 text-white px-12 py-10'>Footer</footer>")
STATIC = f"<html><head>{V2}</head><body class='bg-blue-50'>{BODY}</body></html>"
SCRIPTED = f"<html><head>{V2}</head><body class='bg-blue-50'>{BODY}<script>window.x = 1</script></body></html>"
SHORT = f"<html><head>{V2}</head><body class='p-4'><p>a short page first</p></body></html>"


def _delaying(renderer: Renderer, seconds: float) -> None:
    route = renderer._route

    async def slow(r):
        if r.request.resource_type == "stylesheet":
            await asyncio.sleep(seconds)
        await route(r)

    renderer._route = slow  # before the first page (and its context) is made


@pytest.mark.parametrize("html", [STATIC, SCRIPTED], ids=["script-free", "with-scripts"])
def test_a_late_stylesheet_does_not_change_the_screenshot(browser_ready, html):
    with Renderer(pool_size=1, cache=ScreenshotCache(None)) as prompt, \
            Renderer(pool_size=1, cache=ScreenshotCache(None)) as late:
        _delaying(late, 0.6)
        expected = prompt.render(html)
        assert expected.ok and expected.height > 800  # longer than the viewport: a short measure shows
        for _ in range(2):  # a fresh document, then (script-free) a reused one
            late.render(SHORT)
            got = late.render(html)
            assert got.ok, got.error
            assert (got.width, got.height) == (expected.width, expected.height)
            assert got.image().tobytes() == expected.image().tobytes()
