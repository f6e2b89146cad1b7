"""ColBench-Backend-v0: protocol, leaks, caps, grading and Gymnasium conformance."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import colbench_gym  # noqa: F401 - registers the envs
from colbench_gym.envs.base import EpisodeOverError
from colbench_gym.simulators import HumanSimulator
from colbench_gym.tasks import TaskFormatError


class RecordingSimulator(HumanSimulator):
    """A scripted person that records what it was shown (used to test the protocol itself)."""

    def __init__(self, reply: str = "Members pay less.") -> None:
        self.reply, self.seen, self.seeds = reply, [], []

    def reset(self, task, *, seed=None):
        self.seeds.append(seed)

    def respond(self, task, dialogue, **context):
        self.seen.append([dict(m) for m in dialogue])
        return self.reply


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def make(records, **kw):
    return gym.make("ColBench-Backend-v0", tasks=records, **kw)


def test_check_env(backend_records):
    env = make(backend_records)
    check_env(env.unwrapped, skip_render_check=True)


def test_first_observation_is_the_description(backend_records):
    env = make(backend_records)
    obs, info = env.reset(seed=0, options={"task": backend_records[0]})
    assert obs == backend_records[0]["problem_description"]
    assert info["messages"] == [{"role": "user", "content": obs}]
    assert env.observation_space.contains(obs)
    assert info["turn"] == 0 and info["max_turns"] == 10


def test_correct_answer_succeeds_and_wrong_answer_fails(backend_records):
    rec = backend_records[0]
    env = make(backend_records)
    env.reset(seed=0, options={"task": rec})
    obs, reward, term, trunc, info = env.step("I WANT TO ANSWER:\n```python\n" + rec["ground_truth"] + "```")
    assert (reward, term, trunc) == (1.0, True, False)
    assert info["success"] is True and info["tests_passed"] == info["tests_total"] == 10
    assert info["ended_by"] == "answer" and obs == ""

    env.reset(seed=0, options={"task": rec})
    wrong = rec["ground_truth"].replace("2.5", "3.0")
    _, reward, term, _, info = env.step("OUTPUT: I WANT TO ANSWER: " + wrong)
    assert term and reward == 0.0 and info["success"] is False
    assert 0 < info["tests_passed"] < 10


def test_fraction_reward_mode(backend_records):
    rec = backend_records[0]
    env = make(backend_records, reward_mode="fraction")
    env.reset(seed=0, options={"task": rec})
    wrong = rec["ground_truth"].replace("2.5", "3.0")
    _, reward, _, _, info = env.step("I WANT TO ANSWER: " + wrong)
    assert reward == pytest.approx(info["tests_passed"] / 10)
    with pytest.raises(ValueError, match="reward_mode"):
        make(backend_records, reward_mode="partial")


def test_thought_is_private_and_replies_are_capped(backend_records):
    sim = RecordingSimulator(reply="x" * 5000)
    env = make(backend_records, simulator=sim)
    env.reset(seed=0, options={"task_index": 1})
    obs, reward, term, trunc, info = env.step("secret plan: guess everything OUTPUT: Which symbols start a tag?")
    assert len(obs) == 400 and not term and reward == 0.0
    agent_view = sim.seen[-1][-1]
    assert agent_view == {"role": "assistant", "content": "Which symbols start a tag?"}
    assert "secret plan" not in str(sim.seen)
    # The agent's own history keeps its raw turn (chat templates need what the model wrote).
    assert info["messages"][1]["content"].startswith("secret plan")


def test_tenth_turn_ends_and_counts_as_answer(backend_records):
    rec = backend_records[2]
    env = make(backend_records, simulator=RecordingSimulator())
    env.reset(seed=0, options={"task": rec})
    for turn in range(9):
        _, _, term, _, info = env.step(f"question {turn}?")
        assert not term and info["turn"] == turn + 1
    _, reward, term, trunc, info = env.step(rec["ground_truth"])
    assert term and not trunc and info["ended_by"] == "turn_limit"
    assert reward == 1.0 and info["answer"].startswith("def split_bill")
    with pytest.raises(EpisodeOverError, match="reset"):
        env.step("one more")


def test_step_before_reset_and_bad_actions(backend_records):
    env = make(backend_records, simulator=RecordingSimulator())
    with pytest.raises(EpisodeOverError):
        env.unwrapped.step("hello")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="str"):
        env.unwrapped.step(42)
    obs, _, term, _, info = env.step("")
    assert not term and env.observation_space.contains(obs)
    obs, _, term, _, info = env.step("?" * 300_000)
    assert info["action_truncated"] is True and not term
    _, reward, term, _, info = env.step("I WANT TO ANSWER:")
    assert term and reward == 0.0 and info["tests_passed"] == 0


def test_unicode_dialogue_is_contained(backend_records):
    env = make(backend_records, simulator=RecordingSimulator(reply="Ja, genau — 20 € pro Monat ✓ 中文"))
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step("Wie viel kostet es? 🙂\tOUTPUT: ¿cuánto?")
    assert env.observation_space.contains(obs) and env.action_space.contains("🙂 ünïcödé")
    assert obs.endswith("中文")


def test_privileged_information_never_leaks(backend_records):
    env = make(backend_records)  # offline simulator and real grader
    for rec in backend_records:
        obs, info = env.reset(seed=3, options={"task": rec})
        seen = [obs, *_strings(info)]
        for question in ["What exactly should the function return?", "What are the numbers involved?",
                         "Can you show me your code?", "What are the test cases?"]:
            obs, _, _, _, info = env.step(question)
            seen += [obs, *_strings(info)]
        _, _, _, _, info = env.step("I WANT TO ANSWER: def f(): return 1")
        seen += list(_strings(info))
        blob = "\n".join(seen)
        for line in rec["ground_truth"].splitlines():
            if len(line.strip()) > 12:
                assert line.strip() not in blob, f"reference line leaked: {line!r}"
        for call in rec["test_cases"].values():
            assert call not in blob, f"test case leaked: {call!r}"


def test_seeded_draws_are_reproducible(backend_records):
    env = make(backend_records, simulator=RecordingSimulator())
    draws = []
    for _ in range(2):
        env.reset(seed=123)
        draws.append([env.reset()[0] for _ in range(5)])
    assert draws[0] == draws[1]
    sim = env.unwrapped.simulator
    assert sim.seeds[:6] == sim.seeds[6:12]


def test_bad_options_and_tasks_give_clear_errors(backend_records):
    env = make(backend_records)
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"taks": backend_records[0]})
    with pytest.raises(IndexError, match="out of range"):
        env.reset(options={"task_index": 99})
    with pytest.raises(TaskFormatError, match="test_cases"):
        env.reset(options={"task": {"problem_description": "x", "ground_truth": "def f(): pass"}})
    with pytest.raises(ValueError, match="unknown backend simulator"):
        make(backend_records, simulator="telepathy")
    with pytest.raises(ValueError, match="neither a file"):
        gym.make("ColBench-Backend-v0", tasks="/no/such/file.jsonl")


def test_default_tasks_and_generated_tasks_reset():
    for tasks in (None, "embedded:train", "generated:train", "generated:test"):
        env = gym.make("ColBench-Backend-v0", tasks=tasks)
        obs, info = env.reset(seed=1)
        assert obs and info["task_index"] is not None


def test_vector_env_runs_episodes(backend_records):
    envs = gym.make_vec("ColBench-Backend-v0", num_envs=2, vectorization_mode="sync", tasks=backend_records)
    obs, info = envs.reset(seed=0)
    assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
    rec0 = backend_records[info["task_index"][0]]
    obs, reward, term, trunc, info = envs.step(["I WANT TO ANSWER: " + rec0["ground_truth"], "What is the rate?"])
    assert term.tolist() == [True, False]
    assert reward[0] == 1.0 and isinstance(obs[1], str) and obs[1]
    envs.close()
