"""`sweet-agent train-critic | train-actor | train-rft | train-mtdpo` end to end on a tiny model."""

from __future__ import annotations

import json

import pytest
import torch

from sweet_agent.cli import main


@pytest.fixture
def traj_file(tmp_path, toy_records):
    path = tmp_path / "trajs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in toy_records))
    return path


COMMON = ["--max-steps", "2", "--batch-size", "2", "--learning-rate", "1e-3", "--max-length", "256"]


def test_critic_then_actor_cli(tmp_path, traj_file, tiny_model_dir):
    critic_dir = tmp_path / "critic"
    assert main(["train-critic", "--data", str(traj_file), "--model", str(tiny_model_dir),
                 "--output-dir", str(critic_dir), "--eval-fraction", "0.34", *COMMON]) == 0
    meta = json.loads((critic_dir / "sweet_critic.json").read_text())
    assert meta["heldout_pairs"] > 0 and 0.0 <= meta["heldout_accuracy"] <= 1.0
    assert (critic_dir / "config.json").exists()

    actor_dir = tmp_path / "actor"
    pairs = tmp_path / "pairs.jsonl"
    assert main(["train-actor", "--data", str(traj_file), "--critic", str(critic_dir), "--model", str(tiny_model_dir),
                 "--output-dir", str(actor_dir), "--num-candidates", "4", "--turn-fraction", "0.25",
                 "--max-new-tokens", "8", "--pairs-out", str(pairs), "--only-pairs", *COMMON]) == 0
    rows = [json.loads(x) for x in pairs.read_text().splitlines()]
    assert rows and all(r["chosen_score"] >= r["rejected_score"] for r in rows)
    assert not (actor_dir / "config.json").exists()
    assert main(["train-actor", "--pairs-in", str(pairs), "--model", str(tiny_model_dir),
                 "--output-dir", str(actor_dir), "--lora-r", "4", *COMMON]) == 0
    assert (actor_dir / "config.json").exists()  # merged LoRA: a plain checkpoint the evaluator can load


def test_baseline_clis(tmp_path, traj_file, tiny_model_dir):
    for cmd in ("train-rft", "train-mtdpo"):
        out = tmp_path / cmd
        assert main([cmd, "--data", str(traj_file), "--model", str(tiny_model_dir), "--output-dir", str(out),
                     *COMMON]) == 0
        assert (out / "config.json").exists()


def test_every_trainer_trains_with_activation_checkpointing(tmp_path, traj_file, tiny_model_dir):
    """``--gradient_checkpointing true`` (what the learning benchmark's long frontend rows use)
    works with LoRA in the critic, the actor and both baselines: each writes its adapter."""
    gc = ["--gradient_checkpointing", "true", "--lora-r", "4", "--merge_adapter", "false"]
    critic = tmp_path / "critic"
    assert main(["train-critic", "--data", str(traj_file), "--model", str(tiny_model_dir), "--output-dir", str(critic),
                 *COMMON, *gc]) == 0
    pairs = tmp_path / "pairs.jsonl"
    assert main(["train-actor", "--data", str(traj_file), "--critic", str(critic), "--model", str(tiny_model_dir),
                 "--output-dir", str(tmp_path / "scratch"), "--num-candidates", "2", "--turn-fraction", "0.25",
                 "--max-new-tokens", "8", "--pairs-out", str(pairs), "--only-pairs", *COMMON]) == 0
    runs = [("train-actor", ["--pairs-in", str(pairs)]), ("train-rft", ["--data", str(traj_file)]),
            ("train-mtdpo", ["--data", str(traj_file)])]
    for cmd, data in runs:
        out = tmp_path / cmd
        assert main([cmd, *data, "--model", str(tiny_model_dir), "--output-dir", str(out), *COMMON, *gc]) == 0, cmd
        assert (out / "adapter" / "adapter_model.safetensors").exists(), cmd


def test_the_critic_in_pieces_is_the_same_critic(tmp_path, traj_file, tiny_model_dir, capsys):
    """``--logprob_chunk_size`` changes how the LM head's logits are held (pieces of N scored
    positions, recomputed in the backward pass), not what the critic learns."""
    from safetensors.torch import load_file

    weights = {}
    for chunk in ("0", "3"):
        out = tmp_path / f"critic-{chunk}"
        assert main(["train-critic", "--data", str(traj_file), "--model", str(tiny_model_dir), "--output-dir", str(out),
                     "--logprob_chunk_size", chunk, *COMMON]) == 0
        weights[chunk] = load_file(str(out / "model.safetensors"))
    base = load_file(str(tiny_model_dir / "model.safetensors"))
    assert max((weights["0"][k] - base[k]).abs().max().item() for k in base) > 1e-4  # it trained
    assert all(torch.allclose(weights["0"][k], weights["3"][k], atol=1e-5, rtol=0) for k in base)
    capsys.readouterr()
    assert main(["train-critic", "--data", str(traj_file), "--model", str(tiny_model_dir),
                 "--output-dir", str(tmp_path / "bad"), "--logprob_chunk_size", "-1"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "logprob_chunk_size must be >= 0" in errors[0] and "Traceback" not in errors[0]


def test_bad_input_is_named(tmp_path, tiny_model_dir, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": {"problem_description": "x"}}\n')
    assert main(["train-critic", "--data", str(bad), "--model", str(tiny_model_dir),
                 "--output-dir", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "sweet-agent train-critic: error:" in err and "dialogue_history" in err and "Traceback" not in err
    assert main(["train-rft", "--data", str(tmp_path / "missing.jsonl"), "--output-dir", str(tmp_path / "o")]) == 1
    assert "collect rollouts first" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--lora-r", "4"], ["--critic-type", "regression"], ["--critic-type", "regression", "--lora-r", "4"], ["--no-privileged-info", "--normalize", "trajectory"]])
def test_critic_variants_feed_the_actor(tmp_path, traj_file, tiny_model_dir, extra):
    critic_dir = tmp_path / "critic"
    assert main(["train-critic", "--data", str(traj_file), "--model", str(tiny_model_dir),
                 "--output-dir", str(critic_dir), *extra, *COMMON]) == 0
    meta = json.loads((critic_dir / "sweet_critic.json").read_text())
    assert meta["use_privileged_info"] == ("--no-privileged-info" not in extra)
    assert main(["train-actor", "--data", str(traj_file), "--critic", str(critic_dir), "--model", str(tiny_model_dir),
                 "--output-dir", str(tmp_path / "actor"), "--num-candidates", "4", "--turn-fraction", "0.2",
                 "--max-new-tokens", "6", *COMMON]) == 0
    assert (tmp_path / "actor" / "config.json").exists()


def test_critic_resumes_from_checkpoint(tmp_path, traj_file, tiny_model_dir):
    out = tmp_path / "critic"
    base = ["train-critic", "--data", str(traj_file), "--model", str(tiny_model_dir), "--output-dir", str(out),
            "--batch-size", "2", "--learning-rate", "1e-3", "--max-length", "256", "--save-steps", "1"]
    assert main([*base, "--max-steps", "1"]) == 0
    assert (out / "checkpoint-1").is_dir()
    stamp = (out / "checkpoint-1" / "trainer_state.json").stat().st_mtime_ns
    assert main([*base, "--max-steps", "2", "--resume"]) == 0
    # Resumed, not restarted: step 1 was not redone (its checkpoint is untouched).
    assert (out / "checkpoint-1" / "trainer_state.json").stat().st_mtime_ns == stamp
    state = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2


def _rewards_file(path, tasks, rewards) -> str:
    """Every task with one trajectory per reward (file order = the order of ``rewards``)."""
    from tests.training.conftest import make_traj

    recs = []
    for i, task in enumerate(tasks):
        for j, r in enumerate(rewards):
            rec = make_traj(task, r >= 1.0, r, variant=j)
            if "test_cases" not in task:  # a frontend record: its answer is a page, no success flag
                rec["answer"] = f"<html><body><p>{i}-{j}</p></body></html>"
                del rec["success"]
            recs.append(rec)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


@pytest.mark.parametrize(("rule", "kind", "rewards", "per_task"), [
    # two successes per task: the paper's rule pairs both (2 x 2), the release's the first one only (1 x 2)
    ("release", "backend", [1.0, 0.0, 1.0, 0.5], 2),
    ("success", "backend", [1.0, 0.0, 1.0, 0.5], 4),
    # continuous rewards: every two samples at least 0.1 apart (0.9/0.85 and 0.6/0.55 are too close)
    ("release-frontend", "frontend", [0.9, 0.85, 0.6, 0.55], 4),
    ("top-bottom", "frontend", [0.9, 0.85, 0.6, 0.55], 1),
])
def test_critic_trains_on_the_pairs_of_its_pair_rule(tmp_path, tiny_model_dir, capsys, rule, kind, rewards, per_task):
    from tests.training.conftest import make_task

    tasks = [make_task(i) for i in range(3)]
    if kind == "frontend":
        tasks = [{"problem_description": f"A page for shop {i}.",
                  "ground_truth": f"<html><body><h1>Shop {i}</h1></body></html>"} for i in range(3)]
    data = _rewards_file(tmp_path / "trajs.jsonl", tasks, rewards)
    out = tmp_path / "critic"
    assert main(["train-critic", "--data", data, "--model", str(tiny_model_dir), "--output-dir", str(out),
                 "--pair_rule", rule, "--eval-fraction", "0.34", *COMMON]) == 0
    meta = json.loads((out / "sweet_critic.json").read_text())
    assert meta["pair_rule"] == rule
    assert (meta["train_pairs"], meta["heldout_pairs"]) == (2 * per_task, per_task)  # 2 train tasks, 1 held out
    assert meta["heldout_pairs_scored"] == per_task
    assert (f"{len(tasks) * len(rewards)} trajectories -> {2 * per_task} train / {per_task} held-out pairs "
            f"(rule: {rule})") in capsys.readouterr().out
