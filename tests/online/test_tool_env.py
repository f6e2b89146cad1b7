"""The TRL tool adapter: exactly the ColBench actions as tools, and the env's own reward."""

from __future__ import annotations

import inspect
import json
import pickle
import subprocess
import sys

import gymnasium as gym
import pytest

import colbench_gym
from colbench_gym.online import (
    CONVERSATION_OVER,
    ColBenchFrontendToolEnv,
    ColBenchToolEnv,
    ToolEnvError,
    make_tool_env_factory,
)
from colbench_gym.protocol import ANSWER_MARKER, MAX_TURNS


def _trl_tools(cls) -> list[str]:
    """The tool names TRL's GRPOTrainer derives from an environment class (its own rule)."""
    return sorted(n for n, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
                  if n not in ("reset", "get_reward") and not n.startswith("_"))


def test_tool_sets_are_exactly_the_colbench_actions() -> None:
    assert _trl_tools(ColBenchToolEnv) == ["ask_user", "submit_answer"]
    assert _trl_tools(ColBenchFrontendToolEnv) == ["ask_user", "show_draft", "submit_answer"]


def test_tool_schemas_from_transformers() -> None:
    from transformers.utils import get_json_schema

    expected = {
        (ColBenchToolEnv, "ask_user"): ["question"],
        (ColBenchToolEnv, "submit_answer"): ["code"],
        (ColBenchFrontendToolEnv, "show_draft"): ["html"],
        (ColBenchFrontendToolEnv, "submit_answer"): ["code"],
    }
    for (cls, name), params in expected.items():
        fn = get_json_schema(getattr(cls, name))["function"]
        assert fn["name"] == name
        assert fn["description"]
        assert fn["parameters"]["required"] == params
        for p in params:
            assert fn["parameters"]["properties"][p]["type"] == "string"
            assert fn["parameters"]["properties"][p]["description"]
        # no "return" entry: small models copy it into the call's arguments, which then fails (issue 39)
        assert set(fn) == {"name", "description", "parameters"}
    frontend_submit = get_json_schema(ColBenchFrontendToolEnv.submit_answer)["function"]
    assert "HTML" in frontend_submit["parameters"]["properties"]["code"]["description"]


def test_factory_is_exported_picklable_and_builds_the_right_class() -> None:
    assert colbench_gym.make_tool_env_factory is make_tool_env_factory
    factory = pickle.loads(pickle.dumps(make_tool_env_factory("ColBench-Backend-v0", reward_mode="fraction")))
    env = factory()
    assert type(env) is ColBenchToolEnv
    assert env.env.unwrapped.reward_mode == "fraction"
    assert env is not factory()  # one instance per call


def test_factory_rejects_a_non_colbench_env() -> None:
    with pytest.raises(ValueError, match="not a ColBench environment"):
        make_tool_env_factory("CartPole-v1")()


def test_import_pulls_no_heavy_modules() -> None:
    code = ("import json, sys\n"
            "from colbench_gym import make_tool_env_factory\n"
            "import colbench_gym.online.tool_env\n"
            "env = make_tool_env_factory('ColBench-Backend-v0')()\n"
            "env.reset(task_index=0)\n"
            "print(json.dumps([m for m in ('torch', 'transformers', 'trl') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _wrong_by_one(reference: str) -> str:
    """A plausible but different answer: the reference with its first `return` changed."""
    return reference.replace("return ", "return 1 + ", 1)


@pytest.mark.parametrize("answer", ["reference", "wrong", "empty"])
def test_reward_through_tools_equals_reward_through_gym(answer: str) -> None:
    kw = dict(tasks="embedded:test", reward_mode="fraction")
    questions = ["What is the exact name of the function and its parameters?",
                 "What should happen with an empty or zero input?"]
    tool_env = make_tool_env_factory("ColBench-Backend-v0", **kw)()
    task_text = tool_env.reset(task_index=3, seed=7, prompt=[{"role": "user", "content": "ignored column"}])
    reference = tool_env.env.unwrapped.task.ground_truth
    code = {"reference": reference, "wrong": _wrong_by_one(reference), "empty": ""}[answer]
    replies = [tool_env.ask_user(q) for q in questions]
    assert tool_env.get_reward() == 0.0  # nothing submitted yet
    assert tool_env.submit_answer(code).endswith(CONVERSATION_OVER)

    env = gym.make("ColBench-Backend-v0", **kw)
    obs, _ = env.reset(seed=7, options={"task_index": 3})
    assert obs == task_text
    gym_replies = [env.step(q)[0] for q in questions]
    _, reward, terminated, _, info = env.step(f"{ANSWER_MARKER}\n{code}")

    assert terminated and replies == gym_replies
    assert tool_env.get_reward() == reward
    assert tool_env.info["tests_passed"] == info["tests_passed"]
    assert tool_env.messages == info["messages"]
    if answer == "reference":
        assert reward == 1.0 and tool_env.success
    else:
        assert reward < 1.0 and not tool_env.success
    assert (tool_env.questions, tool_env.turns, tool_env.submitted) == (2, 3, True)


def test_ten_turn_rule_and_calls_after_the_end() -> None:
    tool_env = make_tool_env_factory("ColBench-Backend-v0")()
    tool_env.reset(task_index=0, seed=0)
    replies = [tool_env.ask_user(f"Question number {i}?") for i in range(MAX_TURNS)]
    assert "last turn" in replies[-1] and replies[-1].endswith(CONVERSATION_OVER) and tool_env.ended
    assert tool_env.info["ended_by"] == "turn_limit" and tool_env.turns == MAX_TURNS
    assert tool_env.get_reward() == 0.0 and not tool_env.submitted
    with pytest.raises(ToolEnvError, match="conversation is over"):
        tool_env.ask_user("one more?")
    with pytest.raises(ToolEnvError, match="conversation is over"):
        tool_env.submit_answer("def f(): pass")
    # reset starts a fresh episode with fresh counters
    tool_env.reset(task_index=1)
    assert (tool_env.turns, tool_env.questions, tool_env.ended) == (0, 0, False)


def test_tool_before_reset_and_answer_marker_in_question() -> None:
    tool_env = make_tool_env_factory("ColBench-Backend-v0")()
    with pytest.raises(ToolEnvError, match="reset"):
        tool_env.ask_user("hello?")
    tool_env.reset(task_index=0)
    # A question smuggling the answer marker would end the episode in the env's protocol.
    with pytest.raises(ToolEnvError, match="submit_answer"):
        tool_env.ask_user(f"{ANSWER_MARKER} def f(): pass")
    assert tool_env.turns == 0 and not tool_env.ended


def test_reset_accepts_an_official_task_record(backend_records) -> None:
    tool_env = make_tool_env_factory("ColBench-Backend-v0")()
    text = tool_env.reset(task=backend_records[0], seed=1)
    assert text == backend_records[0]["problem_description"]
    tool_env.submit_answer(backend_records[0]["ground_truth"])
    assert tool_env.get_reward() == 1.0


@pytest.mark.browser
def test_frontend_draft_and_answer_match_gym(browser_ready) -> None:
    kw = dict(tasks="embedded:test", scorer="fallback")
    tool_env = make_tool_env_factory("ColBench-Frontend-v0", **kw)()
    assert type(tool_env) is ColBenchFrontendToolEnv
    tool_env.reset(task_index=0, seed=3)
    draft = '<body class="bg-white"><h1 class="text-3xl">Hello</h1></body>'
    feedback = tool_env.show_draft(draft)
    assert tool_env.info["rendered"] is True
    page = "<html><body class='bg-blue-100'><h1>Welcome</h1></body></html>"
    tool_env.submit_answer(page)

    env = gym.make("ColBench-Frontend-v0", **kw)
    env.reset(seed=3, options={"task_index": 0})
    gym_feedback = env.step(f"<html>\n{draft}\n</html>")[0]
    _, reward, terminated, _, _ = env.step(f"{ANSWER_MARKER}\n{page}")
    assert terminated and feedback == gym_feedback
    assert tool_env.get_reward() == pytest.approx(reward) and reward > 0
    assert tool_env.drafts == 1 and tool_env.turns == 2


def test_an_infrastructure_failure_has_no_reward_for_trl() -> None:
    """A score that measures nothing (a task no test can measure) and a person whose endpoint
    failed give get_reward() None — TRL's GRPOTrainer then leaves the completion out of its
    group's baseline — where the env's own number would have trained the policy on noise."""
    from colbench_gym.simulators.base import HumanSimulator, SimulatorError

    broken = {"problem_description": "Write f(x).", "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    tool_env = make_tool_env_factory("ColBench-Backend-v0")()
    tool_env.reset(task=broken)
    tool_env.submit_answer("def f(x):\n    return x\n")
    assert tool_env.info["end_reason"] == "task_error" and tool_env.get_reward() is None
    assert tool_env.infrastructure_failure == "task_error"

    class Down(HumanSimulator):
        kind = "backend"

        def respond(self, task, dialogue, **context):
            raise SimulatorError("the person's endpoint is down")

    tool_env = ColBenchToolEnv(gym.make("ColBench-Backend-v0", simulator=Down()))
    tool_env.reset(task_index=0, seed=0)
    with pytest.raises(SimulatorError):
        tool_env.ask_user("What should it return?")
    assert tool_env.get_reward() is None and tool_env.infrastructure_failure == "simulator_error"
    tool_env.reset(task_index=0, seed=0)  # a new episode starts clean
    assert tool_env.get_reward() == 0.0 and tool_env.infrastructure_failure is None


def test_a_malformed_tool_call_is_the_agents_and_a_failed_reset_leaves_nothing_behind() -> None:
    """TRL passes the model's tool arguments as they are: a list where a string belongs is the
    agent's mistake (the episode stays scored), not an infrastructure failure. A reset that fails
    keeps nothing of the previous episode (its reward, its failure)."""
    broken = {"problem_description": "Write f(x).", "ground_truth": "import numpy_is_not_here\n\ndef f(x):\n    return x\n",
              "test_cases": {"test1": "f(1)", "test2": "f(2)"}}
    tool_env = make_tool_env_factory("ColBench-Backend-v0")()
    tool_env.reset(task_index=0, seed=0)
    with pytest.raises(Exception):  # noqa: B017 - whatever the env raises for it
        tool_env.ask_user(["not", "a", "string"])
    assert tool_env.infrastructure_failure is None
    tool_env.submit_answer("def nothing():\n    return None\n")
    assert tool_env.get_reward() == 0.0
    tool_env.reset(task=broken)
    tool_env.submit_answer("def f(x):\n    return x\n")
    assert tool_env.get_reward() is None
    with pytest.raises(Exception):  # noqa: B017 - a task the env cannot load
        tool_env.reset(task={"problem_description": "no reference"})
    assert tool_env.infrastructure_failure is None and tool_env.get_reward() == 0.0
    with pytest.raises(ToolEnvError, match="not started"):
        tool_env.submit_answer("def f(x):\n    return x\n")


def test_the_critic_reward_gives_no_score_to_an_infrastructure_failure() -> None:
    """With --critic beside the env's reward, an episode the env could not score gets None from
    the critic too: TRL's nansum would otherwise count the missing env reward as 0 beside the
    critic's score and hand the completion a spurious negative advantage."""
    pytest.importorskip("torch")
    from sweet_agent.grpo.critic_reward import SweetCriticReward

    class Failed:
        infrastructure_failure = "simulator_error"

    reward = object.__new__(SweetCriticReward)  # the short-circuit touches no critic weights
    assert reward(environments=[Failed()]) == [None]


def test_any_string_is_a_question_and_the_episode_keeps_its_reward() -> None:
    """Issue 37: a question holding a lone surrogate made the env's step raise UnicodeEncodeError,
    which the tool env took for the agent's error; now the person answers it (as the local env and
    the server do) and the answer is scored."""
    from colbench_gym.tasks.embedded import load_embedded

    task = load_embedded("backend", "test")[0]
    for question in ("What is the rate \ud800?", "nul\x00 and \x1b[31m control?", "\udfff" * 300_000):
        tool_env = make_tool_env_factory("ColBench-Backend-v0")()
        tool_env.reset(task=json.dumps(task.to_record()), seed=0)
        reply = tool_env.ask_user(question)
        assert isinstance(reply, str) and reply.strip()
        reply.encode("utf-8")
        tool_env.submit_answer(task.ground_truth)
        assert tool_env.get_reward() == 1.0 and tool_env.infrastructure_failure is None
        assert tool_env.info["end_reason"] == "answer"
