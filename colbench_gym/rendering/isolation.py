"""What keeps one render from seeing or touching another, page by page.

A frontend reward is a screenshot similarity, so anything an answer's script can carry from one
render to the next (or into the reference) is a way to forge a score. A reused page would carry
a lot: ``set_content`` rewrites the document in the *same* window, so globals, timers, observers,
animation-frame loops, workers and ``window.name`` survive it. Each render therefore:

1. **starts from a fresh JavaScript realm**: the page is navigated to ``about:blank`` (a new
   document, a new window object, an opaque origin with no storage) *while scripts are still
   disabled* from the previous capture, so no unload handler of the old page runs; the old
   document's timers and workers die with it, ``window.name`` and the session history (which
   survive navigation) are reset, and only then are scripts enabled again. The one exception: a
   page rendered with JavaScript off all along that holds nothing able to outlive its content
   (:func:`leaves_no_state`) may be followed by a script-free render in the same document, its
   content replaced — no script ran in it, so there is no realm state to carry;
2. **stops every script before measuring and capturing**: once the page has loaded and painted
   one frame, script execution is disabled through CDP (``Emulation.setScriptExecutionDisabled``:
   no timer, observer, animation-frame callback or event handler runs any more), animations
   started by script are cancelled and CSS animations frozen at their end state, so nothing the
   page does can react to, or animate, the capture;
3. **measures in an isolated world**: our size, freeze and DOM-summary code runs in a separate
   JavaScript world (``Page.createIsolatedWorld``) that shares the DOM but not the page's globals
   or prototypes, so a page cannot fake its size or hide from the freeze by patching built-ins.

Pages that open pop-ups are *tainted*: the pop-up is closed and the page's whole browser context
is replaced after the render. References are rendered on pages of their own (see
:class:`colbench_gym.rendering.renderer.Renderer`), never on a page an answer has used.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from typing import Any

#: Size of the page, then animations frozen (end state) and the caret hidden — run with scripts
#: already stopped. Animations a script started (Web Animations API) are cancelled; so is any CSS
#: animation a page kept running past the freeze (e.g. with its own ``!important`` rules).
#: ``window.name`` (which outlives the document) is cleared here too: no page script can run
#: again before the next render's navigation, so clearing it before the capture is as good as after.
PREPARE_BODY = """
  window.name = '';
  const de = document.documentElement;
  const size = [de ? de.scrollWidth : 0, Math.max(de ? de.scrollHeight : 0, document.body ? document.body.scrollHeight : 0)];
  const s = document.createElement('style');
  s.textContent = '*, *::before, *::after { animation-duration: 0s !important; animation-delay: 0s !important;'
    + ' transition-duration: 0s !important; transition-delay: 0s !important; caret-color: transparent !important; }';
  (document.head || de).append(s);
  for (const a of document.getAnimations()) {
    const css = (a instanceof CSSAnimation) || (a instanceof CSSTransition);
    if (!css || a.playState !== 'finished') a.cancel();
  }
  return size;
"""
PREPARE_JS = "(() => {" + PREPARE_BODY + "})()"

#: True once every ``<link rel=stylesheet>`` of the document has its style sheet (``sheet`` is null
#: until the sheet has loaded). ``readyState`` says "complete" without them for a document written
#: by ``Page.setDocumentContent``: measured, with the stylesheet answered 0.6 s late, a page was
#: measured unstyled (800 px instead of 848: its footer cut off) in 4 renders of 4; under load
#: the same happened by chance (issue 24, item 8).
SHEETS_IN_JS = ("[...document.querySelectorAll('link[rel~=\"stylesheet\" i]')]"
                ".every(l => l.sheet !== null || l.disabled)")

#: For a page rendered with scripts off all along, polled (no event reaches our world with scripts
#: off): ``null`` until the document has loaded; then the precompiled Tailwind CSS (if any) is
#: inserted where the play script would put it (once: the flags live in our isolated world, which
#: the page cannot see) and layout is measured; ``null`` again while web fonts or eager images are
#: still loading, or until two polls in a row measure the same size. Why: ``readyState`` can say
#: "complete" before the last image's size reaches layout, and measuring then gave pages 200 px
#: short, differently from run to run. Once settled, the page is prepared and measured as by
#: :data:`PREPARE_JS`, in the same call.
STATIC_READY_JS = """((css, token) => {
  if (document.readyState !== 'complete') return null;
  let state = globalThis.__colbenchRender;
  if (!state || state.token !== token) state = globalThis.__colbenchRender = { token, styled: false, probe: null };
  if (css !== null && !state.styled) {
    const st = document.createElement('style'); st.textContent = css;
    (document.head || document.documentElement).append(st);
  }
  state.styled = true;
  const root = document.documentElement, body = document.body;
  const probe = [root ? root.scrollWidth : 0, root ? root.scrollHeight : 0, body ? body.scrollHeight : 0].join();
  if (document.fonts.status !== 'loaded') return null;
  if (!(""" + SHEETS_IN_JS + """)) return null;
  for (const img of document.images) if (!img.complete && img.loading !== 'lazy') return null;
  const settled = state.probe === probe;
  state.probe = probe;
  if (!settled) return null;""" + PREPARE_BODY + "})"


class PageEvalError(RuntimeError):
    """Our own script failed in the page (e.g. the document went away mid-call)."""


async def new_world(page: Any, timeout: float) -> int:
    """A fresh isolated world in the page's current document: its execution context id."""
    created = await asyncio.wait_for(page._colbench_cdp.send("Page.createIsolatedWorld", {  # noqa: SLF001
        "frameId": page._colbench_frame_id, "worldName": "colbench", "grantUniveralAccess": False}), timeout)  # noqa: SLF001
    return created["executionContextId"]


async def cdp_eval(page: Any, context_id: int, expression: str, timeout: float) -> Any:
    """Evaluate ``expression`` in our isolated world ``context_id``, awaiting promises; returns
    the JSON-able value."""
    params = {"expression": expression, "returnByValue": True, "awaitPromise": True, "contextId": context_id}
    reply = await asyncio.wait_for(page._colbench_cdp.send("Runtime.evaluate", params), timeout)  # noqa: SLF001
    if "exceptionDetails" in reply:
        raise PageEvalError(str(reply["exceptionDetails"].get("text", "exception"))[:200])
    return reply.get("result", {}).get("value")


async def set_scripts(page: Any, enabled: bool, timeout: float) -> None:
    await asyncio.wait_for(page._colbench_cdp.send(  # noqa: SLF001
        "Emulation.setScriptExecutionDisabled", {"value": not enabled}), timeout)


#: Resolves once the document has loaded (its stylesheets too: :data:`SHEETS_IN_JS`), painted one more frame (lets script-driven styling, e.g.
#: the Tailwind play/v4 builds, land) and the web fonts that frame asked for have loaded; runs in
#: our isolated world.
LOADED_JS = """(async () => {
  if (document.readyState !== 'complete') await new Promise(r => window.addEventListener('load', r, { once: true }));
  while (!(""" + SHEETS_IN_JS + """)) await new Promise(r => setTimeout(r, 5));
  await new Promise(r => requestAnimationFrame(() => r(true)));
  await document.fonts.ready;
  return true;
})()"""


#: Anything that makes a page run JavaScript (or show ``<noscript>`` content only without it).
#: A handler attribute may follow a quoted value or a ``/`` with no space (``src="x"onload=``,
#: ``<body/onload=``): browsers parse both.
_NEEDS_JS = re.compile(r"<script\b|<noscript\b|[\s/\"']on[a-z]+\s*=|javascript:", re.I)
_PLAY_TAG = re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?(https://cdn\.tailwindcss\.com[^"'\s>]*)["']?[^>]*>\s*</script>""", re.I)


def static_plan(html: str) -> tuple[bool, str | None]:
    """``(static, play_url)``: whether the page can be rendered with JavaScript off all along —
    no script but (at most) the Tailwind play-CDN one, whose CSS we then insert ourselves."""
    tags = list(_PLAY_TAG.finditer(html))
    rest, url = html, None
    if len(tags) == 1:
        url = tags[0].group(1)
        rest = html[:tags[0].start()] + html[tags[0].end():]
    return (not _NEEDS_JS.search(rest)), url


#: What a script-free page can still leave running or changed in its window after its capture: a
#: scheduled refresh or a policy (``<meta http-equiv>``: measured, a refresh set by one page
#: navigated the next page away mid-render), other ``<meta>`` that set document-wide state (colour
#: scheme, referrer), nested browsing contexts, focus and scroll moved by ``autofocus``, a ``<base>``,
#: media, dialogs and popovers. A page with any of these is followed by a fresh
#: document; so is every page with scripts.
_LEAVES_STATE = re.compile(
    r"<(?:i?frame\b|frameset\b|object\b|embed\b|portal\b|fencedframe\b|base\b|video\b|audio\b|dialog\b)"
    r"|\bautofocus\b|\bpopover\b",
    re.I)
_META = re.compile(r"<meta\b[^>]*>", re.I)
_LINK = re.compile(r"<link\b[^>]*>", re.I)
_REL = re.compile(r"""\brel\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.I)


def _plain_stylesheet(tag: str) -> bool:
    """``<link rel=stylesheet>`` and nothing else: a preload (``as=style``) outlives
    ``document.open`` and would hand its response to the next page linking the same URL."""
    m = _REL.search(tag)
    return m is not None and (m.group(1) or m.group(2) or m.group(3) or "").strip().lower() == "stylesheet"

_HARMLESS_META = re.compile(r"""^<meta\s+(?:charset\s*=\s*["']?[\w-]+["']?"""
                            r"""|name\s*=\s*["']?(?:viewport|description|keywords|author)["']?\s+content\s*=\s*("[^"]*"|'[^']*'))\s*/?>$""",
                            re.I)


def leaves_no_state(html: str) -> bool:
    """Whether the next render may reuse the document ``html`` was rendered in (JavaScript off all
    along, so nothing of the page ran, and nothing in :data:`_LEAVES_STATE`): its content is
    replaced by ``Page.setDocumentContent`` and no navigation is needed. Conservative on purpose:
    anything unusual gets the fresh document."""
    return (static_plan(html)[0] and not _LEAVES_STATE.search(html)
            and all(_HARMLESS_META.match(m.group(0)) for m in _META.finditer(html))
            and all(_plain_stylesheet(m.group(0)) for m in _LINK.finditer(html)))


async def load_fresh(page: Any, html: str, timeout: float, scripts: bool = True) -> None:
    """Show ``html`` in a new document and realm of ``page``: nothing of the previous render is left.

    The previous document is dropped by navigating to ``about:blank`` while scripts are still
    disabled (so none of its handlers runs), then scripts are enabled (``scripts=True``) and the
    HTML is written into the blank document (``Page.setDocumentContent``; the commands of one
    CDP session reach the renderer in order, so they are pipelined). ``window.name`` and the
    session history, which survive navigation, were reset with the previous capture
    (:data:`PREPARE_BODY`, :func:`forget_history`)."""
    if getattr(page, "_colbench_parked", False):
        page._colbench_parked = False  # noqa: SLF001 - already on a blank document no script has run in
    else:
        await _blank_document(page, timeout)
    await write_document(page, html, timeout, scripts)


async def _blank_document(page: Any, timeout: float) -> None:
    """Navigate to ``about:blank`` with scripts stopped: the old document, its realm, timers and
    workers are gone, and none of its handlers ran."""
    if not getattr(page, "_colbench_stopped", False):
        await set_scripts(page, False, timeout)
        page._colbench_stopped = True  # noqa: SLF001
    nav = await asyncio.wait_for(page._colbench_cdp.send("Page.navigate", {"url": "about:blank"}), timeout)  # noqa: SLF001
    if nav.get("errorText"):
        raise RuntimeError(f"could not reset the page: {nav['errorText']}")


async def park(page: Any, timeout: float) -> None:
    """End a render of a page that ran scripts: drop its document *now*. Stopping scripts
    (``setScriptExecutionDisabled``) does not reach Web Workers, which run on their own threads:
    measured, two spinning workers went on fetching 40 times a second after the render had
    returned, until the pooled page was next used, burning the CPU the next renders (and
    references) need. The next :func:`load_fresh` then starts from this blank document instead of
    navigating again, so the cost is only moved, not added."""
    await _blank_document(page, timeout)
    page._colbench_parked = True  # noqa: SLF001


async def write_document(page: Any, html: str, timeout: float, scripts: bool) -> None:
    """Replace the document's content; scripts run only with ``scripts=True``."""
    cdp = page._colbench_cdp  # noqa: SLF001
    commands = [cdp.send("Page.setDocumentContent", {"frameId": page._colbench_frame_id, "html": html})]  # noqa: SLF001
    if scripts:
        commands.insert(0, cdp.send("Emulation.setScriptExecutionDisabled", {"value": False}))
        page._colbench_stopped = False  # noqa: SLF001
    elif not getattr(page, "_colbench_stopped", False):
        commands.insert(0, cdp.send("Emulation.setScriptExecutionDisabled", {"value": True}))
        page._colbench_stopped = True  # noqa: SLF001
    await asyncio.wait_for(asyncio.gather(*commands), timeout)


async def static_ready_and_measure(page: Any, context_id: int, timeout: float, css: str | None) -> list[int]:
    """For a page with scripts off all along (no event can reach our world then): poll until it
    has loaded, insert the precompiled Tailwind CSS, freeze and measure it (see
    :data:`STATIC_READY_JS`); returns ``[scrollWidth, scrollHeight]``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    expression = call_js(STATIC_READY_JS, css, secrets.token_hex(8))  # this render's own state
    while (size := await cdp_eval(page, context_id, expression, timeout)) is None:
        if loop.time() > deadline:
            raise asyncio.TimeoutError
        await asyncio.sleep(0.004)
    return size


async def scrolled(page: Any, context_id: int, timeout: float) -> bool:
    """Whether the window is scrolled. CSS alone can scroll it (``scroll-snap-type: mandatory``,
    ``scroll-initial-target``) and ``document.open`` keeps the offset, so a scrolled page's
    document is never reused (asked after the capture, when nothing can move it any more)."""
    offset = await cdp_eval(page, context_id, "[window.scrollX, window.scrollY]", timeout)
    return offset != [0, 0]


async def forget_history(page: Any, timeout: float) -> None:
    """With the page's scripts stopped: forget the session history, which (like ``window.name``,
    cleared by :data:`PREPARE_BODY`) outlives the document."""
    await asyncio.wait_for(page._colbench_cdp.send("Page.resetNavigationHistory"), timeout)  # noqa: SLF001


async def stop_and_measure(page: Any, context_id: int, timeout: float) -> list[int] | None:
    """Stop the page's scripts, freeze animations, return ``[scrollWidth, scrollHeight]``."""
    if not getattr(page, "_colbench_stopped", False):
        await set_scripts(page, False, timeout)
        page._colbench_stopped = True  # noqa: SLF001
    return await cdp_eval(page, context_id, PREPARE_JS, timeout)


def call_js(function_source: str, *args: Any) -> str:
    """An expression calling a JS function expression with JSON arguments."""
    return f"({function_source})({', '.join(json.dumps(a) for a in args)})"
