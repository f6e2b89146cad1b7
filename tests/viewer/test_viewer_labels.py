"""The viewer's words for how an episode failed follow the end-reason table: the agent's own
SyntaxError is "the answer's code failed" (scored as failed), never a "grading error" — the word
kept for infrastructure failures, which are "not scored" and named by their end reason; test rows
say plainly that a test did not run; answers cut off at the token limit are said to be."""

from __future__ import annotations

from colbench_gym.grading.compare import NOT_RUN
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
        cut = _detail(p, 2)
        assert "1 agent turn(s) cut off at the token limit" in cut
        assert "cut off" not in syntax
        assert p.console == []
    finally:
        p.browser.close()
