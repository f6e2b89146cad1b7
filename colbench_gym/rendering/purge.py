"""Serve a Tailwind v2 stylesheet cut down to the rules a page can use (like PurgeCSS).

Why: WebSight pages link the whole ``tailwind.min.css`` (2.9 MB, ~40k rules). Chromium parses
and indexes it for every page, which was measured to cost about a third of a render's CPU. A
rule whose selectors all name a class the page never uses cannot match anything in it, so the
page renders identically with only the remaining rules (tests check pixel equality). Rules
without class selectors (the preflight reset), ``@keyframes`` and ``@font-face`` are always
kept; the original order is kept, so the cascade is unchanged.

Only pages without any ``<script>`` are purged (scripts could add classes after load); others
get the full file.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import lru_cache

_HEX_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6}) ?")
_CHAR_ESCAPE = re.compile(r"\\(.)")
_CLASS_IN_SELECTOR = re.compile(r"\.((?:\\[0-9a-fA-F]{1,6} ?|\\.|[A-Za-z0-9_-])+)")
_SCRIPT = re.compile(r"<script\b", re.I)


def _unescape(ident: str) -> str:
    ident = _HEX_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), ident)
    return _CHAR_ESCAPE.sub(lambda m: m.group(1), ident)


def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside parentheses/brackets."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return out


def _blocks(css: str) -> list[tuple[str, str]]:
    """Top-level ``(prelude, body)`` pairs of a (minified, comment-free) stylesheet."""
    out, i, n = [], 0, len(css)
    while i < n:
        j = css.find("{", i)
        if j < 0:
            break
        depth, k = 1, j + 1
        while k < n and depth:
            c = css[k]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            k += 1
        out.append((css[i:j].strip(), css[j + 1:k - 1]))
        i = k
    return out


@dataclass(frozen=True)
class _Rule:
    group: str | None  # enclosing @media prelude, or None
    text: str  # "selector{body}"
    needs: tuple[frozenset[str], ...]  # one class set per selector; an empty set always matches


class PurgeIndex:
    """The parsed stylesheet, indexed by class, ready to cut per page."""

    def __init__(self, css: str):
        css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
        self.rules: list[_Rule] = []
        for prelude, body in _blocks(css):
            if prelude.startswith(("@media", "@supports")):
                for sel, inner in _blocks(body):
                    self._add(prelude, sel, inner)
            elif prelude.startswith("@"):
                self.rules.append(_Rule(None, f"{prelude}{{{body}}}", (frozenset(),)))
            else:
                self._add(None, prelude, body)
        self.always: list[int] = []
        self.by_class: dict[str, list[int]] = {}
        for idx, rule in enumerate(self.rules):
            if any(not need for need in rule.needs):
                self.always.append(idx)
                continue
            for need in rule.needs:
                self.by_class.setdefault(min(need), []).append(idx)

    def _add(self, group: str | None, selector: str, body: str) -> None:
        needs = tuple(frozenset(_unescape(c) for c in _CLASS_IN_SELECTOR.findall(sel)) for sel in _split_top(selector, ","))
        self.rules.append(_Rule(group, f"{selector}{{{body}}}", needs))

    def purge(self, classes: set[str]) -> str:
        keep = set(self.always)
        for c in classes:
            for idx in self.by_class.get(c, ()):
                if any(need <= classes for need in self.rules[idx].needs):
                    keep.add(idx)
        parts, open_group = [], None
        for idx in sorted(keep):
            rule = self.rules[idx]
            if rule.group != open_group:
                if open_group is not None:
                    parts.append("}")
                if rule.group is not None:
                    parts.append(rule.group + "{")
                open_group = rule.group
            parts.append(rule.text)
        if open_group is not None:
            parts.append("}")
        return "".join(parts)


_lock = threading.Lock()


@lru_cache(maxsize=4)
def _index_for(path: str) -> PurgeIndex:
    with open(path, encoding="utf-8") as fh:
        return PurgeIndex(fh.read())


def index_for(path: str) -> PurgeIndex:
    with _lock:
        return _index_for(path)


def eligible(html: str) -> bool:
    return _SCRIPT.search(html) is None
