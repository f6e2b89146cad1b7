"""`--semantics release`: the paper release's verdicts, case by case, in our sandbox."""

from __future__ import annotations

import subprocess
import sys

import pytest

from colbench_gym.grading import BackendGrader
from colbench_gym.grading.release import ReleaseGrader, release_code, release_rejects
from colbench_gym.protocol import extract_code
from colbench_gym.tasks import BackendTask
from tests.interop.conftest import read_jsonl

TASK = BackendTask(
    "x",
    "RATE = 2\n\ndef f(x):\n    return x * 2\n\ndef g(x):\n    return x * RATE\n\n"
    "def h(x):\n    if x < 0:\n        raise ValueError('neg')\n    return round(x / 3, 2)\n\n"
    "def n(x):\n    return None\n\ndef even(x):\n    return x % 2 == 0\n\n"
    "def fact(k):\n    return 1 if k <= 1 else k * fact(k - 1)\n",
    {"t_f": "f(1)", "t_g": "g(1)", "t_raise": "h(-1)", "t_round": "h(1)", "t_none": "n(1)",
     "t_bool": "even(2)", "t_rec": "fact(3)"},
)


@pytest.fixture(scope="module")
def graders():
    with ReleaseGrader(call_timeout=2.0) as rg, BackendGrader(call_timeout=2.0) as bg:
        yield rg, bg


def test_fences_and_rejections_follow_the_release():
    assert release_code("text\n```python\ndef f(): pass\n```\nmore") == "\ndef f(): pass\n"
    assert release_code("```\ncode\n```") == "\ncode\n"
    assert release_code("def f(): pass") == "def f(): pass"
    assert release_rejects("# no need to import sys here\ndef f(): pass") == "import sys"
    assert release_rejects("def f():\n    return 1") is None


def test_case_by_case_verdicts_differ_from_ours_as_documented(graders):
    rg, bg = graders
    answer = ("```python\ndef f(x):\n    return x * 2.0\n\ndef g(x):\n    return 2\n\n"
              "def h(x):\n    if x < 0:\n        raise ValueError('neg')\n    return x / 3\n\n"
              "def n(x):\n    return None\n\ndef even(x):\n    return 1 - x % 2\n\n"
              "def fact(k):\n    return 6\n```")
    theirs = rg.grade(answer, TASK).per_test
    ours = bg.grade(extract_code(answer), TASK).per_test
    # plain ==: 2.0 == 2 passes there, strict types fail here
    assert theirs["t_f"] is True and ours["t_f"] is False
    # module constant: the release's reference raises NameError -> never passable; ours passes
    assert theirs["t_g"] is False and ours["t_g"] is True
    # a raising reference: the release can never pass it; ours passes an answer raising the same
    assert theirs["t_raise"] is False and ours["t_raise"] is True
    # float round-off vs a rounded reference: both fail (0.333... vs 0.33 is beyond our tolerance too)
    assert theirs["t_round"] is False and ours["t_round"] is False
    # a reference returning None can never be passed there
    assert theirs["t_none"] is False and ours["t_none"] is True
    # bool vs int: 1 == True there, not here
    assert theirs["t_bool"] is True and ours["t_bool"] is False
    # a recursive reference calls itself through globals it cannot see there
    assert theirs["t_rec"] is False and ours["t_rec"] is True


def test_banned_substring_scores_zero_without_running(graders):
    rg, bg = graders
    code = "import sys\ndef f(x):\n    return x * 2\n"
    res = rg.grade(code, TASK)
    assert res.passed == 0 and "import sys" in res.error
    assert bg.grade(code, TASK).per_test["t_f"] is True


def test_split_scope_helper_functions_raise_name_error_in_the_answer_too(graders):
    rg, _ = graders
    helper = "def _twice(x):\n    return x * 2\n\ndef f(x):\n    return _twice(x)\n"
    assert rg.grade(helper, TASK).per_test["t_f"] is False  # NameError inside f -> None
    inline = "def f(x):\n    return x * 2\n"
    assert rg.grade(inline, TASK).per_test["t_f"] is True


def test_unpassable_tests_are_named(graders):
    rg, _ = graders
    bad = rg.unpassable_tests(TASK)
    assert set(bad) == {"t_g", "t_raise", "t_none", "t_rec"}
    assert "NameError" in bad["t_g"] and "ValueError" in bad["t_raise"] and "None" in bad["t_none"]


def test_both_numbers_side_by_side(release_backend, tmp_path):
    """`sweet-agent evaluate --regrade` (ours) and `colbench evaluate backend --semantics release`
    on the same ungraded release file."""
    out = tmp_path / "graded.jsonl"
    r = subprocess.run([sys.executable, "-m", "colbench_gym.cli", "evaluate", "backend", str(release_backend),
                        "--output", str(out), "--semantics", "release", "--no-progress", "--k", "2"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "semantics: release" in r.stdout
    assert "success rate: 25.0% [ours 75.0%]   tests passed: 43.8% [ours 75.0%]" in r.stdout
    recs = read_jsonl(out)
    assert [x["reward"] for x in recs] == [0.5, 1.0, 0.25, 0.0]
    assert [x["reward_ours"] for x in recs] == [1.0, 0.0, 1.0, 1.0]
    assert all(x["semantics"] == "release" for x in recs)
    r2 = subprocess.run([sys.executable, "-m", "sweet_agent.cli", "evaluate", str(release_backend), "--regrade"],
                        capture_output=True, text=True, timeout=300)
    assert r2.returncode == 0, r2.stderr
    assert "success         75.0%" in r2.stdout and "tests passed    75.0%" in r2.stdout
    assert "(4 had none)" in r2.stdout
