"""How long `sweet-agent view` takes on a 2,000-episode backend run, and how fast the page is.

Every episode has its own answer (so each is graded again in the sandbox: nothing is cached),
half of them asked a question first. Prints the build time with and without re-grading, the
size of the data file, and in real Chromium from file://: time until the page is usable, a
full-text search over all episodes, and opening one transcript. Note the machine load printed
beside the numbers; run it on an idle machine for figures to quote.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TASKS = [
    {"problem_description": "I need parking_cost(hours, weekend) for my garage.",
     "ground_truth": "def parking_cost(hours, weekend):\n    rate = 3 if weekend else 2\n    return min(hours * rate, 20)\n",
     "test_cases": {f"test{i}": f"parking_cost({i}, {i % 2 == 0})" for i in range(1, 11)}},
    {"problem_description": "I need tip(amount) for my cafe.",
     "ground_truth": "def tip(amount):\n    return round(amount * 0.15, 2)\n",
     "test_cases": {f"test{i}": f"tip({i * 7})" for i in range(1, 11)}},
]


def episode(i: int) -> dict:
    task = TASKS[i % 2]
    name = "parking_cost" if i % 2 == 0 else "tip"
    args = "hours, weekend" if name == "parking_cost" else "amount"
    code = f"def {name}({args}):\n    return {i % 17} * {args.split(',')[0]}\n"
    answer = f"```python\n{code}```"
    hist = [{"role": "user", "content": task["problem_description"]}]
    if i % 2:
        hist += [{"role": "assistant", "content": f"What rate should I use, case {i}?"},
                 {"role": "user", "content": "Fifteen percent, rounded to cents."}]
    hist.append({"role": "assistant", "content": "I WANT TO ANSWER: " + answer})
    return {"task": task, "dialogue_history": hist, "answer": answer, "reward": (i % 11) / 10,
            "success": False, "meta": {"episode_id": f"{i}:0", "sample": 0, "task_index": i}}


def main() -> int:
    from sweet_agent.viewer import ViewConfig, build_site

    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores)")
    tmp = Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    runs = tmp / "run.jsonl"
    runs.write_text("".join(json.dumps(episode(i)) + "\n" for i in range(2000)))
    for label, no_tests in (("with re-grading", False), ("stored scores only", True)):
        t = time.perf_counter()
        index = build_site(ViewConfig(runs=[str(runs)], output=str(tmp / label.replace(" ", "_")), no_tests=no_tests),
                           progress=False)
        print(f"build, 2000 episodes, {label}: {time.perf_counter() - t:.1f} s "
              f"(data.js {(index.parent / 'data.js').stat().st_size / 1e6:.1f} MB)")
    from playwright.sync_api import sync_playwright

    from colbench_gym.rendering import find_chromium

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        t = time.perf_counter()
        page.goto(index.resolve().as_uri())
        page.wait_for_selector("body[data-ready='1']")
        print(f"page usable after {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        page.fill("#f-search", "case 1999")
        count = page.inner_text("#f-count")
        print(f"search over all transcripts: {time.perf_counter() - t:.2f} s ({count})")
        t = time.perf_counter()
        page.locator("#episode-table tbody tr").first.click()
        page.wait_for_selector("#detail .turn")
        print(f"open one transcript: {time.perf_counter() - t:.2f} s")
        browser.close()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
