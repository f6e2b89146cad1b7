"""The paper's published numbers: the reference rows of every table (the one place they are written).

Zhou et al., 2025, "SWEET-RL: Training Multi-Turn LLM Agents on Collaborative Reasoning Tasks"
(arXiv:2503.15478), main results for Llama-3.1-8B-Instruct on ColBench: the backend success
rate (every hidden test passes) and the frontend win rate against GPT-4o, in percent. Only the
numbers this project is sure of are here; the cells the paper fills that are not (its % tests
passed and similarity) and the intervals it does not give stay empty, never estimated.

WHY they are marked rows and not comparable rows: they were measured on the paper's own test
sets with its LLM-simulated human, neither of which a run here uses (this project's task sources
and simulators differ), so they place a run beside the published figures without claiming the
same conditions.
"""

from __future__ import annotations

from sweet_agent.evaluation.metrics import Estimate
from sweet_agent.leaderboard.rows import Row

CITATION = "Zhou et al. 2025, SWEET-RL, arXiv:2503.15478"
PAPER_MODEL = "Llama-3.1-8B-Instruct"
BACKEND_SOURCE = "ColBench backend test (paper)"
FRONTEND_SOURCE = "ColBench frontend test (paper)"
NOT_REPRODUCED = "published, not run here (the paper's tasks and simulator)"

#: method -> (backend success %, frontend win rate % vs GPT-4o), as published.
PAPER_RESULTS: dict[str, tuple[float, float]] = {
    "zero-shot": (22.4, 33.8),
    "RFT": (28.2, 38.6),
    "multi-turn DPO": (34.4, 42.8),
    "SWEET-RL": (40.4, 48.2),
}


def _published(percent: float) -> Estimate:
    """A published rate: its mean, no interval, no episode count (the paper gives none)."""
    return Estimate(percent / 100.0, None, None, 0)


def reference_rows() -> list[Row]:
    """The paper's rows, backend then frontend, in the paper's method order."""
    backend = [Row(method, PAPER_MODEL, BACKEND_SOURCE, "backend", success=_published(success), reference=True,
                   source=CITATION, notes=NOT_REPRODUCED) for method, (success, _) in PAPER_RESULTS.items()]
    frontend = [Row(method, PAPER_MODEL, FRONTEND_SOURCE, "frontend", win_rate=_published(win), reference=True,
                    source=CITATION, notes=f"win rate vs GPT-4o; {NOT_REPRODUCED}")
                for method, (_, win) in PAPER_RESULTS.items()]
    return backend + frontend
