"""Procedural backend tasks with two to four hidden details, each deciding its own share of the tests.

Task sources: ``"collab-multi:train"``, ``"collab-multi:val"`` and ``"collab-multi:test"``.

Why a third generator: on ``collab:*`` one hidden detail decides the answer and the natural
question reveals it in full, so the best policy is the fixed script "ask once, answer" and
step-level credit has nothing to add. Here each task has **two to four independent hidden
details**, each revealed by its own natural question and each deciding **its own share of the
twelve tests** (``12 / n`` each), so the fraction of tests passed says how many details the answer
used. A share of the tasks (about 28 %) **state some or all details in the request**: asking about
a stated detail is a wasted turn, so "always ask n questions" is not optimal. Questions that name
no topic ("Can you tell me more?") or none of the task's (the weather) get "I don't know" from the
offline simulator. The turn limit these tasks are meant for is :data:`MAX_TURNS` (6): one question
per detail and the answer fit (at most 4 + 1), asking about everything twice does not (up to 9).

The functions stay as simple as ``collab:*`` (a 0.5B coder model can write them once it knows the
details): most families dispatch on a category the request names (``if kind == 'child': return
count * 6.25``), one ``if`` and one detail per category, ended by ``raise ValueError``; two
families have edge cases beside the normal path (the value for a zero or negative divisor and the
rounding of the division; the answer for a negative reading and the limit of a yes/no label).
Each detail is said in its own sentence by the offline simulator (one ``if`` per detail, no shared
``elif`` chain, no rounding per branch: a chain or a rounding fact would put several details in
one sentence), and the tests of one detail never depend on another.

Details by family (``family``: hidden detail per case):

- ``prices``: a price per category (tickets, coffee sizes, lesson levels, rental items);
- ``rates``: a rate per category (payment methods, agent levels, service quality);
- ``units``: a conversion factor per personal unit (steps, cups, jugs ...);
- ``messages``: a message per moment or order status (the person's own wording);
- ``codes``: a code format per document kind (prefix, separator, zero padding);
- ``names``: a name format (order, case, initials) per place;
- ``division``: the value for a zero divisor, the value for a negative one, the rounding;
- ``limit``: the limit of a yes/no label and the answer for a negative reading.

Splits: ``train`` and ``test`` divide the structural keys (family, function and every detail value,
never which details are stated) by hash, as the other generators do, so the two never share a task
or a combination of function and detail values; ``val`` draws from a held-out domain (:data:`VAL`:
other prices, rates, factors, messages, prefixes, formats, edge values, scenarios) and so shares
no key with either. Task ``i`` of a split is a pure function of ``(split, i)``;
``tests/tasks/test_collab_multi.py`` pins a digest and checks every guarantee above.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from colbench_gym.tasks.generator import SPLITS as HASHED_SPLITS
from colbench_gym.tasks.generator import BackendSpec, split_of_key, structural_key
from colbench_gym.tasks.generator_kit import REQUEST_TEMPLATES, call_text, describe
from colbench_gym.tasks.records import BackendTask

#: Bumped whenever a change alters any generated task (recorded in each record).
COLLAB_MULTI_GENERATOR_VERSION = 1
#: The agent turns these tasks are meant for (``--max-turns``): one question per detail (at most
#: four) and the answer fit with one turn to spare; asking about every detail twice does not.
MAX_TURNS = 6
#: Tests per task: divisible by 2, 3 and 4, so each of n details owns exactly 12 / n tests.
N_TESTS = 12
#: Chance that a task states some (one to all) of its details in the request.
STATED_SHARE = 0.28
#: The splits of ``collab-multi:`` (the task sources ask a generator module for its ``SPLITS``).
SPLITS = (*HASHED_SPLITS, "val")
TASK_SOURCE = "collab-multi"
_SEED = "colbench-collab-multi"
_KEY_SALT = "collab-multi|"
_MAX_ATTEMPTS = 256
_TEMPLATES = REQUEST_TEMPLATES[:3]


@dataclass(frozen=True)
class Detail:
    """One hidden detail of a task: what it is, how it is asked about and which tests it decides.

    ``question`` is the natural question the offline simulator answers with it; ``says`` the
    pieces its reply must contain; ``statement`` the sentence that states it in a request (when
    ``stated``); ``hidden_words`` words of the detail that must not appear in the request when it
    is not stated; ``guesses`` values an agent might write without asking (plausible defaults);
    ``tests`` the indices of the tests it decides (``12 / n`` of them).
    """

    name: str
    kind: str
    value: Any
    question: str
    says: tuple[str, ...]
    statement: str
    hidden_words: tuple[str, ...] = ()
    guesses: tuple[Any, ...] = ()
    stated: bool = False
    tests: tuple[int, ...] = ()


@dataclass(frozen=True)
class MultiSpec(BackendSpec):
    """A ``collab-multi`` task with its details (for tests and analysis); :meth:`to_task` gives the record."""

    details: tuple[Detail, ...]
    render: Callable[[Sequence[Any]], str] = field(repr=False, compare=False)
    generator_version: int = COLLAB_MULTI_GENERATOR_VERSION

    @property
    def key(self) -> str:
        """The structural key: family, function and detail values (never which are stated)."""
        return structural_key(self.family, self.variant, {d.name: d.value for d in self.details})

    @property
    def hidden(self) -> tuple[Detail, ...]:
        return tuple(d for d in self.details if not d.stated)

    @property
    def stated(self) -> tuple[Detail, ...]:
        return tuple(d for d in self.details if d.stated)

    def answer(self, known: Sequence[bool] | None = None, guess: int = 0) -> str:
        """The reference rewritten for an agent that knows only some details: detail ``i`` keeps
        its value where ``known[i]`` (default: the stated ones), else takes its ``guess``-th
        plausible guess (which may happen to be right: a lucky guess)."""
        known = [d.stated for d in self.details] if known is None else list(known)
        return self.render([d.value if k else d.guesses[guess % len(d.guesses)]
                            for d, k in zip(self.details, known, strict=True)])

    def wrong_answer(self, known: Sequence[bool]) -> str:
        """Like :meth:`answer`, each unknown detail taking the first of its guesses that is wrong."""
        values = [d.value if k else next(g for g in d.guesses if not _same(g, d.value))
                  for d, k in zip(self.details, known, strict=True)]
        return self.render(values)

    def to_task(self) -> BackendTask:
        return self.task(TASK_SOURCE, details=len(self.details), stated_details=len(self.stated))


#: Values the offline simulator says in words ("half of count"), kept out of the dispatch families.
_SAID_IN_WORDS = (0.5,)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@dataclass
class _Plan:
    """What a family draws before the stated details, the request and the tests are settled."""

    variant: str
    fn: str
    params: tuple[str, ...]
    context: str
    goal: str
    note: str
    details: list[Detail]
    calls: list[list[tuple | list[tuple]]]  # per detail: its 12 / n tests
    render: Callable[[Sequence[Any]], str]


def _test_text(fn: str, test: tuple | list[tuple]) -> str:
    if isinstance(test, tuple):
        return call_text(fn, *test)
    return f"({', '.join(call_text(fn, *args) for args in test)})"


def _or(items: Sequence[str]) -> str:
    quoted = [repr(x) for x in items]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _words(text: str) -> tuple[str, ...]:
    """The words of a hidden text that would give it away in a request (longer than three letters)."""
    return tuple(dict.fromkeys(w for w in re.findall(r"[A-Za-z]+", text) if len(w) > 3))


def _grid(rng: random.Random, lo: float, hi: float, held_out: bool, scale: int = 100, step: int = 5) -> float:
    """A value ``c / scale`` in ``[lo, hi)`` with ``c`` a whole number: a multiple of ``step`` in the
    train/test domain, never one in the held-out (validation) domain."""
    start, stop = round(lo * scale), round(hi * scale)
    if not held_out:
        return rng.randrange(-(-start // step) * step, stop, step) / scale
    while True:
        c = rng.randrange(start, stop)
        if c % step:
            return c / scale


# --------------------------------------------------------------------------- the domains


@dataclass(frozen=True)
class Domain:
    """The values one domain draws from (:data:`TRAIN_TEST` or the held-out :data:`VAL`)."""

    held_out: bool
    greetings: tuple[str, ...]
    updates: tuple[str, ...]
    prefixes: tuple[str, ...]
    name_formats: tuple[str, ...]
    zero_values: tuple[Any, ...]
    negative_values: tuple[Any, ...]
    invalid_labels: tuple[str, ...]
    limits: tuple[tuple[Any, ...], ...]


_LIMITS = (
    # (function, parameter, context, yes label, no label, limit in words, lo, hi, question, negative question, guesses)
    ("exam_result", "score", "I mark exams out of a hundred", "pass", "fail", "the pass mark", 30, 80,
     "What is the pass mark?", "What should it return for a negative score?", (50, 60)),
    ("water_alert", "level_cm", "my rain barrel has a sensor that measures the water level", "full", "ok",
     "the level I call full", 40, 95, "At what level does the barrel count as full?",
     "What should it return for a negative level?", (100, 50)),
    ("speed_check", "speed_kmh", "my dashcam app checks my speed on the motorway", "too fast", "fine",
     "my limit", 100, 140, "From what speed is it too fast?", "What should it return for a negative speed?", (120, 130)),
)

#: The train/test domain (divided between the two splits by the key hash).
TRAIN_TEST = Domain(
    held_out=False,
    greetings=("Rise and shine, {}!", "Top of the day to you, {}.", "Hiya {}!", "{}, nice to see you.",
               "Well hello, {}!", "{}! Come in, come in.", "Great to have you, {}.", "Ahoy {}!",
               "{}, make yourself at home.", "Oh hey {}.", "Salut {}!", "Look who is here: {}!"),
    updates=("{}, your parcel is on its way.", "Hi {}, we are on it!", "{}: sorry, this takes longer.",
             "Good news, {}!", "{}, all done here.", "Dear {}, thanks for waiting.", "{}, watch your door!",
             "Heads up {}: change of plan.", "{}, it left our store today.", "Cheers {}, enjoy!",
             "Hang tight, {}.", "{}, your box is ready."),
    prefixes=("KX", "QB", "ZR", "MV", "TJ", "WL", "PX", "HD", "GN", "YC", "BF", "RS"),
    name_formats=("last + ', ' + first", "last.upper() + ' ' + first", "first[0] + '. ' + last",
                  "last + ' ' + first", "first + ' ' + last[0] + '.'", "first.upper() + ' ' + last.upper()",
                  "first + ' ' + last.upper()", "last + ', ' + first[0] + '.'"),
    zero_values=(-1, "n/a", "undefined", "no data", "nobody", "empty"),
    negative_values=("invalid", "bad input", "not allowed", "wrong count", -2, "impossible"),
    invalid_labels=("bad reading", "check again", "not valid", "retry", "impossible", "skip"),
    limits=_LIMITS,
)

#: The held-out domain of ``collab-multi:val``: prices, rates and factors at hundredths the
#: train/test domain never draws, other messages, prefixes, name formats, edge values and
#: limit scenarios (so no val key is a train or test key, and no val detail a trained one).
VAL = Domain(
    held_out=True,
    greetings=("Howdy {}!", "{}, the kettle is on.", "Good to see you, {}.", "Yo {}!", "Bonjour {}!",
               "{}, welcome to the den.", "Glad you came, {}."),
    updates=("{}, hold on a moment.", "Psst {}: look outside!", "{}, we boxed it up.", "Apologies {}, still waiting.",
             "Thanks {}, it has arrived.", "{}, your goods are travelling.", "Whoops {}, a short delay."),
    prefixes=("JQ", "VK", "XD", "CW", "FZ", "LU", "NB", "SY"),
    name_formats=("last + '/' + first", "first.lower() + '.' + last.lower()", "last.upper() + ', ' + first",
                  "first + ' (' + last + ')'", "last[0] + '. ' + first", "last + ' ' + first[0]"),
    zero_values=(-999, -99, "none", "-", "not defined", "no value", "nothing"),
    negative_values=("oops", "refused", "below zero", "check input", -3, "nope", "rejected"),
    invalid_labels=("nonsense", "reject", "faulty", "ignore", "look again", "broken"),
    limits=(
        ("bonus_check", "sales", "my team earns a bonus once its monthly sales reach a target", "bonus", "none",
         "the target", 150, 350, "How much do we need to sell for the bonus?",
         "What should it return for negative sales?", (200, 250)),
        ("heat_alert", "temperature_tenths", "I log temperatures in tenths of a degree", "hot", "normal",
         "my heat limit", 300, 365, "From what temperature is it hot?",
         "What should it return for a negative temperature?", (300, 350)),
    ),
)


# --------------------------------------------------------------------------- dispatch families


@dataclass(frozen=True)
class _Menu:
    """One scenario of a dispatch family: the function, the parameter that names the case, the cases."""

    fn: str
    params: tuple[str, ...]
    selector: str
    context: str
    goal: str
    cases: tuple[str, ...]
    question: str  # "{c}": the case
    statement: str  # "{c}", "{v}": the case and its detail as said


def _dispatch(rng: random.Random, kind: str, menu: _Menu, draw: Callable[[str, list[Any]], Any],
              expr: Callable[[Any], str], args: Callable[[random.Random, str, int], list[tuple]],
              says: Callable[[Any], tuple[str, ...]], say: Callable[[Any], str] = repr,
              hidden_words: Callable[[Any], tuple[str, ...]] = lambda v: (),
              guesses: Callable[[str], tuple[Any, ...]] = lambda c: ()) -> Callable[[int], _Plan]:
    """A dispatch family's plan for ``n`` cases: one ``if`` per case returning ``expr(detail)``."""

    def plan(n: int) -> _Plan:
        cases = rng.sample(menu.cases, n)
        values: list[Any] = []
        for c in cases:
            v = draw(c, values)
            while v in values or v in _SAID_IN_WORDS:  # one value, one detail; "half of" is no number
                v = draw(c, values)
            values.append(v)
        details = [Detail(c, kind, v, menu.question.format(c=c), says(v), menu.statement.format(c=c, v=say(v)),
                          hidden_words(v), guesses(c)) for c, v in zip(cases, values)]
        per = N_TESTS // n
        calls: list[list[tuple | list[tuple]]] = [list(args(rng, c, per)) for c in cases]

        def render(vals: Sequence[Any]) -> str:
            lines = [f"def {menu.fn}({', '.join(menu.params)}):"]
            for c, v in zip(cases, vals):
                lines += [f"    if {menu.selector} == {c!r}:", f"        return {expr(v)}"]
            lines.append(f"    raise ValueError('unknown {menu.selector}')")
            return "\n".join(lines) + "\n"

        note = f"The {menu.selector} is always {_or(cases)}."
        return _Plan(f"{menu.fn}/{n}", menu.fn, menu.params, menu.context, menu.goal, note, details, calls, render)

    return plan


def _number_calls(menu: _Menu, pool: Sequence[int]) -> Callable[[random.Random, str, int], list[tuple]]:
    """Calls ``fn(case, x)`` (in the menu's parameter order) for ``k`` distinct ``x`` of ``pool``."""
    first = menu.params[0] == menu.selector

    def args(rng: random.Random, c: str, k: int) -> list[tuple]:
        return [(c, x) if first else (x, c) for x in rng.sample(list(pool), k)]

    return args


def _n_cases(rng: random.Random) -> int:
    """How many cases (details) a dispatch task has: mostly three or four, so that for most tasks
    the turn limit holds one question per detail but not two."""
    return rng.choice((2, 3, 3, 4, 4))


_PRICE_MENUS = (
    (_Menu("ticket_cost", ("kind", "count"), "kind", "I sell tickets at my little cinema",
           "returns what a number of tickets of one kind cost", ("child", "adult", "senior", "student", "member"),
           "How much is one {c} ticket?", "One {c} ticket costs {v}."), (3, 20, (10.0, 8.0))),
    (_Menu("coffee_cost", ("size", "cups"), "size", "I run a coffee stall at the market",
           "returns what some cups of coffee of one size cost", ("small", "medium", "large", "jumbo"),
           "How much is one {c} coffee?", "One {c} coffee costs {v}."), (1.5, 7, (3.0, 2.5))),
    (_Menu("lesson_fee", ("level", "hours"), "level", "I teach piano at several levels",
           "returns what some hours of lessons at one level cost", ("beginner", "intermediate", "advanced", "exam"),
           "How much is one hour of {c} lessons?", "One hour of {c} lessons costs {v}."), (15, 70, (30.0, 40.0))),
    (_Menu("rental_cost", ("item", "days"), "item", "I rent out outdoor gear",
           "returns what renting one item for some days costs", ("tent", "kayak", "bike", "stove"),
           "How much is the {c} per day?", "The {c} costs {v} per day."), (4, 45, (10.0, 20.0))),
)


def _prices(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    menu, (lo, hi, guesses) = rng.choice(_PRICE_MENUS)
    qty = menu.params[1]
    return _dispatch(rng, "price", menu, lambda c, _: _grid(rng, lo, hi, d.held_out, step=25),
                     lambda v: f"{qty} * {v!r}", _number_calls(menu, range(1, 21)), lambda v: (repr(v),),
                     guesses=lambda c: guesses)(_n_cases(rng))


_RATE_MENUS = (
    (_Menu("payment_fee", ("amount", "method"), "method",
           "my shop pays a fee on every payment, and the rate depends on how the customer pays",
           "returns the fee on an amount", ("card", "transfer", "wallet", "cheque"),
           "What is the fee rate for {c} payments?", "The fee rate for {c} payments is {v}."), 0.005, 0.06),
    (_Menu("agent_commission", ("sale", "level"), "level", "I pay my sales agents a commission that depends on their level",
           "returns an agent's commission on a sale", ("trainee", "junior", "senior", "partner"),
           "What commission rate does a {c} agent get?", "A {c} agent gets a commission rate of {v}."), 0.01, 0.3),
    (_Menu("sales_tax", ("price", "category"), "category", "the tax I charge on a sale depends on what I sell",
           "returns the tax on a price", ("food", "books", "clothes", "tools"),
           "What is the tax rate for {c}?", "The tax rate for {c} is {v}."), 0.02, 0.25),
)


def _rates(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    menu, lo, hi = rng.choice(_RATE_MENUS)
    amount = menu.params[0]
    # amounts in whole hundreds: a rate with three decimals gives at most one decimal, so an
    # answer that rounds to cents is still right
    return _dispatch(rng, "rate", menu, lambda c, _: _grid(rng, lo, hi, d.held_out, scale=1000), lambda v: f"{amount} * {v!r}",
                     _number_calls(menu, range(100, 5001, 100)), lambda v: (repr(v),),
                     guesses=lambda c: (0.05, 0.1, 0.02))(_n_cases(rng))


_UNIT_MENUS = (
    (_Menu("to_metres", ("length", "unit"), "unit", "I measure distances in my own units",
           "converts a length in one of my units into metres", ("step", "stride", "lap", "block"),
           "How many metres is one {c}?", "One {c} is {v} metres."),
     {"step": (0.5, 0.95, 0.75), "stride": (1.0, 1.9, 1.5), "lap": (200, 500, 400.0), "block": (60, 180, 100.0)}),
    (_Menu("to_grams", ("amount", "measure"), "measure", "I cook with my own measures",
           "converts an amount in one of my measures into grams", ("cup", "spoon", "scoop", "handful"),
           "How many grams is one {c}?", "One {c} is {v} grams."),
     {"cup": (110, 260, 125.0), "spoon": (4, 20, 15.0), "scoop": (20, 70, 30.0), "handful": (20, 60, 30.0)}),
    (_Menu("to_litres", ("amount", "container"), "container", "I count liquids in the containers I own",
           "converts an amount of one of my containers into litres", ("jug", "bucket", "tin", "bottle"),
           "How many litres does one {c} hold?", "One {c} holds {v} litres."),
     {"jug": (0.8, 2.5, 1.0), "bucket": (5, 15, 10.0), "tin": (0.25, 0.95, 0.33), "bottle": (0.5, 1.5, 1.0)}),
)


def _units(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    menu, ranges = rng.choice(_UNIT_MENUS)
    amount = menu.params[0]
    return _dispatch(rng, "factor", menu, lambda c, _: _grid(rng, ranges[c][0], ranges[c][1], d.held_out),
                     lambda v: f"{amount} * {v!r}", _number_calls(menu, range(1, 41)), lambda v: (repr(v),),
                     guesses=lambda c: (ranges[c][2], 1.0))(_n_cases(rng))


_NAMES = ("Ann", "Bo", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jo", "Kim", "Lars", "Mia", "Nils")
_MESSAGE_MENUS = (
    (_Menu("greeting", ("name", "moment"), "moment", "my smart speaker greets whoever comes in",
           "returns its greeting for a name at a moment of the day", ("morning", "afternoon", "evening", "night"),
           "What should the greeting say in the {c}?", "In the {c} it says {v}."), "greetings",
     lambda c: ("Hello, {}!", "Good " + c + ", {}!")),
    (_Menu("order_update", ("name", "status"), "status", "my shop sends customers a text about their orders",
           "returns the text for a customer's name and the status of their order",
           ("packed", "shipped", "delayed", "delivered"), "What should the text say when an order is {c}?",
           "When an order is {c} the text is {v}."), "updates",
     lambda c: ("Hello {}, your order is " + c + ".", "Hi {}!")),
)


def _message_expr(template: str) -> str:
    before, _, after = template.partition("{}")
    parts = ([repr(before)] if before else []) + ["name"] + ([repr(after)] if after else [])
    return " + ".join(parts)


def _messages(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    menu, pool_name, guesses = rng.choice(_MESSAGE_MENUS)
    pool = getattr(d, pool_name)
    name_first = menu.params[0] == "name"
    return _dispatch(rng, "message", menu, lambda c, taken: rng.choice([t for t in pool if t not in taken]),
                     _message_expr,
                     lambda r, c, k: [(x, c) if name_first else (c, x) for x in r.sample(_NAMES, k)],
                     lambda v: (repr(v.replace("{}", "<name>")),), say=lambda v: repr(v.replace("{}", "<name>")),
                     hidden_words=lambda v: _words(v.replace("{}", "")), guesses=guesses)(_n_cases(rng))


_CODE_MENUS = (
    _Menu("make_code", ("number", "kind"), "kind", "every document I issue carries a code built from its number",
          "turns a document number into its code", ("invoice", "receipt", "quote", "refund"),
          "What should a {c} code look like?", "A {c} code is {v}."),
    _Menu("member_code", ("number", "plan"), "plan", "our members carry a card with a code on it",
          "turns a member number into the code for their plan", ("basic", "plus", "family", "student"),
          "What does the code for a {c} member look like?", "The code for a {c} member is {v}."),
)


def _code_parts(fmt: str) -> tuple[str, int]:
    """``'KX-{number:05d}'`` -> ``('KX-', 5)``."""
    m = re.fullmatch(r"(.*)\{number:0(\d)d\}", fmt)
    assert m, fmt
    return m.group(1), int(m.group(2))


def _codes(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    menu = rng.choice(_CODE_MENUS)

    def draw(c: str, taken: list[Any]) -> str:
        used = {_code_parts(t)[0][:2] for t in taken}
        prefix = rng.choice([p for p in d.prefixes if p not in used])
        return prefix + rng.choice("-#/_.") + "{number:0" + str(rng.randint(3, 7)) + "d}"

    def say(v: str) -> str:
        head, width = _code_parts(v)
        return f"{head!r} followed by the number padded with zeros to {width} digits"

    return _dispatch(rng, "format", menu, draw, lambda v: "f" + repr(v), _number_calls(menu, range(1, 9999)),
                     lambda v: (_code_parts(v)[0], f"{_code_parts(v)[1]} digits"), say=say,
                     hidden_words=lambda v: (_code_parts(v)[0][:2],),
                     guesses=lambda c: (c[:3].upper() + "-{number:05d}", "ID-{number:05d}"))(_n_cases(rng))


_FIRST = ("Ann", "Bruno", "Chloe", "Dev", "Elena", "Femi", "Greta", "Hugo", "Iris", "Jonas", "Kai", "Lena")
_LAST = ("Lee", "Park", "Novak", "Silva", "Khan", "Moreau", "Berg", "Ito", "Costa", "Walsh", "Nagy", "Ortiz")
_NAME_MENUS = (
    _Menu("display_name", ("first", "last", "place"), "place",
          "I write people's names differently depending on where they appear",
          "returns a name written the way I want it in one place", ("badge", "letter", "register", "screen"),
          "How should the name be written on the {c}?", "On the {c} a name is written like {v}."),
    _Menu("guest_name", ("first", "last", "where"), "where", "my hotel shows guest names in several places",
          "returns a guest's name written the way I want it in one place", ("door", "invoice", "screen", "keycard"),
          "How should the guest's name look on the {c}?", "On the {c} a guest's name looks like {v}."),
)
#: How the offline simulator says each name format (the pieces its reply must contain).
_FORMAT_WORDS = {
    "last + ', ' + first": "'<last>, <first>'",
    "last.upper() + ' ' + first": "'<last in uppercase> <first>'",
    "first[0] + '. ' + last": "'<first item of first>. <last>'",
    "last + ' ' + first": "'<last> <first>'",
    "first + ' ' + last[0] + '.'": "'<first> <first item of last>.'",
    "first.upper() + ' ' + last.upper()": "'<first in uppercase> <last in uppercase>'",
    "first + ' ' + last.upper()": "'<first> <last in uppercase>'",
    "last + ', ' + first[0] + '.'": "'<last>, <first item of first>.'",
    "last + '/' + first": "'<last>/<first>'",
    "first.lower() + '.' + last.lower()": "'<first in lowercase>.<last in lowercase>'",
    "last.upper() + ', ' + first": "'<last in uppercase>, <first>'",
    "first + ' (' + last + ')'": "'<first> (<last>)'",
    "last[0] + '. ' + first": "'<first item of last>. <first>'",
    "last + ' ' + first[0]": "'<last> <first item of first>'",
}


def _name_example(fmt: str) -> str:
    """How the format writes Ann Lee (a stated format is given by example)."""
    return repr(eval(fmt, {}, {"first": "Ann", "last": "Lee"}))  # noqa: S307 - our own format table


def _names(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    menu = rng.choice(_NAME_MENUS)

    def args(r: random.Random, c: str, k: int) -> list[tuple]:
        return [(f, last, c) for f, last in zip(r.sample(_FIRST, k), r.sample(_LAST, k))]

    return _dispatch(rng, "order", menu, lambda c, taken: rng.choice([f for f in d.name_formats if f not in taken]),
                     lambda v: v, args, lambda v: (_FORMAT_WORDS[v],), say=lambda v: f"{_name_example(v)} (for Ann Lee)",
                     guesses=lambda c: ("first + ' ' + last", "last + ', ' + first"))(_n_cases(rng))


# --------------------------------------------------------------------------- edge-case families

_DIVISIONS = (
    ("per_person", "bill", "people", "share", "I split bills between friends", "returns each person's share of a bill"),
    ("average_speed", "distance", "hours", "speed", "I log my bike rides", "returns my average speed for a ride"),
    ("price_per_item", "total", "items", "price", "I compare bulk packs at the shop", "returns what one item of a pack costs"),
)


def _rounding_apart(x: int, y: int) -> bool:
    """Whether ``x / y`` unrounded and rounded to one, two and three decimals are four different
    numbers (so a wrong rounding fails the call)."""
    q = x / y
    r = [q] + [round(q, k) for k in (1, 2, 3)]
    return all(abs(a - b) > 1e-6 * max(1.0, abs(q)) for i, a in enumerate(r) for b in r[i + 1:])


def _division(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    fn, a, b, var, context, goal = rng.choice(_DIVISIONS)
    kinds = sorted(rng.sample(["zero", "negative", "digits"], rng.choice((2, 3, 3))),
                   key=["zero", "negative", "digits"].index)
    per = N_TESTS // len(kinds)
    details: list[Detail] = []
    calls: list[list[tuple | list[tuple]]] = []
    notes: list[str] = []
    for kind in kinds:
        if kind == "zero":
            v = rng.choice(d.zero_values)
            details.append(Detail("zero", "edge value", v, f"What should it return when {b} is zero?", (repr(v),),
                                  f"When {b} is zero it returns {v!r}.", _words(str(v)), (0, None)))
            calls.append([(x, 0) for x in rng.sample(range(1, 500), per)])
            notes.append(f"When {b} is zero I have my own answer.")
        elif kind == "negative":
            v = rng.choice(d.negative_values)
            details.append(Detail("negative", "edge value", v, f"What should it return when {b} is negative?",
                                  (repr(v),), f"When {b} is negative it returns {v!r}.", _words(str(v)),
                                  (None, 0, "error")))
            calls.append([(x, -rng.randint(1, 9)) for x in rng.sample(range(1, 500), per)])
            notes.append(f"A negative number of {b} gets its own answer too." if b != "hours" else
                         "Negative hours get their own answer too.")
        else:
            v = rng.choice((1, 2, 3))
            details.append(Detail("digits", "rounding", v, "How many decimals should the result be rounded to?",
                                  (f"{v} decimal",), f"The result is rounded to {v} decimal{'s' if v > 1 else ''}.", (), (2, 1)))
            pairs: list[tuple] = []
            while len(pairs) < per:
                pair = (rng.randint(1, 499), rng.randint(3, 9))
                if _rounding_apart(*pair) and pair not in pairs:
                    pairs.append(pair)
            calls.append(pairs)
            notes.append("I round the result my own way.")

    def render(vals: Sequence[Any]) -> str:
        got = dict(zip(kinds, vals))
        lines = [f"def {fn}({a}, {b}):"]
        if "zero" in got:
            lines += [f"    if {b} == 0:", f"        return {got['zero']!r}"]
        if "negative" in got:
            lines += [f"    if {b} < 0:", f"        return {got['negative']!r}"]
        # the rounding in a statement of its own: a rounded return would be the "normal case" fact,
        # which any "how ...?" question gets
        lines.append(f"    {var} = {a} / {b}")
        if "digits" in got:
            lines.append(f"    {var} = round({var}, {got['digits']!r})")
        lines.append(f"    return {var}")
        return "\n".join(lines) + "\n"

    return _Plan(f"{fn}/{'+'.join(kinds)}", fn, (a, b), context, goal, " ".join(notes), details, calls, render)


def _limit(rng: random.Random, d: Domain = TRAIN_TEST) -> _Plan:
    fn, arg, context, yes, no, limit_words, lo, hi, q_limit, q_negative, limit_guesses = rng.choice(d.limits)
    limit = rng.randint(lo, hi)
    label = rng.choice(d.invalid_labels)
    details = [
        Detail("limit", "threshold", limit, q_limit, (f"at least {limit}",), f"{limit_words[0].upper()}{limit_words[1:]} is {limit}.",
               (), limit_guesses),
        Detail("negative", "label", label, q_negative, (repr(label),), f"A negative {arg} gives {label!r}.",
               _words(label), ("invalid", "error")),
    ]
    per = N_TESTS // 2
    # A yes/no answer is the same for most limits away from the person's: every test of the limit
    # bundles limit - 1 and the limit itself (only the person's limit passes both) with one other value.
    others = rng.sample([x for x in range(0, hi + 30) if x not in (limit - 1, limit)], per)
    calls: list[list[tuple | list[tuple]]] = [[[(x,), (limit - 1,), (limit,)] for x in others],
                                              [(-x,) for x in rng.sample(range(1, 60), per)]]

    def render(vals: Sequence[Any]) -> str:
        lim, lab = vals
        return "\n".join([f"def {fn}({arg}):", f"    if {arg} < 0:", f"        return {lab!r}", f"    result = {no!r}",
                          f"    if {arg} >= {lim!r}:", f"        result = {yes!r}", "    return result"]) + "\n"

    note = f"Anything from {limit_words} up gives {yes!r}, anything lower {no!r}; a negative {arg} gets its own answer."
    return _Plan(fn, fn, (arg,), context, f"returns {yes!r} or {no!r}", note, details, calls, render)


#: Family name -> draw function (the train/test domain).
FAMILIES: dict[str, Callable[..., _Plan]] = {
    "prices": _prices,
    "rates": _rates,
    "units": _units,
    "messages": _messages,
    "codes": _codes,
    "names": _names,
    "division": _division,
    "limit": _limit,
}


# --------------------------------------------------------------------------- the driver


def _stated_flags(rng: random.Random, n: int) -> list[bool]:
    """Which details the request states: none for most tasks; one to all of them for
    :data:`STATED_SHARE` of the tasks."""
    if rng.random() >= STATED_SHARE:
        return [False] * n
    chosen = set(rng.sample(range(n), rng.randint(1, n)))
    return [i in chosen for i in range(n)]


def generate_collab_multi_spec(index: int, split: str = "train") -> MultiSpec:
    """Task ``index`` of ``split`` with its details (deterministic in ``(split, index)``).

    The RNG is seeded from ``(split, index, attempt)`` only. A ``train``/``test`` draw whose key
    the hash gives to the other split is skipped; ``val`` draws from :data:`VAL`.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    domain = VAL if split == "val" else TRAIN_TEST
    names = list(FAMILIES)
    for attempt in range(_MAX_ATTEMPTS):
        rng = random.Random(f"{_SEED}:{split}:{index}:{attempt}")
        family = names[rng.randrange(len(names))]
        plan = FAMILIES[family](rng, domain)
        key = structural_key(family, plan.variant, {d.name: d.value for d in plan.details})
        if split != "val" and split_of_key(key, _KEY_SALT) != split:
            continue
        flags = _stated_flags(rng, len(plan.details))
        description = describe(rng, plan.fn, plan.params, plan.context, plan.goal, plan.note, templates=_TEMPLATES)
        stated = [d.statement for d, s in zip(plan.details, flags) if s]
        if stated:
            description += " " + " ".join(stated)
        tests: list[str] = []
        details: list[Detail] = []
        for d, s, calls in zip(plan.details, flags, plan.calls):
            owned = []
            for test in calls:
                owned.append(len(tests))
                tests.append(_test_text(plan.fn, test))
            details.append(Detail(d.name, d.kind, d.value, d.question, d.says, d.statement, d.hidden_words, d.guesses,
                                  s, tuple(owned)))
        if len(tests) != N_TESTS or len(set(tests)) != N_TESTS:
            raise AssertionError(f"{family} drew {len(set(tests))} distinct tests, not {N_TESTS} (generator bug)")
        return MultiSpec(family, plan.variant, split, index, plan.fn, description, plan.render([d.value for d in plan.details]),
                         tuple(tests), tuple(details), plan.render)
    raise RuntimeError(f"no {split} task found for index {index} in {_MAX_ATTEMPTS} draws (generator bug)")


def generate_collab_multi_task(index: int, split: str = "train") -> BackendTask:
    """``collab-multi`` task ``index`` of ``split`` in the official backend record shape (the record
    also carries ``source``, ``index``, ``family``, ``generator_version``, ``details`` (how many) and
    ``stated_details`` (how many the request states); no detail values)."""
    return generate_collab_multi_spec(index, split).to_task()


__all__ = ["COLLAB_MULTI_GENERATOR_VERSION", "FAMILIES", "MAX_TURNS", "N_TESTS", "SPLITS", "STATED_SHARE",
           "TRAIN_TEST", "VAL", "Detail", "Domain", "MultiSpec", "generate_collab_multi_spec",
           "generate_collab_multi_task"]
