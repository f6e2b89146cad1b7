"""How the offline simulator reads the agent's message: questions, intents, yes/no, numbers, code."""

from __future__ import annotations

import pytest

from colbench_gym.simulators.offline_backend.question import analyse, numbers_in, quoted_in
from colbench_gym.simulators.offline_backend.words import keywords, words_match


def texts(message: str) -> list[str]:
    return [q.text for q in analyse(message).questions]


def test_splits_numbered_and_run_on_questions():
    assert texts("Thanks! A few questions:\n1. What is x?\n2. What is y?") == ["What is x?", "What is y?"]
    assert texts("What is x?What is y?") == ["What is x?", "What is y?"]
    assert texts("What format, e.g. a dict or a list?") == ["What format, e.g. a dict or a list?"]
    assert texts("Please tell me the rates.") == ["Please tell me the rates."]
    assert texts("I will write it now.") == []


@pytest.mark.parametrize("question,intent", [
    ("What should the function return?", "output"),
    ("What are the parameters?", "signature"),
    ("Should I round to 2 decimals?", "round"),
    ("What if the list is empty?", "edge"),
    ("Should it raise an exception?", "error"),
    ("How are ties broken?", "tie"),
    ("In what order should they be sorted?", "order"),
    ("What are the prices?", "values"),
    ("How is the total calculated?", "how"),
    ("What if the plan is something else?", "unknown"),
    ("Can I see the test cases?", "tests"),
])
def test_intents(question, intent):
    assert intent in analyse(question).questions[0].intents


@pytest.mark.parametrize("question,yes_no", [
    ("Should I round the result?", True),
    ("Is the threshold 10?", True),
    ("So basic costs 20, right?", True),
    ("Basic is 20. Is that right?", True),
    ("Could you tell me the thresholds?", False),
    ("What is right?", False),
    ("What are the prices?", False),
])
def test_yes_no_questions(question, yes_no):
    assert analyse(question).questions[-1].yes_no is yes_no


def test_a_confirmation_carries_the_statement_it_confirms():
    (q,) = analyse("So basic costs 20 and pro 50. Is that right?").questions
    assert q.yes_no and {20.0, 50.0} <= q.numbers


def test_numbers_and_quoted_values():
    assert {8.0, 0.08} <= numbers_in("Is the tax 8%?")
    assert 0.5 in numbers_in("Do they pay half?")
    assert 2.5 in numbers_in("Is it 2.5 per kg?")
    assert quoted_in("Is 'Basic' different from \"pro\"?") == {"basic", "pro"}


def test_keywords_split_identifiers_and_ignore_filler():
    assert {"monthly", "fee"} <= keywords("What does monthly_fee do?")
    assert "the" not in keywords("What is the thing?")
    assert words_match("price", "pric") and words_match("visit", "visits") and not words_match("tip", "tiger")


def test_code_is_found_fenced_or_bare():
    assert analyse("Here:\n```python\ndef f(x):\n    return x\n```").code.startswith("def f")
    assert analyse("def f(x):\n    return x").code.startswith("def f")
    assert analyse("What is x?").code is None


def test_huge_or_odd_messages_are_handled():
    msg = analyse("?" * 100000)
    assert len(msg.questions) <= 8
    assert analyse("").questions == [] and analyse("").greeting


def test_short_trigger_words_need_a_word_boundary():
    assert "type" not in analyse("What is the interval between waterings?").questions[0].intents
    assert "order" not in analyse("What goes into the first name field?").questions[0].intents
    assert "order" in analyse("Should the list be sorted?").questions[0].intents
