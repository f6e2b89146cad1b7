"""The offline backend human simulator: answers like the person who wants the function, no model.

Used by ``gym.make("ColBench-Backend-v0", simulator="offline")`` (the default). One module a
concern, each readable top to bottom; the arrows are imports:

- :mod:`.simulator` -- :class:`OfflineBackendSimulator`: the :class:`~colbench_gym.simulators.HumanSimulator`
  interface, caching a fact sheet per task, choosing which questions to answer.
- reading the reference: :mod:`.reference` (:func:`extract_facts`, :class:`UnreadableReferenceWarning`)
  -> :mod:`.reader` (one function into facts; its parts :mod:`.inputs`, :mod:`.statements`,
  :mod:`.outputs`) -> :mod:`.speaker` (expressions in words; its parts :mod:`.calls`,
  :mod:`.conditions`) -> :mod:`.syntax` (questions asked of ``ast`` nodes) and :mod:`.wording`
  (names, numbers, lists in words).
- the fact sheet: :mod:`.sheet` (:class:`Fact`, :class:`FactSheet`), the contract between reading and answering.
- understanding the agent: :mod:`.question` (questions, intents, yes/no, code shown) -> :mod:`.words`
  (word normalisation shared with the facts).
- answering: :mod:`.matching` (which facts answer a question, yes/no verdicts), :mod:`.phrasing`
  (stock phrases, nudges, the length cap), :mod:`.feedback` (on a draft the agent shows).
"""

from __future__ import annotations

from colbench_gym.simulators.offline_backend.matching import MIN_SCORE, STATEMENT_SCORE
from colbench_gym.simulators.offline_backend.reference import UnreadableReferenceWarning, extract_facts
from colbench_gym.simulators.offline_backend.sheet import Fact, FactSheet
from colbench_gym.simulators.offline_backend.simulator import OfflineBackendSimulator

__all__ = ["MIN_SCORE", "STATEMENT_SCORE", "Fact", "FactSheet", "OfflineBackendSimulator",
           "UnreadableReferenceWarning", "extract_facts"]
