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
* backend: a line of the reference (a code line of 12+ characters, whitespace-normalised), a
  hidden test call, or a hidden test's inputs (its whole argument list, or a list/dict/tuple
  argument of 8+ characters);
* frontend: an HTML tag or a CSS rule, a line of the reference's HTML (20+ characters), or one
  of its class lists (3+ classes).

The offline simulators never produce these (checked over 74,854 offline backend replies); the
guard is for LLM simulators and user simulators.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import threading
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


@functools.lru_cache(maxsize=1024)
def _backend_secrets(reference: str, calls: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(normalised fragment, what it is) pairs that must not appear in a reply."""
    out: list[tuple[str, str]] = []
    for i, line in enumerate(reference.splitlines(), 1):
        n = _norm(line)
        if len(n) >= 12 and _CODE_LINE.search(n):
            out.append((n, f"line {i} of the hidden reference"))
    for call in calls:
        n = _norm(call)
        if len(n) >= 6:
            out.append((n, "a hidden test call"))
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
            inner = _norm(seg[open_at + 1:-1])
            if len(inner) >= 8:
                out.append((inner, "a hidden test's inputs"))
        for arg in args:
            arg = arg.value if isinstance(arg, ast.Starred) else arg
            if isinstance(arg, (ast.List, ast.Dict, ast.Tuple, ast.Set)):
                text = ast.get_source_segment(seg, arg) or ast.unparse(arg)
                n = _norm(text)
                if len(n) >= 8:
                    out.append((n, "a hidden test's input"))
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


def _known_to_agent(task: Any, dialogue: Sequence[Mapping[str, Any]] | None) -> str:
    parts = [getattr(task, "problem_description", "")]
    parts += [str(m.get("content", "")) for m in dialogue or () if m.get("role") == "assistant"]
    return _norm("\n".join(parts))


def find_leak(reply: str, task: Any, dialogue: Sequence[Mapping[str, Any]] | None = None) -> str | None:
    """Why ``reply`` would hand the agent hidden material (a few words), or None when it is clean."""
    if not isinstance(reply, str) or not reply.strip():
        return None
    if _FENCE.search(reply):
        return "a code block"
    text = _norm(reply)
    known = None
    if isinstance(task, FrontendTask):
        if _HTML_TAG.search(reply):
            return "HTML"
        if _CSS_RULE.search(reply):
            return "CSS"
        secrets = _frontend_secrets(task.ground_truth)
    elif isinstance(task, BackendTask):
        if _PY_DEF.search(reply) or _PY_LINE.search(reply):
            return "Python code"
        secrets = _backend_secrets(task.ground_truth, tuple(task.test_cases.values()))
    else:
        return None
    for fragment, what in secrets:
        if fragment in text:
            known = _known_to_agent(task, dialogue) if known is None else known
            if fragment not in known:
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
    """An LLM simulator's request ``messages`` with :func:`retry_note` appended as a system message
    when the guard is asking again (the list itself, extended)."""
    note = retry_note(context, kind)
    if note:
        messages.append({"role": "system", "content": note})
    return messages


__all__ = ["MAX_REGENERATIONS", "REFUSALS", "GuardedReply", "ensure_guarded", "find_leak", "guard_respond", "refusal",
           "retry_note", "with_retry_note"]
