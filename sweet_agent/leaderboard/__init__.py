"""The results table and the submission format (issue #39 item 5).

``sweet-agent leaderboard RESULTS...`` builds one static table (markdown, HTML, JSON) from results
files in the documented schemas, with the paper's published numbers as marked reference rows;
``sweet-agent submission check DIR`` validates a submission (a results file, the trajectories it
was computed from, a ``submission.json``) by recomputing its numbers. docs/leaderboard.md is the
reference page.

- :mod:`.rows` — one row of the table and the ``colbench-leaderboard`` rows file;
- :mod:`.results` — reading ``colbench-results`` records (``sweet-agent evaluate --json``) strictly;
- :mod:`.reference` — the paper's published numbers (the one place they are written down);
- :mod:`.submission` — the submission format and its check;
- :mod:`.table` — markdown and HTML rendering;
- :mod:`.cli` — the ``sweet-agent leaderboard`` command.
"""
