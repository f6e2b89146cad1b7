"""The viewer's words for how an episode failed follow the end-reason table: the agent's own
SyntaxError is "the answer's code failed" (scored as failed), never a "grading error" — the word
kept for infrastructure failures, which are "not scored" and named by their end reason; test rows
say plainly that a test did not run; answers cut off at the token limit are said to be."""

from __future__ import annotations

import json

import pytest

from colbench_gym.grading.compare import NOT_RUN
from colbench_gym.tasks.accounting import END_REASONS
from sweet_agent.cli import main
from tests.viewer.test_viewer import TASK, Page, playwright, write_jsonl  # noqa: F401 - fixture


def _record(answer_code: str, sample: int, **meta) -> dict:
    answer = f"```python\n{answer_code}```"
    hist = [{"role": "user", "content": TASK["problem_description"]},
            {"role": "assistant", "content": "I WANT TO ANSWER: " + answer}]
    return {"task": TASK, "dialogue_history": hist, "answer": answer, "reward": meta.pop("reward", 0.0),
            "success": False, "meta": {"episode_id": f"ep{sample}", "sample": sample, "ended_by": "answer", **meta}}


def _detail(p: Page, index: int) -> str:
    p.page.locator("#episode-table tbody tr").nth(index).click()
    return p.page.inner_text("#detail")


def test_the_agents_syntax_error_is_not_a_grading_error(tmp_path, playwright):  # noqa: F811 - fixture
    recs = [
        _record("def parking_cost(hours weekend):\n    return 1\n", 0, end_reason="answer"),
        _record("def parking_cost(hours, weekend):\n    return 0\n", 1, end_reason="grading_error",
                infrastructure_failure=True, reward=None,
                grade_error="internal grading error: RuntimeError (details in the grader's log)"),
        _record("def parking_cost(hours, weekend):\n    return 0\n", 2, end_reason="answer", length_truncated_turns=1),
    ]
    out = tmp_path / "site"
    assert main(["view", str(write_jsonl(tmp_path / "run.jsonl", recs)), "--output", str(out)]) == 0
    p = Page(playwright, (out / "index.html").resolve().as_uri())
    try:
        table = p.page.inner_text("#episode-table")
        assert "grading error" not in table
        assert "failed (the answer's code failed)" in table and "not scored (grading_error)" in table
        syntax = _detail(p, 0)
        assert "the answer's code failed (scored as failed): SyntaxError" in syntax
        assert "grading error" not in syntax and "VerdictMismatch" not in syntax
        assert syntax.count(NOT_RUN) == len(TASK["test_cases"])
        # the infrastructure's failure: the recorded host verdict, named by its end reason
        infra = _detail(p, 1)
        assert "grading_error (infrastructure, not the agent's; left out of the rates)" in infra
        assert f"end reason grading_error: {END_REASONS['grading_error'].meaning}" in infra
        cut = _detail(p, 2)
        assert "1 agent turn(s) cut off at the token limit" in cut
        # the only agent turn was cut: that turn (the answer) is marked in the transcript, and its row says so
        assert "this answer too" in cut and p.page.locator("#detail .turn.agent .cut").count() == 1
        assert "failed · 1 turn(s) cut at the token limit" in p.page.inner_text("#episode-table")
        assert "cut off" not in syntax
        assert "cut at the token limit" not in p.page.locator("#episode-table tbody tr").nth(0).inner_text()
        assert p.console == []
    finally:
        p.browser.close()


def _site_episodes(tmp_path, recs: list[dict], *extra: str) -> list[dict]:
    """The episodes as `sweet-agent view` wrote them into the site (its data script)."""
    out = tmp_path / "site"
    assert main(["view", str(write_jsonl(tmp_path / "run.jsonl", recs)), "--output", str(out), *extra]) == 0
    text = (out / "data.js").read_text(encoding="utf-8")
    return json.loads(text.removeprefix("window.COLBENCH_VIEW = ").rstrip().removesuffix(";"))["episodes"]


def _ended_by(reason: str, sample: int, code: str = "def parking_cost(hours, weekend):\n    return 0\n") -> dict:
    """A record as the rollout writes one that ended for ``reason`` (colbench_gym.tasks.accounting)."""
    entry = END_REASONS[reason]
    meta = {"end_reason": reason, "infrastructure_failure": entry.infrastructure}
    if reason in ("answer", "turn_limit"):
        meta["ended_by"] = reason
        return _record(code, sample, **meta)
    rec = _record(code, sample, **meta)
    rec["meta"].pop("ended_by")
    rec["error"] = f"{reason}: what failed" if entry.infrastructure else "RuntimeError: the local model raised"
    if entry.infrastructure:
        rec["reward"] = rec["success"] = None
    return rec


@pytest.mark.parametrize("reason", list(END_REASONS))
def test_every_end_reason_reads_as_the_table_attributes_it(tmp_path, reason):
    """Infrastructure failures are "not scored (<reason>)", never the agent's failure or a score;
    agent_error is the agent's failure, scored 0; a graded answer reads its score. The detail's end
    reason line carries the table's meaning."""
    [ep] = _site_episodes(tmp_path, [_ended_by(reason, 0)])
    entry = END_REASONS[reason]
    assert ep["end_reason"] == reason and ep["end_meaning"] == entry.meaning
    if entry.infrastructure:
        assert ep["outcome"] == f"not scored ({reason})"
    elif not entry.graded:
        assert ep["outcome"] == "failed (agent_error: no usable turn, scored 0)"
    else:
        assert ep["outcome"] == "failed"
    assert "grading error" not in ep["outcome"]


def test_the_answers_own_failure_success_and_cut_turns_in_the_site_data(tmp_path):
    recs = [_ended_by("answer", 0, "def parking_cost(hours weekend):\n    return 1\n"),  # a SyntaxError
            _record("def parking_cost(hours, weekend):\n    return 0\n", 1, end_reason="turn_limit",
                    length_truncated_turns=1)]
    syntax, cut = _site_episodes(tmp_path, recs)
    assert syntax["outcome"] == "failed (the answer's code failed)"
    assert syntax["grade_error"]["infrastructure"] is False and "SyntaxError" in syntax["grade_error"]["text"]
    assert cut["truncated_turns"] == 1 and cut["outcome"] == "failed"
    # without a regrade the stored verdict stands: a score of the agent's, never "not scored"
    [plain] = _site_episodes(tmp_path, recs[1:], "--no-tests")
    assert plain["outcome"] == "failed" and "tests" not in plain
