"""Fixtures for the frontend tests: one real Chromium per session, screenshot cache in tmp."""

from __future__ import annotations

import os

import pytest

from colbench_gym.rendering import Renderer

V2 = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">'
V3 = '<script src="https://cdn.tailwindcss.com"></script>'
V4 = '<script src="https://cdn.jsdelivr.net/npm/@tailwindcss/browser@4"></script>'


def page(head: str, body_class: str, inner: str) -> str:
    return f'<html><head>{head}</head><body class="{body_class}">{inner}</body></html>'


@pytest.fixture(scope="session", autouse=True)
def _screenshot_cache_in_tmp(tmp_path_factory):
    # Never write into the user's ~/.cache from tests.
    old = os.environ.get("COLBENCH_CACHE_DIR")
    os.environ["COLBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("colbench-cache"))
    yield
    if old is None:
        os.environ.pop("COLBENCH_CACHE_DIR", None)
    else:
        os.environ["COLBENCH_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def renderer(browser_ready):
    r = Renderer(pool_size=2, timeout=15.0)  # generous: the machine running the suite is shared
    yield r
    r.close()
