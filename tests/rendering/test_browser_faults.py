"""Chromium killed or hung mid-batch (issue 14): the renderer, `evaluate frontend` and the
frontend env relaunch it and retry the page within a bounded time, or stop with a one-line error.

Every test signals only the browser its own renderer launched (``Renderer.browser_pid``, the
leader of the browser's process group), never a process found by name. The timeout marks turn a
hang into a failure instead of a stuck suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from colbench_gym.rendering import Renderer, ScreenshotCache

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30), (30, 200, 200), (200, 30, 200),
           (120, 60, 10), (10, 60, 120), (90, 90, 90), (250, 128, 0), (0, 128, 250), (128, 0, 250)]


def _page(rgb) -> str:
    return f'<html><body style="margin:0;background:rgb{rgb}"><p>page</p></body></html>'


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _kill_when(renderer: Renderer, renders: int, sig: int) -> threading.Thread:
    """Signal the renderer's browser group once it has done ``renders`` renders (mid-batch)."""
    pid = renderer.browser_pid

    def run():
        while renderer.renders < renders:
            time.sleep(0.005)
        os.killpg(pid, sig)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.timeout(240)
def test_browser_killed_mid_batch_is_relaunched_and_every_page_rendered(browser_ready):
    htmls = [_page(c) for c in COLOURS]
    with Renderer(pool_size=2, timeout=5, cache=ScreenshotCache(None)) as r:
        r.start()
        old = r.browser_pid
        assert old is not None and os.getpgid(old) == old  # our browser leads its own process group
        killer = _kill_when(r, 3, signal.SIGKILL)
        results = r.render_many(htmls)
        killer.join(5)
        assert [res.error for res in results] == [None] * len(htmls)
        assert [res.image().getpixel((5, 5)) for res in results] == COLOURS
        assert r.restarts >= 1 and r.browser_pid not in (None, old) and not _alive(old)


@pytest.mark.timeout(240)
def test_hung_browser_is_killed_and_replaced_and_the_page_retried(browser_ready):
    with Renderer(pool_size=2, timeout=3, cache=ScreenshotCache(None)) as r:
        assert r.render(_page(COLOURS[0])).ok
        old = r.browser_pid
        os.killpg(old, signal.SIGSTOP)  # hang: the process is there but answers nothing
        try:
            results = r.render_many([_page(c) for c in COLOURS[:4]])
            assert [res.image().getpixel((5, 5)) for res in results] == COLOURS[:4]
            assert all(res.ok for res in results)
            assert r.restarts == 1 and r.browser_pid != old
            assert not _alive(old), "the hung browser must be killed, not left behind"
        finally:
            if _alive(old):
                os.killpg(old, signal.SIGKILL)


@pytest.mark.timeout(240)
def test_evaluate_frontend_scores_survive_a_killed_browser(browser_ready):
    """`colbench evaluate frontend` scores through score_answers: with the browser killed in the
    middle, every answer still gets the similarity of an undisturbed run."""
    from colbench_gym.evaluation.frontend import score_answers
    from colbench_gym.scoring import FallbackScorer
    from colbench_gym.tasks import FrontendTask

    # inline-styled references: what is compared is recovery, not Tailwind speed under load
    tasks = [FrontendTask(f"page {i}", _page(COLOURS[-1 - i]).replace("<p>page</p>", f"<h1>task {i}</h1>"))
             for i in range(6)]
    items = [({}, t, f"I WANT TO ANSWER: {_page(COLOURS[i])}") for i, t in enumerate(tasks)]
    scorer = FallbackScorer()
    with Renderer(pool_size=2, timeout=5, cache=ScreenshotCache(None)) as r:
        clean = score_answers(items, r, scorer, batch_size=3)
    with Renderer(pool_size=2, timeout=5, cache=ScreenshotCache(None)) as r:
        r.start()
        killer = _kill_when(r, 4, signal.SIGKILL)
        faulty = score_answers(items, r, scorer, batch_size=3)
        killer.join(5)
        assert r.restarts >= 1
    assert [s["render_error"] for s in faulty] == [None] * len(items)
    assert [round(s["similarity"], 6) for s in faulty] == [round(s["similarity"], 6) for s in clean]


@pytest.mark.timeout(240)
def test_frontend_env_step_survives_a_killed_browser(browser_ready):
    import gymnasium as gym

    import colbench_gym  # noqa: F401 - registers the envs

    with Renderer(pool_size=1, timeout=5, cache=ScreenshotCache(None)) as r:
        env = gym.make("ColBench-Frontend-v0", renderer=r, scorer="fallback")
        env.reset(seed=0)
        os.killpg(r.browser_pid, signal.SIGKILL)
        _, _, _, _, info = env.step(f"Here is a draft: {_page(COLOURS[1])}")
        assert info["rendered"] and info["render_error"] is None
        _, reward, terminated, _, info = env.step(f"I WANT TO ANSWER: {_page(COLOURS[2])}")
        assert terminated and info["render_error"] is None and 0.0 <= reward <= 1.0
        assert r.restarts == 1
        env.close()


def test_evaluate_frontend_stops_with_one_line_when_chromium_cannot_start(browser_ready, tmp_path):
    import json

    from colbench_gym.tasks.frontend_generator import generate_frontend_task

    task = generate_frontend_task(0, "test")
    src = tmp_path / "answers.jsonl"
    src.write_text(json.dumps({"task": {"problem_description": task.problem_description,
                                        "ground_truth": task.ground_truth},
                               "answer": f"I WANT TO ANSWER: {_page(COLOURS[0])}"}) + "\n")
    env = {**os.environ, "COLBENCH_CHROMIUM": "/bin/false", "COLBENCH_CACHE_DIR": "off"}
    proc = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "evaluate", "frontend", str(src),
                           "--output", str(tmp_path / "out.jsonl"), "--scorer", "fallback", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "warn" not in ln.lower()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("colbench evaluate frontend: error: could not launch Chromium") and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()


DIES = "<!-- the browser dies on this page -->"


def _inject_browser_faults(r: Renderer, monkeypatch) -> dict:
    """Fault injection, two kinds. ``state["down"] = True`` (or a predicate on the page's HTML):
    the browser is down, every page fails and it stops answering, relaunched or not. A page holding DIES brings the browser down on
    every attempt while other pages render for real. Pages of one pool are serialized
    (pool_size=1), so a DIES page's dead state covers only its own attempts."""
    state = {"down": False, "dead": False}
    render_on, answers = r._render_on, r._browser_answers

    async def render_on_or_die(page, html, dom):
        down = state["down"](html) if callable(state["down"]) else state["down"]
        state["dead"] = down or DIES in html
        if state["dead"]:
            raise RuntimeError("Target page, context or browser has been closed")
        return await render_on(page, html, dom)

    async def answers_unless_dead():
        return False if state["dead"] else await answers()

    async def relaunch_changes_nothing(generation):
        return None

    monkeypatch.setattr(r, "_render_on", render_on_or_die)
    monkeypatch.setattr(r, "_browser_answers", answers_unless_dead)
    monkeypatch.setattr(r, "_restart", relaunch_changes_nothing)
    return state


def test_a_page_the_browser_never_rendered_is_no_score_anywhere(browser_ready, monkeypatch):
    """The browser itself is down on every attempt (an empty page fails too): its blank image
    says nothing of the page, so it is an infrastructure failure (rendering_error) in the
    renderer's result, the env, the harness scorer and the evaluator — not a similarity of a
    blank page to the reference. A page that brings the browser down while an empty page renders
    is the page's doing, scored: a policy cannot escape its score by crashing the browser."""
    import gymnasium as gym

    import colbench_gym  # noqa: F401 - registers the envs
    from colbench_gym.evaluation.frontend import score_answers
    from colbench_gym.integrations.conversation import ScoreUnavailable, entry_task, score_frontend
    from colbench_gym.scoring import make_scorer
    from colbench_gym.tasks.accounting import end_reason_of
    from colbench_gym.tasks.embedded import load_embedded

    page, dying = _page(COLOURS[0]), _page(COLOURS[0]).replace("<p>", DIES + "<p>")
    with Renderer(pool_size=1, timeout=5, cache=ScreenshotCache(None)) as r:
        env = gym.make("ColBench-Frontend-v0", renderer=r, scorer="fallback").unwrapped
        env.reset(seed=0)
        faults = _inject_browser_faults(r, monkeypatch)
        # a page that crashes the browser: the page's failure, scored (a blank, not infrastructure)
        crashed = r.render(dying)
        assert crashed.error and "brings the browser down" in crashed.error and not crashed.infrastructure
        _, reward, done, _, info = env.step(f"I WANT TO ANSWER: {dying}")
        assert done and info["end_reason"] == "answer" and reward < 0.5
        env.reset(seed=0)
        faults["down"] = True
        shot = r.render(page)
        assert shot.infrastructure and "the browser itself fails" in shot.error
        # the env: a draft the browser could not render is not shown to the person, the turn is undone
        with pytest.raises(Exception, match="could not be rendered") as err:
            env.step(f"Here is a draft: {page}")
        assert end_reason_of(err.value, "unknown_error") == "rendering_error"
        assert env._turn == 0 and env._last_draft is None
        _, _, done, _, info = env.step(f"I WANT TO ANSWER: {page}")
        assert done and info["end_reason"] == "rendering_error"
        # the harness scorer (Inspect, verifiers) and the evaluator
        task = load_embedded("frontend", "test")[0]
        with pytest.raises(ScoreUnavailable, match="rendering_error"):
            score_frontend(f"I WANT TO ANSWER: {page}", entry_task("frontend", task.problem_description,
                                                                    task.ground_truth, {}), "fallback", renderer=r)
        faults["down"] = lambda html: html != task.ground_truth  # down for everything but the reference
        items = [({"task": task.to_record()}, task, f"I WANT TO ANSWER: {page}")]
        [failed] = score_answers(items, r, make_scorer("fallback"))
        assert failed["browser_failed"] and failed["similarity"] is None and failed["reference_error"] is None
        faults["down"] = False
        [scored] = score_answers(items, r, make_scorer("fallback"))
        assert not scored["browser_failed"] and 0.0 < scored["similarity"] <= 1.0


def test_colbench_render_writes_nothing_and_exits_1_when_the_browser_itself_fails(browser_ready, monkeypatch,
                                                                                    tmp_path, capsys):
    """The CLI's own renderer, browser down on every attempt: a one-line error, exit 1, no PNG
    (a blank the browser gave is not a screenshot of the page). With the browser up, the same
    command writes the screenshot."""
    from colbench_gym.cli import main

    page = tmp_path / "page.html"
    # a page no earlier run rendered: the CLI's renderer keeps the user's screenshot cache
    page.write_text(_page(COLOURS[1]).replace("page", f"page {uuid.uuid4()}"), encoding="utf-8")
    out = tmp_path / "shot.png"
    enter = Renderer.__enter__

    def enter_with_faults(self):
        entered = enter(self)
        _inject_browser_faults(self, monkeypatch)["down"] = down
        return entered

    monkeypatch.setattr(Renderer, "__enter__", enter_with_faults)
    down = True
    assert main(["render", str(page), "--output", str(out), "--timeout", "5"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("colbench render: error:") and "the browser itself fails" in err
    assert not out.exists()
    down = False
    assert main(["render", str(page), "--output", str(out), "--timeout", "5"]) == 0
    assert out.stat().st_size > 0 and "wrote" in capsys.readouterr().out


def test_a_launch_that_times_out_is_tried_again_and_a_second_one_is_one_clear_error(browser_ready, monkeypatch):
    """On a starved machine Chromium can start yet miss Playwright's launch deadline: the renderer
    launches it once more and renders. A browser that times out twice (or fails to start for any
    other reason, at once) is the one-line launch error, and no browser of it is left running."""
    from playwright.async_api import BrowserType
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    from colbench_gym.rendering.result import RendererError

    launch, timeouts = BrowserType.launch, {"left": 1}

    async def slow_then_fine(self, **kwargs):
        if timeouts["left"] > 0:
            timeouts["left"] -= 1
            raise PlaywrightTimeout("BrowserType.launch: Timeout 90000ms exceeded.")
        return await launch(self, **kwargs)

    monkeypatch.setattr(BrowserType, "launch", slow_then_fine)
    with Renderer(pool_size=1, timeout=5, cache=ScreenshotCache(None)) as r:
        shot = r.render(_page(COLOURS[2]))
        assert shot.ok and r.launch_retries == 1 and _alive(r.browser_pid)
    timeouts["left"] = 2
    r = Renderer(pool_size=1, timeout=5, cache=ScreenshotCache(None))
    try:
        with pytest.raises(RendererError, match=r"could not launch Chromium .*Timeout 90000ms") as err:
            r.render(_page(COLOURS[3]))
        assert "\n" not in str(err.value) and r.launch_retries == 1 and r.browser_pid is None
    finally:
        r.close()

    async def missing(self, **kwargs):
        raise RuntimeError("Executable doesn't exist at /nowhere/chrome")

    monkeypatch.setattr(BrowserType, "launch", missing)
    r = Renderer(pool_size=1, timeout=5, cache=ScreenshotCache(None))
    try:
        with pytest.raises(RendererError, match="Executable doesn't exist"):
            r.render(_page(COLOURS[4]))
        assert r.launch_retries == 0  # not a timeout: not tried again
    finally:
        r.close()
