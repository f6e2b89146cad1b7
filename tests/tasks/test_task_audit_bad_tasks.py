"""``colbench tasks audit`` catches bad tasks (issue 39, item 4): a reference whose results change
from run to run (``random.random()``: it fails its own tests on a rerun), a request that says
"smallest" over a reference computing ``max`` (a documented lexical heuristic), tests whose
expected result is the call's own ``TypeError``; the audit exits 1 when a task fails (warnings
only with ``--strict``). Every case goes through the CLI and reads its output."""

from __future__ import annotations

import dataclasses
import json
import re

from colbench_gym.cli import main
from colbench_gym.evaluation import task_audit

RANDOM = {"problem_description": "Write a python function lucky(n) that gives me a lucky number scaled by n.",
          "ground_truth": "import random\n\ndef lucky(n):\n    return n * random.random()\n",
          "test_cases": {"test1": "lucky(1)", "test2": "lucky(2)", "test3": "lucky(0)"}}
SMALLEST_MAX = {"problem_description": "Write a python function pick(prices) that returns the smallest price in my list.",
                "ground_truth": "def pick(prices):\n    return max(prices)\n",
                "test_cases": {"test1": "pick([1, 2])", "test2": "pick([5, 3, 9])", "test3": "pick([7])"}}
ALPHABETICAL_REVERSED = {"problem_description": "Write a python function guests(names) that lists my guests in "
                                                "alphabetical order.",
                         "ground_truth": "def guests(names):\n    return sorted(names, reverse=True)\n",
                         "test_cases": {"test1": "guests(['bo', 'al'])", "test2": "guests(['cy', 'al', 'bo'])"}}
REFUSED_CALL = {"problem_description": "Write a python function add(a, b) that adds two numbers.",
                "ground_truth": "def add(a, b):\n    return a + b\n",
                "test_cases": {"test1": "add(1, 2)", "test2": "add(1, 2, 3)", "test3": "add(a=1, c=2)"}}
# Fine, though its words could mislead a lexical check: "the largest allowed" over a min() cap,
# "smallest" over min(), and a reference whose set order is made deterministic by sorted().
CAP = {"problem_description": "Write a python function cap(score) that keeps a score at most a hundred: the "
                              "largest allowed is a hundred.",
       "ground_truth": "def cap(score):\n    return min(score, 100)\n",
       "test_cases": {"test1": "cap(5)", "test2": "cap(500)", "test3": "cap(100)"}}
SMALLEST_MIN = {"problem_description": "Write a python function smallest_tag(tags) that returns the smallest of my "
                                       "tags, ignoring duplicates.",
                "ground_truth": "def smallest_tag(tags):\n    return min(sorted(set(tags)))\n",
                "test_cases": {"test1": "smallest_tag(['b', 'a', 'b'])", "test2": "smallest_tag(['z'])"}}
TASKS = [RANDOM, SMALLEST_MAX, ALPHABETICAL_REVERSED, REFUSED_CALL, CAP, SMALLEST_MIN]


def _file(tmp_path, tasks):
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def _lines(out: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(0) for m in re.finditer(r"^\S+tasks\.jsonl:(\d+)\s.*$", out, re.M)}


def test_bad_tasks_are_flagged_with_their_reasons_and_fail_the_audit(tmp_path, capsys):
    path = _file(tmp_path, TASKS)
    assert main(["tasks", "audit", str(path)]) == 1  # not only with --strict
    out = capsys.readouterr().out
    lines = _lines(out)
    assert " UNSOLVABLE  nondeterministic: the reference fails 2 of its own 3 passable tests when run again " \
           "(test1, test2): its results change from run to run" in lines[1]
    assert "contradiction: the request asks for the smallest but the reference computes max() and never min()" in lines[2]
    assert "contradiction: the request asks for alphabetical order but every sort of the reference is descending " \
           "(reverse=True)" in lines[3]
    assert "test_call: test2 calls add(1, 2, 3), which the reference's add(a, b) refuses (too many positional " \
           "arguments)" in lines[4]
    assert "test3 calls add(a=1, c=2)" in lines[4] and "test1" not in lines[4]
    assert lines[5].endswith(" OK") and lines[6].endswith(" OK")
    assert out.strip().splitlines()[-1].startswith(
        "audited 6 tasks (16 tests): 2 ok, 0 with warnings, 4 unsolvable (1 nondeterministic, 2 contradiction, "
        "1 test_call), 0 invalid; no oracle run")


def test_json_rows_say_each_findings_check_and_severity(tmp_path, capsys):
    path = _file(tmp_path, [RANDOM, CAP])
    assert main(["tasks", "audit", str(path), "--json"]) == 1
    rows = [json.loads(ln) for ln in capsys.readouterr().out.strip().splitlines()[:-1]]
    assert [r["verdict"] for r in rows] == ["unsolvable", "ok"]
    assert [(f["check"], f["severity"]) for f in rows[0]["findings"]] == [("nondeterministic", "failure")]


def test_reruns_zero_skips_the_rerun_and_a_clean_file_exits_0(tmp_path, capsys):
    path = _file(tmp_path, [RANDOM])
    assert main(["tasks", "audit", str(path), "--reruns", "0"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[0].endswith(" OK")
    assert main(["tasks", "audit", str(path), "--reruns", "-1"]) == 2
    assert "--reruns >= 0" in capsys.readouterr().err


def test_warnings_pass_unless_strict(tmp_path, capsys, monkeypatch):
    """A warning (the offline person cannot word part of the reference) leaves the verdict
    `warning` and the exit 0; --strict fails it. The reader's problem is injected: the real reader
    words every construct of these small references."""
    real = task_audit.extract_facts

    def extract_facts(reference, request, calls):
        return dataclasses.replace(real(reference, request, calls), problems=("a statement on line 2 of cap",))

    monkeypatch.setattr(task_audit, "extract_facts", extract_facts)
    path = _file(tmp_path, [CAP])
    assert main(["tasks", "audit", str(path)]) == 0
    out = capsys.readouterr().out
    assert " WARNING  unreadable: the person cannot put into words: a statement on line 2 of cap" in out
    assert "audited 1 tasks (3 tests): 0 ok, 1 with warnings (1 unreadable), 0 unsolvable (no findings), 0 invalid" in out
    assert main(["tasks", "audit", str(path), "--strict"]) == 1
    capsys.readouterr()
