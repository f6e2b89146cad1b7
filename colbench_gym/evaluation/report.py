"""The lines every ``colbench evaluate KIND`` summary ends with: why its episodes ended (the end-reason
table of :mod:`colbench_gym.tasks.accounting`) and what they cost (tokens, wall time, ``--prices``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from colbench_gym.tasks.accounting import count_end_reasons, format_end_reasons, is_infrastructure, run_cost


def end_reason_lines(out: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """The ``end reasons: ...`` line of the output records, and their infrastructure reasons with
    counts (``"endpoint_error 2, rendering_error 1"``; empty when there are none)."""
    counts = count_end_reasons(r["end_reason"] for r in out)
    infra = ", ".join(f"{k} {v}" for k, v in counts.items() if is_infrastructure(k))
    return f"end reasons: {format_end_reasons(counts)}", infra


def cost_lines(items: Sequence[tuple[dict[str, Any], Any, str]], prices: Any) -> list[str]:
    """The tokens and wall time the input records carry, summed, and priced with ``prices``
    (a table from ``--prices``; None: not priced)."""
    spent = run_cost(r for r, _, _ in items)
    return list(spent.lines(None if prices is None else spent.price(prices), colon=True))
