"""The ``colbench`` command: evaluate trajectory files, render pages, inspect the sandbox.

Subcommands live in their own modules (each exposes ``add_arguments(parser)`` and
``run(args) -> int``) and are imported only when used, so ``colbench --help`` stays fast and a
base install never pays for what it does not run.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (command words, module, help)
COMMANDS: list[tuple[tuple[str, ...], str, str]] = [
    (("evaluate", "backend"), "colbench_gym.evaluation.backend", "grade backend answers in a trajectory JSONL"),
    (("evaluate", "frontend"), "colbench_gym.evaluation.frontend", "score frontend answers in a trajectory JSONL"),
    (("render",), "colbench_gym.rendering.cli", "render an HTML page to a PNG screenshot"),
    (("sandbox-info",), "colbench_gym.grading.cli", "report the isolation the grading sandbox gets here"),
    (("tasks",), "colbench_gym.tasks.cli", "list or export embedded / generated tasks"),
]


def _usage(prog: str, commands: list[tuple[tuple[str, ...], str, str]]) -> str:
    width = max(len(" ".join(words)) for words, _, _ in commands)
    lines = [f"usage: {prog} COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {' '.join(words):<{width}}  {help_text}" for words, _, help_text in commands]
    lines += ["", f"Run `{prog} COMMAND --help` for a command's options."]
    return "\n".join(lines)


def dispatch(prog: str, commands: list[tuple[tuple[str, ...], str, str]], argv: list[str]) -> int:
    """Find the longest command matching the start of ``argv`` and run it."""
    for words, module_name, help_text in sorted(commands, key=lambda c: -len(c[0])):
        if tuple(argv[: len(words)]) == words:
            parser = argparse.ArgumentParser(prog=f"{prog} {' '.join(words)}", description=help_text)
            module = importlib.import_module(module_name)
            module.add_arguments(parser)
            args = parser.parse_args(argv[len(words):])
            return int(module.run(args) or 0)
    if argv and argv[0] not in ("-h", "--help"):
        print(f"{prog}: unknown command {' '.join(argv[:2])!r}\n", file=sys.stderr)
        print(_usage(prog, commands), file=sys.stderr)
        return 2
    print(_usage(prog, commands))
    return 0


def main(argv: list[str] | None = None) -> int:
    return dispatch("colbench", COMMANDS, list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
