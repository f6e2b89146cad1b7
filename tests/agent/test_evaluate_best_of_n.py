"""`sweet-agent evaluate --best-of N --critic DIR`: plays critic-guided best-of-N episodes with the
rollout's code, then reports on them with the evaluation's code. Real tiny policy, a critic
really trained (one step) without privileged information, the offline simulator, the sandboxed
grader."""

from __future__ import annotations

import json

import pytest

from sweet_agent.cli import main
from sweet_agent.trajectories import read_trajectories


def _records() -> list[dict]:
    """Two tasks x (an asking success, a rambling failure): enough for one critic step."""
    recs = []
    for i in range(2):
        task = {"problem_description": f"Write a python function f{i}(x) for my shop.",
                "ground_truth": f"def f{i}(x):\n    return x + {i}\n",
                "test_cases": {"test1": f"f{i}(1)", "test2": f"f{i}(2)"}}
        for good in (True, False):
            a1 = "What should it return?" if good else "no no no"
            a2 = f"I WANT TO ANSWER: def f{i}(x):\n    return x + {i}\n" if good else "maybe"
            hist = [{"role": "user", "content": task["problem_description"]},
                    {"role": "assistant", "content": a1}, {"role": "user", "content": f"It adds {i}."},
                    {"role": "assistant", "content": a2}]
            recs.append({"task": task, "dialogue_history": hist, "answer": a2, "reward": float(good),
                         "success": good})
    return recs


@pytest.fixture(scope="module")
def noref_critic(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("bon")
    data = root / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    out = root / "critic-noref"
    assert main(["train-critic", "--data", str(data), "--model_name_or_path", str(tiny_model_dir),
                 "--output_dir", str(out), "--no_use_privileged_info", "--max_steps", "1",
                 "--per_device_train_batch_size", "2", "--max_length", "256", "--report_to", "none"]) == 0
    return out


def test_evaluate_plays_best_of_n_then_reports(tmp_path, tiny_model_dir, noref_critic, capsys, monkeypatch):
    from sweet_agent.sweet_rl import algorithm as candidates

    scored: list[tuple[list[str], list[float]]] = []  # every turn's candidates and the critic's scores
    score = candidates.score_candidates

    def recording(model, ref, tokenizer, conversation, texts, **kwargs):
        scores = score(model, ref, tokenizer, conversation, texts, **kwargs)
        scored.append((list(texts), list(scores)))
        return scores

    monkeypatch.setattr(candidates, "score_candidates", recording)
    out = tmp_path / "bon.jsonl"
    argv = ["evaluate", "--best-of", "2", "--critic", str(noref_critic), "--policy", str(tiny_model_dir),
            "--dtype", "float32", "--tasks", "collab:test", "--episodes", "2", "--max-turns", "2",
            "--max-new-tokens", "8", "--temperature", "1.0", "--seed", "3", "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    recs = read_trajectories(out)
    assert len(recs) == 2 and all("+best-of-2(critic-noref)" in r["meta"]["policy"] for r in recs)
    # the critic chose every turn: each agent turn played is the candidate it scored highest
    turns = [t["content"] for r in recs for t in r["dialogue_history"] if t["role"] == "assistant"]
    losers = [texts[min(range(2), key=lambda j: s[j])] for texts, s in scored]
    assert len(scored) == len(turns) >= 2 and all(len(texts) == 2 for texts, _ in scored)
    assert all(len(set(s)) == 2 for _, s in scored)  # no tie: the choice is the critic's, not the order
    chosen = [texts[max(range(2), key=lambda j: s[j])] for texts, s in scored]
    assert sorted(t.strip() for t in turns) == sorted(c.strip() for c in chosen)  # the env strips a turn
    assert sorted(t.strip() for t in turns) != sorted(c.strip() for c in losers)
    assert "played 2 episodes" in text
    assert f"== {out}" in text and "episodes        2 (2 tasks, backend)" in text
    assert f"policy          {recs[0]['meta']['policy']}" in text
    assert "tests passed    " in text

    # the report's own options apply to the played file: --json, and --resume plays nothing new
    assert main([*argv, "--resume", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "played 0 episodes (2 already in" in lines[0]
    report = json.loads(lines[-1])
    assert report["file"] == str(out) and report["episodes"] == 2
    assert report["policies"] == [recs[0]["meta"]["policy"]]


def test_evaluate_names_what_is_missing_or_misplaced(tmp_path, capsys):
    cases = [
        (["evaluate"], "pass trajectory FILE(s)"),
        (["evaluate", "--best-of", "4"], "--best-of needs --critic DIR"),
        (["evaluate", "--critic", str(tmp_path)], "add --best-of N"),
        (["evaluate", "x.jsonl", "--tasks", "collab:test", "--episodes", "3"],
         "--episodes, --tasks choose episodes to play, which only --best-of N --critic DIR does"),
    ]
    for argv, msg in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("sweet-agent evaluate: error: "), err  # the one prefix (colbench_gym.cli.dispatch)


def test_evaluate_best_of_n_refuses_a_privileged_critic(tmp_path, tiny_model_dir, capsys):
    (tmp_path / "sweet_critic.json").write_text(json.dumps({"use_privileged_info": True}))
    assert main(["evaluate", "--best-of", "2", "--critic", str(tmp_path), "--policy", str(tiny_model_dir),
                 "--dtype", "float32", "--tasks", "collab:test", "--episodes", "1",
                 "--output", str(tmp_path / "o.jsonl"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "no_use_privileged_info" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists()
