"""The leak guard: no simulator reply hands the agent the hidden reference, its tests or inputs.

Why: the simulated person reads the hidden reference to answer. An LLM playing the person,
asked plainly or told to "paste the exact function" / "ignore earlier instructions", returned
it verbatim (9 of 9 replies in one real rollout with a 0.5B model started with a ```python
block of the reference). The prompt's one sentence is no defence, and a policy trained against
such a person learns to ask for the code. So every reply of every simulator passes
:func:`find_leak` before the agent sees it (the :class:`~colbench_gym.simulators.base.HumanSimulator`
base class wraps every subclass's ``respond``: one place, whoever calls it). A reply that leaks
is asked for again (at most :data:`MAX_REGENERATIONS` times, with ``leak_retry`` / ``leak_reason``
in the context so an LLM simulator can be told why) and otherwise replaced by a refusal; each
blocked reply is counted (:class:`GuardedReply`, then the env's ``info`` and the trajectory).

What counts as a leak (the agent's own messages and the opening request are never a leak:
repeating what the agent already wrote reveals nothing):

* any code block (```` ``` ```` or ``~~~``), and, backend, Python on its own line or a ``def``;
* backend: a run of the reference's tokens anywhere in the reply (:func:`reference_run`), a
  hidden test call, or a hidden test's inputs (its whole argument list, or a list/dict/tuple
  argument of 8+ characters), compared token by token;
* frontend: an HTML tag or a CSS rule, a line of the reference's HTML (20+ characters), or one
  of its class lists (3+ classes).

Backend text is compared token by token, not as characters: the reference is read with Python's
:mod:`tokenize` (comments dropped, string literals opened, f-string fields read as code), the
reply and the agent's messages with one lexer (:func:`code_tokens`), and both are normalised
alike: no whitespace, no quotes of any kind (``'``, ``"``, backticks, typographic quotes, string
prefixes), lower case, NFKC, ``≥`` as ``>=``, numbers by value (``.15`` is ``0.15``). So a person
who pastes the reference inline, inside a sentence or inline code, with the spaces around
operators removed and the quotes swapped, still matches. What counts is a *run*: consecutive
reference tokens found consecutively in the reply, anywhere. A run is a leak when

* it holds :data:`RUN_TOKENS` (6) tokens with :data:`RUN_CODE_TOKENS` (2) of code among them
  (operators, brackets, a call's ``(``, ``snake_case`` and ``camelCase`` names; not ``,`` ``.``
  ``:`` ``;`` or a grouping ``(``, not what is inside a string literal, not the ``def`` line), or
* it holds :data:`LONG_RUN_TOKENS` (10) tokens outside string literals, the ``def`` line and that
  punctuation, or
* it covers a whole statement line of the reference of :data:`LINE_TOKENS` (5) tokens, or of
  :data:`SHORT_LINE_TOKENS` (4) with code (``return batches * batch_size``).

Reply tokens inside :data:`KNOWN_RUN_TOKENS` (5) tokens in a row that the agent wrote itself (or
the opening request holds) do not count. A hidden value said in words ("the rate is 0.15", "it
returns the maximum", "a cactus can go 14 days", "cactus: 14, fern: 2", the exact text of a
message, the function's name and parameters, a short line such as ``target = 18``) passes: it is a
few tokens of the reference at a time, or words and string contents only.

The offline simulators never produce these (checked over 74,854 offline backend replies with the
character guard, and 55,080 replies to 3,060 tasks of the embedded, generated and collab sources
with the token runs); the guard is for LLM simulators and user simulators.
"""

from __future__ import annotations

import ast
import functools
import inspect
import io
import keyword
import re
import threading
import tokenize
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from colbench_gym.tasks.records import BackendTask, FrontendTask

#: A reply that leaks is asked for again at most this many times, then replaced by a refusal.
MAX_REGENERATIONS = 2

#: What the person says instead of a reply that leaked (per environment kind).
REFUSALS = {
    "backend": "I'd rather not paste code or the exact details of my function; ask me what it should do "
               "and I'll tell you in my own words.",
    "frontend": "I can't give you the page's code; ask me how it should look and I'll describe it.",
}

_FENCE = re.compile(r"```|~~~")
_PY_DEF = re.compile(r"\bdef\s+[A-Za-z_]\w*\s*\(|\blambda\b[^:\n]{0,40}:")
_PY_LINE = re.compile(
    r"^\s*(?:return\b|import\s+\w|from\s+[\w.]+\s+import\b|class\s+\w+\s*[(:]|raise\s+\w|elif\b|else\s*:|"
    r"try\s*:|except\b|for\s+\w.*\s+in\s+.+:\s*$|while\s+.+:\s*$|if\s+.+:\s*$|"
    r"[A-Za-z_]\w*(?:\[[^\]]*\])?\s*(?:[-+*/%]|//)?=\s*[^=\s])", re.MULTILINE)
_CODE_LINE = re.compile(r"[=()\[\]{}:]|^(if|for|while|return|def|elif|else|try|except|with|import|from|raise)\b")
_HTML_TAG = re.compile(r"<\s*/?\s*[A-Za-z][A-Za-z0-9-]*(?:\s+[^<>]*)?/?\s*>")
_CSS_RULE = re.compile(r"[{;]\s*[a-z-]{3,}\s*:\s*[^;{}\n]+;|[\w.#-]+\s*\{[^{}]*:[^{}]*\}")
_CLASS_ATTR = re.compile(r"""class\s*=\s*["']([^"']+)["']""")


def _norm(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------------------- backend: tokens
#: A run of this many reference tokens with :data:`RUN_CODE_TOKENS` of code among them is a leak.
RUN_TOKENS = 6
RUN_CODE_TOKENS = 2
#: A run of this many reference tokens outside string literals and the signature is a leak.
LONG_RUN_TOKENS = 10
#: A whole statement line of the reference is a leak from this many tokens on, or from
#: :data:`SHORT_LINE_TOKENS` with code among them (``return batches * batch_size``).
LINE_TOKENS = 5
SHORT_LINE_TOKENS = 4
#: Reply tokens inside this many tokens in a row that the agent wrote too are its own, not a leak
#: (fewer would excuse common fragments: ``( password )`` of a signature the request shows).
KNOWN_RUN_TOKENS = 5

_LEX = re.compile(r"""
    (?P<prefix>(?<![\w'"\u2018\u2019\u201c\u201d])[rRbBuUfF]{1,2}(?=['"\u2018\u2019\u201c\u201d]))
  | (?P<num>(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?)
  | (?P<name>[^\W\d]\w*)
  | (?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[=!<>]=|[-+*/%&|^@]=|\.\.\.|[-+*/%&|^~@<>=()\[\]{}:;,.])
""", re.VERBOSE)
#: Punctuation ordinary prose is full of: never code, and not counted toward a long run. A
#: parenthesis is code only where it opens a call (``round(``): "the tuple (a, b, c)" is prose.
_PROSE_OPS = frozenset({",", ".", ":", ";", "(", ")"})
_WORD = re.compile(r"[^\W\d]\w*")
_CODE_NAME = re.compile(r"_|\d|[a-z][A-Z]")
_CODE_WORDS = frozenset({"def", "elif", "lambda", "nonlocal"})
_STRING_TYPES = frozenset(t for t in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", None)) if t is not None)
_SKIP_TYPES = frozenset(t for t in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                    tokenize.ENDMARKER, tokenize.ENCODING, getattr(tokenize, "FSTRING_START", None),
                                    getattr(tokenize, "FSTRING_END", None)) if t is not None)
_STRING_HEAD = re.compile(r"(?i)[rbuf]*('''|\"\"\"|'|\")")
_FIELD = re.compile(r"(?<!\{)\{([^{}]*)\}")


def _number(text: str) -> str:
    t = text.replace("_", "").lower()
    if t.endswith("j"):
        return t
    try:
        return str(int(t))
    except ValueError:
        pass
    try:
        value = float(t)
    except (ValueError, OverflowError):
        return t
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


#: Operators written as the characters typography has for them (after NFKC, which already maps
#: full-width forms such as "＝" to "=").
_OPERATOR_SIGNS = str.maketrans({"\u2265": ">=", "\u2264": "<=", "\u2260": "!=", "\u00d7": "*", "\u00f7": "/",
                                 "\u2212": "-", "\u2013": "-", "\u2044": "/"})


def _lex(text: str) -> list[tuple[str, bool]]:
    """``(normalised token, looks like code)`` pairs of ``text``; quotes, backticks, other
    punctuation and whitespace are not tokens."""
    out: list[tuple[str, bool]] = []
    text = unicodedata.normalize("NFKC", text).translate(_OPERATOR_SIGNS)
    for m in _LEX.finditer(text):
        kind, tok = m.lastgroup, m.group()
        if kind == "prefix":  # f'...', r"...": the string's prefix is no token (the reference's are dropped too)
            continue
        if kind == "num":
            out.append((_number(tok), False))
        elif kind == "name":
            out.append((tok.lower(), bool(_CODE_NAME.search(tok)) or tok in _CODE_WORDS))
        else:
            out.append((tok, tok not in _PROSE_OPS))
    return out


def code_tokens(text: str) -> list[str]:
    """``text`` as the leak guard compares it: Python-like tokens, normalised (no whitespace, no
    quotes, lower case, numbers by value); ``limits={"cactus":14}`` and ``limits = {'cactus': 14}``
    both give ``['limits', '=', '{', 'cactus', ':', '14', '}']``."""
    return [tok for tok, _ in _lex(text)]


def _windows(tokens: Sequence[str]) -> frozenset[tuple[str, ...]]:
    """Every :data:`KNOWN_RUN_TOKENS` tokens in a row of ``tokens``."""
    n = KNOWN_RUN_TOKENS
    return frozenset(tuple(tokens[k:k + n]) for k in range(len(tokens) - n + 1))


class _Reference:
    """The reference as tokens (see the module): per token its text, whether it is code, whether
    it counts toward a long run (outside strings, the signature and prose punctuation) and its
    line; plus the token spans of the statement lines that are a leak when whole."""

    def __init__(self, source: str) -> None:
        self.tokens: list[str] = []
        self.code: list[bool] = []
        self.counted: list[bool] = []
        self.lines: list[int] = []
        self.statements: list[tuple[int, int]] = []
        try:
            self._read(source)
        except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
            self._read_lines(source)  # not Python the tokenizer reads: line by line, comments cut at "#"
        self.index: dict[tuple[str, ...], list[int]] = {}
        for i in range(len(self.tokens) - 2):
            self.index.setdefault(tuple(self.tokens[i:i + 3]), []).append(i)

    def _read_lines(self, source: str) -> None:
        self.tokens, self.code, self.counted, self.lines, self.statements = [], [], [], [], []
        for number, line in enumerate(source.splitlines(), 1):
            start, signature = len(self.tokens), line.lstrip().startswith(("def ", "class "))
            self._add(line.split("#", 1)[0], number, string=False, signature=signature)
            self._statement(start, skip=signature)

    def _add(self, text: str, line: int, *, string: bool, signature: bool) -> None:
        for tok, code in _lex(text):
            if tok == "(" and self.tokens:  # a call's parenthesis: after a name (not a keyword) or a call
                prev = self.tokens[-1]
                code = prev in (")", "]") or (bool(_WORD.fullmatch(prev)) and not keyword.iskeyword(prev))
            self.tokens.append(tok)
            self.code.append(code and not string and not signature)
            self.counted.append(not string and not signature and tok not in _PROSE_OPS)
            self.lines.append(line)

    def _statement(self, start: int, *, skip: bool) -> None:
        n = len(self.tokens) - start
        if not skip and (n >= LINE_TOKENS or (n >= SHORT_LINE_TOKENS and any(self.code[start:]))):
            self.statements.append((start, len(self.tokens)))

    def _read(self, source: str) -> None:
        start, signature, only_strings = 0, False, True
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                self._statement(start, skip=signature or only_strings)  # a docstring is no statement
                start, signature, only_strings = len(self.tokens), False, True
                continue
            if tok.type in _SKIP_TYPES:
                continue
            if len(self.tokens) == start and tok.type == tokenize.NAME and tok.string in ("def", "class"):
                signature = True
            text, string = tok.string, tok.type in _STRING_TYPES
            if tok.type == tokenize.STRING:
                try:  # its value
                    value = ast.literal_eval(text)
                    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    # an f-string (one token before Python 3.12): its {fields} are code, as 3.12 reads them
                    head = _STRING_HEAD.match(text)
                    body = text[head.end():len(text) - len(head.group(1))] if head else text
                    for k, part in enumerate(_FIELD.split(body)):
                        field = k % 2 == 1
                        self._add("{" + part + "}" if field else part, tok.start[0], string=not field,
                                  signature=signature)
                    only_strings = only_strings and not _FIELD.search(body)
                    continue
            elif tok.type not in _STRING_TYPES:
                only_strings = False
            self._add(text, tok.start[0], string=string, signature=signature)

    def leak_in(self, reply: Sequence[str], known: Callable[[], frozenset[tuple[str, ...]]]) -> int | None:
        """The line of the reference whose tokens ``reply`` holds as a leaking run (see the module),
        or None. ``known()``: the :func:`_windows` of what the agent wrote (what it wrote is no leak)."""
        tokens = self.tokens
        for i in range(len(reply) - 2):
            for j in self.index.get(tuple(reply[i:i + 3]), ()):
                if i and j and reply[i - 1] == tokens[j - 1]:
                    continue  # inside a run already judged from its start
                n = 3
                while i + n < len(reply) and j + n < len(tokens) and reply[i + n] == tokens[j + n]:
                    n += 1
                if n < min(RUN_TOKENS, SHORT_LINE_TOKENS):
                    continue
                seen, w = known(), KNOWN_RUN_TOKENS
                covered = [False] * n  # tokens of the run inside KNOWN_RUN_TOKENS in a row the agent wrote
                for k in range(n - w + 1):
                    if tuple(reply[i + k:i + k + w]) in seen:
                        covered[k:k + w] = [True] * w
                k = 0
                while k < n:
                    if covered[k]:
                        k += 1
                        continue
                    end = k
                    while end < n and not covered[end]:
                        end += 1
                    line = self._judge(j + k, j + end)
                    if line is not None:
                        return line
                    k = end
        return None

    def _judge(self, a: int, b: int) -> int | None:
        """The line of the leak when reference tokens ``a:b`` (found in a reply) are one, else None."""
        n, code, counted = b - a, sum(self.code[a:b]), sum(self.counted[a:b])
        whole_line = any(a <= s and e <= b for s, e in self.statements)
        if not ((n >= RUN_TOKENS and code >= RUN_CODE_TOKENS) or counted >= LONG_RUN_TOKENS or whole_line):
            return None
        lines = self.lines[a:b]
        return max(sorted(set(lines)), key=lines.count)  # the line most of the run is on (the first of a tie)


@functools.lru_cache(maxsize=256)
def _reference(source: str) -> _Reference:
    return _Reference(source)


def reference_run(reply: str, reference: str, known: str = "") -> int | None:
    """The line of ``reference`` (Python source) that ``reply`` leaks as a run of its tokens, or
    None (see the module for what counts). Tokens that ``known`` (what the agent wrote) holds too,
    :data:`KNOWN_RUN_TOKENS` in a row at least, do not count."""
    return _reference(reference).leak_in(code_tokens(reply), functools.cache(lambda: _windows(code_tokens(known))))


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    first = needle[0] if n else None
    return bool(n) and any(haystack[i] == first and tuple(haystack[i:i + n]) == tuple(needle)
                           for i in range(len(haystack) - n + 1))


@functools.lru_cache(maxsize=1024)
def _backend_secrets(calls: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], str], ...]:
    """(tokens, what it is) of the hidden tests' calls and inputs, which must not appear in a reply."""
    out: list[tuple[tuple[str, ...], str]] = []

    def add(text: str, what: str, min_chars: int) -> None:
        toks = tuple(code_tokens(text))
        if len(_norm(text)) >= min_chars and len(toks) >= 3:
            out.append((toks, what))

    for call in calls:
        add(call, "a hidden test call", 6)
        try:
            node = ast.parse(call.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if not isinstance(node, ast.Call):
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        seg = call.strip()
        open_at = seg.find("(")
        if len(args) >= 2 and open_at >= 0 and seg.endswith(")"):
            add(seg[open_at + 1:-1], "a hidden test's inputs", 8)
        for arg in args:
            arg = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(arg, (ast.List, ast.Dict, ast.Tuple, ast.Set)):
                add(ast.get_source_segment(seg, arg) or ast.unparse(arg), "a hidden test's input", 8)
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _frontend_secrets(reference: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for i, line in enumerate(reference.splitlines(), 1):
        n = _norm(line)
        if len(n) >= 20 and "<" in n:
            out.append((n, f"line {i} of the hidden page's HTML"))
    for classes in _CLASS_ATTR.findall(reference):
        n = _norm(classes)
        if len(n.split()) >= 3:
            out.append((n, "a class list of the hidden page"))
    return tuple(out)


def _known_parts(task: Any, dialogue: Sequence[Mapping[str, Any]] | None) -> list[str]:
    """What the agent knows without the person: the opening request and its own messages."""
    parts = [getattr(task, "problem_description", "")]
    return parts + [str(m.get("content", "")) for m in dialogue or () if m.get("role") == "assistant"]


def _known_to_agent(task: Any, dialogue: Sequence[Mapping[str, Any]] | None) -> str:
    return _norm("\n".join(_known_parts(task, dialogue)))


def _known_tokens(task: Any, dialogue: Sequence[Mapping[str, Any]] | None) -> list[str]:
    out: list[str] = []
    for part in _known_parts(task, dialogue):
        out += [*code_tokens(part), "\n"]  # no token text is "\n": nothing the agent "wrote" spans two messages
    return out


def find_leak(reply: str, task: Any, dialogue: Sequence[Mapping[str, Any]] | None = None) -> str | None:
    """Why ``reply`` would hand the agent hidden material (a few words), or None when it is clean."""
    if not isinstance(reply, str) or not reply.strip():
        return None
    if _FENCE.search(reply):
        return "a code block"
    if isinstance(task, BackendTask):
        if _PY_DEF.search(reply) or _PY_LINE.search(reply):
            return "Python code"
        return _backend_leak(reply, task, dialogue)
    if not isinstance(task, FrontendTask):
        return None
    if _HTML_TAG.search(reply):
        return "HTML"
    if _CSS_RULE.search(reply):
        return "CSS"
    text = _norm(reply)
    known = None
    for fragment, what in _frontend_secrets(task.ground_truth):
        if fragment in text:
            known = _known_to_agent(task, dialogue) if known is None else known
            if fragment not in known:
                return what
    return None


def _backend_leak(reply: str, task: BackendTask, dialogue: Sequence[Mapping[str, Any]] | None) -> str | None:
    """The backend part of :func:`find_leak`: a run of the reference, a hidden test call or inputs."""
    known = functools.cache(lambda: _known_tokens(task, dialogue))
    tokens = code_tokens(reply)
    line = _reference(task.ground_truth).leak_in(tokens, functools.cache(lambda: _windows(known())))
    if line is not None:
        return f"line {line} of the hidden reference"
    for secret, what in _backend_secrets(tuple(task.test_cases.values())):
        if _contains(tokens, secret) and not _contains(known(), secret):
            return what
    return None


def refusal(task: Any) -> str:
    return REFUSALS["frontend" if isinstance(task, FrontendTask) else "backend"]


class GuardedReply(str):
    """A simulator reply that passed the guard: the text, plus what was blocked on the way.

    ``blocked`` lists why each withheld reply leaked (empty: the first reply was clean);
    ``refused`` is True when every attempt leaked and the text is the refusal.
    """

    blocked: tuple[str, ...] = ()
    refused: bool = False

    def __new__(cls, text: str, blocked: Sequence[str] = (), refused: bool = False) -> "GuardedReply":
        obj = super().__new__(cls, text)
        obj.blocked, obj.refused = tuple(blocked), bool(refused)
        return obj

    def __reduce__(self):
        return (GuardedReply, (str(self), self.blocked, self.refused))


_state = threading.local()


@functools.lru_cache(maxsize=256)
def _takes_context(fn: Callable[..., Any]) -> bool:
    try:
        return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False


def guard_respond(raw: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a simulator's ``respond`` so that its replies pass :func:`find_leak` (see the module)."""
    if getattr(raw, "_leak_guarded", False):
        return raw

    @functools.wraps(raw)
    def respond(self: Any, task: Any, dialogue: Any, **context: Any) -> GuardedReply:
        if getattr(_state, "depth", 0):  # a subclass calling super().respond(): guarded once, outside
            return raw(self, task, dialogue, **context)
        _state.depth = 1
        try:
            reply = raw(self, task, dialogue, **context)
            blocked: list[str] = []
            for attempt in range(1, MAX_REGENERATIONS + 2):
                text = "" if reply is None else str(reply)
                why = find_leak(text, task, dialogue)
                if why is None:
                    return GuardedReply(text, blocked)
                blocked.append(why)
                if attempt > MAX_REGENERATIONS:
                    break
                hint = {"leak_retry": attempt, "leak_reason": why} if _takes_context(raw) else {}
                reply = raw(self, task, dialogue, **{**context, **hint})
            return GuardedReply(refusal(task), blocked, refused=True)
        finally:
            _state.depth = 0

    respond._leak_guarded = True  # type: ignore[attr-defined]
    return respond


def ensure_guarded(reply: Any, task: Any, dialogue: Sequence[Mapping[str, Any]] | None = None) -> GuardedReply:
    """``reply`` as a :class:`GuardedReply`: as it is when it passed the guard already, else checked
    here (no regeneration possible) and replaced by the refusal when it leaks."""
    if isinstance(reply, GuardedReply):
        return reply
    text = "" if reply is None else str(reply)
    why = find_leak(text, task, dialogue)
    return GuardedReply(text) if why is None else GuardedReply(refusal(task), [why], refused=True)


def retry_note(context: Mapping[str, Any], kind: str = "backend") -> str | None:
    """For LLM simulators: the instruction to add when the guard asks for a reply again."""
    if not context.get("leak_retry"):
        return None
    banned = ("code, HTML or CSS, and no lines of the page's source" if kind == "frontend"
              else "code, no lines of the function, and no test calls or test inputs")
    return (f"Your previous reply was not sent to the assistant because it contained {context.get('leak_reason')}. "
            f"Reply to the assistant's last message again as the person, in plain everyday words: no {banned}.")


def with_retry_note(messages: list[dict[str, Any]], context: Mapping[str, Any],
                    kind: str = "backend") -> list[dict[str, Any]]:
    """An LLM simulator's request ``messages`` with :func:`retry_note` added to its opening system
    message when the guard is asking again (the list itself). In the opening one, not a system
    message at the end: chat templates of the Mistral family refuse a system message anywhere but
    first, and a server answers that with HTTP 400 whatever else the request holds, so an agent
    that drew a leak once would end its episode as the person's failure."""
    note = retry_note(context, kind)
    if not note:
        return messages
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}
    else:
        messages.insert(0, {"role": "system", "content": note})
    return messages


__all__ = ["KNOWN_RUN_TOKENS", "LINE_TOKENS", "LONG_RUN_TOKENS", "MAX_REGENERATIONS", "REFUSALS", "RUN_CODE_TOKENS", "RUN_TOKENS",
           "SHORT_LINE_TOKENS",
           "GuardedReply", "code_tokens", "ensure_guarded", "find_leak", "guard_respond", "reference_run", "refusal",
           "retry_note", "with_retry_note"]
