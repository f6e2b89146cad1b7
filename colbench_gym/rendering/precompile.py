"""Tailwind v3 play-CDN pages without running the play script in every page.

Why: the play script (``cdn.tailwindcss.com``) builds Tailwind's whole configuration and runs
its compiler each time a page loads — about half the CPU of rendering such a page. The result
only depends on the page's class names, so one long-lived *compiler page* keeps the play script
running and is fed each page's classes; the CSS it produces is sent to the page being rendered
as a tiny script that inserts it as a ``<style>`` at the end of ``<head>`` (where the play script
puts its own). The compiler accumulates classes across pages; rules for classes a page does not
use match nothing in it, so the screenshot is the same (tests check pixel equality).

Only pages where this is provably equivalent take the shortcut: no other ``<script>`` (page
JavaScript could add classes later), no ``tailwind.config`` customisation, no
``<style type="text/tailwindcss">`` blocks, no ``?plugins=`` URL, and no arbitrary variant
(a class with ``]:`` or ``&``, e.g. ``[:is(&,body)]:bg-red-500``, compiles to a selector that
matches without the class: fed to the shared compiler, it styled every later page). Everything else, and any
failure of the compiler page, gets the real play script.
"""

from __future__ import annotations

import asyncio
import html as htmllib
import json
import re

_CLASS_ATTR = re.compile(r"""\bclass\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.I)
_SCRIPT = re.compile(r"<script\b", re.I)
#: Restart the compiler page after this many distinct classes (its CSS only grows).
MAX_CLASSES = 6000

_COLLECT_JS = """(classes) => new Promise((resolve) => {
  // Add an element carrying the classes; the play script's observer rebuilds its <style>.
  // Resolve on that rebuild (observed, no polling: timers are throttled in background tabs).
  const styles = () => [...document.head.querySelectorAll('style:not([type])')];
  const before = styles().map((s) => s.textContent).join('');
  let settled = false;
  const finish = (value) => { if (!settled) { settled = true; obs.disconnect(); resolve(value); } };
  const obs = new MutationObserver(() => {
    const list = styles();
    if (list.length && list.map((s) => s.textContent).join('') !== before) finish(list[list.length - 1].textContent);
  });
  obs.observe(document.head, { childList: true, subtree: true, characterData: true });
  setTimeout(() => finish(null), 3000);
  const el = document.createElement('div');
  el.className = classes;
  document.body.append(el);
})"""

_BASE_JS = """() => new Promise((resolve) => {
  // The play script's first build (preflight only) once it exists.
  const current = () => { const s = [...document.head.querySelectorAll('style:not([type])')]; return s.length ? s[s.length - 1] : null; };
  if (current()) { resolve(current().textContent); return; }
  const obs = new MutationObserver(() => { if (current()) { obs.disconnect(); resolve(current().textContent); } });
  obs.observe(document.head, { childList: true, subtree: true });
  setTimeout(() => { obs.disconnect(); resolve(current() ? current().textContent : null); }, 3000);
})"""

_INJECT = ("(()=>{const css=%s;const add=()=>{const s=document.createElement('style');s.textContent=css;"
           "(document.head||document.documentElement).append(s)};"
           "document.readyState==='loading'?document.addEventListener('DOMContentLoaded',add):add()})();")


def page_classes(html: str) -> set[str]:
    """Every class token in the page's ``class`` attributes."""
    out: set[str] = set()
    for m in _CLASS_ATTR.finditer(html):
        value = htmllib.unescape(m.group(1) or m.group(2) or m.group(3) or "")
        out.update(value.split())
    return out


def eligible(html: str, url: str) -> bool:
    """Whether the page's play-CDN script may be replaced by precompiled CSS (see module doc)."""
    if "?" in url and "plugins" in url:
        return False
    low = html.lower()
    if "tailwind.config" in low or "text/tailwindcss" in low:
        return False
    if any("]:" in c or "&" in c for c in page_classes(html)):
        return False  # an arbitrary variant ([&...]:x) can build a rule matching later pages too
    return len(_SCRIPT.findall(html)) == 1  # only the Tailwind script itself


class PlayCompiler:
    """A page running the real play script, used as a CSS compiler for other pages."""

    def __init__(self, context, timeout: float = 5.0):
        self._context = context
        self._page = None
        self._known: set[str] = set()
        self._css: str | None = None
        self._lock = asyncio.Lock()
        self.timeout = timeout
        self.compiles = 0
        self.failures = 0

    async def _start(self) -> None:
        if self._page is not None and not self._page.is_closed():
            try:
                await self._page.close()
            except Exception:  # noqa: BLE001
                pass
        page = await self._context.new_page()
        page._colbench_compiler = True  # noqa: SLF001 - the router serves it the real script
        await page.set_content('<html><head><script src="https://cdn.tailwindcss.com"></script></head><body></body></html>',
                               wait_until="load", timeout=self.timeout * 1000)
        self._page, self._known, self._css = page, set(), None
        self._css = await asyncio.wait_for(self._page.evaluate(_BASE_JS), self.timeout)
        if self._css is None:
            raise RuntimeError("the play script did not build its stylesheet")

    async def css_for(self, classes: set[str]) -> str | None:
        """CSS covering ``classes`` (plus earlier pages' classes), or None when unavailable."""
        async with self._lock:
            try:
                if self._page is None or self._page.is_closed() or len(self._known) > MAX_CLASSES:
                    await self._start()
                new = classes - self._known
                if new:
                    css = await asyncio.wait_for(self._page.evaluate(_COLLECT_JS, " ".join(sorted(new))), self.timeout)
                    if css is None:
                        raise RuntimeError("the play script produced no CSS")
                    self._known |= new
                    self._css = css
                    self.compiles += 1
                return self._css
            except Exception:  # noqa: BLE001 - any trouble: the caller serves the real script
                self.failures += 1
                self._page = None
                return None

    def script_for(self, css: str) -> bytes:
        return (_INJECT % json.dumps(css)).encode("utf-8")
