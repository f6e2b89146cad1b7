"""The offline backend human simulator: answers like the person who wants the function, no model.

WHY: RL on ColBench needs millions of simulator replies; a 70B model per reply is out of reach
offline. This simulator reads the hidden reference once (:mod:`.facts`, static analysis only,
worded by :mod:`.speech`), understands the agent's message (:mod:`.question`) and answers with
the one or two facts that fit best, in plain words and at most two sentences. When nothing in the
reference answers the question it says it does not know, so an agent cannot learn to trust
invented details. It never shows the reference or the hidden tests, and its replies depend only
on (seed, episode seed, task, dialogue).
"""

from __future__ import annotations

import ast
import math
import random
import re
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from colbench_gym.simulators.base import Dialogue, HumanSimulator
from colbench_gym.simulators.facts import Fact, FactSheet, extract_facts
from colbench_gym.simulators.question import (
    Message,
    Question,
    analyse,
    keywords,
    make_question,
    stem,
    words_match,
)
from colbench_gym.tasks.records import BackendTask

#: Below this relevance score a fact does not answer the question ("I don't know").
MIN_SCORE = 1.2
#: A message that asks nothing is answered only when it clearly names a topic ("Plan prices.").
STATEMENT_SCORE = 2.5

_IDK = (
    "I don't know, sorry.",
    "I don't know; I haven't thought about that.",
    "Hmm, I don't know about that.",
    "I don't know, to be honest.",
)
# a little seeded variety in how a person starts an answer (facts are never changed)
_OPENERS = ("", "", "", "", "Sure, ", "Well, ", "OK, ")
_IDK_REST = ("I don't know about the rest.", "The other part I don't know.")
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
_CODE_OK = ("That looks like what I had in mind, as far as I can tell.",
            "As far as I can tell, that matches what I want.")
_CODE_FIX = ("Almost, but {fact}", "Not quite: {fact}", "One thing is off: {fact}")
_CODE_BAD = ("I can't make sense of that code; could you show the whole function?",)
_TESTS = ("I don't have test cases to share, but ask me how it should behave.",)

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


class OfflineBackendSimulator(HumanSimulator):
    """A model-free person for ColBench backend tasks.

    Parameters
    ----------
    seed:
        Base seed for the (small) variation in phrasing; replies are a pure function of
        ``(seed, episode seed, task, dialogue)``.
    max_chars:
        Soft cap on a reply; the environment cuts at 400 characters anyway.
    nudges:
        When the agent asks nothing (greets, or states a plan), suggest topics it has not asked
        about yet (default) or just acknowledge.
    max_facts:
        Facts per reply: 2 (default, the paper's two sentences) or 1 (a terser person).
    """

    kind = "backend"

    def __init__(self, seed: int | None = 0, max_chars: int = 380, nudges: bool = True, max_facts: int = 2):
        if not isinstance(max_chars, int) or max_chars < 80:
            raise ValueError(f"max_chars must be an int of at least 80, got {max_chars!r}")
        if max_facts not in (1, 2):
            raise ValueError(f"max_facts must be 1 or 2 (a reply is at most two sentences), got {max_facts!r}")
        self.max_facts = max_facts
        self.seed = 0 if seed is None else int(seed)
        self.max_chars = max_chars
        self.nudges = bool(nudges)
        self._episode_seed: int | None = None
        self._cache: OrderedDict[str, FactSheet] = OrderedDict()

    # ------------------------------------------------------------------ interface
    def reset(self, task: Any, *, seed: int | None = None) -> None:
        self._episode_seed = seed
        self.facts_for(task)

    def respond(self, task: Any, dialogue: Dialogue, **context: Any) -> str:
        task = _as_task(task)
        sheet = self.facts_for(task)
        last = next((m.get("content", "") for m in reversed(dialogue or []) if m.get("role") == "assistant"), None)
        history = [m.get("content", "") or "" for m in (dialogue or []) if m.get("role") == "user"]
        rng = random.Random(f"{self.seed}|{self._episode_seed}|{task.task_id}|{len(dialogue or [])}|{last}")
        if last is None or not str(last).strip():
            return self._nudge(sheet, history, rng)
        try:
            msg = analyse(str(last))
            reply = self._reply(sheet, msg, history, rng)
        except Exception as exc:  # noqa: BLE001 - a rollout must survive a simulator bug
            warnings.warn(f"offline simulator could not answer ({type(exc).__name__}: {exc}); replying 'I don't know'",
                          RuntimeWarning, stacklevel=2)
            reply = rng.choice(_IDK)
        return self._fit(reply, sheet)

    def facts_for(self, task: Any) -> FactSheet:
        """The facts this simulator knows about ``task`` (cached per task)."""
        task = _as_task(task)
        key = task.task_id
        sheet = self._cache.get(key)
        if sheet is None:
            sheet = extract_facts(task.ground_truth, task.problem_description, task.test_cases.values())
            self._cache[key] = sheet
            if len(self._cache) > 512:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return sheet

    def __repr__(self) -> str:
        return f"OfflineBackendSimulator(seed={self.seed})"

    # ------------------------------------------------------------------ replies
    def _reply(self, sheet: FactSheet, msg: Message, history: list[str], rng: random.Random) -> str:
        if msg.questions:
            answered = self._answer(sheet, msg.questions, history, rng)
            if answered:
                return answered
            if msg.code:
                return self._code_feedback(sheet, msg.code, rng)
            return rng.choice(_IDK)
        if msg.code:
            return self._code_feedback(sheet, msg.code, rng)
        if not msg.greeting and len(msg.text) <= 300:
            # "Plan prices." from a terse agent: a person answers what is clearly meant
            q = make_question(msg.text)
            ranked = self.rank(sheet, q)
            if q.keywords and ranked and ranked[0][0] >= STATEMENT_SCORE:
                return self._say_fact(q, ranked[0][1], sheet)
        return self._nudge(sheet, history, rng, greeting=bool(re.match(r"\s*(hi|hello|hey|good (morning|afternoon|evening))\b", msg.text, re.IGNORECASE)))

    def _answer(self, sheet: FactSheet, questions: list[Question], history: list[str],
                rng: random.Random) -> str | None:
        picks: list[tuple[float, int, str, Fact | None]] = []  # (score, question index, text, fact)
        unanswered = 0
        for qi, q in enumerate(questions):
            if "tests" in q.intents and not q.keywords - {"test", "expect", "output", "hidden", "unit"}:
                picks.append((5.0, qi, rng.choice(_TESTS), None))
                continue
            ranked = self.rank(sheet, q)
            if not ranked or ranked[0][0] < MIN_SCORE:
                if q.keywords:
                    unanswered += 1
                continue
            told = " ".join(history)
            # a repeated question gets the next best fact when the best one was already told
            ranked = sorted(ranked, key=lambda sf: -(sf[0] - (1.2 if sf[1].text in told else 0.0)))
            if ranked[0][0] < MIN_SCORE:
                ranked = self.rank(sheet, q)
            taken = {p[2] for p in picks}
            if len(ranked) > 1 and ranked[0][1].text in taken and ranked[1][0] >= MIN_SCORE:
                ranked = ranked[1:]  # an earlier question already gets that fact
            best_score, best = ranked[0]
            picks.append((best_score, qi, self._say_fact(q, best, sheet), best))  # only the best gets a verdict
            if len(questions) == 1 and len(ranked) > 1:
                s2, second = ranked[1]
                pair = {best.kind, second.kind}
                if s2 >= max(MIN_SCORE, 0.75 * best_score) and second.text != best.text and \
                        not pair <= {"result", "shape"} and not pair <= {"param", "params"} and \
                        len(best.text) + len(second.text) < self.max_chars - 10:
                    picks.append((s2, qi, second.text, second))
        if not picks:
            return None
        chosen: list[tuple[float, int, str, Fact | None]] = []
        seen: set[str] = set()
        # the agent's own order says what matters most: answer its first answerable questions
        for pick in sorted(picks, key=lambda p: (p[1], -p[0])):
            if pick[2] in seen:
                continue
            if len(chosen) == self.max_facts:
                break
            if chosen and sum(len(c[2]) for c in chosen) + len(pick[2]) + 1 > self.max_chars:
                continue
            chosen.append(pick)
            seen.add(pick[2])
        chosen.sort(key=lambda p: p[1])
        parts = [c[2] for c in chosen]
        if unanswered and len(parts) == 1 and self.max_facts == 2 and len(parts[0]) < self.max_chars - 40:
            parts.append(rng.choice(_IDK_REST))
        opener = rng.choice(_OPENERS)
        if opener and not parts[0].startswith(("Yes", "No", "I ")) and \
                sum(len(p) + 1 for p in parts) + len(opener) <= self.max_chars:
            parts[0] = opener + _lower_first(parts[0], sheet)
        return " ".join(parts)

    def rank(self, sheet: FactSheet, q: Question) -> list[tuple[float, Fact]]:
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
            if required and not strict_kinds and not (required & fact.tags) and not (q.numbers - {0.0}) & fact.numbers:
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
            score += 0.01 * fact.priority
            if fact.polarity == "no":
                score -= 0.5
            scored.append((score, fact))
        scored.sort(key=lambda sf: -sf[0])
        return scored

    def _say_fact(self, q: Question, fact: Fact, sheet: FactSheet) -> str:
        verdict = self._yes_no(q, fact, sheet) if q.yes_no else None
        if verdict:
            return f"{verdict}, {_lower_first(fact.text, sheet)}"
        return fact.text

    @staticmethod
    def _yes_no(q: Question, fact: Fact, sheet: FactSheet) -> str | None:
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

    def _code_feedback(self, sheet: FactSheet, code: str, rng: random.Random) -> str:
        tree = _parse_lenient(code)
        if tree is None:
            return rng.choice(_CODE_BAD)
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        signature = next((f for f in sheet.facts if f.kind == "signature"), None)
        if sheet.func_name and signature is not None:
            mine = next((d for d in defs if d.name == sheet.func_name), None)
            n_args = len(mine.args.posonlyargs) + len(mine.args.args) if mine else -1
            if mine is None or (n_args < len(sheet.params) and not mine.args.vararg):
                return rng.choice(_CODE_FIX).format(fact=_lower_first(signature.text, sheet))
        nums: set[float] = set()
        strs: set[str] = set()
        calls: set[str] = set()
        names: set[str] = set()
        raises = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Raise):
                raises = True
            if isinstance(node, ast.Constant):
                if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                    v = float(node.value)
                    nums.add(v)
                    if 0 < abs(v) < 1:
                        nums.add(v * 100)  # 0.08 in the code for "8%"
                    elif abs(v) > 1:
                        nums.add(v / 100)
                elif isinstance(node.value, str):
                    strs.add(node.value.lower())
            elif isinstance(node, ast.Call):
                f = node.func
                calls.add(f.id if isinstance(f, ast.Name) else getattr(f, "attr", ""))
            elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                calls.add("round")
        ranked = sorted(sheet.facts, key=lambda f: -f.priority)
        # a parameter the reference relies on but the draft never reads: its rule is missing
        mine_fn = next((d for d in defs if d.name == sheet.func_name), None)
        used = {n.id for n in ast.walk(mine_fn) if isinstance(n, ast.Name)} if mine_fn else names
        for p in sheet.params:
            if p in used:
                continue
            about = [f for f in ranked if f.polarity != "no" and f.kind not in ("signature", "param", "params", "doc")
                     and re.search(rf"(?<![\w']){re.escape(p)}(?![\w'])", f.text)]
            if about:
                return rng.choice(_CODE_FIX).format(fact=_lower_first(about[0].text, sheet))
        for fact in ranked:
            if fact.polarity == "no" or fact.kind in ("signature", "doc"):
                continue
            if fact.kind == "round" and not ({"round", "floor", "ceil", "int"} & calls):
                return rng.choice(_CODE_FIX).format(fact=_lower_first(fact.text, sheet))
            if "it should raise" in fact.text and not raises:
                return rng.choice(_CODE_FIX).format(fact=_lower_first(fact.text, sheet))
            missing_n = [x for x in fact.numbers if x not in (0.0, 1.0) and not any(math.isclose(x, y) for y in nums)]
            missing_s = [s for s in fact.strings if s.strip() and s not in strs and len(s) <= 40]
            if fact.kind in ("param", "shape", "round"):
                missing_n = []
            if missing_n or missing_s:
                return rng.choice(_CODE_FIX).format(fact=_lower_first(fact.text, sheet))
        return rng.choice(_CODE_OK)

    def _nudge(self, sheet: FactSheet, history: list[str], rng: random.Random, greeting: bool = False) -> str:
        if not self.nudges or not sheet.facts:
            return rng.choice(_DONE) if sheet.facts else rng.choice(_IDK)
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

    def _fit(self, reply: str, sheet: FactSheet) -> str:
        """Keep replies short and free of reference lines."""
        for line in sheet.source_lines:
            if len(line) >= 12 and line in reply and _CODE_LINE.search(line):
                reply = reply.replace(line, "that")  # never echo code (docstring prose may be paraphrased)
        if len(reply) <= self.max_chars:
            return reply
        cut = reply[: self.max_chars]
        for sep in ("; ", ", "):
            idx = cut.rfind(sep)
            if idx > self.max_chars // 2:
                return cut[:idx].rstrip() + "."
        return cut.rstrip() + "."


_CODE_LINE = re.compile(r"[=()\[\]{}]|^(if|for|while|return|def|elif|else|try|except|with|import|from|raise)\b")


def _parse_lenient(code: str) -> ast.Module | None:
    """Parse the code an agent shows the way a reader would: ignore stray ``` markers and any
    trailing prose that is not Python. Only parsed, never run."""
    lines = [ln for ln in code[:50000].splitlines() if not re.fullmatch(r"\s*```[\w+-]*\s*", ln)]
    for end in range(len(lines), max(len(lines) - 60, 0), -1):
        try:
            return ast.parse("\n".join(lines[:end]))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def _as_task(task: Any) -> BackendTask:
    if isinstance(task, BackendTask):
        return task
    if isinstance(task, Mapping):
        return BackendTask.from_record(task)
    raise TypeError(f"the offline backend simulator needs a BackendTask or a backend record, got {type(task).__name__}")


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


def _lower_first(text: str, sheet: FactSheet) -> str:
    first = re.split(r"[\s,;']", text, maxsplit=1)[0]
    if not first or first == "I" or text.startswith("'") or first in sheet.params or first == sheet.func_name:
        return text
    return text[0].lower() + text[1:]


__all__ = ["OfflineBackendSimulator"]
