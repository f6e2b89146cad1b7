"""Run many command lines of one CLI in a single interpreter, for tests that check every
sub-command the same way (e.g. each one's ``--help``).

WHY: a fresh ``python -m sweet_agent.cli ... --help`` pays the torch / transformers / trl import
(~6 s here) for every sub-command; one process per CLI pays it once. Each command line still goes
through the CLI's own ``main`` (the same dispatch, argparse and exit status as ``sys.exit(main())``),
with its own captured stdout and stderr.

Usage: ``python -m tests.reliability.cli_batch colbench|sweet-agent`` with a JSON list of argument
lists on stdin; prints one JSON list of ``{"returncode", "stdout", "stderr"}``, in order.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys

MODULES = {"colbench": "colbench_gym.cli", "sweet-agent": "sweet_agent.cli"}


def run_one(main, argv: list[str]) -> dict:
    """``sys.exit(main(argv))`` as the interpreter would report it: the status and both streams."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the interpreter prints it and exits 1
        err.write(f"{code}\n")
        status = 1
    return {"returncode": status, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> int:
    main_function = importlib.import_module(MODULES[sys.argv[1]]).main
    results = [run_one(main_function, argv) for argv in json.load(sys.stdin)]
    sys.stdout.write(json.dumps(results))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
