"""`sweet-agent view` and `sweet-agent plot`, checked in a real Chromium from file://.

Every trajectory here carries script-injection payloads in every text field it has (request,
thought, visible output, answer, episode id, error); the page must show them as text and the
marker global they try to set must stay unset.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sweet_agent.cli import main
from sweet_agent.viewer.site import safe_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))

INJECT = ('<script>window.__pwned=1</script></script><script>window.__pwned=2</script>'
          '<img src=x onerror="window.__pwned=3"><a href="javascript:window.__pwned=4">x</a>')
REFERENCE = "def parking_cost(hours, weekend):\n    rate = 3 if weekend else 2\n    return min(hours * rate, 20)\n"
TASK = {"problem_description": "I need parking_cost(hours, weekend) for my garage. " + INJECT,
        "ground_truth": REFERENCE,
        "test_cases": {f"test{i}": f"parking_cost({i}, {i % 2 == 0})" for i in range(1, 6)}}
TASK2 = {"problem_description": "I need tip(amount) for my cafe.",
         "ground_truth": "def tip(amount):\n    return round(amount * 0.15, 2)\n",
         "test_cases": {"test1": "tip(10)", "test2": "tip(20)"}}


def backend_record(task: dict, sample: int, good: bool, ask: bool = True, error: str | None = None) -> dict:
    name = "parking_cost" if "parking" in task["problem_description"] else "tip"
    code = REFERENCE if (good and name == "parking_cost") else (
        task["ground_truth"] if good else f"def {name}(*a):\n    return 0  # {INJECT}\n")
    answer = f"```python\n{code}```"
    hist = [{"role": "user", "content": task["problem_description"]}]
    if ask:
        q = f"What do you charge per hour? {INJECT}"
        hist += [{"role": "assistant", "content": q, "output": f"private plan {INJECT} OUTPUT: {q}"},
                 {"role": "user", "content": "Two an hour on weekdays, three on weekends, at most 20."}]
    hist.append({"role": "assistant", "content": "I WANT TO ANSWER: " + answer, "output": "I WANT TO ANSWER: " + answer})
    rec = {"task": task, "dialogue_history": hist, "answer": answer, "reward": 1.0 if good else 0.2,
           "success": good, "meta": {"episode_id": f"ep{sample}-{INJECT}", "sample": sample, "ended_by": "answer"}}
    if error:
        rec["meta"]["error"] = error
    return rec


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def two_runs(tmp_path):
    base = [backend_record(TASK, s, good=s == 0, ask=s % 2 == 0) for s in range(4)]
    base += [backend_record(TASK2, s, good=False, ask=False) for s in range(2)]
    base.append(backend_record(TASK2, 2, good=False, ask=False, error=f"endpoint failed {INJECT}"))
    trained = [backend_record(TASK, s, good=s < 3, ask=True) for s in range(4)]
    trained += [backend_record(TASK2, s, good=True, ask=True) for s in range(2)]
    return (write_jsonl(tmp_path / "zero_shot.jsonl", base), write_jsonl(tmp_path / "sweet.jsonl", trained))


class Page:
    """A real Chromium page that records console messages, page errors and every request."""

    def __init__(self, playwright, url: str):
        from colbench_gym.rendering import find_chromium

        self.browser = playwright.chromium.launch(executable_path=find_chromium(),
                                                  args=["--headless", "--no-sandbox", "--disable-gpu"])
        self.page = self.browser.new_page()
        self.console: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(url)
        # The stated bound for a page to be usable: 20 s, far above what a 2,000-episode site needs.
        self.page.wait_for_selector("body[data-ready='1']", timeout=20_000)

    def rows(self) -> int:
        return self.page.locator("#episode-table tbody tr").count()

    def pwned(self):
        return self.page.evaluate("window.__pwned")


@pytest.fixture(scope="module")
def playwright():
    from playwright.sync_api import sync_playwright

    from colbench_gym.rendering import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium (apt-get install chromium)")
    with sync_playwright() as p:
        yield p


def test_safe_json_cannot_close_a_script_or_open_markup():
    text = safe_json({"x": "</script><script>alert(1)</script>\u2028<!--", "y": "a & b > c"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"x": "</script><script>alert(1)</script>\u2028<!--", "y": "a & b > c"}


def test_site_from_file_url_filters_search_episode_and_comparison(tmp_path, two_runs, playwright, capsys):
    out = tmp_path / "site"
    assert main(["view", str(two_runs[0]), str(two_runs[1]), "--output", str(out), "--names", "zero-shot", "sweet"]) == 0
    printed = capsys.readouterr().out
    assert str((out / "index.html").resolve()) in printed
    p = Page(playwright, (out / "index.html").resolve().as_uri())
    try:
        assert p.console == []
        assert p.requests and all(u.startswith("file://") for u in p.requests)
        assert p.rows() == 13
        summary = p.page.inner_text("#summary-table")
        assert "zero-shot" in summary and "sweet" in summary
        # Paired comparison: sweet beats zero-shot on episodes 1, 2 of parking and both tip ones.
        comparison = p.page.inner_text("#comparison-body")
        assert "6 paired episodes" in comparison and "4 wins, 0 losses, 2 ties" in comparison
        p.page.select_option("#f-outcome", "success")
        assert p.rows() == 6  # 1 + 3 + 2 successful episodes
        p.page.select_option("#f-outcome", "errors")
        assert p.rows() == 1
        p.page.select_option("#f-outcome", "all")
        p.page.select_option("#f-run", "0")
        assert p.rows() == 7
        p.page.fill("#f-turns-min", "2")
        p.page.dispatch_event("#f-turns-min", "change")
        assert p.rows() == 2  # only the zero-shot parking episodes that asked
        p.page.fill("#f-turns-min", "")
        p.page.dispatch_event("#f-turns-min", "change")
        p.page.fill("#f-search", "cafe")
        assert p.rows() == 3
        p.page.fill("#f-search", "")
        p.page.select_option("#f-run", "1")
        p.page.locator("#episode-table tbody tr").first.click()
        detail = p.page.locator("#detail")
        assert detail.locator(".turn").count() == 4  # person, agent question, person, agent answer
        assert detail.locator(".turn.agent.question").count() == 1
        assert detail.locator(".turn.agent.answer").count() == 1
        assert "<script>window.__pwned=1</script>" in detail.inner_text()  # shown as text
        tests = detail.locator("table").last.inner_text()
        assert tests.count("passed") == 5 and "expected" not in tests  # no spoilers without --show-expected
        assert p.pwned() is None
        assert p.console == []
    finally:
        p.browser.close()


def test_show_expected_reveals_reference_values(tmp_path, two_runs, playwright):
    out = tmp_path / "site"
    assert main(["view", str(two_runs[0]), "--output", str(out), "--show-expected"]) == 0
    p = Page(playwright, (out / "index.html").resolve().as_uri())
    try:
        p.page.select_option("#f-outcome", "failed")
        p.page.locator("#episode-table tbody tr").first.click()
        tests = p.page.locator("#detail table").last.inner_text()
        assert "expected" in tests and "failed" in tests
        assert "12" in tests  # parking_cost(4, True) == 12 by the reference
        table = p.page.locator("#detail table").last
        headers = [h.strip() for h in table.locator("th").all_inner_texts()]
        assert headers == ["test", "call", "verdict", "why", "expected"]
        rows = [[c.strip() for c in row.locator("td").all_inner_texts()] for row in table.locator("tbody tr").all()]
        # every row: its own test, the reference's value of that very call (computed here), and the
        # failed verdict of the answer that returns 0
        namespace: dict = {}
        exec(REFERENCE, namespace)  # our own reference, not an answer
        want = {name: (call, repr(eval(call, namespace))) for name, call in TASK["test_cases"].items()}
        assert [(r[0], r[1], r[4]) for r in rows] == [(n, c, v) for n, (c, v) in want.items()]
        assert [r[4] for r in rows] == ["2", "6", "6", "12", "10"] and all(r[2] == "failed" for r in rows)
    finally:
        p.browser.close()


def test_frontend_answers_are_screenshots_never_executed(tmp_path, playwright):
    ref = '<html><body class="bg-blue-500"><h1 class="text-3xl text-white p-8">Garden club</h1></body></html>'
    answer = ('<html><body class="bg-red-500"><h1 class="p-8">Garden club</h1>'
              '<script>window.__pwned = 5; document.body.style.background = "green"</script></body></html>')
    rec = {"task": {"problem_description": "A page for my garden club " + INJECT, "ground_truth": ref},
           "dialogue_history": [
               {"role": "user", "content": "A page for my garden club"},
               {"role": "assistant", "content": f"Here is a draft {answer}", "output": f"plan OUTPUT: Here is a draft {answer}"},
               {"role": "user", "content": "The background should be blue."},
               {"role": "assistant", "content": "I WANT TO ANSWER: " + answer, "output": "OUTPUT: I WANT TO ANSWER: " + answer}],
           "answer": answer, "reward": 0.71, "meta": {"episode_id": "fe0", "sample": 0}}
    runs = write_jsonl(tmp_path / "fe.jsonl", [rec])
    out = tmp_path / "site"
    assert main(["view", str(runs), "--output", str(out)]) == 0
    payload = (out / "data.js").read_text()
    shots = sorted((out / "shots").glob("*.png"))
    assert len(shots) == 2  # the draft is the answer page (one file), plus the reference
    assert all(s.read_bytes().startswith(b"\x89PNG") for s in shots)
    p = Page(playwright, (out / "index.html").resolve().as_uri())
    try:
        p.page.locator("#episode-table tbody tr").first.click()
        imgs = p.page.locator("#detail img.shot")
        assert imgs.count() == 3  # draft, answer, reference
        assert all(imgs.nth(i).evaluate("i => i.naturalWidth > 0") for i in range(3))
        assert p.page.locator("#detail iframe").count() == 0
        assert p.pwned() is None and p.console == []
        assert "similarity 0.710" in p.page.inner_text("#detail .meta")
    finally:
        p.browser.close()
    assert "<script" not in payload


@pytest.fixture(scope="module")
def critic_dir(tmp_path_factory):
    """A real `sweet-agent train-critic` output on a tiny model (two optimiser steps)."""
    from tiny_model import save_tiny

    tmp = tmp_path_factory.mktemp("critic")
    model = save_tiny(tmp / "model")
    recs = []
    for i in range(4):
        t = {"problem_description": f"Write f{i}(x) for my shop.", "ground_truth": f"def f{i}(x):\n    return x + {i}\n",
             "test_cases": {"test1": f"f{i}(1)", "test2": f"f{i}(2)"}}
        for good, reward in ((True, 1.0), (False, 0.0), (False, 0.5)):
            a1 = "What should it return?" if good else "no no no"
            a2 = f"I WANT TO ANSWER: def f{i}(x):\n    return x + {i}\n" if good else "maybe maybe"
            recs.append({"task": t, "answer": a2, "reward": reward, "success": good, "dialogue_history": [
                {"role": "user", "content": t["problem_description"]}, {"role": "assistant", "content": a1},
                {"role": "user", "content": "It adds a number."}, {"role": "assistant", "content": a2}]})
    data = write_jsonl(tmp / "trajs.jsonl", recs)
    out = tmp / "critic"
    assert main(["train-critic", "--data", str(data), "--model", str(model), "--output-dir", str(out),
                 "--max-steps", "2", "--batch-size", "2", "--learning-rate", "1e-2", "--max-length", "256",
                 "--logging-steps", "1", "--save-steps", "1"]) == 0
    return out, data, recs


def test_critic_credit_is_the_critics_advantage(tmp_path, critic_dir, playwright):
    from sweet_agent.critic.advantages import turn_advantages
    from sweet_agent.critic.loading import load_critic
    from sweet_agent.training_data import records as R

    out_critic, data, recs = critic_dir
    out = tmp_path / "site"
    assert main(["view", str(data), "--output", str(out), "--critic", str(out_critic), "--no-tests",
                 "--plots", str(out_critic)]) == 0
    loaded = load_critic(out_critic)
    expected = turn_advantages(loaded.model, loaded.ref, loaded.tokenizer, R.dialogue_messages(recs[0]),
                               R.privileged_info(recs[0]), loaded.normalize)
    assert len(expected) == 2 and expected[0] != expected[1]
    p = Page(playwright, (out / "index.html").resolve().as_uri())
    try:
        p.page.locator("#episode-table tbody tr").first.click()
        badges = p.page.locator("#detail .credit")
        assert badges.count() == 2
        shown = [float(badges.nth(i).inner_text().split()[-1]) for i in range(2)]
        assert shown == pytest.approx(expected, abs=1e-4)
        best = p.page.locator("#detail .turn.credited")
        assert best.count() == 1
        best_index = max(range(2), key=lambda i: expected[i])
        assert best.locator(".credit").inner_text() == badges.nth(best_index).inner_text()
        colours = {badges.nth(i).evaluate("b => b.style.backgroundColor") for i in range(2)}
        assert len(colours) == 2
        plots = p.page.locator("#plots img")  # the training curves, linked from the summary
        assert plots.count() >= 2 and all(plots.nth(i).evaluate("i => i.naturalWidth > 0") for i in range(2))
        assert p.console == []
    finally:
        p.browser.close()


def test_plot_reads_trainer_logs(tmp_path, critic_dir, capsys):
    out_critic, _, _ = critic_dir
    out = tmp_path / "plots"
    assert main(["plot", str(out_critic), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    files = sorted(p.name for p in out.glob("*.png"))
    assert "loss.png" in files and "learning_rate.png" in files
    assert f"{len(files)} plots" in printed
    assert all((out / f).read_bytes().startswith(b"\x89PNG") for f in files)


def test_plot_names_a_directory_without_logs(tmp_path):
    with pytest.raises(SystemExit, match="no trainer_state.json"):
        main(["plot", str(tmp_path), "--output", str(tmp_path / "o")])


def test_view_missing_file_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        main(["view", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "site")])


@pytest.mark.slow
def test_two_thousand_episodes(tmp_path, playwright):
    recs = [backend_record(TASK if i % 2 else TASK2, i, good=i % 3 == 0, ask=i % 4 == 0) for i in range(2000)]
    runs = write_jsonl(tmp_path / "big.jsonl", recs)
    out = tmp_path / "site"
    assert main(["view", str(runs), "--output", str(out)]) == 0
    p = Page(playwright, (out / "index.html").resolve().as_uri())
    try:
        assert p.rows() == 200  # the first page of rows; the rest on demand
        assert "2000 of 2000" in p.page.inner_text("#f-count")
        p.page.fill("#f-search", "cafe")
        assert "1000 of 2000" in p.page.inner_text("#f-count")
        p.page.click("#more")
        assert p.rows() == 400
        p.page.locator("#episode-table tbody tr").nth(399).click()
        assert p.page.locator("#detail .turn").count() >= 2
        assert p.console == [] and p.pwned() is None
    finally:
        p.browser.close()
