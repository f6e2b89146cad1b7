"""``colbench render PAGE.html --output SHOT.png``: one screenshot exactly as the environment sees it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from colbench_gym.jsonl import write_text_atomic


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("page", help="HTML file to render ('-' reads standard input)")
    parser.add_argument("--output", "-o", required=True, help="PNG file to write (written atomically)")
    parser.add_argument("--width", type=int, default=1280, help="viewport width in pixels (default 1280)")
    parser.add_argument("--height", type=int, default=800, help="viewport height in pixels (default 800)")
    parser.add_argument("--max-height", type=int, default=4000, help="cut full-page screenshots at this height")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds a page may take to load")
    parser.add_argument("--chromium", default=None, help="Chromium binary (default: $COLBENCH_CHROMIUM or chromium on PATH)")
    parser.add_argument("--dom", metavar="JSON", default=None, help="also write the DOM summary the offline simulator reads")
    parser.add_argument("--no-tailwind", action="store_true", help="do not serve the offline Tailwind files (unstyled)")


def run(args: argparse.Namespace) -> int:
    from colbench_gym.rendering.assets import WebAssetsMissing  # noqa: PLC0415
    from colbench_gym.rendering.renderer import Renderer, RendererError  # noqa: PLC0415

    if args.page == "-":
        html = sys.stdin.read()
    else:
        path = Path(args.page)
        if not path.is_file():
            print(f"error: {path}: no such file (give an HTML file to render)", file=sys.stderr)
            return 2
        html = path.read_text(encoding="utf-8", errors="replace")
    out = Path(args.output)
    if not out.parent.exists():
        print(f"error: {out.parent}: output folder does not exist", file=sys.stderr)
        return 2
    try:
        with Renderer(viewport=(args.width, args.height), max_height=args.max_height, timeout=args.timeout,
                      executable_path=args.chromium, web_assets=False if args.no_tailwind else None,
                      pool_size=1) as renderer:
            result = renderer.render(html, dom=bool(args.dom))
    except (WebAssetsMissing, RendererError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if result.infrastructure:  # a blank the browser gave, not the page: nothing written
        print(f"error: {result.error}; check the browser (colbench render --help), then run again", file=sys.stderr)
        return 1
    result.save(out)
    if args.dom:
        write_text_atomic(args.dom, json.dumps(result.dom, indent=1))
    status = f"warning: {result.error}; " if result.error else ""
    print(f"{status}wrote {out} ({result.width}x{result.height}, {result.elapsed:.2f}s)")
    return 0
