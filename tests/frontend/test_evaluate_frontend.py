"""``colbench evaluate frontend``: scores, atomic output, win rate against a reference run."""

from __future__ import annotations

import json

import pytest

from colbench_gym.cli import main
from colbench_gym.scoring import FALLBACK_NAME
from colbench_gym.tasks.embedded import load_embedded

pytestmark = pytest.mark.browser


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_evaluate_with_reference_run(browser_ready, tmp_path, capsys):
    tasks = [t.to_record() for t in load_embedded("frontend", "test")[:3]]
    blank = "<html><body><p>hello</p></body></html>"
    ours = [{"task": tasks[0], "answer": tasks[0]["ground_truth"], "dialogue_history": [], "note": "kept"},
            {"task": tasks[1], "answer": "I WANT TO ANSWER: I could not do it", "dialogue_history": []},
            {"task": tasks[2], "answer": "```html\n" + blank + "\n```", "dialogue_history": []},
            {"task": {"problem_description": "other", "ground_truth": blank}, "answer": blank}]
    ref = [{"task": tasks[0], "answer": blank}, {"task": tasks[1], "answer": blank}, {"task": tasks[2], "answer": blank},
           {"task": tasks[0], "answer": tasks[0]["ground_truth"]}]  # a second record of a task is ignored
    src, refp, out = tmp_path / "in.jsonl", tmp_path / "ref.jsonl", tmp_path / "out" / "scored.jsonl"
    _write(src, ours)
    _write(refp, ref)
    rc = main(["evaluate", "frontend", str(src), "--output", str(out), "--reference-run", str(refp),
               "--scorer", "fallback", "--no-progress"])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and rows[0]["note"] == "kept"
    assert rows[0]["similarity"] == pytest.approx(1.0, abs=1e-6) and rows[0]["win"] == 1.0
    assert rows[1]["similarity"] == 0.0 and rows[1]["html_found"] is False and rows[1]["win"] == 0.0
    assert rows[2]["html_found"] and rows[2]["win"] == 0.5  # same page as the reference agent: a tie
    assert rows[3]["win"] is None and rows[3]["reference_similarity"] is None
    assert all(r["scorer"] == FALLBACK_NAME and r["reward"] == r["similarity"] for r in rows)
    printed = capsys.readouterr().out
    assert "win rate" in printed and "50.0% over 3 answers" in printed and "NOT CLIP" in printed
    assert [p.name for p in out.parent.iterdir()] == ["scored.jsonl"]  # no temporary file left behind


def test_evaluate_rejects_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"answer": "<html></html>"}\n')
    assert main(["evaluate", "frontend", str(bad), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert "missing 'task'" in capsys.readouterr().err
    assert main(["evaluate", "frontend", str(tmp_path / "none.jsonl"), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert not (tmp_path / "o.jsonl").exists()


def test_failed_episodes_have_no_score_and_are_no_reference(browser_ready, tmp_path, capsys):
    """An episode whose person failed (simulator_error) has no score in the scored file, and no
    win; a reference-run episode that failed is no reference (the next record of its task is)."""
    tasks = [t.to_record() for t in load_embedded("frontend", "test")[:2]]
    blank = "<html><body><p>hello</p></body></html>"
    failed_meta = {"end_reason": "simulator_error", "infrastructure_failure": True}
    ours = [{"task": tasks[0], "answer": tasks[0]["ground_truth"], "meta": failed_meta},
            {"task": tasks[1], "answer": blank}]
    ref = [{"task": tasks[1], "answer": tasks[1]["ground_truth"], "meta": failed_meta},  # failed: not the reference
           {"task": tasks[1], "answer": blank}]
    src, refp, out = tmp_path / "in.jsonl", tmp_path / "ref.jsonl", tmp_path / "scored.jsonl"
    _write(src, ours)
    _write(refp, ref)
    assert main(["evaluate", "frontend", str(src), "--output", str(out), "--reference-run", str(refp),
                 "--scorer", "fallback", "--no-progress"]) == 0
    failed, scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert failed["infrastructure_failure"] and failed["reward"] is None and failed["similarity"] is None
    assert failed["win"] is None
    assert scored["reference_similarity"] == pytest.approx(scored["similarity"]) and scored["win"] == 0.5
    assert "50.0% over 1 answers" in capsys.readouterr().out  # the tie; the failed episode counts for nothing


def test_evaluate_scores_through_the_kinds_verdict_entry(browser_ready, tmp_path, monkeypatch):
    """`colbench evaluate frontend` has no rule of its own: every answer's reward is a verdict of
    colbench_gym.verdicts.frontend (the batched entry, score_many), and equals what the single
    entry the env and the harnesses call (score_answer) gives the same answer."""
    import colbench_gym.verdicts.frontend as rule
    from colbench_gym.rendering import Renderer
    from colbench_gym.verdicts import score_answer

    tasks = [t.to_record() for t in load_embedded("frontend", "test")[:2]]
    answers = [tasks[0]["ground_truth"], "I WANT TO ANSWER: <html><body><h1>Hello</h1></body></html>",
               "I WANT TO ANSWER: no page at all"]
    records = [{"task": tasks[i % 2], "answer": a} for i, a in enumerate(answers)]
    given = []
    original = rule._verdict

    def spy(*args, **kwargs):
        verdict = original(*args, **kwargs)
        given.append(verdict.reward)
        return verdict

    monkeypatch.setattr(rule, "_verdict", spy)
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write(src, records)
    assert main(["evaluate", "frontend", str(src), "--output", str(out), "--scorer", "fallback", "--no-progress"]) == 0
    rewards = [json.loads(line)["reward"] for line in out.read_text().splitlines()]
    assert given == rewards and len(rewards) == 3  # each reward is the entry's verdict, in order
    with Renderer(pool_size=1) as renderer:
        single = [score_answer(r["answer"], r["task"], scorer="fallback", renderer=renderer).reward for r in records]
    assert rewards == pytest.approx(single, abs=1e-6)
    assert rewards[0] == pytest.approx(1.0, abs=1e-6) and 0.0 < rewards[1] < 1.0 and rewards[2] == 0.0
