"""Page builders shared by the rendering, frontend and scoring tests (Tailwind CDN heads, one page shape)."""

from __future__ import annotations

V2 = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">'
V3 = '<script src="https://cdn.tailwindcss.com"></script>'
V4 = '<script src="https://cdn.jsdelivr.net/npm/@tailwindcss/browser@4"></script>'


def page(head: str, body_class: str, inner: str) -> str:
    return f'<html><head>{head}</head><body class="{body_class}">{inner}</body></html>'
