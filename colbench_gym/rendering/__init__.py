"""Rendering of frontend pages: headless Chromium via Playwright, offline Tailwind, screenshot cache.

``Renderer`` is imported lazily by callers so that ``import colbench_gym`` never starts a browser.
"""

from colbench_gym.rendering.assets import WebAssets, WebAssetsMissing, locate
from colbench_gym.rendering.renderer import (
    ReferenceRenderError,
    Renderer,
    RendererError,
    RenderResult,
    ScreenshotCache,
    find_chromium,
    shared_renderer,
)

__all__ = [
    "ReferenceRenderError", "Renderer", "RendererError", "RenderResult", "ScreenshotCache", "WebAssets", "WebAssetsMissing",
    "find_chromium", "locate", "shared_renderer",
]
