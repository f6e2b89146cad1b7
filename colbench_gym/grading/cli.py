"""``colbench sandbox-info``: what isolation the grading sandbox gets on this machine, proven.

Why a command: the sandbox degrades gracefully (bubblewrap namespaces -> rlimits only), and a
user must be able to see which level they get, and that grading works, before trusting scores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from colbench_gym.grading.sandbox import LEVELS, SandboxUnavailable, probe_isolation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--isolation", choices=LEVELS, default="auto",
                        help="level to probe (auto: the strongest available)")
    parser.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    parser.add_argument("--no-self-test", action="store_true",
                        help="only probe; do not grade a known answer through the sandbox")


def _self_test(isolation: str) -> dict:
    from colbench_gym.grading.grader import BackendGrader  # noqa: PLC0415
    from colbench_gym.tasks import BackendTask  # noqa: PLC0415

    task = BackendTask("sandbox self-test", "def f(x):\n    return x * 2 + 1\n",
                       {f"test{i}": f"f({i})" for i in range(1, 11)})
    with BackendGrader(isolation=isolation) as grader:
        ok = grader.grade("def f(x):\n    return 2 * x + 1\n", task)
        bad = grader.grade("def f(x):\n    return x\n", task)
        t0 = time.perf_counter()
        for _ in range(20):
            grader.grade("def f(x):\n    return 2 * x + 1\n", task)
        ms = (time.perf_counter() - t0) / 20 * 1000
    return {"correct_answer": f"{ok.passed}/{ok.total}", "wrong_answer": f"{bad.passed}/{bad.total}",
            "ms_per_submission": round(ms, 2), "ok": ok.success and bad.passed == 0}


def run(args: argparse.Namespace) -> int:
    try:
        iso = probe_isolation(args.isolation)
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    test = None if args.no_self_test else _self_test(args.isolation)
    if args.json:
        out = {"level": iso.level, "python": iso.python, "bwrap": iso.bwrap, "view": iso.view,
               "read_only_paths": iso.binds, "pids_cgroup_root": iso.pids_cgroup_root,
               "nproc_rlimit": iso.nproc_rlimit, "pid_namespace": iso.pid_namespace, "unshare": iso.unshare,
               "answers_uid": iso.drop_uid, "ipc_namespace_per_submission": iso.ipc_namespace_per_submission,
               "seccomp": iso.seccomp, "missing": iso.missing, "self_test": test}
        print(json.dumps(out, indent=2))
    else:
        print(iso.describe())
        if test is not None:
            print(f"self-test       : correct answer {test['correct_answer']}, wrong answer "
                  f"{test['wrong_answer']}, {test['ms_per_submission']} ms per 10-test submission"
                  f" -> {'OK' if test['ok'] else 'FAILED'}")
    return 0 if test is None or test["ok"] else 1
