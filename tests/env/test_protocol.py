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


# The patterns before they were made linear: the same answers must come out of the new ones.
_OLD_FENCE = r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)"
_OLD_HTML, _OLD_BODY = r"<html\b.*?</html\s*>", r"<body\b.*?</body\s*>"


def _old_extract_code(answer: str) -> str:
    import re

    blocks = re.findall(_OLD_FENCE, answer, re.S)
    if not blocks:
        return answer.strip("\n").strip("`")
    py = [body for lang, body in blocks if lang.lower() in ("", "python", "py", "python3")]
    return "\n\n".join(py or [b for _, b in blocks]).strip("\n")


def _old_extract_html(text: str) -> str | None:
    import re

    m = re.search(_OLD_HTML, text, re.S | re.I) or re.search(_OLD_BODY, text, re.S | re.I)
    return m.group(0) if m else None


def test_code_and_html_extraction_agree_with_the_lazy_patterns_on_random_text():
    """The linear-time extraction finds exactly what the former (quadratic) patterns found, on
    random mixtures of the characters that matter to them (fences, tags, blanks, language tags)."""
    import random

    rng = random.Random(7)
    pieces = ["```", "```python", "```js", " ", "\t", "\n", "x = 1", "py", "<html>", "<HTML lang=en>", "</html>",
              "</html >", "<body>", "</body>", "<htmlx>", "<bodyguard>", "</body\n>", "text", "`", "<", ">"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert extract_code(text) == _old_extract_code(text), text
        assert extract_html(text) == _old_extract_html(text), text


@pytest.mark.timeout(120)
def test_adversarial_answers_are_extracted_in_one_pass():
    """Texts that made the former patterns quadratic (a 200k-character answer held the trusted
    process for a minute; quadratic at 2M characters would take hours, so this times out) come
    back at once with the right result."""
    n = 2_000_000
    assert extract_code("```" + " \t" * (n // 2) + "x") == ("```" + " \t" * (n // 2) + "x").strip("`")
    assert extract_html("<html" * (n // 5)) is None
    assert extract_html("<body" * (n // 5) + "</body>") == "<body" * (n // 5) + "</body>"
    assert extract_code("```\n" + "a" * n) == "a" * n
