"""Procedural backend tasks where *collaboration pays*: one hidden detail decides the answer.

Why a second generator: the general generator (:mod:`colbench_gym.tasks.generator`) makes
realistic multi-detail tasks (tiers, caps, labels, edge cases) that a 0.5B model cannot solve
even when told every detail, so on a CPU no training method has anything to learn from. The
families here are deliberately *simple to code once the detail is known* and *impossible to
guess*: a rate, a fee, a conversion factor, a threshold, an exact message, a code format, a
date format or the value for an edge case that only the person knows. One or two good
questions to the (offline) simulator reveal it; answering at once almost always fails.

Each family renders, from the same hidden parameters, a vague first-person request (no digits,
no hidden words), a short readable reference (named constants, so the offline simulator can
say them) and ten tests that each depend on the hidden detail. Where one call cannot depend on
it (a yes/no answer far from a threshold is the same for most thresholds; an ordinary division
does not involve the value for a zero divisor), a test is a tuple of calls that includes the
decisive case, so a guessed detail fails most tests instead of earning partial credit
(``tests/learning/test_collab_tasks.py`` grades plausible guesses of every family).

The families run on the general generator's spine (:class:`colbench_gym.tasks.generator.FamilySet`:
seeded draws, structural keys, disjoint splits, the record) with their own seeds and key salt, so
task ``i`` of a split is a pure function of ``(split, i)`` and the splits never share a task.
Task sources: ``"collab:train"``, ``"collab:val"`` and ``"collab:test"``.

**The validation split** (``collab:val``, for the learning benchmark's selection): the hash of the
structural key already gives every key of the families' parameter domain to train or test (the
domain is small: 8 messages, 9 date formats, 12 units, ...), so a third hashed split would have
moved existing tasks. Instead each family draws ``val`` tasks from a *held-out parameter domain*
(:data:`VAL`): other rates (quarter-percent), base fees (quarter units), units, limits (other
scenarios, limits outside every train/test range), greetings, code prefixes, date separators and
zero values. Val keys are disjoint from train and test keys by construction (a test checks it),
and train and test stay byte for byte what they were. Val tasks are as hard as test tasks in the
same way: the same families and shapes, with hidden details no training task has.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from colbench_gym.tasks.generator import FamilySet, GeneratedSpec
from colbench_gym.tasks.generator_kit import REQUEST_TEMPLATES, CallTests, Draft, describe
from colbench_gym.tasks.records import BackendTask

#: Bumped whenever a change alters any generated task (recorded in each record).
COLLAB_GENERATOR_VERSION = 2
#: The request wordings of these tasks (the first three of the general ones).
_TEMPLATES = REQUEST_TEMPLATES[:3]


def _draft(variant: str, fn: str, description: str, lines: list[str], calls: Sequence[tuple | list[tuple]],
           hidden: dict[str, Any], hidden_strings: Sequence[str] = ()) -> Draft:
    """A family's draft; every test is given as calls (:class:`~colbench_gym.tasks.generator_kit.CallTests`)."""
    return Draft(variant, fn, description, lines, CallTests(fn, calls), hidden, list(hidden_strings))


def _describe(rng: random.Random, fn: str, params: list[str], context: str, goal: str) -> str:
    return describe(rng, fn, params, context, goal, templates=_TEMPLATES)


def _amounts(rng: random.Random, n: int, lo: float, hi: float) -> list[tuple]:
    """``n`` distinct amounts with two decimals (whole cents, so no float rounding ties matter)."""
    return [(c / 100,) for c in rng.sample(range(int(lo * 100), int(hi * 100)), n)]


_UNITS = {
    "centimeters": [("inches", 2.54), ("feet", 30.48), ("yards", 91.44), ("hands", 10.16)],
    "grams": [("ounces", 28.35), ("pounds", 453.59), ("stones", 6350.29), ("grains", 0.0648)],
    "liters": [("cups", 0.24), ("pints", 0.473), ("quarts", 0.946), ("gallons", 3.785)],
}
_THRESHOLDS = [
    ("can_join", "age", "minimum_age", 10, 70, "my club only takes members from a certain age", "says whether someone of that age may join"),
    ("passes_exam", "score", "pass_mark", 30, 90, "I mark exams out of a hundred", "says whether a score passes"),
    ("needs_freight", "weight_kg", "freight_limit", 5, 60, "heavy parcels go by freight in my shop", "says whether a parcel must go by freight"),
    ("is_fever", "temperature_tenths", "fever_from", 370, 395, "I log temperatures in tenths of a degree",
     "says whether a reading counts as a fever"),
]
_GREETINGS = ("Welcome back, {}!", "Hi {}, good to see you.", "Hello there, {}.", "Good day, {}!", "Hey {}, come on in!",
              "Greetings, {}.", "Nice to see you again, {}!", "{}, you are checked in.")
_NAMES = ("Ann", "Bo", "Chen", "Dara", "Eli", "Farah", "Gus", "Hana", "Ivo", "Jo", "Kim", "Lars", "Mia", "Nils")


@dataclass(frozen=True)
class Domain:
    """The hidden values a family set draws from (the train/test domain, or the validation one).

    Every field only changes *values*, never the sequence of RNG calls, so the train/test domain
    (:data:`TRAIN_TEST`) draws exactly what the families drew before domains existed.
    """

    #: surcharge: rate = round(randrange(start, stop, step) / scale, digits)
    rates: tuple[int, int, int, int, int] = (15, 240, 5, 1000, 3)
    #: per-unit fee: added to the base fee (randrange(3, 20) / 2)
    base_offset: float = 0.0
    units: dict[str, list[tuple[str, float]]] | None = None
    thresholds: tuple[tuple[Any, ...], ...] = tuple(_THRESHOLDS)
    greetings: tuple[str, ...] = _GREETINGS
    prefixes: tuple[str, ...] = ("INV", "ORD", "TKT", "REF", "CUS", "ACC", "MBR")
    date_seps: tuple[str, ...] = ("-", "/", ".")
    zero_values: tuple[Any, ...] = (-1, 0, None, "n/a", "undefined", "no data", -1.0)

    def unit_table(self) -> dict[str, list[tuple[str, float]]]:
        return _UNITS if self.units is None else self.units


#: The domain of ``collab:train`` and ``collab:test`` (divided between them by the key hash).
TRAIN_TEST = Domain()

#: The held-out domain of ``collab:val``: no value (in the field that makes the key) is one the
#: train/test domain can draw. Rates at quarter percents (0.0175 ... 0.2375, never a multiple of
#: 0.005), base fees at quarter units, other units of the same three targets, threshold scenarios
#: whose limits lie outside every train/test range (5-90, 370-395), other greetings, prefixes,
#: date separators and zero values.
VAL = Domain(
    rates=(175, 2400, 50, 10000, 4),
    base_offset=0.25,
    units={
        "centimeters": [("spans", 22.86), ("cubits", 45.72), ("links", 20.12), ("rods", 502.92)],
        "grams": [("drams", 1.77), ("carats", 0.2), ("pennyweights", 1.56), ("tolas", 11.66)],
        "liters": [("tablespoons", 0.015), ("gills", 0.118), ("pecks", 8.81), ("barrels", 158.99)],
    },
    thresholds=(
        ("is_speeding", "speed_kmh", "speed_limit", 100, 140, "my dashcam app flags speeding on the motorway",
         "says whether a speed counts as speeding"),
        ("needs_approval", "amount", "approval_limit", 150, 350, "purchases over a certain amount need my sign-off",
         "says whether a purchase needs my approval"),
        ("is_tall_enough", "height_cm", "min_height", 100, 140, "the rides in my theme park have a height limit",
         "says whether someone is tall enough for a ride"),
        ("is_heatwave", "temperature_tenths", "heat_from", 300, 365, "I log temperatures in tenths of a degree",
         "says whether a reading counts as heatwave weather"),
    ),
    greetings=("Good to have you here, {}.", "Howdy {}!", "Welcome aboard, {}.", "{}, your table is ready.",
               "Thanks for stopping by, {}!", "Glad you made it, {}.", "Evening, {}!", "Look who it is: {}!"),
    prefixes=("BIL", "SHP", "PAY", "RCP", "JOB", "CLT", "PRJ"),
    date_seps=(" ", "_", ""),
    zero_values=(-999, -99, "none", "-", "not defined", "no value", "nothing"),
)


# --------------------------------------------------------------------------- families

def _surcharge(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, arg, const, context, goal, part = rng.choice([
        ("price_with_tax", "price", "tax_rate", "I sell things online and must add the sales tax where I live",
         "returns the price including that tax", False),
        ("bill_with_tip", "bill", "tip_rate", "I always leave the same tip at restaurants",
         "returns the bill plus my usual tip", False),
        ("transfer_fee", "amount", "fee_rate", "my payment app takes a cut of every transfer",
         "returns the fee it charges on an amount", True),
        ("agent_commission", "sale", "commission_rate", "I pay my sales agents a commission",
         "returns the commission on a sale", True),
    ])
    start, stop, step, scale, digits = d.rates
    rate = round(rng.randrange(start, stop, step) / scale, digits)
    expr = f"{arg} * {const}" if part else f"{arg} * (1 + {const})"
    lines = [f"def {fn}({arg}):", f"    {const} = {rate!r}", f"    return round({expr}, 2)"]
    return _draft("part" if part else "total", fn, _describe(rng, fn, [arg], context, goal), lines,
                  _amounts(rng, 10, 3, 900), {"rate": rate})


def _per_unit_fee(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, arg, unit, context, goal = rng.choice([
        ("delivery_cost", "km", "km", "I deliver flowers by bike", "returns what a delivery costs for its distance in km"),
        ("parking_fee", "hours", "hour", "I run a small car park", "returns the parking fee for a stay of some hours"),
        ("rental_cost", "days", "day", "I rent out camping gear", "returns what a rental costs for some days"),
        ("tutoring_fee", "hours", "hour", "I give maths lessons", "returns what I charge for some hours of tutoring"),
    ])
    base = rng.randrange(3, 20) / 2
    if d.base_offset:
        base += d.base_offset
    rate = rng.randrange(7, 99) / 20
    lines = [f"def {fn}({arg}):", f"    base_fee = {base!r}", f"    price_per_{unit} = {rate!r}",
             f"    return round(base_fee + {arg} * price_per_{unit}, 2)"]
    calls = [(x,) for x in rng.sample(range(1, 40), 10)]
    return _draft("linear", fn, _describe(rng, fn, [arg], context, goal), lines, calls, {"base": base, "rate": rate})


def _unit_convert(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    units = d.unit_table()
    target = rng.choice(sorted(units))
    unit, factor = rng.choice(units[target])
    fn = f"to_{target}"
    arg = {"centimeters": "length", "grams": "weight", "liters": "volume"}[target]
    context = rng.choice([f"I measure every {arg} in my old unit", f"my notebook has each {arg} in the unit I grew up with"])
    goal = f"converts a {arg} from my unit into {target}"
    lines = [f"def {fn}({arg}):", f"    {target}_per_{unit[:-1] if unit.endswith('s') else unit} = {factor!r}",
             f"    return round({arg} * {target}_per_{unit[:-1] if unit.endswith('s') else unit}, 2)"]
    return _draft(target, fn, _describe(rng, fn, [arg], context, goal), lines, _amounts(rng, 10, 1, 120),
                  {"unit": unit, "factor": factor}, [unit])


def _threshold(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, arg, const, lo, hi, context, goal = rng.choice(list(d.thresholds))
    limit = rng.randint(lo, hi)
    op = rng.choice([">=", ">"])
    lines = [f"def {fn}({arg}):", f"    {const} = {limit!r}", f"    return {arg} {op} {const}"]
    # A yes/no answer is the same for most thresholds away from the limit, so single calls give
    # a guessed limit about half the tests. Every test here spans the limit (limit - 1 and
    # limit + 1: only a limit within one of the person's passes it), six of them also call the
    # limit itself (which decides "at least" against "more than"), plus one other value each.
    others = rng.sample([x for x in range(max(0, lo - 10), hi + 11) if abs(x - limit) > 1], 10)
    calls = [[(x,), (limit - 1,), (limit,), (limit + 1,)] if i < 6 else [(x,), (limit - 1,), (limit + 1,)]
             for i, x in enumerate(others)]
    return _draft(op, fn, _describe(rng, fn, [arg], context, goal), lines, calls, {"limit": limit, "op": op})


def _message(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, context, goal = rng.choice([
        ("greeting", "my shop's screen greets every customer by name", "returns the greeting for a name"),
        ("checkin_message", "our gym's kiosk shows a message when a member checks in", "returns that message for a name"),
        ("welcome_text", "my hotel's app welcomes guests in its own words", "returns the welcome text for a guest's name"),
    ])
    template = rng.choice(d.greetings)
    before, _, after = template.partition("{}")
    lines = [f"def {fn}(name):", f"    return {before!r} + name + {after!r}"]
    calls = [(n,) for n in rng.sample(_NAMES, 10)]
    hidden_words = [t.strip(" ,.!") for t in (before, after) if len(t.strip(" ,.!")) > 3]
    return _draft("template", fn, _describe(rng, fn, ["name"], context, goal), lines, calls, {"template": template},
                  hidden_words)


def _code_format(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, context, goal = rng.choice([
        ("invoice_code", "my invoices carry a code built from their number", "turns an invoice number into its code"),
        ("ticket_code", "every support ticket gets a code from its number", "makes the code for a ticket number"),
        ("member_code", "our members have a code on their card", "turns a member number into that code"),
    ])
    prefix = rng.choice(d.prefixes)
    sep = rng.choice(["-", "#", "/", "_"])
    width = rng.randint(4, 7)
    fmt = prefix + sep + "{number:0" + str(width) + "d}"
    lines = [f"def {fn}(number):", f"    return f{fmt!r}"]
    calls = [(n,) for n in rng.sample(range(1, 9999), 10)]
    return _draft("zfill", fn, _describe(rng, fn, ["number"], context, goal), lines, calls,
                  {"prefix": prefix, "sep": sep, "width": width}, [prefix])


def _date_format(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, context, goal = rng.choice([
        ("format_date", "I write dates my own way on every document", "formats a date my way"),
        ("label_date", "the labels on my jars carry a date", "writes the date for a label"),
    ])
    order = rng.choice(["dmy", "mdy", "ymd"])
    sep = rng.choice(d.date_seps)
    parts = {"d": "{day:02d}", "m": "{month:02d}", "y": "{year}"}
    fmt = sep.join(parts[c] for c in order)
    lines = [f"def {fn}(year, month, day):", f"    return f{fmt!r}"]
    calls = [(y, rng.randint(1, 12), rng.randint(1, 28)) for y in rng.sample(range(1990, 2031), 10)]
    return _draft(order, fn, _describe(rng, fn, ["year", "month", "day"], context, goal), lines, calls,
                  {"order": order, "sep": sep})


def _rounding_apart(x: int, y: int) -> bool:
    """Whether ``x / y`` rounded to one, two and three decimals gives three different numbers
    (so a wrong number of decimals fails the call)."""
    q = x / y
    r = [round(q, d) for d in (1, 2, 3)]
    return all(abs(a - b) > 1e-6 * max(1.0, abs(q)) for i, a in enumerate(r) for b in r[i + 1:])


def _zero_rule(rng: random.Random, d: Domain = TRAIN_TEST) -> Draft:
    fn, a, b, context, goal = rng.choice([
        ("average_price", "total", "count", "I work out average prices from sales totals", "returns total divided by count"),
        ("per_person", "bill", "people", "I split bills between friends", "returns each person's share of the bill"),
        ("speed", "distance", "hours", "I log my runs", "returns the distance divided by the hours"),
    ])
    value = rng.choice(d.zero_values)
    digits = rng.choice([1, 2, 3])
    lines = [f"def {fn}({a}, {b}):", f"    if {b} == 0:", f"        return {value!r}", f"    return round({a} / {b}, {digits})"]
    # An ordinary division does not involve the value for zero: alone, such calls would give a
    # guess with the right rounding most of the tests. So four tests call the zero case only and
    # six pair a zero case with a division whose rounding to one, two or three decimals differs.
    zeros = rng.sample(range(1, 500), 10)
    divisions: list[tuple] = []
    while len(divisions) < 6:
        pair = (rng.randint(1, 499), rng.randint(3, 9))
        if _rounding_apart(*pair) and pair not in divisions:
            divisions.append(pair)
    calls: list[tuple | list[tuple]] = [(x, 0) for x in zeros[:4]]
    calls += [[(x, 0), pair] for x, pair in zip(zeros[4:], divisions)]
    return _draft("zero", fn, _describe(rng, fn, [a, b], context, goal + f" (when {b} is zero I have my own answer)"),
                  lines, calls, {"value": value, "digits": digits})


#: Family name -> draw function.
FAMILIES: dict[str, Callable[[random.Random], Draft]] = {
    "surcharge": _surcharge,
    "per_unit_fee": _per_unit_fee,
    "unit_convert": _unit_convert,
    "threshold": _threshold,
    "message": _message,
    "code_format": _code_format,
    "date_format": _date_format,
    "zero_rule": _zero_rule,
}


#: The same families drawing from the held-out validation domain :data:`VAL`.
VAL_FAMILIES: dict[str, Callable[[random.Random], Draft]] = {name: partial(fn, d=VAL) for name, fn in FAMILIES.items()}

#: The collaboration-pays family set: ``collab:train`` / ``collab:test`` (divided by the key hash)
#: and ``collab:val`` (the held-out domain).
COLLAB = FamilySet("collab", COLLAB_GENERATOR_VERSION, FAMILIES, "colbench-collab", key_salt="collab|",
                   held_out={"val": VAL_FAMILIES})
#: The splits of ``collab:`` (the task sources ask a generator module for its ``SPLITS``).
SPLITS = COLLAB.splits


def generate_collab_spec(index: int, split: str = "train") -> GeneratedSpec:
    """Task ``index`` of ``split`` with its hidden details (deterministic in ``(split, index)``)."""
    return COLLAB.spec(index, split)


def generate_collab_task(index: int, split: str = "train") -> BackendTask:
    """Collaboration task ``index`` of ``split`` in the official backend record shape."""
    return generate_collab_spec(index, split).to_task()
