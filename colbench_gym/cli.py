"""The ``colbench`` command: evaluate trajectory files, render pages, inspect the sandbox.

Subcommands live in their own modules (each exposes ``add_arguments(parser)`` — or
``parse_args(argv, prog, description)`` when it parses its own way, e.g. with TRL's
``TrlParser`` — and ``run(args) -> int``) and are imported only when used, so ``colbench
--help`` stays fast and a base install never pays for what it does not run.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from typing import Any

from colbench_gym.tasks.kinds import KINDS


def commands() -> list[tuple[tuple[str, ...], str, str]]:
    """(command words, module, help) of every command; ``colbench evaluate KIND`` for every kind in
    the kinds table as it is now (a kind registered after import gets its command too)."""
    return [*((("evaluate", kind.name), kind.evaluator, kind.evaluator_help) for kind in KINDS.values()),
            *_OTHER_COMMANDS]


_OTHER_COMMANDS: list[tuple[tuple[str, ...], str, str]] = [
    (("render",), "colbench_gym.rendering.cli", "render an HTML page to a PNG screenshot"),
    (("sandbox-info",), "colbench_gym.grading.cli", "report the isolation the grading sandbox gets here"),
    (("tasks",), "colbench_gym.tasks.cli", "list or export embedded / generated tasks"),
    (("tasks", "audit"), "colbench_gym.evaluation.task_audit",
     "a verdict per backend task: can it be solved (reference results, constants nobody states, a request "
     "contradicting the reference, optionally a full-information oracle model)"),
    (("serve",), "colbench_gym.online.serve", "serve the environments as OpenEnv servers (/backend, /frontend)"),
]
#: The commands of the shipped kinds (:func:`commands` is the live list).
COMMANDS = commands()


from colbench_gym.jsonl import OutputNotWritable, check_output_writable  # noqa: E402,F401 - re-exported


def _usage(prog: str, commands: list[tuple[tuple[str, ...], str, str]]) -> str:
    width = max(len(" ".join(words)) for words, _, _ in commands)
    lines = [f"usage: {prog} COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {' '.join(words):<{width}}  {help_text}" for words, _, help_text in commands]
    lines += ["", f"Run `{prog} COMMAND --help` for a command's options; add --debug (or set COLBENCH_DEBUG=1)",
              "to see the traceback of an error."]
    return "\n".join(lines)


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: ``finally`` blocks run, finished work stays on disk."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Terminated()


def debug_requested(argv: list[str]) -> bool:
    """``--debug`` anywhere on the command line, or ``COLBENCH_DEBUG=1``: show tracebacks."""
    return "--debug" in argv or os.environ.get("COLBENCH_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _silence_stdout() -> None:
    # After the reader of a pipe went away (`| head`), any later flush would raise again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    known = isinstance(exc, (ValueError, OSError, RuntimeError, LookupError, ImportError))
    return text if known else f"{type(exc).__name__}: {text}"


def _unprefixed(message: str, label: str) -> str:
    """``message`` without the prefixes commands used to give their own refusals (``error:``,
    the command's name or its last word: ``view:``), so the boundary adds the one prefix."""
    text = " ".join(message.split())
    prefixes = (f"{label}:", f"{label.split()[0]}:", f"{label.split()[-1]}:", "error:")
    while text.startswith(prefixes):
        text = next(text[len(p):].lstrip() for p in prefixes if text.startswith(p))
    return text or "refused its input"


class _LabelledErrors:
    """stderr while a command runs: a line it writes that begins ``error: `` (the commands that
    print their own error and return 2) gets the command's name in front, so every error line
    reads ``<prog> <command>: error: ...``; everything else passes through unchanged."""

    def __init__(self, stream: Any, label: str) -> None:
        self._stream, self._label, self._line_start = stream, label, True

    def write(self, text: str) -> int:
        pieces = []
        for piece in str(text).splitlines(keepends=True):
            if self._line_start and piece.startswith("error: "):
                piece = f"{self._label}: {piece}"
            pieces.append(piece)
            self._line_start = piece.endswith(("\n", "\r"))
        return self._stream.write("".join(pieces))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def dispatch(prog: str, commands: list[tuple[tuple[str, ...], str, str]], argv: list[str]) -> int:
    """Find the longest command matching the start of ``argv`` and run it.

    This is the one error boundary of both CLIs (``colbench`` and ``sweet-agent``) and the one
    place of their error convention (CONTRIBUTING.md, "Errors and exit statuses"): every error is
    one line ``<prog> <command>: error: <message>`` on stderr (argparse's own, after its usage
    line, reads the same). Exit status 2: the command line or its input was refused before any
    work (argparse, a command's ``raise SystemExit("what is wrong; what to do")``, or a command
    that prints ``error: ...`` and returns 2: :class:`_LabelledErrors` names it); 1: a failure
    while running (any exception). Ctrl-C / SIGTERM exit 130 after ``finally`` blocks ran
    (outputs are appended and fsync'd per item, so finished work is kept), a closed stdout pipe
    exits quietly with status 141 like a shell tool. ``--debug`` (anywhere) or
    ``COLBENCH_DEBUG=1`` prints the traceback instead.
    """
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    label = prog
    previous = None
    stderr = sys.stderr
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        for words, module_name, help_text in sorted(commands, key=lambda c: -len(c[0])):
            if tuple(argv[: len(words)]) == words:
                label = f"{prog} {' '.join(words)}"
                sys.stderr = _LabelledErrors(stderr, label)
                module = importlib.import_module(module_name)
                if hasattr(module, "parse_args"):  # a command parsing its own way (e.g. TRL's TrlParser)
                    args = module.parse_args(argv[len(words):], prog=label, description=help_text)
                else:
                    parser = argparse.ArgumentParser(prog=label, description=help_text,
                                                     epilog="--debug (or COLBENCH_DEBUG=1) shows tracebacks of errors")
                    module.add_arguments(parser)
                    args = parser.parse_args(argv[len(words):])
                status = int(module.run(args) or 0)
                sys.stdout.flush()
                return status
        if argv and argv[-1] in ("-h", "--help"):  # help on a group, e.g. `colbench evaluate --help`
            group = [c for c in commands if tuple(c[0][: len(argv) - 1]) == tuple(argv[:-1])] or commands
            print(_usage(prog, group))
            sys.stdout.flush()
            return 0
        group = [c for c in commands if argv and tuple(c[0][: len(argv)]) == tuple(argv)]
        if group:  # a bare group, e.g. `colbench evaluate`: name its commands, usage error
            nxt = sorted({c[0][len(argv)] for c in group if len(c[0]) > len(argv)})
            print(f"{prog} {' '.join(argv)}: error: needs a command: {' | '.join(nxt)}\n", file=sys.stderr)
            print(_usage(prog, group), file=sys.stderr)
            return 2
        if argv and argv[0] not in ("-h", "--help"):
            print(f"{prog}: error: unknown command {' '.join(argv[:2])!r}\n", file=sys.stderr)
            print(_usage(prog, commands), file=sys.stderr)
            return 2
        print(_usage(prog, commands))
        sys.stdout.flush()
        return 0
    except BrokenPipeError:
        _silence_stdout()
        print(f"{label}: output pipe closed (e.g. by `| head`); stopped writing to stdout", file=sys.stderr)
        return 141
    except KeyboardInterrupt as exc:
        if debug:
            traceback.print_exc()
        else:
            # The interrupt landed inside an asyncio task: the task keeps it as its exception too,
            # and asyncio would print "Task exception was never retrieved" with a traceback when the
            # task is collected at exit. The one line below says everything.
            logging.getLogger("asyncio").disabled = True
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        print(f"{label}: {what}; everything finished so far is kept on disk (rerun with --resume to continue)",
              file=sys.stderr)
        return 130
    except SystemExit as exc:
        if isinstance(exc.code, str):  # a command refusing its input: one line, usage status
            if debug:
                traceback.print_exc()
            print(f"{label}: error: {_unprefixed(exc.code, label)}", file=stderr)
            exc.code = 2  # str(exc) keeps the message; the interpreter exits 2 and prints nothing more
        raise
    except Exception as exc:  # the one place that turns errors into messages
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (rerun with --debug for a traceback)"
        print(f"{label}: error: {_one_line(exc)}{hint}", file=sys.stderr)
        return 1
    finally:
        sys.stderr = stderr
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    return dispatch("colbench", commands(), list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
