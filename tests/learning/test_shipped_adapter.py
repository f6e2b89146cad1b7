"""The SWEET-RL LoRA adapter shipped in ``examples/adapters/`` (what ``make demo`` part 5 plays):
small, says exactly what made it, loads onto the default model, and plays its first turn of a
held-out task as the run that trained it measured."""

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
    """The default model with and without the adapter, on the held-out tasks its run tested it on
    (the demo's part 5; PROVENANCE.json's ``settings``). The adapter's weights are really applied
    (the next-token logits move), and its greedy first turns are what protocol v2 measured of
    SWEET-RL: it answers at once, with the protocol's marker, on every task, where the untrained
    model also answers at once but opens one of them in prose (no question on either side: v2's
    SWEET-RL asked in 0 of 300 test episodes, docs/results/learning-v2.md)."""
    import torch

    from colbench_gym.protocol import parse_action
    from colbench_gym.tasks.sources import resolve_task_source
    from sweet_agent.policies import SamplingParams, load_policy
    from sweet_agent.prompts import agent_messages, system_prompt

    settings = _provenance()["settings"]
    tasks = resolve_task_source(settings["test_tasks"], "backend")
    start = settings["test_start"]
    prompts = [agent_messages([{"role": "user", "content": tasks[i].problem_description}],
                              system_prompt("backend", settings["max_turns"])) for i in range(start, start + 4)]
    # 10 tokens hold the protocol's opener ("I WANT TO ANSWER:" is 5) and a question's first words; decoding,
    # not the prompts, is the test's cost on a CPU (~15 s a model for the batch of 4)
    sp = SamplingParams(max_new_tokens=10, temperature=0.0)
    texts, logits = {}, {}
    for name, spec in (("untrained", "default"), ("trained", str(TRAINED))):
        # on the CPU, where the behaviour below was measured (and where the token ids are)
        policy = load_policy(spec, dtype="bfloat16", device="cpu", max_batch_size=len(prompts), quiet=True)
        texts[name] = [g.text for g in policy.generate(prompts, sp, seeds=[0] * len(prompts))]
        ids = policy.tokenizer("def total_price(items, rate):", return_tensors="pt").input_ids
        with torch.no_grad():
            logits[name] = policy.model(ids).logits[0, -1].float()
        policy.close()
    moved = (logits["trained"] - logits["untrained"]).abs().max().item()
    assert moved > 0.1, moved  # a no-op adapter (or one not loaded) leaves the logits where they were
    marker = {name: sum(parse_action(t).is_answer for t in ts) for name, ts in texts.items()}
    asks = {name: sum(not parse_action(t).is_answer and "?" in t for t in ts) for name, ts in texts.items()}
    # measured: the trained model answers all 4 with the marker, the untrained one 3 (the fourth opens
    # "Certainly! Below is ..."); neither asks (a margin of one kept for another CPU's rounding)
    assert marker["trained"] >= max(3, marker["untrained"]) and asks == {"untrained": 0, "trained": 0}, texts
    print(f"logits moved by up to {moved:.2f}; answer marker on the first turn: {marker}")
