"""``--merge_adapter false``: a LoRA run saves its adapter alone, and every loader (the policy of
rollouts, the critic, the next training stage) loads it as the base model with the adapter merged
in — the same weights as the merged checkpoint the default run writes."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from sweet_agent.cli import main
from sweet_agent.policies.checkpoint_layout import adapter_dir
from sweet_agent.policies.checkpoints import adapter_base, load_causal_lm

LORA = ["--use_peft", "--lora_r", "2", "--max_steps", "1", "--per_device_train_batch_size", "2",
        "--max_length", "256", "--save_strategy", "no", "--report_to", "none", "--seed", "0"]


def _data(tmp_path, recs) -> str:
    path = tmp_path / "trajs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def _weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().float() for k, v in model.state_dict().items()}


def _train(tmp_path, data, base, name, command="train-rft", merge=True, extra=()):
    out = tmp_path / name
    args = [command, "--data", data, "--model_name_or_path", str(base), "--output_dir", str(out), *LORA, *extra]
    assert main(args + ([] if merge else ["--merge_adapter", "false"])) == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir):
    from tests.training.conftest import make_task, make_traj

    tmp = tmp_path_factory.mktemp("adapters")
    recs = [r for i in range(6) for r in (make_traj(make_task(i), True), make_traj(make_task(i), False))]
    data = _data(tmp, recs)
    rule = ["--pair_rule", "best", "--learning_rate", "1e-2"]
    return {"data": data, "merged": _train(tmp, data, tiny_model_dir, "merged", extra=rule),
            "adapter": _train(tmp, data, tiny_model_dir, "adapter", merge=False, extra=rule), "tmp": tmp}


def test_adapter_only_run_saves_the_adapter_and_no_model(runs):
    out = runs["adapter"]
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert not (out / "config.json").exists() and not list(out.glob("*.safetensors"))
    assert adapter_dir(out) == out / "adapter" and adapter_dir(runs["merged"]) is None  # merged: a plain model
    merged_bytes = sum(f.stat().st_size for f in runs["merged"].glob("*.safetensors"))
    adapter_bytes = sum(f.stat().st_size for f in (out / "adapter").glob("*.safetensors"))
    assert 0 < adapter_bytes < merged_bytes / 5


def test_loading_the_adapter_gives_the_merged_weights(runs):
    """The same seed, data and steps: the in-memory merge equals the merged checkpoint, and both
    differ from the base (training moved the weights)."""
    merged = _weights(load_causal_lm(runs["merged"], dtype=torch.float32))
    loaded = _weights(load_causal_lm(runs["adapter"], dtype=torch.float32))
    assert merged.keys() == loaded.keys()
    assert max((merged[k] - loaded[k]).abs().max().item() for k in merged) < 1e-6
    base = _weights(load_causal_lm(adapter_base(runs["adapter"] / "adapter"), dtype=torch.float32))
    assert max((base[k] - loaded[k]).abs().max().item() for k in base) > 1e-4


def test_a_policy_and_a_critic_load_adapter_only_runs(runs, tiny_model_dir):
    from sweet_agent.critic.loading import load_critic
    from sweet_agent.policies import load_policy

    merged = load_policy(str(runs["merged"]), dtype="float32", device="cpu")
    adapter = load_policy(str(runs["adapter"]), dtype="float32", device="cpu")
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        assert torch.allclose(merged.model(ids).logits, adapter.model(ids).logits, atol=1e-5)
    critic = _train(runs["tmp"], runs["data"], tiny_model_dir, "critic", command="train-critic", merge=False,
                    extra=["--pair_rule", "success", "--learning_rate", "1e-2"])
    assert not (critic / "config.json").exists() and (critic / "sweet_critic.json").is_file()
    loaded = load_critic(str(critic), "float32")
    assert loaded.model is not None and loaded.ref is not None


def test_a_stage_trains_on_top_of_an_adapter_and_its_adapter_records_that_base(runs):
    """A second LoRA run from an adapter-only model: its adapter names the first as its base, so
    loading it applies both (moving the first run's folder elsewhere makes it a one-line error)."""
    second = _train(runs["tmp"], runs["data"], runs["adapter"], "second", merge=False,
                    extra=["--pair_rule", "best", "--learning_rate", "1e-2"])
    assert adapter_base(second / "adapter") == str(runs["adapter"])
    first = _weights(load_causal_lm(runs["adapter"], dtype=torch.float32))
    both = _weights(load_causal_lm(second, dtype=torch.float32))
    assert max((first[k] - both[k]).abs().max().item() for k in first) > 1e-4
    moved = runs["tmp"] / "moved-away"
    shutil.move(str(runs["adapter"]), moved)
    try:
        from sweet_agent.policies.default_model import ModelNotAvailableError

        with pytest.raises(ModelNotAvailableError, match="no such local path"):
            load_causal_lm(second, dtype=torch.float32)
    finally:
        shutil.move(str(moved), runs["adapter"])


def test_an_adapter_written_on_another_machine_finds_the_built_in_base(tmp_path):
    """The recorded base is a cache folder of another machine: the built-in name it stands for."""
    (tmp_path / "adapter_config.json").write_text(json.dumps(
        {"base_model_name_or_path": "/home/someone/.cache/colbench/models/qwen2.5-coder-0.5b-instruct"}))
    assert adapter_base(tmp_path) == "default"
    (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "org/unknown-model"}))
    assert adapter_base(tmp_path) == "org/unknown-model"


def test_bfloat16_loading_rounds_once_like_the_merged_checkpoint(runs):
    """Merged in float32 then cast: bit-identical to the merged checkpoint loaded in bf16 (a merge
    done in bf16 rounds twice and flips ~1 ulp in many weights)."""
    merged = load_causal_lm(runs["merged"], dtype=torch.bfloat16).state_dict()
    loaded = load_causal_lm(runs["adapter"], dtype=torch.bfloat16).state_dict()
    assert all(v.dtype == torch.bfloat16 for v in loaded.values())
    assert all(torch.equal(merged[k], loaded[k]) for k in merged)


def test_an_adapter_only_save_removes_a_stale_merged_model(runs, tmp_path):
    """Reusing a folder that holds a merged model: the adapter saved there is what loads."""
    out = tmp_path / "reused"
    shutil.copytree(runs["merged"], out)
    _train(tmp_path, runs["data"], runs["merged"].parent / "adapter", "reused", merge=False,
           extra=["--pair_rule", "best", "--learning_rate", "1e-2"])
    assert not (out / "config.json").exists() and not list(out.glob("*.safetensors"))
    assert adapter_dir(out) == out / "adapter"


def test_tokenizer_and_base_of_a_chain_resolve_from_anywhere(runs, monkeypatch, tmp_path):
    """The recorded base is absolute (loads from another working directory), and a chained
    adapter saved without a tokenizer finds the first one's."""
    from sweet_agent.policies.checkpoints import tokenizer_dir

    monkeypatch.chdir(runs["tmp"])
    rel = _train(runs["tmp"], runs["data"], "adapter", "chained", merge=False,
                 extra=["--pair_rule", "best", "--learning_rate", "1e-2"])
    monkeypatch.chdir(tmp_path)
    assert adapter_base(rel / "adapter") == str(runs["adapter"].resolve())
    for f in (rel / "adapter").glob("*token*"):
        f.unlink()
    for f in ("vocab.json", "merges.txt", "special_tokens_map.json", "chat_template.jinja"):
        (rel / "adapter" / f).unlink(missing_ok=True)
    assert tokenizer_dir(rel) == str(runs["adapter"] / "adapter")
