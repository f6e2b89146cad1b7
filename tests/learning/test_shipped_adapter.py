"""The SWEET-RL LoRA adapter shipped in ``examples/adapters/`` (what ``make demo`` part 5 plays):
small, says exactly what made it, loads onto the default model, and changes what the agent does
on its first turn of a held-out task."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from examples.demo import TRAINED

ADAPTER_FILES = {"adapter_config.json", "adapter_model.safetensors", "PROVENANCE.json"}


def _provenance() -> dict:
    return json.loads((TRAINED / "PROVENANCE.json").read_text(encoding="utf-8"))


def test_the_adapter_is_small_and_says_what_made_it():
    assert {p.name for p in TRAINED.iterdir()} == ADAPTER_FILES
    assert sum(p.stat().st_size for p in TRAINED.iterdir()) <= 10 * 2**20  # at most 10 MB
    info = _provenance()
    blob = (TRAINED / "adapter_model.safetensors").read_bytes()
    assert info["weights_sha256"] == hashlib.sha256(blob).hexdigest() and info["weights_bytes"] == len(blob)
    assert info["method"] == "SWEET-RL" and re.fullmatch(r"[0-9a-f]{40}", info["commit"])
    # the exact stage command, with the validation-chosen learning rate and the step pairs it trained on
    assert " train-actor " in info["command"] and "--pairs_in" in info["command"]
    assert f"--learning_rate {info['grid_point']['learning_rate']}" in info["command"]
    assert info["selection_rule"] and info["validation"]["episodes"] == info["settings"]["val_episodes"]
    cfg = json.loads((TRAINED / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == "default" and cfg["peft_type"] == "LORA"


@pytest.mark.slow
def test_the_adapter_loads_and_changes_the_first_turn():
    """Greedy first turns of the default model with and without the adapter, on held-out
    collab:test tasks (the demo's): the adapter's weights are really applied (the texts differ)
    and the trained agent opens with a question where the untrained one answers at once."""
    from colbench_gym.protocol import parse_action
    from colbench_gym.tasks.collab_generator import generate_collab_spec
    from sweet_agent.policies import SamplingParams, load_policy
    from sweet_agent.prompts import agent_messages, system_prompt

    prompts = [agent_messages([{"role": "user", "content": generate_collab_spec(i, "test").description}],
                              system_prompt("backend")) for i in range(1000, 1004)]
    # 10 tokens hold the protocol's opener ("I WANT TO ANSWER:" is 5) and the question's first words; decoding,
    # not the prompts, is the test's cost on a CPU (~1 s a token for the batch of 4 under load, against ~6 s
    # of prefill), so 24 tokens took ~30 s a model and 10 take ~15
    sp = SamplingParams(max_new_tokens=10, temperature=0.0)
    texts = {}
    for name, spec in (("untrained", "default"), ("trained", str(TRAINED))):
        policy = load_policy(spec, dtype="bfloat16", max_batch_size=len(prompts), quiet=True)
        texts[name] = [g.text for g in policy.generate(prompts, sp, seeds=[0] * len(prompts))]
        policy.close()
    assert texts["trained"] != texts["untrained"]
    asks = {name: sum(not parse_action(t).is_answer for t in ts) for name, ts in texts.items()}
    # measured: the untrained model answers all 4 at once, the trained one asks on all 4 (a margin kept
    # for another CPU's rounding)
    assert asks["untrained"] <= 1 and asks["trained"] >= 3, texts
