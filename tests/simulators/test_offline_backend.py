"""The offline backend simulator answers like the person who wants the function.

Fixtures are our own ColBench-style reference functions (``offline_fixtures/*.py``). Each test
asks what an agent would ask and checks the reply carries the right facts -- or says "I don't
know" when the reference does not say -- and never shows the reference.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from colbench_gym.simulators import make_simulator
from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.tasks.records import BackendTask

FIXTURES = Path(__file__).parent / "offline_fixtures"

PROBLEMS = {
    "gym_fee": (("I run a small gym and need a python function gym_fee(visits, plan) that tells me what a "
                 "member pays this month."), "gym_fee(3, 'basic')"),
    "reading_log": ("Write a python function reading_summary(log) that summarises my reading journal.",
                    "reading_summary([])"),
    "shipping": (("I sell prints online; write a python function shipping_cost(weight_kg, express=False) for "
                  "the postage."), "shipping_cost(1.0)"),
    "name_tag": ("For our conference badges I need a python function format_name_tag(first, last, title=None).",
                 "format_name_tag('ann', 'lee')"),
    "grade": ("Please write letter_grade(score) in python that turns an exam score into a letter.",
              "letter_grade(50)"),
    "leaderboard": ("Write a python function top_players(scores, n=3) for my board game night.",
                    "top_players({'a': 1})"),
    "tip": ("I want a python function tip_amount(bill, service, split=1) to work out tips.", "tip_amount(10, 'good')"),
    "plant_water": ("Write watering_schedule(plants, temperature) in python for my balcony garden.",
                    "watering_schedule([], 20)"),
    "typed_average": ("Write average_rating(ratings, weights=None, label='avg') in python for my reviews page.",
                      "average_rating([4, 5])"),
}


def load(name: str) -> BackendTask:
    problem, call = PROBLEMS[name]
    return BackendTask.from_record({"problem_description": problem,
                                    "ground_truth": (FIXTURES / f"{name}.py").read_text(),
                                    "test_cases": {"test1": call}})


def ask(sim: OfflineBackendSimulator, task: BackendTask, *messages: str) -> str:
    dialogue = [{"role": "user", "content": task.problem_description}]
    for i, m in enumerate(messages):
        dialogue.append({"role": "assistant", "content": m})
        if i < len(messages) - 1:
            dialogue.append({"role": "user", "content": "ok"})
    return sim.respond(task, dialogue)


def sentences(text: str) -> int:
    """Sentence count, ignoring full stops inside quoted values like '<title>. <last>'."""
    bare = re.sub(r"'[^']*'", "Q", text)
    return len([s for s in re.split(r"(?<=[.!?])\s+", bare.strip()) if s])


def is_idk(text: str) -> bool:
    return "don't know" in text.lower()


@pytest.fixture()
def sim() -> OfflineBackendSimulator:
    return OfflineBackendSimulator(seed=0)


# (fixture, question, facts that must all appear in the reply, case-insensitive)
ANSWERS = [
    ("gym_fee", "What are the plan prices?", ["20", "'basic'", "35", "'plus'", "50", "'pro'", "25"]),
    ("gym_fee", "What happens when visits is 0?", ["half", "2 decimals"]),
    ("gym_fee", "Is there an extra charge when someone comes a lot?", ["12", "2", "'basic'"]),
    ("gym_fee", "Should I round the result?", ["2 decimal"]),
    ("gym_fee", "What are the parameters?", ["gym_fee", "visits", "plan"]),
    ("gym_fee", "What if the plan is something I don't know?", ["any other plan", "25"]),
    ("gym_fee", "What type is visits?", ["visits is a number"]),
    ("reading_log", "What does each entry in the log look like?", ["'title'", "'pages'", "missing", "0"]),
    ("reading_log", "What should the summary contain?", ["'total'", "'top'"]),
    ("reading_log", "How do you break ties?", ["alphabetically"]),
    ("reading_log", "What if the log is empty?", ["'total' (0)", "'top' (none)"]),
    ("shipping", "How much does shipping cost for each weight?", ["4.5", "2", "9.0", "10", "0.75"]),
    ("shipping", "What about express?", ["1.6"]),
    ("shipping", "What if the weight is zero or negative?", ["valueerror"]),
    ("shipping", "Should the cost be rounded?", ["2 decimal"]),
    ("name_tag", "What format should the name tag have?", ["<last>, <first>", "<title>"]),
    ("name_tag", "Should the last name be uppercase?", ["uppercase"]),
    ("name_tag", "What is title?", ["optional", "none"]),
    ("grade", "What are the grade cutoffs?", ["93", "'a'", "85", "'b'", "70", "'c'", "'f'"]),
    ("leaderboard", "How should the players be ordered?", ["largest first"]),
    ("leaderboard", "How are ties handled?", ["same value", "key"]),
    ("leaderboard", "What is n?", ["3"]),
    ("tip", "What are the tip rates?", ["0.2", "'excellent'", "0.15", "'good'", "0.05", "'poor'", "0.1"]),
    ("tip", "What if the service is something else?", ["any other service", "0.1"]),
    ("tip", "What is split for?", ["split", "defaults to 1"]),
    ("plant_water", "How often do succulents need water?", ["14", "'succulent'"]),
    ("plant_water", "What if the temperature is high?", ["30", "2"]),
    ("plant_water", "What does each plant look like?", ["'type'", "'name'"]),
    ("plant_water", "In what order should the schedule be?", ["second value", "smallest first"]),
    ("typed_average", "What is weights?", ["dict from text to numbers", "none"]),
    ("typed_average", "What are the inputs?", ["ratings is a list of numbers", "label is text"]),
    ("typed_average", "What if there are no ratings?", ["0.0"]),
    ("typed_average", "How precise should the average be?", ["1 decimal"]),
]


@pytest.mark.parametrize("name,question,facts", ANSWERS, ids=[f"{a}:{b}" for a, b, _ in ANSWERS])
def test_answers_carry_the_right_facts(sim, name, question, facts):
    task = load(name)
    reply = ask(sim, task, question)
    low = reply.lower()
    assert not is_idk(reply), reply
    for fact in facts:
        assert fact.lower() in low, f"{fact!r} missing from {reply!r}"


UNKNOWABLE = [
    ("gym_fee", "What's your favourite colour?"),
    ("gym_fee", "Should it support different time zones?"),
    ("gym_fee", "What should happen with an empty list?"),
    ("shipping", "How should ties be handled?"),
    ("grade", "What if the input list is empty?"),
    ("tip", "Should it also handle currencies like euros?"),
]


@pytest.mark.parametrize("name,question", UNKNOWABLE)
def test_says_it_does_not_know_when_the_reference_does_not_say(sim, name, question):
    assert is_idk(ask(sim, load(name), question))


YES_NO = [
    ("gym_fee", "Do basic members pay 3 per visit above 10?", "No", ["12"]),
    ("gym_fee", "Should the result be rounded to 2 decimals?", "Yes", ["2"]),
    ("gym_fee", "Should I round to 1 decimal?", "No", ["2"]),
    ("gym_fee", "Should it raise an error for negative visits?", "No", []),
    ("grade", "Is 93 the cutoff for an A?", "Yes", ["93"]),
    ("shipping", "Is express 50% more expensive?", "No", ["1.6"]),
    ("reading_log", "Should I round the total?", "No", []),
]


@pytest.mark.parametrize("name,question,verdict,facts", YES_NO)
def test_yes_no_questions_are_checked_against_the_facts(sim, name, question, verdict, facts):
    reply = ask(sim, load(name), question)
    assert reply.startswith(verdict), reply
    for fact in facts:
        assert fact in reply


BATTERY = [
    "What should the function return?", "What are the parameters and their types?",
    "Are there any special cases?", "Should I round the result?", "What if the input is empty?",
    "What are the exact thresholds or rates?", "How should ties be handled?",
    "Should it raise an error on invalid input?", "Can you give me an example?", "Hello!",
    "How is the result calculated?", "What values can each parameter take?",
    "1. What is the output? 2. What are the inputs? 3. Any edge cases?",
    "Here is my draft:\n```python\ndef f(x):\n    return x\n```\nDoes it look right?",
    "I'll write the function now.", "", "???", "def " * 50,
]


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_replies_are_short_and_never_show_the_reference(sim, name):
    task = load(name)
    lines = [ln.strip() for ln in task.ground_truth.splitlines() if len(ln.strip()) >= 10]
    for question in BATTERY:
        reply = ask(sim, task, question)
        assert reply.strip(), question
        assert len(reply) <= 400, reply
        assert sentences(reply) <= 2, reply
        assert "def " not in reply and "return " not in reply, reply
        for line in lines:
            assert line not in reply, (line, reply)
        assert "test1" not in reply and PROBLEMS[name][1] not in reply


def test_replies_are_deterministic_per_seed():
    task = load("gym_fee")
    messages = ["Hello!", "What is the meaning of life?", "What are the plan prices?",
                "```python\ndef gym_fee(visits, plan):\n    return 1.0\n```"]
    a = OfflineBackendSimulator(seed=3)
    b = OfflineBackendSimulator(seed=3)
    a.reset(task, seed=11)
    b.reset(task, seed=11)
    first = [ask(a, task, m) for m in messages]
    assert first == [ask(b, task, m) for m in messages]
    assert first == [ask(a, task, m) for m in messages]  # no hidden state between calls
    # the phrasing (not the facts) varies with the seed
    unknowns = [f"What about the colour of the {w}?" for w in ("sky", "sea", "door", "car", "roof", "wall")]
    replies = {ask(OfflineBackendSimulator(seed=s), task, q) for s in range(4) for q in unknowns}
    assert len(replies) > 1 and all(is_idk(r) for r in replies)


def test_answers_the_last_assistant_message(sim):
    task = load("gym_fee")
    reply = ask(sim, task, "What are the plan prices?", "Should I round the result?")
    assert "2 decimal" in reply and "'basic'" not in reply


def test_several_questions_get_one_or_two_answers(sim):
    task = load("gym_fee")
    reply = ask(sim, task, "What type is visits? And what are the plan prices?")
    assert "visits is a number" in reply and "35" in reply
    assert sentences(reply) <= 2


def test_code_feedback_points_at_what_is_missing(sim):
    task = load("gym_fee")
    wrong_name = ask(sim, task, "```python\ndef fee(v, p):\n    return 20.0\n```")
    assert "gym_fee" in wrong_name and "visits" in wrong_name
    ignores_plan = ask(sim, task, "```python\ndef gym_fee(visits, plan):\n    return 20.0 if visits else 10.0\n```")
    assert "plan" in ignores_plan and "'basic'" in ignores_plan  # the draft never reads plan
    no_table = ask(sim, task, "```python\ndef gym_fee(visits, plan):\n    if visits == 0:\n"
                              "        return round(10.0, 2)\n    return 20.0 + len(plan)\n```")
    assert "35" in no_table and "50" in no_table
    draft = ("```python\ndef gym_fee(visits, plan):\n    base = {'basic': 20, 'plus': 35, 'pro': 50}.get(plan, 25)\n"
             "    if visits == 0:\n        return round(base * 0.5, 2)\n    return float(base)\n```")
    assert "12" in ask(sim, task, draft)  # the extra-visits rule is what it lacks
    full = task.ground_truth
    reply = ask(sim, task, f"Here is my code:\n```python\n{full}```")
    assert "as far as i can tell" in reply.lower()
    no_raise = ask(sim, load("shipping"), "```python\ndef shipping_cost(weight_kg, express=False):\n"
                                           "    cost = 4.5 if weight_kg <= 2 else 9.0 if weight_kg <= 10 else "
                                           "9.0 + 0.75 * (weight_kg - 10)\n    return round(cost * (1.6 if express else 1), 2)\n```")
    assert "ValueError" in no_raise
    broken = ask(sim, task, "```python\ndef gym_fee(visits, plan:\n```")
    assert "code" in broken.lower()


def test_nudges_when_nothing_is_asked(sim):
    task = load("tip")
    hello = ask(sim, task, "Hello!")
    assert hello.startswith("Hi") and "?" in hello or "ask" in hello.lower()
    # topics already told are not suggested again
    dialogue = [{"role": "user", "content": task.problem_description},
                {"role": "assistant", "content": "What are the tip rates?"}]
    told = sim.respond(task, dialogue)
    dialogue += [{"role": "user", "content": told}, {"role": "assistant", "content": "Thanks, I will write it."}]
    nudge = sim.respond(task, dialogue)
    assert "service rates" not in nudge


def test_tests_are_never_shared(sim):
    reply = ask(sim, load("grade"), "Can you give me the test cases?")
    assert "letter_grade(50)" not in reply and "test" in reply.lower()


def test_accepts_records_and_rejects_other_tasks(sim):
    task = load("grade")
    record = task.to_record()
    assert ask(sim, BackendTask.from_record(record), "What are the grade cutoffs?") == \
        sim.respond(record, [{"role": "user", "content": task.problem_description},
                             {"role": "assistant", "content": "What are the grade cutoffs?"}])
    with pytest.raises(TypeError, match="BackendTask"):
        sim.respond("not a task", [])
    with pytest.raises(ValueError, match="max_chars"):
        OfflineBackendSimulator(max_chars=5)
    with pytest.raises(TypeError, match="verbosityy"):
        make_simulator("offline", "backend", verbosityy=2)  # a typo is an error, not silently ignored


def test_unparsable_reference_is_handled(sim):
    task = BackendTask.from_record({"problem_description": "Write f(x).", "ground_truth": "def f(x:\n  pass",
                                    "test_cases": {"t": "f(1)"}})
    reply = ask(sim, task, "What should it return?")
    assert is_idk(reply)
    assert ask(sim, task, "Hello") and len(ask(sim, task, "Hello")) <= 400


def test_registry_builds_it():
    sim = make_simulator("offline", "backend", seed=5)
    assert isinstance(sim, OfflineBackendSimulator) and sim.seed == 5 and sim.kind == "backend"


def test_plays_inside_the_backend_environment():
    """The default simulator of ColBench-Backend-v0 answers in the observation, cut to 400 chars."""
    import gymnasium as gym

    import colbench_gym  # noqa: F401  (registers the environments)

    task = load("gym_fee")
    env = gym.make("ColBench-Backend-v0", tasks=[task.to_record()], simulator="offline",
                   simulator_kwargs={"seed": 1})
    try:
        obs, _info = env.reset(seed=0, options={"task": task.to_record()})
        assert "gym_fee" in obs
        obs, _reward, terminated, _truncated, _info = env.step("What are the plan prices?")
        assert not terminated and "35" in obs and "'pro'" in obs and len(obs) <= 400
        obs, *_ = env.step("thinking about visits OUTPUT: What happens when visits is 0?")
        assert "half" in obs
    finally:
        env.close()


def test_a_repeated_question_brings_the_next_fact(sim):
    task = load("gym_fee")
    dialogue = [{"role": "user", "content": task.problem_description}]
    replies = []
    for _ in range(2):
        dialogue.append({"role": "assistant", "content": "What are the rules for visits?"})
        replies.append(sim.respond(task, dialogue))
        dialogue.append({"role": "user", "content": replies[-1]})
    assert replies[0] != replies[1] and not any(is_idk(r) for r in replies)
    assert "12" in replies[0] and "half" in replies[0]


def test_terse_person_gives_one_fact():
    sim = OfflineBackendSimulator(max_facts=1)
    reply = ask(sim, load("gym_fee"), "What type is visits? And what are the plan prices?")
    assert sentences(reply) == 1 and not is_idk(reply)
    with pytest.raises(ValueError, match="max_facts"):
        OfflineBackendSimulator(max_facts=3)


@pytest.mark.parametrize("name,question,verdict,fact", [
    ("reading_log", "Should it return a list?", "No", "a dict"),
    ("reading_log", "Should it return a dictionary?", "Yes", "'total'"),
    ("reading_log", "Is log a string?", "No", "list of dicts"),
    ("grade", "Does it return a boolean?", "No", "'A'"),
])
def test_type_questions_get_a_verdict(sim, name, question, verdict, fact):
    reply = ask(sim, load(name), question)
    assert reply.startswith(verdict) and fact in reply, reply


def test_a_correct_summary_is_not_contradicted(sim):
    task = load("gym_fee")
    summary = ("So plans cost 20, 35 and 50, anything else 25, and basic members pay 2 per visit above 12. "
               "Is that right?")
    reply = ask(sim, task, summary)
    assert not reply.startswith("No"), reply
    wrong = ask(sim, task, "So plans cost 20, 30 and 50, right?")
    assert wrong.startswith("No") and "35" in wrong, wrong


def test_replies_do_not_depend_on_the_process(tmp_path):
    """Same seed, same replies in fresh interpreters with different hash seeds (sets iterate
    differently there): RL data made on one machine replays on another."""
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "replies.py"
    script.write_text(
        "import json, sys\n"
        "from pathlib import Path\n"
        "from colbench_gym.simulators.offline_backend import OfflineBackendSimulator\n"
        "from colbench_gym.tasks.embedded import load_embedded\n"
        "sim = OfflineBackendSimulator(seed=7)\n"
        "out = []\n"
        "for t in load_embedded('backend', 'test')[:10]:\n"
        "    for q in ['What should it return?', 'Any special cases?', 'Hello', 'What are the exact values?']:\n"
        "        out.append(sim.respond(t, [{'role': 'user', 'content': t.problem_description},\n"
        "                                   {'role': 'assistant', 'content': q}]))\n"
        "print(json.dumps(out))\n")
    runs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1]


def test_terse_statements_that_name_a_topic_are_answered(sim):
    task = load("gym_fee")
    assert "35" in ask(sim, task, "Plan prices.")
    nudge = ask(sim, task, "I will now write the function.")
    assert "?" in nudge and not is_idk(nudge)


def test_code_with_stray_fences_and_trailing_prose_is_still_read(sim):
    task = load("gym_fee")
    draft = ("def gym_fee(visits, plan):\n    return 20.0 if visits else 10.0\n\n"
             "print(gym_fee(3, 'basic'))  # Output: 20.0\n```\nThis should work for all plans.")
    reply = ask(sim, task, draft)
    assert "'basic'" in reply and "make sense" not in reply


@pytest.mark.parametrize("name,question,must,must_not", [
    ("gym_fee", "What is the expected input format for the function?", "visits is a number", "decimal"),
    ("shipping", "Are there any specific requirements for the output format?", "2 decimals", ""),
    ("tip", "Is there a specific formula you would like me to use?", "divided by split", ""),
])
def test_common_llm_agent_questions(sim, name, question, must, must_not):
    reply = ask(sim, load(name), question)
    assert must in reply and (not must_not or must_not not in reply), reply
