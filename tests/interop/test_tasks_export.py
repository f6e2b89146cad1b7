"""`colbench tasks export --release-compatible`: tests the release's grader can never pass are dropped and reported."""

from __future__ import annotations

import json

from colbench_gym.cli import main
from colbench_gym.grading.release import release_compatible
from tests.interop.conftest import FIX, read_jsonl


def test_unpassable_tests_are_dropped_and_reported():
    price, even = (read_jsonl(FIX / "release_backend_k2.jsonl")[i]["task"] for i in (0, 1))
    only_constant = {"problem_description": "c", "ground_truth": "K = 3\n\ndef k():\n    return K\n",
                     "test_cases": {"t": "k()"}}
    kept, report = release_compatible([price, even, only_constant])
    assert [t["problem_description"] for t in kept] == [price["problem_description"], even["problem_description"]]
    assert kept[0]["test_cases"] == {"test1": "price(3)", "test2": "price(0)"}  # total (helper) and tax (constant) go
    assert kept[1] == even  # nothing to drop: unchanged
    assert "task 0: dropped 2 of 4 tests (test3: the reference raises NameError; test4: the reference raises NameError)" \
        in report
    assert "task 2: dropped (no test the release can pass" in report
    assert report.splitlines()[-1] == ("release-compatible: dropped 3 tests the release's grader can never pass "
                                       "(1 tasks left without tests, dropped); 2 of 3 tasks kept")


def test_cli_flag(tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    assert main(["tasks", "export", "--tasks", "embedded:test", "--start", "24", "--count", "1",
                 "--release-compatible", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "task 0: dropped 1 of 10 tests (test9: the reference raises ValueError)" in err
    [task] = [json.loads(line) for line in out.read_text().splitlines()]
    assert "test9" not in task["test_cases"] and len(task["test_cases"]) == 9
    plain = tmp_path / "plain.jsonl"
    assert main(["tasks", "export", "--tasks", "embedded:test", "--start", "24", "--count", "1", "-o", str(plain)]) == 0
    assert len(json.loads(plain.read_text())["test_cases"]) == 10
