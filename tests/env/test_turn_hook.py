"""The base environment's documented per-turn hook: a subclass's evidence reaches the simulator and ``info``."""

from __future__ import annotations

from colbench_gym.envs.backend import ColBenchBackendEnv
from colbench_gym.envs.base import ColBenchEnv, TurnEvidence
from tests.env.test_backend_env import RecordingSimulator

TASK = {"problem_description": "Add two numbers.", "ground_truth": "def add(a, b):\n    return a + b\n",
        "test_cases": {"t1": "add(1, 2)"}}


class ContextSimulator(RecordingSimulator):
    def respond(self, task, dialogue, **context):
        self.contexts = [*getattr(self, "contexts", []), context]
        return super().respond(task, dialogue, **context)


class LengthEnv(ColBenchBackendEnv):
    """Shows the person how long the agent's visible message was, and reports it in ``info``."""

    def _turn_evidence(self, parsed):
        return TurnEvidence({"chars": len(parsed.message)}, {"visible_chars": len(parsed.message)})


def test_turn_evidence_reaches_simulator_and_info_of_that_step_only():
    sim = ContextSimulator()
    env = LengthEnv(tasks=[TASK], simulator=sim)
    _, info = env.reset(options={"task": TASK})
    assert "visible_chars" not in info
    _, _, _, _, info = env.step("secret thought OUTPUT: Which numbers?")
    assert info["visible_chars"] == len("Which numbers?") and sim.contexts == [{"chars": 14}]
    _, _, _, _, info = env.step("Anything else?")
    assert info["visible_chars"] == 14 and sim.contexts[-1] == {"chars": 14}
    env.close()


#: Keys of every step's info that other features may add (cost accounting); the hook adds none.
OTHER_INFO = {"simulator_model", "simulator_usage"}


def test_base_hook_adds_nothing_and_subclasses_keep_no_side_channel():
    sim = ContextSimulator()
    env = ColBenchBackendEnv(tasks=[TASK], simulator=sim)
    env.reset(options={"task": TASK})
    _, _, _, _, info = env.step("Which numbers?")
    # the base env's own keys (the leak guard's included); the hook adds none
    assert sim.contexts == [{}] and set(info) - OTHER_INFO == {
        "messages", "turn", "max_turns", "task_id", "task_index", "action_truncated", "leak_guard",
        "simulator_leaks_blocked", "simulator_replies_refused"}
    env.close()
    # The frontend env reports rendering through the hook's return value, not per-turn attributes.
    from colbench_gym.envs.frontend import ColBenchFrontendEnv

    assert ColBenchFrontendEnv._turn_evidence is not ColBenchEnv._turn_evidence
    assert "_info" not in vars(ColBenchFrontendEnv) and "step" not in vars(ColBenchFrontendEnv)

