"""Rendering throughput: our isolated Playwright page pool vs Selenium, side by side in one run.

All sides render the same generated WebSight-style pages, *styled*, with the same Debian Chromium:

- **ours**: one browser, a pool of pages, every render in a fresh JavaScript realm with scripts
  stopped before the capture (issue 10), Tailwind served locally, full-page screenshots; measured
  after the browser is up (start-up reported separately). Also with the capture sized for CLIP
  (``capture_width=320``; CLIP sees 224 px), as ``colbench evaluate frontend`` can use it;
- **Selenium, one reused driver** (the fair baseline): one chromedriver session for all pages,
  each page loaded from a temporary file whose Tailwind CDN links are rewritten to the same local
  Tailwind files (so it renders styled too — never compare styled with unstyled), screenshot;
- **Selenium, a new driver per screenshot** (what the paper's release does), a few pages only.

The machine is shared: the load average is printed with every number and pages per CPU-second
(this process and its children) says what 2 idle cores would give.
Targets (issue 10): >= 10 pages/s on 2 idle cores, >= 4x Selenium with a reused driver.

    python benchmarks/bench_rendering.py [--pages 60] [--selenium-pages 30] [--release-pages 4] [--pool-size 2]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colbench_gym.rendering import Renderer, find_chromium, locate  # noqa: E402
from colbench_gym.rendering.renderer import CHROMIUM_ARGS, ScreenshotCache  # noqa: E402
from colbench_gym.rendering.routing import tailwind_file  # noqa: E402
from colbench_gym.tasks.frontend_generator import generate_frontend_task  # noqa: E402


def tree_cpu_seconds() -> float:
    """CPU time (user + system) of this process and every live descendant (node driver, Chromium).

    The machine is shared, so wall-clock pages/s depends on everyone else's load; pages per CPU
    second says what the same work costs and what 2 idle cores would give."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(d)] = fields
            children.setdefault(int(fields[1]), []).append(int(d))
    total, stack = 0.0, [os.getpid()]
    while stack:
        pid = stack.pop()
        if pid in stats:
            total += (int(stats[pid][11]) + int(stats[pid][12])) / tick  # utime, stime
        stack.extend(children.get(pid, []))
    return total


def pages(n: int, offset: int = 0) -> list[str]:
    return [generate_frontend_task(offset + i, "train").ground_truth for i in range(n)]


def bench_ours(htmls: list[str], pool_size: int, batch: int, precompile: bool = True,
               capture_width: int | None = None) -> dict[str, float]:
    t0 = time.perf_counter()
    r = Renderer(pool_size=pool_size, cache=ScreenshotCache(None), precompile=precompile, capture_width=capture_width)
    r.start()
    startup = time.perf_counter() - t0
    r.render_many(pages(2, offset=10_000))  # warm-up: first parse of the Tailwind files
    t0, c0 = time.perf_counter(), tree_cpu_seconds()
    errors = 0
    for start in range(0, len(htmls), batch):
        errors += sum(not x.ok for x in r.render_many(htmls[start:start + batch]))
    pooled = time.perf_counter() - t0
    cpu = tree_cpu_seconds() - c0
    t0 = time.perf_counter()
    seq_n = min(len(htmls), 20)
    for h in htmls[:seq_n]:
        r.render(h)
    seq = time.perf_counter() - t0
    r.close()
    return {"startup_s": startup, "pooled_pps": len(htmls) / pooled, "sequential_pps": seq_n / seq, "errors": errors,
            "pages_per_cpu_s": len(htmls) / max(cpu, 1e-9)}


def local_tailwind(html: str, assets) -> str:
    """The page with its Tailwind CDN URLs pointing at the same local files our router serves."""
    def swap(m: re.Match) -> str:
        hit = tailwind_file(m.group(2), assets)
        return m.group(1) + (Path(hit[0]).as_uri() if hit else m.group(2)) + m.group(3)
    return re.sub(r"""((?:src|href)\s*=\s*["'])(https?://[^"']+)(["'])""", swap, html)


def _driver(chromium: str, driver_path: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless", *CHROMIUM_ARGS, "--window-size=1280,800", "--allow-file-access-from-files"):
        opts.add_argument(a)
    driver = webdriver.Chrome(options=opts, service=Service(driver_path))
    driver.set_page_load_timeout(120)  # a shared machine can be slow; a timeout would end the run
    return driver


def bench_selenium(htmls: list[str], chromium: str, reuse: bool) -> dict[str, float] | str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install 'colbench-gym[dev]')"
    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        return "chromedriver missing (apt-get install chromium-driver; scripts/setup.d/20-web-assets.sh does it)"
    assets = locate()
    tmp = Path(tempfile.mkdtemp(prefix="bench-selenium-"))
    files = []
    for i, html in enumerate(htmls):
        files.append(tmp / f"page{i}.html")
        files[-1].write_text(local_tailwind(html, assets), encoding="utf-8")
    driver = _driver(chromium, driver_path) if reuse else None
    if driver is not None:  # warm-up, like ours
        driver.get(files[0].as_uri())
    styled, cpu = 0, 0.0
    t0, c0 = time.perf_counter(), tree_cpu_seconds()
    try:
        for i, page in enumerate(files):
            d = driver or _driver(chromium, driver_path)
            try:
                d.get(page.as_uri())
                d.save_screenshot(str(tmp / f"shot{i}.png"))
                if i == 0:  # check the rewrite worked: Tailwind's preflight zeroes the body margin
                    styled = d.execute_script("return getComputedStyle(document.body).margin") == "0px"
            finally:
                if driver is None:
                    d.quit()
        cpu = tree_cpu_seconds() - c0  # before quit: an exited process's CPU time is not counted
    finally:
        if driver is not None:
            driver.quit()
    elapsed = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    return {"pps": len(htmls) / elapsed, "pages_per_cpu_s": len(htmls) / max(cpu, 1e-9), "styled": styled}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--selenium-pages", type=int, default=30, help="pages for Selenium with one reused driver")
    ap.add_argument("--release-pages", type=int, default=4, help="pages for Selenium with a new driver each (slow)")
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium found (apt-get install chromium)")
        return 1
    os.environ.setdefault("COLBENCH_CACHE_DIR", "off")
    htmls = pages(args.pages)
    cores = os.cpu_count() or 1
    load = lambda: f"load {os.getloadavg()[0]:.1f}"  # noqa: E731
    print(f"cores: {cores}   chromium: {chromium}   pages: {args.pages} generated WebSight-style (v2 link + v3 play CDN)")
    print(f"[{load()}] start")
    ours = bench_ours(htmls, args.pool_size, args.batch)
    print(f"[{load()}] ours      browser start-up                 : {ours['startup_s']:.2f} s (once per process)")
    print(f"[{load()}] ours      pool of {args.pool_size}, render_many          : {ours['pooled_pps']:.1f} pages/s   "
          f"(errors: {ours['errors']}; {ours['pages_per_cpu_s']:.1f} pages per CPU-second => "
          f"~{ours['pages_per_cpu_s'] * cores:.0f} pages/s on {cores} idle cores)")
    print(f"[{load()}] ours      one page at a time               : {ours['sequential_pps']:.1f} pages/s")
    small = bench_ours(htmls, args.pool_size, args.batch, capture_width=320)
    print(f"[{load()}] ours      capture sized for CLIP (320 px)  : {small['pooled_pps']:.1f} pages/s   "
          f"({small['pages_per_cpu_s']:.1f} pages per CPU-second => ~{small['pages_per_cpu_s'] * cores:.0f} on {cores} idle cores)")
    sel = bench_selenium(htmls[: args.selenium_pages], chromium, reuse=True)
    if isinstance(sel, str):
        print(f"selenium  skipped: {sel}")
        return 0
    print(f"[{load()}] selenium  one reused driver, styled        : {sel['pps']:.2f} pages/s   ({args.selenium_pages} pages; "
          f"{sel['pages_per_cpu_s']:.1f} pages per CPU-second; Tailwind applied: {'yes' if sel['styled'] else 'NO'})")
    rel = bench_selenium(htmls[: args.release_pages], chromium, reuse=False) if args.release_pages else None
    if isinstance(rel, dict):
        print(f"[{load()}] selenium  new driver per screenshot     : {rel['pps']:.2f} pages/s   ({args.release_pages} pages)")
    print(f"ratio     pooled / selenium reused             : {ours['pooled_pps'] / sel['pps']:.1f}x wall, "
          f"{ours['pages_per_cpu_s'] / sel['pages_per_cpu_s']:.1f}x per CPU-second   (target >= 4x)")
    print(f"ratio     CLIP-sized / selenium reused         : {small['pooled_pps'] / sel['pps']:.1f}x wall, "
          f"{small['pages_per_cpu_s'] / sel['pages_per_cpu_s']:.1f}x per CPU-second")
    print(f"ratio     sequential / selenium reused         : {ours['sequential_pps'] / sel['pps']:.1f}x")
    if isinstance(rel, dict):
        print(f"ratio     pooled / selenium new driver each    : {ours['pooled_pps'] / rel['pps']:.1f}x")
    met = ours["pooled_pps"] >= 10 or ours["pages_per_cpu_s"] * cores >= 10
    print(f"target    >= 10 pages/s on {cores} idle cores     : {'met' if met else 'NOT met'} "
          f"({ours['pooled_pps']:.1f} wall at {load()}, ~{ours['pages_per_cpu_s'] * cores:.0f} from CPU cost)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
