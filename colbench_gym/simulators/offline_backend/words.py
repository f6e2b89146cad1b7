"""Word normalisation shared by both sides of the match: the facts and the agent's questions.

WHY a module of its own: a question matches a fact when they share content words, so both
sides must normalise words the same way -- identifiers split (``monthlyFee`` -> "monthly fee"),
stop words dropped, suffixes stripped ("prices" and "price" meet). The fact sheet
(:mod:`.reader`) and the question side (:mod:`.question`) both use :func:`keywords`.
"""

from __future__ import annotations

import re

#: A word or a number, as the tokenizer of both sides sees it.
WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*|\d+(?:\.\d+)?")


_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "of", "to", "in", "on", "at", "by", "for", "from", "with", "without", "into", "onto", "about", "as", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "done", "doing", "have", "has", "had", "having", "can", "could", "shall", "should", "will", "would", "may", "might", "must", "i", "me", "my", "mine", "we", "us", "our", "you", "your", "yours", "it", "its", "it's", "this", "that", "these", "those", "there", "here", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether", "not", "no", "yes", "so", "such", "than", "too", "very", "just", "also", "only", "any", "all", "each", "every", "some", "both", "either", "neither", "more", "most", "less", "least", "much", "many", "few", "same", "own", "up", "down", "out", "over", "under", "again", "further", "once", "please", "thanks", "thank", "ok", "okay", "sure", "hi", "hello", "hey", "dear", "let", "lets", "let's", "get", "got", "give", "gives", "given", "tell", "know", "knows", "want", "wants", "need", "needs", "like", "likes", "make", "makes", "made", "use", "used", "using", "uses", "one", "ones", "thing", "things", "something", "anything", "everything", "way", "ways", "kind", "kinds", "sort", "function", "functions", "code", "python", "program", "write", "writing", "written", "implement", "implementation", "method", "def", "return", "returns", "returned", "value", "values", "question", "questions", "clarify", "clarification", "mean", "means", "meant", "exactly", "specific", "specifically", "actually", "really", "right", "correct", "would", "wouldn't", "should", "shouldn't", "i'd", "i'll", "i'm", "i've", "you'd", "you'll", "you're", "don't", "doesn't", "isn't", "aren't", "can't", "won't", "go", "going", "happen", "happens", "case", "cases", "example", "examples", "their", "them", "they", "result", "results", "output", "outputs"]
)
# "value", "case" and "example" are stop words for topic matching but drive intents in :mod:`.question`.


def stem(word: str) -> str:
    """Cheap suffix stripping: enough that "prices"/"price" and "rounded"/"round" meet."""
    w = word.lower()
    if w.isdigit():
        return w
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix) and not w.endswith("ss"):
            return w[: -len(suffix)]
    return w


def split_identifier(name: str) -> list[str]:
    """``monthly_fee`` / ``monthlyFee`` / ``MONTHLY_FEE`` -> ``["monthly", "fee"]``."""
    parts: list[str] = []
    for chunk in re.split(r"[_\W]+", name):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL_RE.split(chunk) if p)
    return parts


def keywords(text: str) -> set[str]:
    """Content words of ``text`` (identifiers split, stop words dropped, stemmed)."""
    out: set[str] = set()
    for raw in WORD_RE.findall(text):
        for part in split_identifier(raw) if not raw[0].isdigit() else [raw]:
            if part in STOPWORDS or (len(part) < 2 and not part.isdigit()):
                continue
            if part.isdigit() or re.fullmatch(r"\d+\.\d+", part):
                continue  # numbers are matched separately, by value
            out.add(stem(part))
    return out


def words_match(a: str, b: str) -> bool:
    """Two stems name the same thing: equal, or one a short extension of the other."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) < 4:
        return False
    common = 0
    for x, y in zip(short, long_):
        if x != y:
            break
        common += 1
    return common >= max(4, len(short) - 2) and len(long_) - common <= 4


__all__ = ["STOPWORDS", "WORD_RE", "keywords", "split_identifier", "stem", "words_match"]
