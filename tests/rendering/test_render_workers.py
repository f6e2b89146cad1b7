"""Issue 24, item 5: Web Workers started by an answer page stop when its render ends.

Stopping the page's scripts (``Emulation.setScriptExecutionDisabled``) does not reach workers,
which run on threads of their own: before, spinning workers went on after ``render`` had
returned, until the pooled page was next used (measured in the issue: 4 workers burnt 3
CPU-seconds per 3 s), starving the renders after them — exactly what makes references time out.
Observed here without a clock-based assert: the workers fetch a counting URL (every request of
a page, workers included, goes through the renderer's router); the count must stop growing.
"""

from __future__ import annotations

import time

import pytest

from colbench_gym.rendering import Renderer, ScreenshotCache

pytestmark = pytest.mark.browser

SPINNERS = """<html><body><h1>Busy page</h1><script>
const worker = (code) => new Worker(URL.createObjectURL(new Blob([code], {type: 'text/javascript'})));
// one worker counts (a request every 20 ms), one only burns the CPU
worker("let n = 0; setInterval(() => fetch('https://counter.invalid/tick?' + (++n)).catch(() => {}), 20);");
worker("for (;;) {}");
</script></body></html>"""


def test_workers_of_a_page_stop_when_its_render_ends(browser_ready):
    renderer = Renderer(pool_size=1, timeout=10.0, cache=ScreenshotCache(None))
    ticks: list[str] = []
    route = renderer._route

    async def counting(r):
        if "counter.invalid" in r.request.url:
            ticks.append(r.request.url)
        await route(r)

    renderer._route = counting  # before the first page (and its context) is made
    try:
        for _ in range(2):  # a fresh page, then a page of the pool
            before = len(ticks)
            result = renderer.render(SPINNERS)
            assert result.ok, result.error
            deadline = time.monotonic() + 5
            while len(ticks) == before and time.monotonic() < deadline:  # the workers did run during the render
                time.sleep(0.05)
            assert len(ticks) > before, "the workers never started: the test would prove nothing"
            time.sleep(0.5)  # requests already on their way when the render ended
            settled = len(ticks)
            time.sleep(1.5)  # ~75 more if the counting worker were still running
            assert len(ticks) == settled, f"workers kept running after the render: {len(ticks) - settled} more requests"
        # the page is fine for the next render, with or without scripts
        assert renderer.render("<html><body><p>next</p></body></html>").ok
        assert renderer.render("<html><body><script>document.body.append('x')</script></body></html>").ok
    finally:
        renderer.close()
