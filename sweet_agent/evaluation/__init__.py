"""What the agent side measures and reports about played episodes: one package, one name.

- :mod:`.metrics` — the one measurement of an episode (success, % tests, similarity, turns,
  questions, whether it failed), bootstrap intervals and paired differences; the report, the
  viewer, the leaderboard and ``benchmarks/bench_learning.py`` all read their numbers from it.
- :mod:`.report` — the report of ``sweet-agent evaluate FILE...`` built on those measurements:
  the summary, ``--reference`` win rates, ``--regrade``, end reasons and cost, and the ``--json``
  results record (its schema).

WHY a package and not two top-level modules: "evaluation" named four places (issue 35); here it
names only this. Neighbours of the same word, and why they stay apart:

- ``colbench_gym/evaluation/`` is the benchmark's own grading of ``{task, answer}`` records
  (``colbench evaluate backend|frontend``); it installs without the agent side, which scores
  through it and shares its win rule (:mod:`colbench_gym.evaluation.metrics`).
- :mod:`sweet_agent.rollout.evaluate` is the ``sweet-agent evaluate`` command: it can play
  best-of-N episodes with the rollout code first (a higher import layer than this package), then
  calls :func:`sweet_agent.evaluation.report.run`.

Nothing is re-exported here: import the submodule (``from sweet_agent.evaluation.metrics import
episode_metrics``), so each importer says which of the two it needs and the metrics load alone.
"""
