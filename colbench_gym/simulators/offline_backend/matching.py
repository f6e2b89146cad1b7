"""Matching a question against the facts: which facts answer it, and whether a yes/no holds.

WHY a module of its own: the honesty of the simulated person rests here. A fact answers a
question when they share words (rarer words count more, a parameter's name always counts),
numbers or quoted values, and when the fact is of the kind the question's intent asks for
(:mod:`.question`); below :data:`MIN_SCORE` nothing answers and the person says they don't
know. A yes/no question gets "Yes" or "No" only when the facts settle it (:func:`yes_no`).
"""

from __future__ import annotations

import ast
import math
import re

from colbench_gym.simulators.offline_backend.question import Question
from colbench_gym.simulators.offline_backend.sheet import Fact, FactSheet
from colbench_gym.simulators.offline_backend.syntax import const_key, guard_holds
from colbench_gym.simulators.offline_backend.words import keywords, stem, words_match

#: Below this relevance score a fact does not answer the question ("I don't know").
MIN_SCORE = 1.2


#: A message that asks nothing is answered only when it clearly names a topic ("Plan prices.").
STATEMENT_SCORE = 2.5


# intent -> [(fact kind or "#tag", bonus)]
_INTENT_BONUS: dict[str, list[tuple[str, float]]] = {
    "output": [("result", 2.2), ("shape", 2.2), ("#output", 1.5)],
    "signature": [("signature", 3.0), ("params", 1.5), ("param", 1.0)],
    "type": [("params", 2.0), ("param", 1.5), ("shape", 1.2), ("result", 1.2), ("#output", 1.2)],
    "round": [("#round", 3.0)],
    "edge": [("#edge", 1.5), ("branch", 1.2), ("case", 1.0)],
    "error": [("raise", 2.5), ("#error", 1.5)],
    "unknown": [("#unknown", 2.5), ("#invalid", 1.0)],
    "order": [("#order", 2.0)],
    "numbers": [("#values", 1.3)],
    "tie": [("#tie", 3.0)],
    "how": [("result", 1.3), ("assign", 1.0), ("accumulate", 1.0), ("case", 1.0), ("branch", 0.5),
            ("table", 0.5)],
    "handle": [("branch", 0.6), ("case", 0.6)],
    "values": [("table", 2.0), ("case", 1.5), ("constant", 1.5), ("#threshold", 1.0), ("#values", 0.9)],
    "condition": [("branch", 1.0), ("case", 0.8)],
    "purpose": [("doc", 2.0), ("result", 1.6), ("shape", 1.3), ("param", 1.0)],
    "example": [("param", 1.5), ("params", 1.5), ("table", 1.0), ("shape", 1.0)],
}


# specific edge words -> tags a fact must carry to answer them
_EDGE_WORDS: dict[str, set[str]] = {
    "empty": {"empty"}, "zero": {"zero"}, "0": {"zero"}, "negative": {"negative"},
    "none": {"none", "missing"}, "null": {"none", "missing"}, "missing": {"missing", "none", "empty"},
    "tie": {"tie"}, "ties": {"tie"}, "tied": {"tie"},
}


def rank_facts(sheet: FactSheet, q: Question) -> list[tuple[float, Fact]]:
    """Facts ordered by how well they answer ``q`` (score, fact), best first."""
    facts = sheet.facts
    if not facts:
        return []
    n = len(facts)
    required: set[str] = set()
    lower_words = q.words
    for word, tags in _EDGE_WORDS.items():
        if word in lower_words:
            required |= tags
    strict_kinds: set[str] = set()
    if "round" in q.intents and ({"round", "rounded", "rounding", "decimal", "decimals", "precision"} & lower_words):
        strict_kinds.add("round")
    if "error" in q.intents and ({"error", "errors", "exception", "exceptions", "raise", "throw", "invalid",
                                 "bad", "wrong", "validate", "validation"} & lower_words):
        strict_kinds.add("raise")
    # A question naming a value of a parameter ("What if people is 0?", "f(20, 0, 'ok')?") is
    # answered by the first rule whose condition that value meets, even when it carries no
    # edge tag of the question's words (a rule "people < 1" covers 0 without saying "zero").
    values = param_values(q.text, sheet.params, sheet.func_name) if any(f.guards for f in facts) else {}
    hit = next((f for f in facts if f.guards and guard_holds(f.guards, values)), None) if values else None
    scored: list[tuple[float, Fact]] = []
    df: dict[str, int] = {}
    focus = _param_focus(q.text, sheet.params)
    for t in sorted(q.keywords):
        df[t] = sum(1 for f in facts if any(words_match(t, k) for k in f.keywords))
    # a parameter's name in the question is a strong topic signal, however many facts mention it
    param_words = {w for p in sheet.params for w in keywords(p)} | {stem(p.lower()) for p in sheet.params}
    for fact in facts:
        if strict_kinds and fact.kind not in strict_kinds and \
                not ("raise" in strict_kinds and {"error", "invalid"} & fact.tags):
            continue
        if fact.polarity == "no" and fact.kind not in strict_kinds:
            continue  # "no rounding needed" answers only a question about rounding
        if required and not strict_kinds and not (required & fact.tags) and not (q.numbers - {0.0}) & fact.numbers \
                and fact is not hit:
            continue
        score = 0.0
        for t in sorted(q.keywords):
            if df[t] and any(words_match(t, k) for k in fact.keywords):
                weight = math.log((n + 1) / (df[t] + 0.5))
                if t in param_words:
                    weight = max(weight, 1.25)
                if fact.kind == "signature" and "signature" not in q.intents:
                    weight *= 0.3  # the function's name echoes the topic; that is not a question about it
                score += weight
        score += 2.0 * sum(1 for x in q.numbers if any(math.isclose(x, y) for y in fact.numbers))
        score += 2.0 * len(q.strings & fact.strings)
        score += 1.5 * sum(1 for s in fact.strings if s and s in lower_words and s not in q.strings)
        for intent in sorted(q.intents):
            for target, bonus in _INTENT_BONUS.get(intent, ()):
                if (target.startswith("#") and target[1:] in fact.tags) or target == fact.kind:
                    if intent == "signature" and fact.kind == "signature" and q.intents & {"type", "values"}:
                        bonus = 1.0
                    score += bonus
                    break
        if required & fact.tags:
            score += 2.0
        if fact.kind == "param" and focus and (fact.text.startswith(focus + " ") or fact.text.startswith(f"for {focus},")):
            score += 2.5
        if strict_kinds:
            score += 2.0
        if fact is hit:
            score += 2.5
        score += 0.01 * fact.priority
        if fact.polarity == "no":
            score -= 0.5
        scored.append((score, fact))
    scored.sort(key=lambda sf: -sf[0])
    return scored


def yes_no(q: Question, fact: Fact, sheet: FactSheet) -> str | None:
    """"Yes"/"No" when the facts settle it, else None (then the fact speaks for itself).

    "No" needs a number or value the person never uses anywhere; "Yes" needs all of them in
    this fact. A correct summary spanning several facts gets no verdict, never a wrong "No".
    """
    if fact.polarity == "no":
        return "No"
    if fact.kind == "round" and q.numbers:
        return "Yes" if q.numbers & fact.numbers else "No"
    known_numbers = set(sheet.numbers).union(*(f.numbers for f in sheet.facts))
    known_strings = set(sheet.strings).union(*(f.strings for f in sheet.facts))
    asked = {x for x in q.numbers if x not in (0.0, 1.0) or x in fact.numbers}
    if asked and fact.numbers:
        if all(any(math.isclose(a, b) for b in fact.numbers) for a in asked):
            return "Yes"
        if any(not any(math.isclose(a, b) for b in known_numbers) for a in asked):
            return "No"
        return None
    if q.strings and fact.strings:
        if q.strings <= fact.strings:
            return "Yes"
        return "No" if q.strings - known_strings else None
    if fact.kind in ("shape", "param", "result"):
        asked_types = {_TYPE_WORDS[w] for w in q.words if w in _TYPE_WORDS}
        has = _fact_type(fact.text)
        if len(asked_types) == 1 and has:
            if has == "number" and asked_types == {"int"}:
                return None  # "a number" does not say whether it is whole
            return "Yes" if asked_types == {has} or (has == "int" and asked_types == {"number"}) else "No"
    return None


_TYPE_WORDS = {"dict": "dict", "dictionary": "dict", "dictionaries": "dict", "dicts": "dict", "list": "list",
               "lists": "list", "array": "list", "tuple": "tuple", "tuples": "tuple", "pair": "tuple",
               "string": "text", "strings": "text", "str": "text", "text": "text", "number": "number",
               "numbers": "number", "float": "number", "integer": "int", "int": "int", "boolean": "bool",
               "bool": "bool"}


def _fact_type(text: str) -> str | None:
    """The value type a shape/parameter fact states ("... is a list of dicts" -> "list")."""
    m = re.search(r"(?:give back|is|are (?:both|all)) (a dict|a list|a pair|a tuple|text|one of these texts|"
                  r"a whole number|a number|numbers|true or false)", text)
    if not m:
        return None
    return {"a dict": "dict", "a list": "list", "a pair": "tuple", "a tuple": "tuple", "text": "text",
            "one of these texts": "text", "a whole number": "int", "a number": "number", "numbers": "number",
            "true or false": "bool"}[m.group(1)]


_NUM = r"(-?\d+(?:\.\d+)?)"
#: Words standing for a value: a representative number meets exactly the conditions the word does.
_VALUE_WORDS = {"zero": 0.0, "no": 0.0, "negative": -1.0}


def param_values(text: str, params: list[str], func_name: str | None) -> dict[str, float]:
    """The numbers a question gives parameters: ``people is 0``, ``people = 0``, ``0 people``,
    ``zero people``, ``people is negative``, or a call ``f(20, 0, 'ok')`` (by position and keyword)."""
    values: dict[str, float] = {}
    if func_name:
        for m in re.finditer(rf"\b{re.escape(func_name)}\s*\(", text):
            values.update(_call_values(text[m.start():], params))
    for p in params:
        name = rf"[`'\"]?{re.escape(p)}[`'\"]?"
        m = re.search(rf"\b{name}\s*(?:is|=|==|equals|of|is equal to)\s*{_NUM}(?![\w.])", text, re.IGNORECASE) or \
            re.search(rf"(?<![\w.]){_NUM}\s+{name}\b", text, re.IGNORECASE)
        if m:
            values.setdefault(p, float(m.group(1)))
            continue
        m = re.search(rf"\b{name}\s+(?:is\s+|are\s+)?(zero|negative)\b", text, re.IGNORECASE) or \
            re.search(rf"\b(zero|no|negative)\s+{name}\b", text, re.IGNORECASE)
        if m:
            values.setdefault(p, _VALUE_WORDS[m.group(1).lower()])
    return values


def _call_values(text: str, params: list[str]) -> dict[str, float]:
    """Number arguments of the call at the start of ``text``, by parameter name."""
    depth, end = 0, -1
    for i, ch in enumerate(text[:2000]):
        depth += ch == "("
        depth -= ch == ")"
        if ch == ")" and depth == 0:
            end = i
            break
    if end < 0:
        return {}
    try:
        node = ast.parse(text[: end + 1], mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    if not isinstance(node, ast.Call):
        return {}
    out: dict[str, float] = {}
    named = [(p, a) for p, a in zip(params, node.args) if not isinstance(a, ast.Starred)]
    named += [(k.arg, k.value) for k in node.keywords if k.arg in params]
    for p, arg in named:
        v = const_key(arg)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[p] = float(v)
    return out


def _param_focus(text: str, params: list[str]) -> str | None:
    """The parameter a question is about when it asks what a parameter is ("What is `plan`?")."""
    for p in params:
        pat = rf"(what|which)\s+(is|are|does|should)\s+(the\s+)?[`'\"]?{re.escape(p)}[`'\"]?(\s+(parameter|argument|input))?" \
              rf"(\s+(for|mean|represent|look like|contain|be))?\s*\??\s*$"
        if re.search(pat, text.strip(), re.IGNORECASE) or \
                re.search(rf"(format|type|shape|structure) of [`'\"]?{re.escape(p)}\b", text, re.IGNORECASE) or \
                re.search(rf"\b(is|are|should)\s+[`'\"]?{re.escape(p)}[`'\"]?\s+(be\s+)?(a|an|always|just|only)?\s*"
                          r"(list|dict|dictionary|string|str|text|number|integer|int|float|tuple|bool|boolean)",
                          text, re.IGNORECASE):
            return p
    return None


__all__ = ["MIN_SCORE", "STATEMENT_SCORE", "param_values", "rank_facts", "yes_no"]
