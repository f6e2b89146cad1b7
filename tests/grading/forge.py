"""Answers that write their own frames to the result channel (fd 3), as an attacker would.

The child's result pipe is fd 3 and nothing stops an answer from writing to it. A forged
answer writes the READY line and one record per call itself, then exits before the child can
write anything: every byte the trusted process decodes is chosen by the attacker.
"""

from __future__ import annotations

import json
from typing import Any

from colbench_gym.grading.wire import READY

P = 2**61 - 1  # CPython's int hash modulus: k * P all hash to 0


def right_value(i: int) -> list:
    """The tagged form of the right answer to test ``i`` of the shared task, f(i, i*i) = 31i + i^2."""
    return ["i", format(31 * i + i * i, "x")]


def record(index: int, value: Any) -> str:
    return json.dumps({"t": "r", "i": index, "v": value}, ensure_ascii=True)


def forged_answer(lines: list[str]) -> str:
    """Python source of an answer that writes ``lines`` to its result channel and exits."""
    payload = ("\n".join(lines) + "\n").encode("ascii")
    return ("import os\n"
            f"data = {payload!r}\n"
            "view = memoryview(data)\n"
            "while view:\n"
            "    view = view[os.write(3, view):]\n"
            "os._exit(0)\n")


def forge_first(value_line: str, n: int = 10) -> str:
    """READY, then ``value_line`` as the record of the first call, then right values for the rest."""
    return forged_answer([READY, value_line] + [record(k, right_value(k + 1)) for k in range(1, n)])
