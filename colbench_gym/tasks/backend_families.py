"""The backend task families of the procedural generator: one draw function per family.

Each family draws hidden details from the seeded RNG and renders the vague request, the readable
reference and a test plan from them (see :mod:`colbench_gym.tasks.generator` for the contract).
Adding a family is adding a function here and an entry in :data:`FAMILIES`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from colbench_gym.tasks.generator_kit import Draft, call_text, describe, money, ten_tests  # noqa: F401


def _tiered_bill(rng: random.Random) -> Draft:
    fn, unit, context, goal = rng.choice([
        ("electricity_bill", "kwh", "I pay for electricity by the kilowatt hour", "works out my monthly bill from the kilowatt hours I used"),
        ("water_bill", "cubic_meters", "our building charges each flat for its water", "computes a flat's water bill from the cubic meters it used"),
        ("print_cost", "pages", "I run a small print shop", "prices a print job from its number of pages"),
        ("storage_cost", "gigabytes", "I resell cloud storage to small businesses", "works out a customer's monthly charge from the gigabytes they store"),
    ])
    mode = rng.choice(["marginal", "whole"])
    limit = rng.randrange(20, 401, 10)
    low = money(rng, 0.05, 0.6, 0.01)
    high = round(low + rng.choice([-1, 1]) * money(rng, 0.02, 0.2, 0.01), 2)
    if high <= 0:
        high = round(low + 0.05, 2)
    base = rng.choice([0, 2.5, 4, 5, 7.5, 9.99, 12])
    inclusive = True if mode == "marginal" else rng.choice([True, False])
    negative = rng.choice(["raise", "zero"])
    op = "<=" if inclusive else "<"
    lines = [f"def {fn}({unit}):"]
    if negative == "raise":
        lines += [f"    if {unit} < 0:", '        raise ValueError("usage cannot be negative")']
    else:
        lines += [f"    if {unit} <= 0:", "        return 0.0"]
    lines += [f"    base_charge = {base!r}", f"    tier_limit = {limit!r}", f"    first_rate = {low!r}", f"    second_rate = {high!r}",
              f"    if {unit} {op} tier_limit:", f"        cost = {unit} * first_rate", "    else:"]
    if mode == "marginal":
        lines.append(f"        cost = tier_limit * first_rate + ({unit} - tier_limit) * second_rate")
    else:
        lines.append(f"        cost = {unit} * second_rate")
    lines.append("    return round(base_charge + cost, 2)")
    jitter = rng.randint(2, limit - 2)
    calls = [(limit,), (limit - 1,), (limit + 1,), (0,), (-rng.randint(1, 9),), (1,), (jitter,), (limit + jitter,),
             (2 * limit + rng.randint(1, 9),), (limit + 0.5,), (5 * limit,)]
    desc = describe(rng, fn, [unit], context, goal, rng.choice(["", "The price per unit changes once usage gets high.", "There's a fixed part too."]))
    return Draft(f"{mode}/{negative}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, 6 * limit),)),
                  {"mode": mode, "limit": limit, "low": low, "high": high, "base": base, "inclusive": inclusive, "negative": negative})


def _capped_discount(rng: random.Random) -> Draft:
    fn, amount, flag, context, goal = rng.choice([
        ("checkout_total", "subtotal", "is_member", "my online shop gives discounts on bigger orders", "computes what the customer finally pays"),
        ("booking_total", "amount", "has_pass", "I sell guided tours and regulars can buy a pass", "gives the final price of a booking"),
        ("grocery_total", "basket", "has_card", "my grocery store has a loyalty card", "works out the total to charge at the till"),
    ])
    minimum = rng.randrange(20, 201, 5)
    rate = rng.choice([0.05, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3])
    cap = rng.randrange(5, 61, 5)
    if cap <= rate * minimum * 1.2:  # otherwise the cap always binds and the rate never matters
        cap = int(rate * minimum * 1.5 / 5 + 1) * 5
    bonus = rng.choice([0.02, 0.03, 0.05, 0.08, 0.1])
    member_rule = rng.choice(["bonus", "no_minimum"])
    lines = [f"def {fn}({amount}, {flag}):", f"    if {amount} < 0:", '        raise ValueError("amount cannot be negative")',
             f"    minimum_spend = {minimum!r}", f"    discount_rate = {rate!r}", f"    max_discount = {cap!r}"]
    if member_rule == "bonus":
        lines += [f"    member_bonus = {bonus!r}", "    rate = 0.0", f"    if {amount} >= minimum_spend:", "        rate = discount_rate",
                  f"    if {flag}:", "        rate += member_bonus"]
    else:
        lines += ["    rate = 0.0", f"    if {amount} >= minimum_spend or {flag}:", "        rate = discount_rate"]
    lines += [f"    discount = min({amount} * rate, max_discount)", f"    return round({amount} - discount, 2)"]
    binding = cap / rate  # where the cap starts to bind for a non-member
    past_cap = max(int(binding) + rng.randint(5, 40), minimum + 10)
    calls = [(minimum, False), (minimum - 1, False), (minimum - 1, True), (past_cap, False), (past_cap, True), (0, False),
             (-rng.randint(1, 20), True), (minimum + rng.randint(1, 9), True), (round(min(minimum, binding) / 2 + 0.25, 2), True),
             (3 * past_cap, False), (minimum, True)]
    desc = describe(rng, fn, [amount, flag], context, goal, rng.choice(["", "Members get something extra.", "The discount shouldn't get out of hand on huge orders."]))
    hidden = {"minimum": minimum, "rate": rate, "cap": cap, "rule": member_rule}
    if member_rule == "bonus":
        hidden["bonus"] = bonus
    return Draft(member_rule, fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, 4 * past_cap), rng.choice([True, False]))), hidden)


_LABEL_SETS = (
    ("excellent", "good", "fair", "poor"), ("gold", "silver", "bronze", "none"), ("elite", "advanced", "intermediate", "beginner"),
    ("high", "medium", "low"), ("great", "okay", "needs work"), ("A", "B", "C", "D", "F"), ("platinum", "gold", "standard"),
)


def _score_labels(rng: random.Random) -> Draft:
    fn, arg, direction, top, context, goal = rng.choice([
        ("essay_label", "score", "high", 100, "I grade essays for an evening class", "turns an essay score into the label I write on it"),
        ("fitness_badge", "minutes", "high", 600, "our gym hands out badges for weekly exercise", "gives the badge for someone's weekly exercise minutes"),
        ("review_label", "rating", "high", 50, "my review site summarises ratings with a word", "turns a rating into that word"),
        ("speed_label", "response_ms", "low", 2000, "I monitor how fast our website answers", "labels a response time in milliseconds"),
        ("golf_label", "strokes", "low", 150, "my golf club ranks rounds", "labels a round by its total strokes"),
    ])
    labels = rng.choice(_LABEL_SETS)
    k = len(labels) - 1
    cuts = sorted(rng.sample(range(max(2, top // 20), top - max(1, top // 20)), k))
    inclusive = rng.choice([True, False])
    invalid = rng.choice(["raise", "label"])
    invalid_label = rng.choice(["invalid", "out of range", "error"])
    lines = [f"def {fn}({arg}):", f"    if {arg} < 0 or {arg} > {top!r}:"]
    lines.append(f'        raise ValueError("{arg} out of range")' if invalid == "raise" else f"        return {invalid_label!r}")
    if direction == "high":
        op, order = (">=" if inclusive else ">"), list(reversed(cuts))
    else:
        op, order = ("<=" if inclusive else "<"), list(cuts)
    for i, (cut, label) in enumerate(zip(order, labels)):
        lines += [f"    {'if' if i == 0 else 'elif'} {arg} {op} {cut!r}:", f"        return {label!r}"]
    lines.append(f"    return {labels[-1]!r}")
    step = 1 if direction == "high" else -1
    calls: list[tuple] = []
    for cut in order:  # the boundary itself and the value just on the other side
        calls += [(cut,), (cut - step if inclusive else cut + step,)]
    calls += [(top + 1,), (0,), (top,), (-1,)]
    for cut in order:
        calls.append((cut + step if inclusive else cut - step,))
    desc = describe(rng, fn, [arg], context, goal, rng.choice(["", "I have my own cut-offs.", "Nothing fancy, just the label."]))
    hidden_strings = [s for s in labels if len(s) > 1] + ([invalid_label] if invalid == "label" else [])
    hidden = {"cuts": cuts, "labels": list(labels), "inclusive": inclusive, "invalid": invalid, "direction": direction, "top": top}
    if invalid == "label":
        hidden["invalid_label"] = invalid_label
    return Draft(f"{direction}/{invalid}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, top),)), hidden, hidden_strings)


_FIRST = ("ada", "Grace", "  alan ", "MARIE", "jean-luc", "Mary Ann", "li", "Omar", "zoe", "Björn", "o'neil")
_LAST = ("lovelace", "Hopper", " turing", "CURIE", "picard", "van dyke", "Wu", "khayyam", "smith-jones", "Ek", "mcgregor",
         "featherstonehaugh", "Wolfeschlegel", "al-khwarizmi")
_LONGEST_LAST = "featherstonehaugh"


def _name_format(rng: random.Random) -> Draft:
    fn, context, goal = rng.choice([
        ("badge_name", "I print name badges for a conference", "formats a person's name for their badge"),
        ("card_name", "our library prints names on membership cards", "formats the name that goes on a card"),
        ("roster_name", "I keep the roster of our football club", "formats a player's name for the roster"),
        ("label_name", "I print shipping labels for my shop", "formats the customer's name for the label"),
    ])
    order = rng.choice(["last_first", "first_last"])
    sep = rng.choice([", ", " ", "_", " - ", "/"]) if order == "last_first" else rng.choice([" ", "_", ".", " - "])
    last_case = rng.choice(["upper", "title", "lower"])
    first_style = rng.choice(["full", "initial"])
    first_case = rng.choice(["title", "upper", "lower"])
    missing = rng.choice(["last_only", "raise"])
    max_last = rng.choice([None, 6, 8, 10, 12])
    case = {"upper": ".upper()", "title": ".title()", "lower": ".lower()"}
    lines = [f"def {fn}(first, last):", "    first = first.strip()", "    last = last.strip()", "    if not last:",
             '        raise ValueError("a last name is required")']
    if max_last is None:
        lines.append(f"    last_part = last{case[last_case]}")
    else:
        lines += [f"    max_last_length = {max_last!r}", f"    last_part = last[:max_last_length]{case[last_case]}"]
    lines.append("    if not first:")
    lines.append("        return last_part" if missing == "last_only" else '        raise ValueError("a first name is required")')
    if first_style == "initial":
        lines.append(f'    first_part = first[0]{case[first_case]} + "."')
    else:
        lines.append(f"    first_part = first{case[first_case]}")
    lines.append(f"    separator = {sep!r}")
    lines.append("    return last_part + separator + first_part" if order == "last_first" else "    return first_part + separator + last_part")
    firsts, lasts = list(_FIRST), [name for name in _LAST if name != _LONGEST_LAST]
    rng.shuffle(firsts)
    rng.shuffle(lasts)
    pairs = list(zip(firsts[:6], lasts[:6]))
    # a very long last name shows whether (and where) it is cut; then the two missing-name cases
    calls = pairs[:1] + [(firsts[6], _LONGEST_LAST)] + pairs[1:5] + [("", lasts[6]), (firsts[7], "")] + pairs[5:]
    calls += [(firsts[8], lasts[7]), (firsts[9], lasts[8])]
    desc = describe(rng, fn, ["first", "last"], context, goal, rng.choice(["", "People type names sloppily.", "It has to look the same on every one."]))
    hidden = {"order": order, "sep": sep, "last_case": last_case, "first_style": first_style, "first_case": first_case, "missing": missing,
              "max_last": max_last}
    return Draft(f"{order}/{first_style}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.choice(_FIRST), rng.choice(_LAST))), hidden)


_NAMES = ("ana", "ben", "cy", "dev", "eli", "fay", "gus", "hal", "ivy", "jo", "kai", "lu", "max", "ned", "oz", "pia")


def _filter_rank(rng: random.Random) -> Draft:
    fn, arg, field_name, direction, top, context, goal = rng.choice([
        ("top_players", "players", "points", "high", 100, "I run our club's quiz league", "picks out the players to mention in the newsletter"),
        ("best_sellers", "products", "sold", "high", 500, "I look at my shop's sales every week", "lists the products worth reordering"),
        ("top_students", "students", "score", "high", 100, "I hand out certificates in my class", "picks the students who get one"),
        ("low_stock", "items", "stock", "low", 50, "I check the pantry of our food bank", "lists the items that are running low"),
        ("slow_routes", "routes", "minutes", "low", 120, "I plan delivery routes", "lists the routes we should look at first"),
    ])
    threshold = rng.randint(top // 5, top - top // 5)
    inclusive = rng.choice([True, False])
    limit = rng.choice([2, 3, 4, 5, None])
    shape = rng.choice(["names", "pairs"])
    tie = rng.choice(["name", "input"])
    if direction == "high":
        cond, sort_value = (">=" if inclusive else ">"), f'-row["{field_name}"]'
    else:
        cond, sort_value = ("<=" if inclusive else "<"), f'row["{field_name}"]'
    sort_key = f'({sort_value}, row["name"])' if tie == "name" else sort_value
    limit_name = f"min_{field_name}" if direction == "high" else f"max_{field_name}"
    lines = [f"def {fn}({arg}):", f"    {limit_name} = {threshold!r}"]
    if limit is not None:
        lines.append(f"    max_results = {limit!r}")
    lines += ["    kept = []", f"    for row in {arg}:", f'        if row["{field_name}"] {cond} {limit_name}:', "            kept.append(row)",
              f"    kept.sort(key=lambda row: {sort_key})"]
    if limit is not None:
        lines.append("    kept = kept[:max_results]")
    lines.append('    return [row["name"] for row in kept]' if shape == "names" else f'    return [(row["name"], row["{field_name}"]) for row in kept]')
    better = 1 if direction == "high" else -1

    def rows(values: Sequence[int], names: Sequence[str] | None = None) -> tuple:
        names = list(names or rng.sample(_NAMES, len(values)))
        return ([{"name": n, field_name: v} for n, v in zip(names, values)],)

    good = [threshold + better * rng.randint(1, top // 5) for _ in range(6)]
    n1, n2 = sorted(rng.sample(_NAMES, 2))
    calls = [
        ([],), rows([threshold]), rows([threshold - better]), rows([threshold + better, threshold - better * 3, threshold]),
        rows(good[:6] + [threshold - better]), rows([good[0], good[0]], [n2, n1]),
        rows([threshold, threshold + better * 2, threshold - better, good[1], good[2]]),
        rows([good[3], threshold - better * 5, good[4], good[5], threshold]),
        rows([threshold - better * rng.randint(2, 9) for _ in range(3)]), rows(good[:3] + [good[0]], [n2, "zed", "amy", n1]),
    ]
    desc = describe(rng, fn, [arg], context, goal, f"Each entry is a dict with 'name' and '{field_name}'.")
    hidden = {"threshold": threshold, "inclusive": inclusive, "limit": limit, "shape": shape, "tie": tie, "direction": direction}
    return Draft(f"{direction}/{shape}", fn, desc, lines, ten_tests(fn, calls, lambda: rows([rng.randint(0, top) for _ in range(4)])), hidden)


def _late_fee(rng: random.Random) -> Draft:
    fn, days, kind, types, context, goal = rng.choice([
        ("late_fee", "days_late", "item_type", ("book", "dvd", "magazine"), "I volunteer at our town library", "computes the fee when something comes back late"),
        ("rental_penalty", "days_over", "gear", ("bike", "kayak", "tent"), "I rent out outdoor gear", "works out the penalty for bringing gear back late"),
        ("tool_late_charge", "days_late", "tool", ("drill", "ladder", "saw"), "our neighbourhood lends out tools", "charges people who return a tool late"),
    ])
    rates = sorted(rng.sample([0.1, 0.2, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0], 3))
    rng.shuffle(rates)
    grace = rng.randint(0, 5)
    cap = rng.choice([5, 10, 15, 20, 25, 30, 40, 50])
    if cap < (grace + 4) * max(rates):  # otherwise the cap binds at once and the rates never show
        cap = int((grace + 4) * max(rates) / 5 + 1) * 5
    unknown = rng.choice(["default", "raise"])
    default_rate = rng.choice([0.3, 0.4, 0.6, 0.8, 1.25])
    charge = rng.choice(["after_grace", "all_days"])
    table = ", ".join(f"{t!r}: {r!r}" for t, r in zip(types, rates))
    lines = [f"def {fn}({days}, {kind}):", f"    grace_days = {grace!r}", f"    daily_rates = {{{table}}}", f"    max_fee = {cap!r}",
             f"    if {days} <= grace_days:", "        return 0.0"]
    if unknown == "default":
        lines.append(f"    rate = daily_rates.get({kind}, {default_rate!r})")
    else:
        lines += [f"    if {kind} not in daily_rates:", f'        raise ValueError("unknown {kind}")', f"    rate = daily_rates[{kind}]"]
    lines.append(f"    fee = ({days} - grace_days) * rate" if charge == "after_grace" else f"    fee = {days} * rate")
    lines.append("    return round(min(fee, max_fee), 2)")
    top_rate = max(rates)
    over_cap = int(cap / min(rates)) + grace + rng.randint(1, 5)
    calls = [(grace, types[0]), (grace + 1, types[0]), (grace + 1, types[1]), (grace + 2, types[2]), (over_cap, types[0]),
             (int(cap / top_rate) + grace, types[rates.index(top_rate)]), (grace + 3, "other"), (0, types[1]), (-2, types[2]),
             (grace + rng.randint(4, 9), types[1]), (over_cap, types[2])]
    note = f"The {kind} is one of {', '.join(repr(t) for t in types)}."
    desc = describe(rng, fn, [days, kind], context, goal, note)
    hidden = {"grace": grace, "rates": dict(zip(types, rates)), "cap": cap, "unknown": unknown, "charge": charge}
    if unknown == "default":
        hidden["default_rate"] = default_rate
    return Draft(f"{charge}/{unknown}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, over_cap), rng.choice(types))), hidden)


def _brackets(rng: random.Random) -> Draft:
    fn, arg, scale, context, goal = rng.choice([
        ("income_tax", "income", 1000, "our community co-op withholds a tax on members' earnings", "computes the tax owed on an income"),
        ("sales_commission", "sales", 500, "I pay my sales team a commission", "computes someone's commission from their monthly sales"),
        ("author_royalty", "copies_sold", 100, "I run a tiny publishing house", "works out an author's royalty from the copies sold"),
    ])
    n = rng.choice([2, 3])
    limits = sorted(rng.sample(range(5, 120), n - 1))
    limits = [x * scale for x in limits]
    rates = sorted(rng.sample([0.0, 0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45], n))
    rounding = rng.choice(["cents", "whole", "floor"])
    result = fn.split("_")[-1]  # tax, commission, royalty
    lines = [f"def {fn}({arg}):", f"    if {arg} < 0:", f'        raise ValueError("{arg} cannot be negative")', f"    {result} = 0.0",
             f"    remaining = {arg}"]
    for limit, rate in zip(reversed(limits), reversed(rates[1:])):
        lines += [f"    if remaining > {limit!r}:", f"        {result} += (remaining - {limit!r}) * {rate!r}", f"        remaining = {limit!r}"]
    lines.append(f"    {result} += remaining * {rates[0]!r}")
    lines.append({"cents": f"    return round({result}, 2)", "whole": f"    return round({result})", "floor": f"    return int({result})"}[rounding])
    calls: list[tuple] = [(0,)]
    for limit in limits:
        calls += [(limit,), (limit + rng.randint(1, 9) * scale // 10 + 3,)]
    calls += [(limits[-1] * 2 + 7,), (-1,), (limits[0] // 2 + 1,), (limits[0] - 1,)]
    if len(limits) > 1:
        calls.append(((limits[0] + limits[1]) // 2,))
    calls += [(limits[-1] + 1,), (limits[-1] * 5,), (limits[0] + 0.5,), (1,)]
    desc = describe(rng, fn, [arg], context, goal, rng.choice(["", "Bigger amounts are charged differently.", "I want the same numbers my accountant gets."]))
    return Draft(f"{n}/{rounding}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, 3 * limits[-1]),)),
                  {"limits": limits, "rates": rates, "rounding": rounding})


def _unit_format(rng: random.Random) -> Draft:
    fn, arg, small, big, factor, big_name, context, goal = rng.choice([
        ("format_distance", "meters", ("m", "meters"), ("km", "kilometers"), 1000, "kilometers", "my running app shows distances", "shows a distance nicely"),
        ("format_weight", "grams", ("g", "grams"), ("kg", "kilos"), 1000, "kilos", "my baking blog lists ingredient weights", "shows a weight for the blog"),
        ("format_size", "num_bytes", ("B", "bytes"), ("KB", "kilobytes"), rng.choice([1000, 1024]), "kilobytes", "my file manager lists file sizes", "shows a file size"),
        ("format_time", "seconds", ("s", "sec"), ("min", "minutes"), 60, "minutes", "my cooking timer shows time left", "shows a duration"),
    ])
    style = rng.choice([0, 1])
    small_unit, big_unit = small[style], big[style]
    switch = int(factor * rng.choice([0.5, 0.75, 1, 1.5, 2, 2.5, 3, 5, 10]))
    below = rng.choice(["<", "<="])
    decimals = rng.choice([0, 1, 2])
    fixed = decimals > 0 and rng.choice([True, False])  # "2.50 km" rather than "2.5 km"
    sep = rng.choice([" ", ""]) if style == 0 else " "
    lines = [f"def {fn}({arg}):", f"    if {arg} < 0:", '        raise ValueError("value cannot be negative")',
             f"    if {arg} {below} {switch!r}:", f"        return str(round({arg})) + {sep + small_unit!r}", f"    {big_name} = {arg} / {factor!r}"]
    if fixed:
        lines.append(f'    return f"{{{big_name}:.{decimals}f}}" + {sep + big_unit!r}')
    elif decimals:
        lines.append(f"    return str(round({big_name}, {decimals})) + {sep + big_unit!r}")
    else:
        lines.append(f"    return str(round({big_name})) + {sep + big_unit!r}")
    calls = [(switch - 1,), (switch,), (switch + 1,), (0,), (factor * 3 + factor // 4 + 7,), (-5,), (factor * 12 + factor * 2 // 3,),
             (switch * 10 + 1,), (round(switch / 3 + 0.4, 1),), (factor * 100,), (factor - 1,), (factor,)]
    desc = describe(rng, fn, [arg], context, goal, rng.choice(["", "Big numbers should be shown in a bigger unit.", "Keep it short."]))
    return Draft(f"{style}/{decimals}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, 20 * factor),)),
                  {"factor": factor, "switch": switch, "below": below, "decimals": decimals, "fixed": fixed, "sep": sep,
                   "units": [small_unit, big_unit]},
                  [u for u in (small_unit, big_unit) if len(u) > 2 and u not in arg])


def _shipping(rng: random.Random) -> Draft:
    fn, total, fast, context, goal = rng.choice([
        ("shipping_cost", "order_total", "express", "I sell ceramics online", "computes the shipping charge for an order"),
        ("delivery_fee", "basket_total", "rush", "my grocery store delivers", "works out the delivery fee"),
        ("courier_price", "order_value", "same_day", "I run a courier service for local shops", "prices a delivery"),
    ])
    free_min = rng.randrange(25, 151, 5)
    base = rng.choice([2.98, 3.5, 3.98, 4.5, 4.98, 5.96, 6.5])  # even cents: fewer half-cent ties
    included = rng.choice([0.5, 1, 2, 3, 5])
    per_kg = rng.choice([0.5, 0.75, 1, 1.25, 1.5, 2, 2.5])
    mode = rng.choice(["surcharge", "multiplier"])
    fast_value = rng.choice([3, 4.5, 6, 7.5, 10]) if mode == "surcharge" else rng.choice([1.5, 2, 2.5])
    free_fast = rng.choice([True, False])
    ceil = rng.choice([True, False])
    lines = [f"def {fn}(weight_kg, {total}, {fast}):"]
    if ceil:
        lines = ["import math", "", *lines]
    lines += ["    if weight_kg <= 0:", '        raise ValueError("weight must be positive")',
              f"    if {total} >= {free_min!r}:" if free_fast else f"    if {total} >= {free_min!r} and not {fast}:", "        return 0.0",
              f"    cost = {base!r}", f"    included_kg = {included!r}", "    if weight_kg > included_kg:"]
    lines.append("        extra_kg = math.ceil(weight_kg - included_kg)" if ceil else "        extra_kg = weight_kg - included_kg")
    lines += [f"        cost += extra_kg * {per_kg!r}", f"    if {fast}:"]
    lines.append(f"        cost += {fast_value!r}" if mode == "surcharge" else f"        cost *= {fast_value!r}")
    lines.append("    return round(cost, 2)")
    light = round(included / 2, 2)
    calls = [(light, free_min - 1, False), (light, free_min, False), (light, free_min, True), (included + 0.3, 10, False),
             (included, 10, False), (included + 2.6, free_min - 5, True), (0, 10, False), (included + 4, 0, False),
             (light, round(free_min / 3, 2), True), (included + 1, free_min + 20, True), (included + 7.25, 1, True)]
    desc = describe(rng, fn, ["weight_kg", total, fast], context, goal, rng.choice(["", "Big orders should be rewarded.", "Heavier parcels cost me more."]))
    hidden = {"free_min": free_min, "base": base, "included": included, "per_kg": per_kg, "mode": mode, "fast_value": fast_value,
              "free_fast": free_fast, "ceil": ceil}
    return Draft(f"{mode}/{ceil}", fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(1, 40) / 4, rng.randint(0, 2 * free_min), rng.choice([True, False]))), hidden)


def _streaks(rng: random.Random) -> Draft:
    fn, arg, item, top, context, goal = rng.choice([
        ("practice_summary", "daily_minutes", "minutes", 120, "I'm learning the piano", "summarises my practice log, one number per day"),
        ("step_summary", "daily_steps", "steps", 20000, "I wear a step counter", "summarises my step counts, one number per day"),
        ("reading_summary", "daily_pages", "pages", 100, "I keep a reading log", "summarises the pages I read each day"),
    ])
    goal_value = rng.randint(top // 10, top // 2)
    if top >= 1000:
        goal_value = goal_value // 250 * 250
    inclusive = rng.choice([True, False])
    rest = rng.choice(["breaks", "skip"])
    keys = rng.choice([("good_days", "best_streak"), ("days_met", "longest_run"), ("hits", "streak")])
    shape = rng.choice(["dict", "tuple"])
    with_total = rng.choice([True, False])
    op = ">=" if inclusive else ">"
    lines = [f"def {fn}({arg}):", f"    goal = {goal_value!r}", f"    {keys[0]} = 0", f"    {keys[1]} = 0", "    current = 0", f"    for {item} in {arg}:"]
    if rest == "skip":
        lines += [f"        if {item} == 0:", "            continue"]
    lines += [f"        if {item} {op} goal:", f"            {keys[0]} += 1", "            current += 1", f"            {keys[1]} = max({keys[1]}, current)",
              "        else:", "            current = 0"]
    total = ", total" if with_total else ""
    if with_total:
        lines.append(f"    total = sum({arg})")
    if shape == "dict":
        lines.append(f'    return {{"{keys[0]}": {keys[0]}, "{keys[1]}": {keys[1]}' + (', "total": total}' if with_total else "}"))
    else:
        lines.append(f"    return ({keys[0]}, {keys[1]}{total})")
    g = goal_value
    lo, hi = max(1, g - rng.randint(1, max(1, g // 3))), g + rng.randint(1, max(1, g // 3))

    def days(n: int) -> list[int]:
        return [rng.choice([g, lo, hi, 0, hi, g]) for _ in range(n)]

    calls = [([],), ([g],), ([g - 1],), ([g + 1, g + 1],), ([hi, g, g, lo, hi, hi],), ([hi, 0, hi, 0, hi],), ([hi, hi, lo, hi, hi, hi],),
             ([0, 0, 0],), (days(7),), (days(7),), ([g, g, 0, g, lo],)]
    desc = describe(rng, fn, [arg], context, goal, rng.choice(["", "I have a daily target in mind.", "I want to see how consistent I am."]))
    hidden = {"goal": goal_value, "inclusive": inclusive, "rest": rest, "keys": list(keys), "shape": shape, "total": with_total}
    return Draft(f"{rest}/{shape}", fn, desc, lines, ten_tests(fn, calls, lambda: (days(rng.randint(3, 9)),)), hidden,
                  [k for k in keys if k not in fn])


def _validator(rng: random.Random) -> Draft:
    fn, arg, context, goal = rng.choice([
        ("check_username", "username", "people sign up on my forum", "checks whether a username is acceptable and says what is wrong"),
        ("check_gamer_tag", "tag", "I run a small gaming server", "checks a player's tag and says what is wrong with it"),
        ("check_promo_code", "code", "my shop lets partners create promo codes", "validates a new promo code and says what is wrong"),
    ])
    min_len = rng.randint(3, 6)
    max_len = rng.randint(10, 20)
    symbols = rng.choice(["_", "_.", "-", "_-", ".-", ""])
    start_letter = rng.choice([True, False])
    messages = rng.choice([("too short", "too long", "must start with a letter", "invalid character", "ok"),
                           ("short", "long", "bad start", "bad character", "valid"),
                           ("TOO_SHORT", "TOO_LONG", "BAD_START", "BAD_CHAR", "OK")])
    lines = [f"def {fn}({arg}):", f"    min_length = {min_len!r}", f"    max_length = {max_len!r}", f"    allowed_symbols = {symbols!r}",
             f"    if len({arg}) < min_length:", f"        return {messages[0]!r}", f"    if len({arg}) > max_length:", f"        return {messages[1]!r}"]
    if start_letter:
        lines += [f"    if not {arg}[0].isalpha():", f"        return {messages[2]!r}"]
    lines += [f"    for ch in {arg}:", "        if not (ch.isalnum() or ch in allowed_symbols):", f"            return {messages[3]!r}", f"    return {messages[4]!r}"]
    word = "".join(rng.choice("abcdefghkmnprstuvwxyz") for _ in range(max_len + 2))
    sym = symbols[0] if symbols else "_"
    calls = [(word[:min_len],), (word[:min_len - 1],), (word[:max_len],), (word[:max_len + 1],), ("9" + word[:min_len],),
             (word[:2] + sym + word[2:min_len + 1],), (word[:min_len] + "!",), (word[:2] + " " + word[2:min_len + 1],), ("",),
             (word[:min_len].upper() + "7",), (word[1:min_len] + (symbols[-1] if symbols else "-") + "x",), ("_" + word[:min_len],)]
    desc = describe(rng, fn, [arg], context, goal, rng.choice(["", "I have a few rules in mind.", "It should return a short message."]))
    hidden = {"min": min_len, "max": max_len, "symbols": symbols, "start_letter": start_letter, "messages": list(messages)}
    hidden_strings = [m for m in messages if m.lower() not in ("ok", "long", "short", "valid")]
    return Draft(f"{start_letter}", fn, desc, lines, ten_tests(fn, calls, lambda: (word[:rng.randint(0, max_len + 2)],)), hidden, hidden_strings)


def _tickets(rng: random.Random) -> Draft:
    fn, context, goal = rng.choice([
        ("ticket_price", "I run a small cinema", "gives the price of a ticket for a guest"),
        ("museum_entry", "I sell tickets at our town museum", "gives the entry price for a visitor"),
        ("pool_entry", "I work the desk at the public pool", "gives the entry price for a swimmer"),
    ])
    free_under = rng.choice([0, 2, 3, 4, 5])
    child_limit = rng.randint(8, 15)
    senior_age = rng.randint(60, 70)
    adult = money(rng, 9, 16, 0.5)
    prices = {"child": money(rng, 3, 8, 0.5), "adult": adult, "senior": min(money(rng, 5, 10, 0.5), adult - 1)}
    early_end = rng.randint(11, 18)
    mode = rng.choice(["minus", "percent"])
    off = rng.choice([1, 1.5, 2, 2.5]) if mode == "minus" else rng.choice([0.1, 0.2, 0.3])
    lines = [f"def {fn}(age, hour):", "    if age < 0 or hour < 0 or hour > 23:", '        raise ValueError("invalid age or hour")']
    if free_under:
        lines += [f"    if age < {free_under!r}:", "        return 0.0"]
    lines += [f"    if age <= {child_limit!r}:", f"        price = {prices['child']!r}", f"    elif age >= {senior_age!r}:",
              f"        price = {prices['senior']!r}", "    else:", f"        price = {prices['adult']!r}", f"    if hour < {early_end!r}:"]
    lines.append(f"        price -= {off!r}" if mode == "minus" else f"        price = price * (1 - {off!r})")
    lines.append("    return round(price, 2)")
    calls = [(child_limit, 20), (child_limit + 1, 20), (senior_age, 20), (senior_age - 1, 20), (30, early_end - 1), (30, early_end),
             (free_under - 1 if free_under else 0, 20), (free_under, early_end - 2), (40, 24), (senior_age + 5, early_end - 1), (-1, 12), (child_limit - 2, 10)]
    desc = describe(rng, fn, ["age", "hour"], context, goal, rng.choice(["", "Prices depend on the visitor and the time of day.", "Hours are whole hours of the day."]))
    hidden = {"free_under": free_under, "child": child_limit, "senior": senior_age, "prices": prices, "early_end": early_end, "mode": mode, "off": off}
    return Draft(mode, fn, desc, lines, ten_tests(fn, calls, lambda: (rng.randint(0, 90), rng.randint(0, 23))), hidden)


#: Template families: name -> draw function. Adding one is adding a function here.
FAMILIES: dict[str, Callable[[random.Random], Draft]] = {
    "tiered_bill": _tiered_bill,
    "capped_discount": _capped_discount,
    "score_labels": _score_labels,
    "name_format": _name_format,
    "filter_rank": _filter_rank,
    "late_fee": _late_fee,
    "brackets": _brackets,
    "unit_format": _unit_format,
    "shipping": _shipping,
    "streaks": _streaks,
    "validator": _validator,
    "tickets": _tickets,
}
