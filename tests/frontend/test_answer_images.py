"""Issue 24, item 3: an answer's text is never a licence to read a file.

Before: ``colbench evaluate frontend`` read any path ending in .png/.jpg/.jpeg/.webp named by an
answer (absolute, or relative to the working directory): an answer naming a screenshot of the
reference scored 1.0 in the evaluator while the env scored it 0; ``sweet-agent view`` copied any
local ``*.png`` (a text file too) into the shared site. Now one rule
(:mod:`colbench_gym.tasks.answer_images`) decides: written by the run (not in the agent's turns),
inside the trajectory file's folder (symlinks resolved, no ``..``), and really an image.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from colbench_gym.tasks.answer_images import is_image_file, run_image, run_image_path
from colbench_gym.tasks.embedded import load_embedded


def _record(answer: str, agent_text: str = "I WANT TO ANSWER: here is my page") -> dict:
    return {"task": {"problem_description": "p", "ground_truth": "<html></html>"}, "answer": answer,
            "dialogue_history": [{"role": "user", "content": "p"}, {"role": "assistant", "content": agent_text}]}


@pytest.fixture()
def run_dir(tmp_path) -> Path:
    run = tmp_path / "run"
    (run / "shots").mkdir(parents=True)
    Image.new("RGB", (64, 48), (200, 30, 30)).save(run / "shots" / "0.png")
    return run


def test_only_images_the_run_wrote_inside_its_folder_are_read(run_dir, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    Image.new("RGB", (64, 48), "blue").save(outside / "reference.png")
    (run_dir / "shots" / "link.png").symlink_to(outside / "reference.png")
    (run_dir / "shots" / "notes.png").write_text("secret text, not an image")
    png = (run_dir / "shots" / "0.png").read_bytes()
    (run_dir / "shots" / "cut.png").write_bytes(png[: len(png) // 2])

    assert run_image(_record("shots/0.png"), _record("shots/0.png"), run_dir) is None  # a dict is no answer
    assert run_image("shots/0.png", _record("shots/0.png"), run_dir).size == (64, 48)
    absolute_inside = str(run_dir / "shots" / "0.png")
    assert run_image_path(absolute_inside, _record(absolute_inside), run_dir) == (run_dir / "shots" / "0.png").resolve()
    refused = {
        "absolute, outside the folder": str(outside / "reference.png"),
        "dot-dot": "../elsewhere/reference.png",
        "dot-dot that comes back": "shots/../shots/0.png",
        "symlink out of the folder": "shots/link.png",
        "missing": "shots/9.png",
        "a text file named .png": "shots/notes.png",
        "a truncated PNG": "shots/cut.png",
        "two lines": "shots/0.png\nshots/0.png",
    }
    for why, answer in refused.items():
        assert run_image(answer, _record(answer), run_dir) is None, why
    # the agent's own text is scored as text, as the env scores it, even when the file is fine
    assert run_image("shots/0.png", _record("shots/0.png", "I WANT TO ANSWER: shots/0.png"), run_dir) is None
    assert run_image("shots/0.png", {"answer": "shots/0.png"}, run_dir) is None  # no dialogue: nothing says the run wrote it
    assert run_image("shots/0.png", _record("shots/0.png"), None) is None  # no folder given: nothing is read
    assert not is_image_file(run_dir / "shots" / "notes.png") and is_image_file(run_dir / "shots" / "0.png")


def test_viewer_copies_only_run_images_into_the_site(run_dir, tmp_path):
    from sweet_agent.viewer.episodes import Screenshotter

    secret = tmp_path / "secret.png"
    secret.write_text("a text file outside the run")
    shots = Screenshotter(tmp_path / "site")
    assert shots.image_file(str(secret), _record(str(secret)), run_dir) is None
    (run_dir / "notes.png").write_text("not an image")
    assert shots.image_file("notes.png", _record("notes.png"), run_dir) is None
    rel = shots.image_file("shots/0.png", _record("shots/0.png"), run_dir)
    assert rel is not None and (tmp_path / "site" / rel).read_bytes() == (run_dir / "shots" / "0.png").read_bytes()
    assert sorted(p.name for p in (tmp_path / "site" / "shots").iterdir()) == [Path(rel).name]


def test_release_export_checks_images(run_dir):
    from sweet_agent.interop.release import check_release_assumptions

    fake = run_dir / "fake.png"
    fake.write_text("not an image")
    turn = {"role": "assistant", "content": "c", "output": "o", "input": "i"}
    task = {"problem_description": "p", "ground_truth": "<html><body>x</body></html>"}
    recs = [{"task": task, "dialogue_history": [turn], "answer": str(fake)}]
    assert any("is not an existing PNG image" in p for p in check_release_assumptions(recs))
    recs[0]["answer"] = str(run_dir / "shots" / "0.png")
    assert not any("PNG" in p for p in check_release_assumptions(recs))


@pytest.mark.browser
def test_env_and_evaluator_agree_on_answers_that_name_files(browser_ready, tmp_path, renderer):
    """An answer naming the reference's own screenshot: 0 in the env, 0 in the evaluator (1.0 before)."""
    import gymnasium as gym

    import colbench_gym  # noqa: F401
    from colbench_gym.cli import main

    task = load_embedded("frontend", "test")[0].to_record()
    run = tmp_path / "run"
    run.mkdir()
    shot = renderer.render_reference(task["ground_truth"])
    inside, outside = run / "ref.png", tmp_path / "ref.png"
    shot.save(inside)
    shot.save(outside)
    answers = [str(outside), "ref.png", os.path.relpath(outside, Path.cwd())]
    env = gym.make("ColBench-Frontend-v0", scorer="fallback", renderer=renderer)
    env_rewards = []
    for answer in answers:
        env.reset(options={"task": task})
        env_rewards.append(env.step("I WANT TO ANSWER: " + answer)[1])
    env.close()
    src, out = run / "traj.jsonl", run / "scored.jsonl"
    records = [{"task": task, "answer": a, "dialogue_history": [
        {"role": "user", "content": task["problem_description"]},
        {"role": "assistant", "content": "I WANT TO ANSWER: " + a}]} for a in answers]
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["evaluate", "frontend", str(src), "--output", str(out), "--scorer", "fallback", "--no-progress"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert env_rewards == [0.0, 0.0, 0.0]
    assert [r["similarity"] for r in rows] == env_rewards
    assert all(r["answer_source"] != "image" for r in rows)
