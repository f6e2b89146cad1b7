"""A rollout on ``collab-multi`` through the collector (what ``sweet-agent rollout --tasks
collab-multi:test --max-turns 6`` runs): asking about each unstated detail once and answering
succeeds within the turn limit; wasting turns on vague questions or on stated details runs out
of turns on the tasks with the most hidden details."""

from __future__ import annotations

from colbench_gym.tasks.collab_multi import MAX_TURNS, generate_collab_multi_spec
from sweet_agent.policies.base import Generation, Policy
from sweet_agent.rollout.collector import RolloutConfig, collect

N = 16
SPECS = {s.description: s for s in (generate_collab_multi_spec(i, "test") for i in range(N))}


class _Scripted(Policy):
    """Asks ``waste`` vague questions, then about every detail (``stated_too``: the stated ones as
    well), then answers with the reference."""

    name = "scripted"

    def __init__(self, waste: int = 0, stated_too: bool = False):
        self.waste, self.stated_too = waste, stated_too

    def generate(self, conversations, sampling=None, seeds=None):
        out = []
        for messages in conversations:
            spec = SPECS[next(m["content"] for m in messages if m["role"] == "user")]
            asked = sum(m["role"] == "assistant" for m in messages)
            questions = ["Can you tell me more?"] * self.waste + \
                [d.question for d in (spec.details if self.stated_too else spec.hidden)]
            text = questions[asked] if asked < len(questions) else "I WANT TO ANSWER:\n" + spec.source
            out.append(Generation(text=text, completion_tokens=len(text.split())))
        return out


def _play(policy, tmp_path, name):
    cfg = RolloutConfig(tasks="collab-multi:test", num_tasks=N, max_turns=MAX_TURNS, seed=0)
    return {r["task"]["problem_description"]: r for r in collect(policy, cfg, tmp_path / name, progress=False).records}


def test_asking_once_per_hidden_detail_succeeds_and_wasted_turns_cost(tmp_path):
    asked = _play(_Scripted(), tmp_path, "asked.jsonl")
    assert len(asked) == N
    for description, rec in asked.items():
        spec = SPECS[description]
        assert rec["success"] is True and rec["reward"] == 1.0, rec["meta"]
        assert rec["meta"]["turns"] == len(spec.hidden) + 1
        assert rec["meta"]["tasks"] == "collab-multi:test"
    wasteful = _play(_Scripted(waste=2), tmp_path, "wasteful.jsonl")
    for description, rec in wasteful.items():
        spec = SPECS[description]
        # two wasted turns leave room for the answer only when at most three details are hidden
        fits = 2 + len(spec.hidden) + 1 <= MAX_TURNS
        assert rec["success"] is fits, (len(spec.hidden), rec["meta"])
    assert any(len(s.hidden) == 4 for s in SPECS.values())  # so some task does run out of turns
    redundant = _play(_Scripted(stated_too=True), tmp_path, "redundant.jsonl")
    for description, rec in redundant.items():
        spec = SPECS[description]
        assert rec["meta"]["turns"] == min(len(spec.details) + 1, MAX_TURNS)
        assert rec["success"] is (len(spec.details) + 1 <= MAX_TURNS)
