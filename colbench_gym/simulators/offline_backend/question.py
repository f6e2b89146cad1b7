"""Understanding the agent's message: which questions it asks, about what, and of which kind.

WHY a module of its own: matching a question against the facts needs more than its words
(:mod:`.words`): splitting a message into questions, spotting yes/no questions, numbers and
quoted values to check, code the agent shows, and the *intent* of a question (asking for the
output shape, rounding, edge cases, ...), which decides what kind of fact a person would answer
with (:mod:`.matching`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from colbench_gym.simulators.offline_backend.words import WORD_RE, keywords

_NUMBER_RE = re.compile(r"(?<![A-Za-z_\d.])-?\d+(?:\.\d+)?(?:\s*(%|percent\b|per ?cent\b))?")


_QUOTED_RE = re.compile(r"'([^'\n]{1,60})'|\"([^\"\n]{1,60})\"|`([^`\n]{1,60})`")


# The info string after the opening fence is bounded: unbounded, each of 20,000 backticks on one
# line scanned to the line's end (1.3 s a turn at the message cap); bounded, linear.
_FENCE_RE = re.compile(r"```[^\n]{0,200}\n.*?(?:```|\Z)", re.DOTALL)


# Intent -> trigger words (stems) and phrases. Intents steer which *kind* of fact answers.
_INTENT_WORDS: dict[str, tuple[str, ...]] = {
    "output": ("return", "output", "result", "produce", "outcome", "give back", "gives back",
               "send back", "format of the", "shape", "contain", "include", "summary"),
    "signature": ("parameter", "argument", "param", "signature", "what are the inputs", "which inputs",
                  "what inputs", "call it",
                  "called", "name the function", "function name", "name of the function",
                  "naming", "take as", "accept", "arguments"),
    "type": ("type", "format", "input", "inputs", "integer", "int", "float", "string", "str", "list", "dict",
             "dictionary", "tuple", "boolean", "bool", "structure", "look like", "datatype"),
    "round": ("round", "decimal", "precision", "digit", "places", "truncate"),
    "edge": ("edge", "empty", "zero", "negative", "none", "null", "missing", "special",
             "invalid", "unknown", "corner", "nothing", "no items", "not found", "absent",
             "exceed", "above", "below", "over", "under", "beyond", "outside"),
    "unknown": ("something else", "don't know", "do not know", "not one of", "unknown", "unrecognized",
                "unrecognised", "other value", "anything else", "not listed", "not in the list", "any other", "other than", "isn't one", "is not one", "none of", "unexpected"),
    "error": ("error", "exception", "raise", "throw", "invalid", "fail", "crash", "valid"),
    "numbers": ("value", "values", "number", "numbers", "constant", "constants", "threshold", "thresholds",
                "amount", "amounts", "points", "weights", "cutoff", "cutoffs", "limit", "limits", "exact"),
    "order": ("sort", "order", "ascending", "descending", "rank", "arrange", "highest first", "lowest first",
              "largest first", "smallest first", "alphabetical"),
    "tie": ("tie", "ties", "same", "equal", "draw", "tied"),
    "how": ("how", "calculate", "calculation", "compute", "computation", "formula", "determine", "figure",
            "logic", "rule", "rules", "count"),
    "handle": ("handle", "treat", "deal with", "process", "work"),
    "values": ("what are", "price", "rate", "cost", "fee", "amount", "value", "much",
               "threshold", "limit", "cutoff", "cut-off", "percentage", "percent", "discount",
               "bonus", "penalty", "tax", "charge", "weight", "factor", "multiplier", "score",
               "point", "tier", "level", "category", "categories", "option", "mapping", "table",
               "list of", "which"),
    "condition": ("when", "if ", "happen", "case", "condition", "situation", "rule", "scenario",
                  "what about"),
    "purpose": ("purpose", "goal", "what is it for", "what does it do", "supposed to do",
                "point of", "trying to", "use case", "summary", "summarize", "describe"),
    "example": ("example", "sample", "instance", "test", "demonstrate"),
    "tests": ("test case", "test cases", "unit test", "hidden test", "expected output"),
}


_YESNO_START = ("is ", "are ", "should ", "does ", "do ", "can ", "will ", "would ", "could ",
                "shall ", "must ", "has ", "have ", "did ", "was ", "were ", "may ", "am ")


_REQUEST_VERBS = ("tell", "explain", "clarify", "describe", "specify", "provide", "share", "give",
                  "let me know", "list", "confirm", "elaborate", "detail", "say", "show")


_QUESTION_WORDS = ("what", "which", "how", "when", "why", "where", "who", "whose", "whom")


_GREETINGS = ("hi", "hello", "hey", "good morning", "good afternoon", "greetings", "thanks",
              "thank you", "great", "sounds good", "perfect", "got it", "understood", "ok", "okay")


def numbers_in(text: str) -> set[float]:
    """Numbers the text mentions; "8%" also counts as 0.08 (rates are stored as fractions)."""
    out: set[float] = set()
    for m in _NUMBER_RE.finditer(text):
        num = m.group(0)
        value = float(re.match(r"-?\d+(?:\.\d+)?", num).group(0))  # type: ignore[union-attr]
        out.add(value)
        if m.group(1) or "%" in num:
            out.add(round(value / 100, 10))
    for word, value in _NUMBER_WORDS.items():
        if re.search(rf"\b{word}\b", text, re.IGNORECASE):
            out.add(value)
    return out


_NUMBER_WORDS = {"zero": 0.0, "one": 1.0, "two": 2.0, "three": 3.0, "four": 4.0, "five": 5.0,
                 "six": 6.0, "seven": 7.0, "eight": 8.0, "nine": 9.0, "ten": 10.0, "twelve": 12.0,
                 "twenty": 20.0, "hundred": 100.0, "half": 0.5, "double": 2.0, "twice": 2.0}


def quoted_in(text: str) -> set[str]:
    """Quoted values in the text, lower-cased (``'basic'``, ``"pro"``, ```x```)."""
    return {next(g for g in m.groups() if g is not None).lower() for m in _QUOTED_RE.finditer(text)}


@dataclass
class Question:
    """One question (or request) from the agent's message."""

    text: str
    keywords: set[str]
    numbers: set[float]
    strings: set[str]
    intents: set[str]
    yes_no: bool
    words: set[str] = field(default_factory=set)  # raw lower-case words (for loose value matching)


@dataclass
class Message:
    """The agent's visible message, understood."""

    text: str
    questions: list[Question]
    code: str | None  # source the agent showed (fenced block or a bare ``def``), if any
    greeting: bool


def _intents(lower: str) -> set[str]:
    found = set()
    padded = f" {lower} "
    for intent, triggers in _INTENT_WORDS.items():
        for trig in triggers:
            if " " in trig.strip() or not trig.isalpha():
                if trig in padded:
                    found.add(intent)
                    break
            elif re.search(rf"\b{re.escape(trig)}(s|es|ed|d|ing|ly)?\b", lower):  # "int" is not "interval"
                found.add(intent)
                break
    return found


_CONFIRM_RE = re.compile(r"(,\s*(right|correct|yes|no|ok|okay)\s*\?$)|\b(is|was) (that|this|it) (right|correct|ok|okay)"
                         r"|\bam i (right|correct)|\bdoes (that|this) (sound|look) (right|correct|good)"
                         r"|^(right|correct|ok|okay)\s*\?$|\bdid i (get|understand) (that|this|it|everything)")


def _is_yes_no(lower: str) -> bool:
    stripped = lower.strip()
    if _CONFIRM_RE.search(stripped) or (re.search(r"\b(right|correct)\s*\?$", stripped)
                                        and not stripped.startswith(_QUESTION_WORDS)):
        return True
    s = lower.lstrip("-*0123456789.) ").strip()
    s = re.sub(r"^(so|and|also|ok|okay|great|thanks|just to confirm|to confirm)[,:]?\s+", "", s)
    if not s.startswith(_YESNO_START):
        return False
    # "could you tell me ..." is a request for information, not a yes/no question
    head = " ".join(s.split()[:4])
    return not any(v in head for v in _REQUEST_VERBS)


_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|etc|vs|approx|incl|mr|mrs|ms|dr|no)\.", re.IGNORECASE)


def _split_sentences(text: str) -> list[str]:
    text = _ABBREVIATIONS.sub(lambda m: m.group(0)[:-1] + "\u2024", text)  # "e.g." does not end a sentence
    parts = [p.replace("\u2024", ".") for p in re.split(r"(?<=[?!.])\s+|\n+|(?<=\?)(?=\S)", text)]
    return [p.strip(" -*\t") for p in parts if p and p.strip(" -*\t")]


def _is_question(sentence: str) -> bool:
    lower = sentence.lower().lstrip("0123456789.) ")
    if "?" in sentence:
        return True
    first = lower.split()[0] if lower.split() else ""
    if first in _QUESTION_WORDS or lower.startswith(_REQUEST_VERBS):
        return True
    return bool(re.match(r"(please|could you|can you|would you|i need to know|i'd like to know|"
                         r"i would like to know|i want to know|i'm wondering|i wonder|"
                         r"let me know|do you)\b", lower))


def make_question(text: str) -> Question:
    lower = text.lower()
    return Question(text=text, keywords=keywords(text), numbers=numbers_in(text),
                    strings=quoted_in(text), intents=_intents(lower), yes_no=_is_yes_no(lower),
                    words={w.lower() for w in WORD_RE.findall(text)})


def find_code(text: str) -> str | None:
    """Code the agent shows: fenced blocks, else everything from the first ``def`` line."""
    blocks = [re.sub(r"^```[^\n]*\n|```$", "", b) for b in _FENCE_RE.findall(text)]
    m = re.search(r"^\s*def \w+\s*\(", text, re.MULTILINE)
    if blocks and (any("def " in b for b in blocks) or not m):
        return "\n".join(blocks)
    # no fence, or a lone closing fence after bare code: the code starts at the first def
    return text[m.start():] if m else None


def analyse(text: str) -> Message:
    """Split the agent's message into questions (with intents) and any code it shows."""
    text = text if isinstance(text, str) else str(text)
    text = text[:20000]
    code = find_code(text)
    prose = _FENCE_RE.sub(" ", text)
    if code and code in prose:
        prose = prose.replace(code, " ")  # questions live in the prose, not in the code
    sentences = _split_sentences(prose)
    questions = []
    for i, sent in enumerate(sentences):
        if len(questions) == 8:
            break  # nobody answers more than a handful of questions in one go
        if not _is_question(sent):
            continue
        # "So it's 20 for basic. Is that right?": the confirmation is about the sentence before it
        if i > 0 and _CONFIRM_RE.search(sent.lower()) and len(keywords(sent)) <= 1 and not _is_question(sentences[i - 1]):
            sent = f"{sentences[i - 1]} {sent}"
        questions.append(make_question(sent))
    lower = prose.lower().strip()
    greeting = not questions and (not lower or any(lower.startswith(g) for g in _GREETINGS))
    return Message(text=text, questions=questions[:8], code=code, greeting=greeting)


__all__ = ["Message", "Question", "analyse", "find_code", "make_question", "numbers_in", "quoted_in"]
