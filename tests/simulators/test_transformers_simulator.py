"""The local-transformers backend simulator: a tiny random model (fast) and the real default model (slow)."""

from __future__ import annotations

import re

import pytest

from colbench_gym.simulators import make_simulator
from colbench_gym.simulators.prompts import simulator_messages
from colbench_gym.tasks import BackendTask


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from tests.training.tiny_model import save_tiny

    return save_tiny(tmp_path_factory.mktemp("tiny-sim"))


def _dialogue(task: BackendTask, question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": task.problem_description}, {"role": "assistant", "content": question}]


def test_tiny_model_from_a_local_path(tiny_dir, backend_records):
    task = BackendTask.from_record(backend_records[0])
    sim = make_simulator("transformers", "backend", model=str(tiny_dir), max_new_tokens=8, temperature=0.8)
    sim.reset(task, seed=7)
    a = sim.respond(task, _dialogue(task, "How much do members pay?"))
    sim.reset(task, seed=7)
    b = sim.respond(task, _dialogue(task, "How much do members pay?"))
    assert isinstance(a, str) and a == b  # seeded sampling is reproducible
    # The prompt the model saw holds the hidden reference; the agent's question is a user turn.
    prompt = sim.tokenizer.apply_chat_template(simulator_messages("SYS", _dialogue(task, "How much?")), tokenize=False)
    assert prompt.startswith("<|im_start|>system\nSYS") and "<|im_start|>user\nHow much?" in prompt


def test_missing_model_is_a_clear_error(tmp_path):
    from colbench_gym.simulators import SimulatorError

    with pytest.raises(SimulatorError, match="cannot load simulator model"):
        make_simulator("transformers", "backend", model=str(tmp_path / "no-model"))


@pytest.mark.slow
def test_real_default_model_answers_from_hidden_information(backend_records):
    from sweet_agent.policies.default_model import resolve_model_path

    task = BackendTask.from_record(backend_records[0])  # parking: members pay 2.5 per started hour
    sim = make_simulator("transformers", "backend", model=str(resolve_model_path(quiet=True)),
                         max_new_tokens=48, temperature=0.0, dtype="bfloat16")
    sim.reset(task, seed=0)
    reply = sim.respond(task, _dialogue(task, "What is the hourly rate for members?"))
    # The request mentions no numbers, so any of the reference's constants in the reply comes
    # from the hidden information (a 0.5B model may still mix up the member and non-member rate).
    numbers = {float(n) for n in re.findall(r"\d+(?:\.\d+)?", reply)}
    assert numbers & {2.5, 4.0, 15.0, 30.0, 60.0}, reply
    assert "def parking_charge" not in reply
