"""The one device rule (sweet_agent/devices.py) and the commands that follow it: `auto` is CUDA
(this process's GPU under a multi-process launch), then MPS, then the CPU; an explicit
--device wins; every model the step-pair stage loads sits on the resolved device."""

from __future__ import annotations

import json

import pytest
import torch

from sweet_agent import devices
from sweet_agent.devices import DeviceError, resolve_device


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


@pytest.fixture
def four_gpus(monkeypatch):
    """What resolution sees on a 4-GPU machine (nothing is moved there in these tests)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.delenv("LOCAL_RANK", raising=False)


def test_auto_is_the_cpu_without_an_accelerator(no_accelerator):
    assert resolve_device("auto") == "cpu" and resolve_device(None) == "cpu" and resolve_device() == "cpu"


def test_this_machine_resolves_auto_to_what_it_has():
    want = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert resolve_device("auto").split(":")[0] == want


def test_auto_prefers_cuda_then_mps(four_gpus, monkeypatch):
    assert resolve_device("auto") == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == "mps"


def test_each_launched_process_takes_its_own_gpu(four_gpus, monkeypatch):
    for rank, want in (("0", "cuda:0"), ("2", "cuda:2"), ("5", "cuda:1")):  # 5 % 4: more processes than GPUs
        monkeypatch.setenv("LOCAL_RANK", rank)
        assert resolve_device("auto") == want
        assert resolve_device("cuda") == want  # a bare 'cuda' is this process's GPU too
    assert resolve_device("cuda:3") == "cuda:3"  # an index is taken as given


def test_an_explicit_device_wins(four_gpus):
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("CPU") == "cpu"
    assert resolve_device("cuda:1") == "cuda:1"
    assert resolve_device("auto", use_cpu=True) == "cpu"  # a --use_cpu training run keeps its models on the CPU
    assert resolve_device("cuda:2", use_cpu=True) == "cuda:2"


def test_devices_the_machine_lacks_are_one_line_errors(four_gpus):
    with pytest.raises(DeviceError, match="not a torch device"):
        resolve_device("gpu0")
    with pytest.raises(DeviceError, match=r"4 CUDA device\(s\) \(cuda:0..cuda:3\)"):
        resolve_device("cuda:7")


def test_cuda_without_cuda_is_refused(no_accelerator):
    with pytest.raises(DeviceError, match="no CUDA device is available.*use --device auto or cpu"):
        resolve_device("cuda")
    with pytest.raises(DeviceError, match="MPS is not available"):
        resolve_device("mps")


def test_rollout_evaluate_view_and_grpo_default_to_auto():
    import argparse

    from sweet_agent.grpo.config import ColBenchGRPOConfig
    from sweet_agent.rollout import cli as rollout_cli
    from sweet_agent.viewer.build import ViewConfig

    parser = argparse.ArgumentParser()
    rollout_cli.add_arguments(parser)  # `sweet-agent evaluate` adds the same options
    assert parser.parse_args(["-o", "x.jsonl"]).device == "auto"
    assert parser.parse_args(["-o", "x.jsonl", "--device", "cpu"]).device == "cpu"
    assert ViewConfig().device == "auto"
    assert {f.name: f.default for f in __import__("dataclasses").fields(ColBenchGRPOConfig)}["critic_device"] == "auto"


# ----------------------------------------------------------------------------- the step-pair stage
@pytest.fixture
def critic_dir(tmp_path):
    """A critic directory as train-critic writes it: weights, tokenizer, sweet_critic.json
    naming its reference (untrained tiny models: placement, not quality, is tested)."""
    from tiny_model import save_tiny

    critic, ref = save_tiny(tmp_path / "critic", seed=0), save_tiny(tmp_path / "ref", seed=1)
    (critic / "sweet_critic.json").write_text(json.dumps({"reference_model": str(ref), "normalize": "turn",
                                                          "use_privileged_info": True}))
    return critic


@pytest.fixture
def loaded_models(monkeypatch):
    """Every model ``sweet_agent.training.models.load_model`` returns during a test (the step-pair stage loads
    its policy, critic and critic reference through it)."""
    from sweet_agent.training import models

    seen: list = []
    load = models.load_model

    def recording(*args, **kwargs):
        model, tok = load(*args, **kwargs)
        seen.append(model)
        return model, tok

    monkeypatch.setattr(models, "load_model", recording)
    monkeypatch.setattr("sweet_agent.actor.cli.load_model", recording)
    return seen


def _argv(tmp_path, data, critic_dir, model_dir, *extra) -> list[str]:
    return ["--data", str(data), "--critic", str(critic_dir), "--model_name_or_path", str(model_dir),
            "--output_dir", str(tmp_path / "out"), "--num_candidates", "2", "--turn_fraction", "0.25",
            "--max_new_tokens", "4", "--pairs_out", str(tmp_path / "pairs.jsonl"), "--only_pairs",
            "--report_to", "none", *extra]


def _only_pairs(tmp_path, data, critic_dir, model_dir, *extra):
    from sweet_agent.cli import main

    assert main(["train-actor", *_argv(tmp_path, data, critic_dir, model_dir, *extra)]) == 0


@pytest.fixture
def data(tmp_path, toy_records):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:3]))
    return path


@pytest.mark.parametrize("flag", [[], ["--device", "auto"], ["--device", "cpu"]])
def test_every_model_of_the_step_pair_stage_is_on_the_resolved_device(tmp_path, data, critic_dir, tiny_model_dir,
                                                                      loaded_models, flag):
    _only_pairs(tmp_path, data, critic_dir, tiny_model_dir, *flag)
    want = torch.device(resolve_device(flag[1] if flag else "auto"))
    assert len(loaded_models) == 3  # policy, critic, critic reference
    for model in loaded_models:
        assert {p.device.type for p in model.parameters()} == {want.type}


def test_an_explicit_device_wins_over_a_gpu_in_the_step_pair_stage(tmp_path, data, critic_dir, tiny_model_dir,
                                                                   loaded_models, monkeypatch, capsys):
    """With a GPU reported, ``auto`` would be CUDA; ``--device cpu`` keeps all three models on the
    CPU (and this CPU-only machine would fail loudly had any of them been sent to CUDA)."""
    calls: list = []
    resolve = devices.resolve_device

    def recording(device="auto", **kw):
        calls.append(device)
        return resolve(device, **kw)

    from sweet_agent.actor import cli

    args = cli.parse_args(_argv(tmp_path, data, critic_dir, tiny_model_dir, "--device", "cpu"))
    monkeypatch.setattr(devices, "resolve_device", recording)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # after parsing: TrainingArguments sets up CUDA
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert devices.resolve_device("auto") == "cuda"
    calls.clear()
    assert cli.run(args) == 0
    assert calls and all(c == "cpu" for c in calls)  # the explicit choice reached every resolution
    assert all(p.device.type == "cpu" for m in loaded_models for p in m.parameters())
    assert "candidates from policy on cpu, critic on cpu" in capsys.readouterr().out


def test_the_policy_of_a_rollout_loads_on_the_resolved_device(tiny_model_dir):
    from sweet_agent.policies import load_policy

    policy = load_policy(str(tiny_model_dir), device="auto", dtype="float32")
    assert str(next(policy.model.parameters()).device).split(":")[0] == resolve_device("auto").split(":")[0]
