"""Probe the offline backend simulator for two kinds of wrong answer (issue 24, item 7).

(a) "I don't know" about an input on which the reference raises ValueError: for every test call
    on which the reference raises it, the simulator is asked about the call and about each
    argument ("What if people is 0?");
(b) "the result is rounded/cut to a whole number" where the reference returns fractional numbers.

The references are our own tasks (embedded, generated, collab) and are run in this process to
know their outputs. Prints the offending replies and a count of each kind::

    .venv/bin/python scripts/probe_offline_answers.py --generated 300
"""

from __future__ import annotations

import argparse
import ast
import math
import re
import sys
import warnings

from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.simulators.offline_backend.phrasing import IDK
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.generator import generate_backend_tasks
from colbench_gym.tasks.sources import resolve_task_source

ROUNDING_QUESTIONS = ("Should the result be rounded? To how many decimals?", "Any rounding?",
                      "Should I round the result?")
WHOLE = re.compile(r"\bthe result is (rounded|cut)( (up|down))? to a whole number")


def tasks(generated: int):
    for split in ("train", "test"):
        yield from ((f"embedded/{split}/{i}", t) for i, t in enumerate(load_embedded("backend", split)))
        yield from ((f"generated/{split}/{i}", t) for i, t in enumerate(generate_backend_tasks(generated, split)))
        src = resolve_task_source(f"collab:{split}", "backend")
        yield from ((f"collab/{split}/{i}", src[i]) for i in range(generated // 2))


def outcomes(task) -> dict:
    ns: dict = {}
    try:
        exec(task.ground_truth, ns)  # noqa: S102 - our own task set
    except Exception:  # noqa: BLE001
        return {}
    out = {}
    for name, call in task.test_cases.items():
        try:
            out[name] = ("value", eval(call, ns))  # noqa: S307
        except Exception as exc:  # noqa: BLE001
            out[name] = ("raise", type(exc).__name__)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generated", type=int, default=300, help="generated tasks per split (default 300)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    sim = OfflineBackendSimulator()
    idk, whole, n = [], [], 0
    for label, task in tasks(args.generated):
        n += 1
        outs = outcomes(task)
        sim.reset(task, seed=0)
        params = sim.facts_for(task).params
        start = [{"role": "user", "content": task.problem_description}]

        def ask(q: str) -> str:
            return sim.respond(task, [*start, {"role": "assistant", "content": q}])  # noqa: B023

        for name, (kind, value) in outs.items():
            if kind != "raise" or value != "ValueError":
                continue
            call = task.test_cases[name]
            node = ast.parse(call, mode="eval").body
            questions = [f"What should happen for {call}?"]
            if isinstance(node, ast.Call):
                questions += [f"What if {p} is {ast.unparse(a)}?" for p, a in zip(params, node.args)]
            for q in questions:
                reply = ask(q)
                if any(x in reply for x in IDK):
                    idk.append((label, q, reply))
        fractional = [v for k, v in outs.values() if k == "value" and type(v) is float and math.isfinite(v)
                      and abs(v - round(v)) > 1e-9]
        if fractional:
            for q in ROUNDING_QUESTIONS:
                reply = ask(q)
                if WHOLE.search(reply.lower()):
                    whole.append((label, q, reply, fractional[:3]))
    print(f"{n} tasks")
    print(f"(a) 'I don't know' about a ValueError input: {len(idk)} replies in {len({c[0] for c in idk})} tasks")
    for case in idk[:20]:
        print("   ", case)
    print(f"(b) 'the result is rounded to a whole number' with fractional results: {len(whole)} replies in "
          f"{len({c[0] for c in whole})} tasks")
    for case in whole[:20]:
        print("   ", case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
