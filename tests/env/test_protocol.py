"""The dialogue protocol: thought/OUTPUT split, the answer marker, code fences, HTML snippets."""

from __future__ import annotations

import pytest

from colbench_gym.protocol import extract_code, extract_html, parse_action, truncate
from colbench_gym.spaces import UnicodeText


def test_plain_question():
    p = parse_action("  What is the rate?  ")
    assert (p.thought, p.message, p.is_answer, p.answer) == ("", "What is the rate?", False, "")


def test_thought_then_output():
    p = parse_action("I should ask about tiers.\nOUTPUT: Are there weight tiers?")
    assert p.thought == "I should ask about tiers." and p.message == "Are there weight tiers?"


def test_answer_after_output():
    p = parse_action("done thinking OUTPUT: I WANT TO ANSWER: def f(): return 1")
    assert p.is_answer and p.answer == "def f(): return 1" and p.thought == "done thinking"


def test_answer_marker_before_output_marker_still_answers():
    p = parse_action("I WANT TO ANSWER: def f():\n    return 'OUTPUT: x'")
    assert p.is_answer and p.answer.startswith("def f():")


def test_non_string_action():
    with pytest.raises(TypeError, match="str"):
        parse_action(b"bytes")


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ("def f():\n    return 1", "def f():\n    return 1"),
        ("```python\ndef f():\n    return 1\n```", "def f():\n    return 1"),
        ("Here you go:\n```py\nimport math\n```\nand\n```python\ndef f():\n    return math.pi\n```\nEnjoy",
         "import math\n\ndef f():\n    return math.pi"),
        ("```\ndef f(): return 2\n```", "def f(): return 2"),
        ("```python\ndef f(): return 3", "def f(): return 3"),  # unterminated fence
    ],
)
def test_extract_code(answer, code):
    assert extract_code(answer) == code


def test_extract_html():
    text = "Here is a draft <HTML lang='en'><body class='p-4'>Hi</body></Html> and more <html>2</html>"
    assert extract_html(text) == "<HTML lang='en'><body class='p-4'>Hi</body></Html>"
    assert extract_html("just <body>b</body>") == "<body>b</body>"
    assert extract_html("no page here") is None


def test_truncate():
    assert truncate("abc", 2) == "ab" and truncate("abc", 5) == "abc"


def test_unicode_text_space():
    space = UnicodeText(50, seed=0)
    for s in ["", "plain", "émoji 🙂 中文\t\n", "x" * 50]:
        assert space.contains(s)
    assert not space.contains("x" * 51) and not space.contains(3)
    samples = [space.sample() for _ in range(20)]
    assert all(space.contains(s) for s in samples)
    assert UnicodeText(50, seed=0).sample() == UnicodeText(50, seed=0).sample()
