"""Record every reply (and fact sheet) of the offline backend simulator on a fixed battery.

WHY: the offline simulator is refactored from time to time (issue 13 moved it into the
``colbench_gym.simulators.offline_backend`` package). Such a change must be a move, not a
rewrite: its replies on the shipped (embedded) tasks and on generated tasks must be
byte-identical. This script asks a fixed set of questions -- single questions, multi-turn
dialogues (replies fed back as history), a ten-turn dialogue, empty and whitespace messages, a
dialogue with no agent message, code drafts -- with a few simulator settings and episode seeds,
records every reply and every fact the simulator reads from each reference, and writes them as
canonical JSON. Run it before and after a change and compare the files (or their sha256)::

    .venv/bin/python scripts/compare_offline_replies.py --output /tmp/before.json
    # ... change the simulator ...
    .venv/bin/python scripts/compare_offline_replies.py --output /tmp/after.json --compare /tmp/before.json

The replies depend only on the simulator's code and the tasks (their ids and contents); the
simulator is deterministic given (seed, episode seed, task, dialogue).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from colbench_gym.simulators.offline_backend import OfflineBackendSimulator
from colbench_gym.tasks.embedded import load_embedded
from colbench_gym.tasks.generator import generate_backend_tasks
from colbench_gym.tasks.records import BackendTask

#: Questions asked one at a time, each in a fresh two-message dialogue.
QUESTIONS = [
    "What should the function return?",
    "What are the parameters and their types?",
    "Are there any special cases or edge cases I should handle?",
    "What happens if the input is empty?",
    "Should the result be rounded? To how many decimals?",
    "What are the exact thresholds or rates?",
    "How should ties be handled?",
    "Should it raise an error for invalid input?",
    "What if the value is something else, not one of the listed ones?",
    "Is the result a list of dicts?",
    "Hello! I'll write this for you.",
    "Prices and limits.",
    "What is the function called and what arguments does it take?",
    "Should the output be sorted in descending order?",
    "1) What is the output format? 2) Anything special about negative numbers? 3) Is 0.5 used anywhere?",
    "Can you share the test cases?",
    "So it's 20 for the basic case. Is that right?",
    "```python\ndef draft(x):\n    return round(x * 0.5, 2)\n```\nDoes this look right?",
    "",
    "   ",
]

#: A multi-turn dialogue: each reply is fed back, so earlier answers count as already told.
DIALOGUE = [
    "Hi! What should the function return?",
    "What should the function return?",
    "Any edge cases?",
    "What are the exact values it uses?",
]

#: Ten agent turns (the environment's usual turn limit), replies fed back.
TEN_TURNS = [
    "What are the inputs?", "What is the output?", "How is it calculated?", "Any rounding?",
    "What about errors?", "What about empty input?", "Are there thresholds?", "What about ties?",
    "Anything else I should know?", "Thanks, I think I have it. Anything missing?",
]

#: (label, constructor kwargs, episode seed) of the simulators asked.
SIMULATORS = [
    ("default", {}, None),
    ("seed3-episode7", {"seed": 3}, 7),
    ("one-fact", {"seed": 1, "max_facts": 1}, 2),
    ("no-nudges-short", {"seed": 5, "nudges": False, "max_chars": 120}, 11),
]


def tasks(generated: int) -> list[tuple[str, BackendTask]]:
    out: list[tuple[str, BackendTask]] = []
    for split in ("train", "test"):
        out += [(f"embedded/{split}/{i}", t) for i, t in enumerate(load_embedded("backend", split))]
    for split in ("train", "test"):
        out += [(f"generated/{split}/{i}", t) for i, t in enumerate(generate_backend_tasks(generated, split))]
    return out


def draft_of(task: BackendTask) -> str:
    """The reference's first ``def`` line with a body that returns nothing useful."""
    m = re.search(r"^(\s*)def [^\n]*:\s*$", task.ground_truth, re.MULTILINE)
    head = m.group(0).strip() if m else "def solution(*args):"
    return f"Here is my attempt:\n```python\n{head}\n    return None\n```"


def sheet_record(sim: OfflineBackendSimulator, task: BackendTask) -> dict[str, Any]:
    sheet = sim.facts_for(task)
    return {
        "func_name": sheet.func_name,
        "params": list(sheet.params),
        "parse_error": sheet.parse_error,
        "numbers": sorted(sheet.numbers),
        "strings": sorted(sheet.strings),
        "source_lines": list(sheet.source_lines),
        "facts": [{"kind": f.kind, "text": f.text, "topic": f.topic, "keywords": sorted(f.keywords),
                   "numbers": sorted(f.numbers), "strings": sorted(f.strings), "tags": sorted(f.tags),
                   "priority": f.priority, "polarity": f.polarity} for f in sheet.facts],
    }


def converse(sim: OfflineBackendSimulator, task: BackendTask, turns: list[str]) -> list[str]:
    dialogue = [{"role": "user", "content": task.problem_description}]
    replies = []
    for turn in turns:
        dialogue.append({"role": "assistant", "content": turn})
        reply = sim.respond(task, dialogue)
        replies.append(reply)
        dialogue.append({"role": "user", "content": reply})
    return replies


def record(generated: int) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": QUESTIONS, "simulators": [s[0] for s in SIMULATORS], "tasks": {}}
    for label, task in tasks(generated):
        entry: dict[str, Any] = {"task_id": task.task_id}
        for name, kwargs, episode in SIMULATORS:
            sim = OfflineBackendSimulator(**kwargs)
            sim.reset(task, seed=episode)
            if name == "default":
                entry["sheet"] = sheet_record(sim, task)
            start = [{"role": "user", "content": task.problem_description}]
            entry[name] = {
                "single": [sim.respond(task, [*start, {"role": "assistant", "content": q}]) for q in QUESTIONS],
                "draft": sim.respond(task, [*start, {"role": "assistant", "content": draft_of(task)}]),
                "no_agent_message": sim.respond(task, start),
                "dialogue": converse(sim, task, DIALOGUE),
                "ten_turns": converse(sim, task, TEN_TURNS),
            }
        out["tasks"][label] = entry
    return out


def count_replies(data: dict[str, Any]) -> int:
    n = 0
    for entry in data["tasks"].values():
        for name in data["simulators"]:
            e = entry[name]
            n += len(e["single"]) + 2 + len(e["dialogue"]) + len(e["ten_turns"])
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="JSON file to write the replies to")
    parser.add_argument("--generated", type=int, default=40, help="generated tasks per split (default 40)")
    parser.add_argument("--compare", help="a previous output: report whether this run is byte-identical to it")
    args = parser.parse_args(argv)
    data = record(args.generated)
    text = json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    Path(args.output).write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    n_facts = sum(len(e["sheet"]["facts"]) for e in data["tasks"].values())
    print(f"{len(data['tasks'])} tasks, {count_replies(data)} replies, {n_facts} facts; sha256 {digest}")
    if args.compare:
        before = Path(args.compare).read_text(encoding="utf-8")
        if before == text:
            print(f"byte-identical to {args.compare}")
            return 0
        old = json.loads(before)
        diffs = [label for label in data["tasks"] if old["tasks"].get(label) != data["tasks"][label]]
        print(f"DIFFERENT from {args.compare}: {len(diffs)} tasks differ, e.g. {diffs[:5]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
