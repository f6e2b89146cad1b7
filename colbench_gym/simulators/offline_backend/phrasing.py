"""Phrasing an answer: the person's stock phrases, a fact as a reply, nudges, the final cut.

WHY a module of its own: what is said (:mod:`.matching` picks the facts) and how it is said are
separate decisions. A little seeded variety in how a person starts an answer or says they don't
know keeps the replies from reading like a template; the facts themselves are never changed.
Replies are cut to the length cap and never echo a line of the reference's code.
"""

from __future__ import annotations

import random
import re

from colbench_gym.simulators.offline_backend.matching import yes_no
from colbench_gym.simulators.offline_backend.question import Question
from colbench_gym.simulators.offline_backend.sheet import Fact, FactSheet

#: How the person says they don't know (seeded choice).
IDK = (
    "I don't know, sorry.",
    "I don't know; I haven't thought about that.",
    "Hmm, I don't know about that.",
    "I don't know, to be honest.",
)


#: How an answer may start (facts are never changed; mostly no opener).
OPENERS = ("", "", "", "", "Sure, ", "Well, ", "OK, ")


#: Added when one of several questions got no answer.
IDK_REST = ("I don't know about the rest.", "The other part I don't know.")


#: The reply to a request for the hidden tests (never shared).
TESTS = ("I don't have test cases to share, but ask me how it should behave.",)


_NUDGE = (
    "Do you have any questions for me, maybe about {a} or {b}?",
    "Feel free to ask me about {a} or {b}.",
    "Is there anything you want to know, like {a} or {b}?",
)


_NUDGE_ONE = (
    "Do you have any questions for me, maybe about {a}?",
    "Feel free to ask me about {a}.",
)


_DONE = ("I think you have everything you need.", "I think that covers it.")


def lower_first(text: str, sheet: FactSheet) -> str:
    """Lower-case the first letter to continue a sentence, unless it starts a name."""
    first = re.split(r"[\s,;']", text, maxsplit=1)[0]
    if not first or first == "I" or text.startswith("'") or first in sheet.params or first == sheet.func_name:
        return text
    return text[0].lower() + text[1:]


def say_fact(q: Question, fact: Fact, sheet: FactSheet) -> str:
    """The fact as a reply to ``q``, led by "Yes"/"No" when a yes/no question is settled."""
    verdict = yes_no(q, fact, sheet) if q.yes_no else None
    if verdict:
        return f"{verdict}, {lower_first(fact.text, sheet)}"
    return fact.text


def nudge(sheet: FactSheet, history: list[str], rng: random.Random, *, enabled: bool = True,
          greeting: bool = False) -> str:
    """A reply to a message that asks nothing: suggest one or two topics not told yet
    (``enabled``), else "I think that covers it"."""
    if not enabled or not sheet.facts:
        return rng.choice(_DONE) if sheet.facts else rng.choice(IDK)
    told = " ".join(history)
    topics: list[str] = []
    for fact in sorted(sheet.facts, key=lambda f: -f.priority):
        if fact.polarity == "no" or fact.kind in ("doc",) or fact.text in told:
            continue
        if fact.kind == "signature" and sheet.func_name and sheet.func_name in told:
            continue
        if fact.topic not in topics:
            topics.append(fact.topic)
        if len(topics) == 2:
            break
    if not topics:
        return rng.choice(_DONE)
    if len(topics) == 1:
        text = rng.choice(_NUDGE_ONE).format(a=topics[0])
    else:
        text = rng.choice(_NUDGE).format(a=topics[0], b=topics[1])
    return ("Hi! " + text) if greeting else text


_CODE_LINE = re.compile(r"[=()\[\]{}]|^(if|for|while|return|def|elif|else|try|except|with|import|from|raise)\b")


def fit(reply: str, sheet: FactSheet, max_chars: int) -> str:
    """Keep replies short and free of reference lines."""
    for line in sheet.source_lines:
        if len(line) >= 12 and line in reply and _CODE_LINE.search(line):
            reply = reply.replace(line, "that")  # never echo code (docstring prose may be paraphrased)
    if len(reply) <= max_chars:
        return reply
    cut = reply[: max_chars]
    for sep in ("; ", ", "):
        idx = cut.rfind(sep)
        if idx > max_chars // 2:
            return cut[:idx].rstrip() + "."
    return cut.rstrip() + "."


__all__ = ["IDK", "IDK_REST", "OPENERS", "TESTS", "fit", "lower_first", "nudge", "say_fact"]
