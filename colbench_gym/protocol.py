"""The dialogue protocol of ColBench, as the paper defines it, in one place.

An agent turn is free text. Text before an ``OUTPUT:`` marker is private thought and is never
shown to the human simulator; ``I WANT TO ANSWER:`` ends the dialogue and what follows is the
final answer. Backend answers are Python source (Markdown code fences are stripped); frontend
turns may carry one ``<html>…</html>`` (or ``<body>…</body>``) snippet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A dialogue in chat-template form: ``[{"role": "user" | "assistant" | "system", "content": str}, ...]``.
#: The one message type of both packages (environments, trajectories, policies and trainers).
Messages = list[dict[str, str]]

#: Agent rounds per episode in the paper.
MAX_TURNS = 10
ANSWER_MARKER = "I WANT TO ANSWER:"
OUTPUT_MARKER = "OUTPUT:"
#: Simulator replies are cut to these many characters (paper: 400 backend, 1000 frontend).
BACKEND_REPLY_CHARS = 400
FRONTEND_REPLY_CHARS = 1000

# Linear time on any text an agent writes (a quadratic pattern let one 200k-character answer hold
# the trusted process for a minute): the fence's language tag is optional as a whole, so the two
# runs of blanks around it never compete for the same characters.
_FENCE_RE = re.compile(r"```[ \t]*(?:([A-Za-z0-9_+-]+)[ \t]*)?\n(.*?)(?:\n[ \t]*```|\Z)", re.S)
_HTML_OPEN_RE = re.compile(r"<html\b", re.I)
_HTML_CLOSE_RE = re.compile(r"</html\s*>", re.I)
_BODY_OPEN_RE = re.compile(r"<body\b", re.I)
_BODY_CLOSE_RE = re.compile(r"</body\s*>", re.I)


@dataclass(frozen=True)
class ParsedAction:
    """An agent turn split into its protocol parts."""

    raw: str
    thought: str
    message: str  # what the simulator sees (text after OUTPUT:, or the whole turn)
    is_answer: bool
    answer: str  # text after I WANT TO ANSWER: ('' unless is_answer)


def parse_action(text: str) -> ParsedAction:
    """Split a raw agent turn into thought, visible message and (optional) final answer."""
    if not isinstance(text, str):
        raise TypeError(f"an action must be a str, got {type(text).__name__}")
    thought, message = "", text
    idx = text.find(OUTPUT_MARKER)
    if idx >= 0:
        thought, message = text[:idx].strip(), text[idx + len(OUTPUT_MARKER):]
    message = message.strip()
    aidx = message.find(ANSWER_MARKER)
    if aidx < 0:
        # The marker may sit in the thought part when the model forgets OUTPUT: ordering.
        aidx_raw = text.find(ANSWER_MARKER)
        if aidx_raw >= 0 and idx >= 0 and aidx_raw < idx:
            return ParsedAction(text, "", text.strip(), True, text[aidx_raw + len(ANSWER_MARKER):].strip())
        return ParsedAction(text, thought, message, False, "")
    return ParsedAction(text, thought, message, True, message[aidx + len(ANSWER_MARKER):].strip())


def extract_code(answer: str) -> str:
    """Return the Python source in a final answer, with Markdown code fences removed.

    With several fenced blocks, Python-tagged (or untagged) blocks are joined in order, so an
    answer that puts a helper and the main function in separate blocks still grades.
    """
    blocks = _FENCE_RE.findall(answer)
    if not blocks:
        return answer.strip("\n").strip("`")
    py = [body for lang, body in blocks if lang.lower() in ("", "python", "py", "python3")]
    return "\n\n".join(py or [b for _, b in blocks]).strip("\n")


def extract_html(text: str) -> str | None:
    """Return the first ``<html>…</html>`` (else ``<body>…</body>``) snippet in ``text``."""
    return _first_element(text, _HTML_OPEN_RE, _HTML_CLOSE_RE) or _first_element(text, _BODY_OPEN_RE, _BODY_CLOSE_RE)


def _first_element(text: str, opening: re.Pattern[str], closing: re.Pattern[str]) -> str | None:
    """From the first opening tag to the first closing tag after it: what a lazy
    ``<tag\\b.*?</tag\\s*>`` search finds, in one pass (if the first opening has no closing tag
    after it, no later one has; the lazy pattern retried every opening, quadratic in their number)."""
    start = opening.search(text)
    if start is None:
        return None
    end = closing.search(text, start.end())
    return text[start.start():end.end()] if end else None


def extract_answer_html(answer: str) -> str | None:
    """The page in a frontend final answer: the first ``<html>``/``<body>`` snippet, else the whole
    answer when it looks like markup (agents often answer with a bare fragment), else None.

    The environment scores and ``colbench evaluate frontend`` re-scores answers with this one rule.
    """
    html = extract_html(answer)
    if html is not None:
        return html
    text = answer.strip().strip("`")
    if text.lower().startswith("html\n"):
        text = text[5:]
    return text if text.lstrip().startswith("<") and ">" in text else None


def truncate(text: str, limit: int) -> str:
    """Cut a simulator reply to ``limit`` characters (the paper's reply caps)."""
    return text if len(text) <= limit else text[:limit]
