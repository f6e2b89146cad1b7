"""Rendering throughput: our Playwright page pool vs Selenium the way the paper's release does it.

Both sides render the same generated WebSight-style pages with the same Debian Chromium, side by
side in one run:

- **ours**: one browser, a pool of reused pages, Tailwind served locally (pages come out styled),
  full-page screenshots; measured after the browser is up (start-up reported separately);
- **release-style Selenium**: a new WebDriver (new browser) per screenshot, page loaded from a
  temporary file, screenshot, quit — what the release does (it uses Firefox + geckodriver; we
  use chromedriver + the same Chromium to compare the method, not the browser). Offline, its
  Tailwind CDN request fails fast and the page renders unstyled, which only makes it cheaper.

Targets (issue 4): >= 10 pages/s on 2 cores, >= 4x Selenium. Prints the measured numbers and ratio.

    python benchmarks/bench_rendering.py [--pages 60] [--selenium-pages 12] [--pool-size 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colbench_gym.rendering import Renderer, find_chromium  # noqa: E402
from colbench_gym.rendering.renderer import CHROMIUM_ARGS, ScreenshotCache  # noqa: E402
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


def bench_ours(htmls: list[str], pool_size: int, batch: int, precompile: bool = True) -> dict[str, float]:
    t0 = time.perf_counter()
    r = Renderer(pool_size=pool_size, cache=ScreenshotCache(None), precompile=precompile)
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


def bench_selenium(htmls: list[str], chromium: str) -> dict[str, float] | str:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return "selenium is not installed (pip install 'colbench-gym[dev]')"
    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        return "chromedriver missing (apt-get install chromium-driver; scripts/setup.d/20-web-assets.sh does it)"
    tmp = Path(tempfile.mkdtemp(prefix="bench-selenium-"))
    t0 = time.perf_counter()
    for i, html in enumerate(htmls):
        page = tmp / f"page{i}.html"
        page.write_text(html, encoding="utf-8")
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        for a in ("--headless", *CHROMIUM_ARGS, "--window-size=1280,800"):
            opts.add_argument(a)
        driver = webdriver.Chrome(options=opts, service=Service(driver_path))
        try:
            driver.set_page_load_timeout(10)
            driver.get(page.as_uri())
            driver.save_screenshot(str(tmp / f"shot{i}.png"))
        finally:
            driver.quit()
    elapsed = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    return {"pps": len(htmls) / elapsed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--selenium-pages", type=int, default=12)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("no Chromium found (apt-get install chromium)")
        return 1
    os.environ.setdefault("COLBENCH_CACHE_DIR", "off")
    htmls = pages(args.pages)
    print(f"load average before: {os.getloadavg()[0]:.1f} (shared machine: wall-clock numbers move with it)")
    print(f"cores: {os.cpu_count()}   chromium: {chromium}   pages: {args.pages} generated WebSight-style (v2 link + v3 play CDN)")
    ours = bench_ours(htmls, args.pool_size, args.batch)
    print(f"ours      browser start-up          : {ours['startup_s']:.2f} s (once per process)")
    print(f"ours      pool of {args.pool_size}, render_many   : {ours['pooled_pps']:.1f} pages/s   (errors: {ours['errors']})")
    print(f"ours      one page at a time        : {ours['sequential_pps']:.1f} pages/s")
    raw = bench_ours(htmls, args.pool_size, args.batch, precompile=False)
    print(f"ours      same, Tailwind files served as is (no precompiled/purged CSS): {raw['pooled_pps']:.1f} pages/s pooled, "
          f"{raw['pages_per_cpu_s']:.1f} pages per CPU-second")
    print(f"ours      CPU cost                  : {ours['pages_per_cpu_s']:.1f} pages per CPU-second "
          f"(=> ~{ours['pages_per_cpu_s'] * (os.cpu_count() or 1):.0f} pages/s on {os.cpu_count()} idle cores)")
    sel = bench_selenium(htmls[: args.selenium_pages], chromium)
    if isinstance(sel, str):
        print(f"selenium  skipped: {sel}")
        return 0
    print(f"selenium  new driver per screenshot : {sel['pps']:.2f} pages/s   ({args.selenium_pages} pages)")
    print(f"ratio     pooled / selenium         : {ours['pooled_pps'] / sel['pps']:.1f}x   (target >= 4x)")
    print(f"ratio     sequential / selenium     : {ours['sequential_pps'] / sel['pps']:.1f}x")
    print(f"target    >= 10 pages/s (wall)      : {'met' if ours['pooled_pps'] >= 10 else 'NOT met'} at load "
          f"{os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
