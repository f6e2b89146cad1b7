"""End to end at toy scale: episodes in the real environment (collab tasks, offline simulator,
sandboxed grader), the real ``train-rft`` command on a tiny model, and a check that training
moved the policy the measured way — opening with a question became far more likely, on training
*and* held-out tasks.

The agent that produces the offline data is scripted (a tiny random model cannot solve tasks):
per episode it either asks the family's natural question and then answers with what it learnt,
or answers at once with a guess. The rewards come from the real grader, so RFT keeps the asking
episodes because they scored higher, not because the test says so.
"""

from __future__ import annotations

import json

import pytest

from colbench_gym.tasks.collab_generator import generate_collab_spec
from sweet_agent.policies.base import Generation, Policy, SamplingParams, derive_seed
from sweet_agent.prompts import agent_messages
from tests.learning.test_collab_tasks import NATURAL_QUESTION

pytestmark = pytest.mark.slow

OPENER = "Before I write the function, one question: "
N_TASKS = 6
#: A short system prompt keeps the tiny model's sequences short (the records carry it in meta).
SYSTEM = "You write Python functions. You may ask one question first."


class ScriptedAgent(Policy):
    """Asks (then answers correctly) or guesses, decided per episode by its first turn's seed."""

    name = "scripted"

    def __init__(self, split: str, n: int):
        self.specs = {generate_collab_spec(i, split).description: generate_collab_spec(i, split) for i in range(n)}

    def generate(self, conversations, sampling=None, seeds=None):
        out = []
        for conv, seed in zip(conversations, seeds):
            spec = self.specs[next(m["content"] for m in conv if m["role"] == "user")]
            asked = any(m["role"] == "assistant" for m in conv)
            if asked:  # the person answered: write the function with the detail
                text = f"I WANT TO ANSWER:\n```python\n{spec.source}```"
            elif derive_seed(seed, "ask") % 2 == 0:
                text = OPENER + NATURAL_QUESTION[spec.family][0][0].lower() + NATURAL_QUESTION[spec.family][0][1:]
            else:
                params = spec.source.split("(", 1)[1].split(")", 1)[0]
                text = f"I WANT TO ANSWER:\n```python\ndef {spec.function_name}({params}):\n    return None\n```"
            out.append(Generation(text=text, completion_tokens=1))
        return out


def opener_logprob(policy, split: str, indices) -> float:
    """Mean log-probability (nats) the policy gives the question opener as the start of its first
    turn on these tasks: how likely it is to open with a question, measured exactly rather than
    by one greedy sample."""
    import torch

    tok, model = policy.tokenizer, policy.model
    total = 0.0
    for i in indices:
        conv = agent_messages([{"role": "user", "content": generate_collab_spec(i, split).description}], SYSTEM)
        prompt = tok(policy.render(conv), add_special_tokens=False)["input_ids"]
        full = tok(policy.render(conv) + OPENER, add_special_tokens=False)["input_ids"]
        assert full[:len(prompt)] == prompt
        with torch.no_grad():
            logits = model(torch.tensor([full])).logits[0, :-1].float().log_softmax(-1)
        targets = torch.tensor(full[1:])
        total += float(logits[torch.arange(len(prompt) - 1, len(full) - 1), targets[len(prompt) - 1:]].sum())
    return total / len(list(indices))


def test_rft_on_rewarded_questions_makes_the_policy_ask(tmp_path):
    from sweet_agent.cli import main as sweet_agent_main
    from sweet_agent.policies.transformers_policy import TransformersPolicy
    from sweet_agent.rollout.collector import RolloutConfig, collect
    from tests.training.tiny_model import save_tiny

    data = tmp_path / "offline.jsonl"
    cfg = RolloutConfig(tasks="collab:train", num_tasks=N_TASKS, samples_per_task=4, max_turns=3, concurrency=4,
                        sampling=SamplingParams(max_new_tokens=8, temperature=1.0), system_prompt=SYSTEM)
    collect(ScriptedAgent("train", N_TASKS), cfg, data, progress=False)
    recs = [json.loads(x) for x in data.read_text().splitlines()]
    asked = [r for r in recs if r["meta"]["turns"] == 2]
    guessed = [r for r in recs if r["meta"]["turns"] == 1]
    assert asked and guessed
    # the real grader and simulator: asking pays on these tasks
    assert sum(r["reward"] for r in asked) / len(asked) > 0.9 > 0.3 > sum(r["reward"] for r in guessed) / len(guessed)

    base_dir = save_tiny(tmp_path / "tiny")
    base = TransformersPolicy.from_pretrained(base_dir, dtype="float32", quiet=True)
    before_train = opener_logprob(base, "train", range(N_TASKS))
    before_test = opener_logprob(base, "test", range(8))
    base.close()

    out = tmp_path / "rft"
    status = sweet_agent_main(["train-rft", "--model_name_or_path", str(base_dir), "--data", str(data), "--output_dir", str(out),
                        "--pair_rule", "best", "--max_steps", "30", "--learning_rate", "2e-2",
                        "--lr_scheduler_type", "constant", "--per_device_train_batch_size", "4",
                        "--save_strategy", "no", "--report_to", "none", "--logging_steps", "10",
                        # the tiny model learns slowly: keep each example to the request and the
                        # agent's first turn (the code answer after it is cut), what is measured
                        "--max_length", "160"])
    assert status in (0, None)
    trained = TransformersPolicy.from_pretrained(out, dtype="float32", quiet=True)
    after_train = opener_logprob(trained, "train", range(N_TASKS))
    after_test = opener_logprob(trained, "test", range(8))
    # the opener became far more likely (e^10 ~ 20,000x) on the training tasks and on unseen ones
    assert after_train > before_train + 10, (before_train, after_train)
    assert after_test > before_test + 10, (before_test, after_test)
