"""``colbench tasks audit`` (issue 26): a verdict per task and a summary line, on the embedded tasks,
on a release task file and on crafted tasks; the checks that need no model always run, the
full-information oracle only with ``--oracle-model`` (here a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from colbench_gym.cli import main
from colbench_gym.tasks.sources import resolve_task_source
from tests.local_openai_server import LocalOpenAIServer

RELEASE_FILE = Path(__file__).resolve().parents[1] / "interop" / "fixtures" / "release_backend_k2.jsonl"

CRAFTED = [
    # the person never says which characters are stripped, and the tests depend on them
    {"problem_description": "Write a python function clean_tag(word) that tidies a hashtag for my notes.",
     "ground_truth": "def clean_tag(word):\n    w = word.strip('#@!')\n    return w.lower()\n",
     "test_cases": {"test1": "clean_tag('#Hi!')", "test2": "clean_tag('@Bob')", "test3": "clean_tag('plain')"}},
    # the request contradicts the reference's signature
    {"problem_description": "Write a python function total_cost(prices, tax_rate) that adds up my basket.",
     "ground_truth": "def total_cost(prices):\n    return round(sum(prices) * 1.2, 2)\n",
     "test_cases": {"test1": "total_cost([1, 2])", "test2": "total_cost([])", "test3": "total_cost([2.5])"}},
    # fine
    {"problem_description": "Write a python function double(x) that doubles a number.",
     "ground_truth": "def double(x):\n    return x * 2\n",
     "test_cases": {"test1": "double(1)", "test2": "double(-3)", "test3": "double(0)"}},
    # no answer can pass: the reference needs a module the sandbox does not have
    {"problem_description": "Write a python function mean(xs) for my numbers.",
     "ground_truth": "import numpy_is_not_installed\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n",
     "test_cases": {"test1": "mean([1, 2])", "test2": "mean([3])"}},
]


def _crafted(tmp_path) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in CRAFTED) + '{"problem_description": "no reference"}\n')
    return path


def _verdicts(out: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^(\S+)\s.*?\b(OK|UNSOLVABLE|INVALID)\b", out, re.M)}


def test_embedded_tasks_get_a_verdict_each_and_are_all_solvable(capsys):
    for split in ("test", "train"):
        assert main(["tasks", "audit", f"embedded:{split}", "--strict"]) == 0
        lines = capsys.readouterr().out.strip().splitlines()
        assert len(lines) == 31 and all(ln.endswith(" OK") for ln in lines[:-1])
        assert lines[-1].startswith("audited 30 tasks (300 tests): 30 ok, 0 with warnings, 0 unsolvable (no findings), "
                                     "0 invalid")
        assert lines[-1].endswith("no oracle run (--oracle-model MODEL for one)")


def test_a_release_task_file_gets_a_verdict_per_task(capsys):
    assert main(["tasks", "audit", str(RELEASE_FILE)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    tasks = {json.dumps(json.loads(ln)["task"], sort_keys=True) for ln in RELEASE_FILE.read_text().splitlines()}
    assert len(lines) == len(tasks) + 1 and lines[-1].startswith(f"audited {len(tasks)} tasks")
    assert all(re.search(r"release_backend_k2\.jsonl:\d+\s", ln) for ln in lines[:-1])


def test_crafted_tasks_are_flagged_by_the_model_free_checks(tmp_path, capsys):
    path = _crafted(tmp_path)
    assert main(["tasks", "audit", str(path)]) == 1  # unsolvable and invalid tasks fail the audit
    out = capsys.readouterr().out
    verdicts = _verdicts(out)
    assert verdicts == {f"{path}:1": "UNSOLVABLE", f"{path}:2": "UNSOLVABLE", f"{path}:3": "OK",
                        f"{path}:4": "UNSOLVABLE", f"{path}:5": "INVALID"}
    assert "unstated_constant: '#@!' decides the tests" in out
    assert "signature: the request gives total_cost(prices, tax_rate) but the reference takes total_cost(prices)" in out
    assert "reference: 2 of 2 tests unpassable" in out and "ModuleNotFoundError" in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("audited 5 tasks (11 tests): 1 ok, 0 with warnings, 3 unsolvable (1 reference, "
                           "1 unstated_constant, 1 signature), 1 invalid; 2 tests in 1 tasks have no usable reference result (2 an "
                           "exception of the sandbox")
    assert main(["tasks", "audit", str(path), "--strict"]) == 1
    capsys.readouterr()
    assert main(["tasks", "audit", str(path), "--json"]) == 1
    rows = [json.loads(ln) for ln in capsys.readouterr().out.strip().splitlines()[:-1]]
    assert [r["verdict"] for r in rows] == ["unsolvable", "unsolvable", "ok", "unsolvable", "invalid"]
    assert rows[3]["environmental"] == 2 and rows[0]["findings"][0]["check"] == "unstated_constant"


def test_the_full_information_oracle_is_told_the_facts_never_the_code(tmp_path, capsys):
    path = _crafted(tmp_path)
    tasks = CRAFTED[:4]
    prompts = []

    def oracle(body):
        prompt = body["messages"][-1]["content"]
        prompts.append(prompt)
        task = next(t for t in tasks if t["problem_description"] in prompt)
        assert task["ground_truth"].strip().splitlines()[-1].strip() not in prompt  # never the reference's code
        if task is tasks[1]:
            return "```python\ndef total_cost(prices, tax_rate):\n    return sum(prices) * (1 + tax_rate)\n```"
        return f"```python\n{task['ground_truth']}```"  # solves what the facts determine

    with LocalOpenAIServer(oracle) as server:
        status = main(["tasks", "audit", str(path), "--oracle-model", "oracle-7b", "--oracle-base-url", server.base_url])
    assert status == 1  # the crafted file holds unsolvable tasks
    out = capsys.readouterr().out
    assert len(prompts) == 4  # the three tasks a model can play, and the unpassable one; not the invalid record
    double = next(p for p in prompts if "double(x)" in p)
    assert "- The result is x times 2." in double or "times 2" in double  # the facts, as the person would say them
    assert "oracle: oracle-7b given every fact up front solved none of 1 sample(s)" in out
    assert _verdicts(out)[f"{path}:3"] == "OK"
    assert out.strip().splitlines()[-1].endswith("; oracle oracle-7b (1 sample(s), full information) solved 2 of 4")


def test_the_audit_reads_the_embedded_tasks_through_their_source():
    source = resolve_task_source("embedded:test", "backend")
    from colbench_gym.evaluation.task_audit import read_entries

    entries = read_entries("embedded:test")
    assert [t.task_id for _, t, _ in entries] == [source[i].task_id for i in range(len(source))]


def test_tasks_help_names_the_audit_and_audit_is_its_own_command(capsys):
    """`colbench tasks --help` lists every action, audit included; `colbench tasks audit` still
    reaches the audit command (not the tasks parser's placeholder)."""
    with pytest.raises(SystemExit) as exc:
        main(["tasks", "--help"])
    assert exc.value.code == 0
    actions = capsys.readouterr().out
    for action in ("sources", "list", "show", "export", "audit"):
        assert f"    {action} " in actions
    with pytest.raises(SystemExit):
        main(["tasks", "audit", "--help"])
    assert "--strict" in capsys.readouterr().out
