"""Moving trajectory files between this project and the paper release (facebookresearch/sweet_rl).

- :mod:`sweet_agent.interop.release`: our records in the release's exact shapes (k-block order,
  ``input``/``output``/``content`` on every agent turn, frontend answers as PNG paths).
- :mod:`sweet_agent.interop.cli`: ``sweet-agent export --format release|paper-offline IN --output OUT``.

Reading the release's files needs no conversion: every reader of ours accepts them (see
docs/interop.md for the differences in meaning, case by case).
"""
