"""The fact sheet: what the simulated person knows about one reference, one sentence a fact.

WHY a module of its own: the reader of the reference (:mod:`.reference`, :mod:`.reader`)
writes it, the matcher (:mod:`.matching`) and the reply (:mod:`.phrasing`) read it; this is the
contract between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Facts longer than this are split or shortened; replies are capped at 400 characters.
MAX_FACT = 300


@dataclass(frozen=True)
class Fact:
    """One thing the person knows, as one plain-language sentence."""

    kind: str  # signature | param | table | case | branch | assign | accumulate | result |
    #            round | raise | sort | tie | constant | doc
    text: str
    topic: str  # a few words naming what the fact is about, for nudges ("the plan prices")
    keywords: frozenset[str] = frozenset()
    numbers: frozenset[float] = frozenset()
    strings: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    priority: float = 1.0
    polarity: str = ""  # "no" when the fact is a negative ("no rounding needed")
    #: When the fact is a rule that applies for some inputs only: the condition on the
    #: parameters, as alternatives (or) of conjunctions (and) of ``(parameter, op, number)``
    #: with op one of ``< <= > >= == !=``; empty when the condition is not that simple. A
    #: question naming a value ("What if people is 0?") is answered with the first rule whose
    #: condition the value meets (see :mod:`.matching`).
    guards: tuple[tuple[tuple[str, str, float], ...], ...] = ()


@dataclass
class FactSheet:
    """Everything the simulator knows about one reference: the function's name, its
    parameters, the facts, and the reference's own lines (to make sure none is ever echoed)."""

    func_name: str | None
    params: list[str]
    facts: list[Fact]
    source_lines: list[str] = field(default_factory=list)
    numbers: frozenset[float] = frozenset()
    strings: frozenset[str] = frozenset()
    parse_error: str | None = None  # why the reference could not be read at all (then no facts)
    # parts of the reference that could not be put into facts (each skipped, the rest still read)
    problems: tuple[str, ...] = ()


__all__ = ["MAX_FACT", "Fact", "FactSheet"]
