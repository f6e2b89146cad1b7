"""Small wording helpers: names in plain words, numbers and strings as a person says them, lists.

WHY a module of its own: the expression renderer (:mod:`.speaker`), the fact builders
(:mod:`.reader` and its parts) and the reply (:mod:`.phrasing`) all need the same few helpers,
and none of them needs a syntax tree.
"""

from __future__ import annotations

import ast
import re

from colbench_gym.simulators.offline_backend.words import split_identifier


def humanise(name: str) -> str:
    return " ".join(split_identifier(name)) or name


def singular(noun: str) -> str:
    if noun.endswith("ies") and len(noun) > 4:
        return noun[:-3] + "y"
    if noun.endswith(("sses", "xes", "ches", "shes")):
        return noun[:-2]
    if noun.endswith("s") and not noun.endswith(("ss", "us", "is")) and len(noun) > 3:
        return noun[:-1]
    return noun


def fmt_number(value: float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0" if abs(value) < 1e6 else str(int(value))
    text = repr(value)
    if "e" in text:
        text = f"{value:.10f}".rstrip("0")
    return text


def fmt_string(value: str) -> str:
    if value == "":
        return "an empty string"
    if value.isspace():
        return "a space" if value == " " else "whitespace"
    shown = value if len(value) <= 60 else value[:57] + "..."
    shown = shown.replace("\n", "\\n")
    return f"'{shown}'"


def join_and(items: list[str], word: str = "and") -> str:
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:] if text and not text.startswith(("'", "`")) else text


def sentence(text: str) -> str:
    text = text.strip()
    text = re.sub(r"\s+", " ", text)
    if not text.endswith((".", "!", "?")):
        text += "."
    return capitalise(text)


def ordinal(n: int) -> str:
    names = {0: "first", 1: "second", 2: "third", 3: "fourth", 4: "fifth", -1: "last",
             -2: "second-to-last"}
    return names.get(n, f"item {n}")


#: How a comparison operator reads (``x >= 3``: "x is at least 3").
CMP_WORDS = {ast.Gt: "more than", ast.GtE: "at least", ast.Lt: "less than", ast.LtE: "at most",
              ast.Eq: "", ast.NotEq: "not", ast.In: "one of", ast.NotIn: "not one of"}


def element_noun(var: str, iterable: ast.AST) -> str:
    """What one item of a loop is called: the loop variable if it is a word, else the
    collection's name made singular ("scores" -> "score")."""
    if var in ("ch", "c", "char", "chr", "letter", "character"):
        return "character"
    if var and len(var) >= 3 and var not in ("idx", "val", "elem", "obj", "tmp"):
        return humanise(var)
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range":
        return "number" if var not in ("i", "j", "k", "idx") else "position"
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute):
        if iterable.func.attr == "items":
            return "entry"
        if iterable.func.attr == "keys":
            return "key"
        if iterable.func.attr == "values":
            return "value"
        if iterable.func.attr == "split":
            return "word"
        iterable = iterable.func.value
    if isinstance(iterable, ast.Name):
        noun = singular(humanise(iterable.id))
        if noun != humanise(iterable.id):
            return noun
        return f"{noun} item"
    return "item"


__all__ = ["CMP_WORDS", "capitalise", "element_noun", "fmt_number", "fmt_string", "humanise", "join_and", "ordinal",
           "sentence", "singular"]
