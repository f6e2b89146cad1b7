"""Bad input to the CLIs: one line naming what is wrong, exit status != 0, no traceback unless
--debug / COLBENCH_DEBUG=1; every sub-command's --help exits 0; a closed stdout pipe is quiet."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from colbench_gym.cli import COMMANDS as COLBENCH_COMMANDS
from sweet_agent.cli import COMMANDS as SWEET_COMMANDS

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLBENCH_DEBUG": ""}


def _cli(prog: str, *args: str, env: dict | None = None, stdin: str | None = None, timeout: float = 600):
    module = "colbench_gym.cli" if prog == "colbench" else "sweet_agent.cli"
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          env=env or ENV, timeout=timeout, input=stdin)


def _one_line_error(proc, *needles: str) -> str:
    assert proc.returncode not in (0, None), proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "warn" not in ln.lower()]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("prog", ["colbench", "sweet-agent"])
def test_every_subcommand_help_exits_zero(prog):
    """Every sub-command's ``--help``, all of one CLI in one interpreter (tests/reliability/cli_batch.py:
    the heavy imports once, not once per command), each through the CLI's own ``main``: status 0,
    its own usage line."""
    commands = COLBENCH_COMMANDS if prog == "colbench" else SWEET_COMMANDS
    proc = subprocess.run([sys.executable, "-m", "tests.reliability.cli_batch", prog], capture_output=True,
                          text=True, env=ENV, timeout=600,
                          input=json.dumps([[*words, "--help"] for words, _, _ in commands]))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert len(results) == len(commands)
    for (words, _, _), result in zip(commands, results):
        assert result["returncode"] == 0, (words, result["stderr"])
        assert result["stdout"].startswith(f"usage: {prog} {' '.join(words)}"), (words, result["stdout"][:200])


@pytest.mark.parametrize("prog", ["colbench", "sweet-agent"])
def test_top_level_help_and_bare_group(prog):
    commands = COLBENCH_COMMANDS if prog == "colbench" else SWEET_COMMANDS
    top = _cli(prog, "--help")
    assert top.returncode == 0
    assert top.stdout.startswith(f"usage: {prog} COMMAND [ARGS...]") and top.stderr == ""
    for words, _, help_text in commands:  # every command, with what it does, one line each
        assert any(line.split() == [*words, *help_text.split()] for line in top.stdout.splitlines()), words
    bare = _cli(prog)  # no command at all: the same overview
    assert bare.returncode == 0 and bare.stdout == top.stdout
    unknown = _cli(prog, "no-such-command")
    assert unknown.returncode == 2 and unknown.stdout == "" and "Traceback" not in unknown.stderr
    assert unknown.stderr.startswith(f"{prog}: error: unknown command 'no-such-command'")
    if prog == "colbench":
        group = [" ".join(w) for w, _, _ in commands if w[0] == "evaluate"]
        assert group == ["evaluate backend", "evaluate frontend"]
        proc = _cli(prog, "evaluate", "--help")  # help on the group: its commands only
        assert proc.returncode == 0 and "evaluate backend" in proc.stdout
        listed = [line.split()[:2] for line in proc.stdout.splitlines() if line.startswith("  ")]
        assert [" ".join(words) for words in listed] == group
        proc = _cli(prog, "evaluate")  # a bare group: a usage error that shows the group's commands
        assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
        assert all(g in proc.stderr for g in group)
        assert proc.stderr.startswith("colbench evaluate: error: needs a command: backend | frontend")


#: A bad argument for every subcommand of both CLIs, and the status the convention gives it
#: (CONTRIBUTING.md, "Errors and exit statuses"): 2 when the command line or its input is refused
#: before any work, 1 when the command finds the problem while it works (here: a missing input of
#: the actor's stages, read once they run). MISSING is a file that does not exist, OUT a writable path.
BAD_ARGUMENTS: dict[tuple[str, tuple[str, ...]], tuple[list[str], int]] = {
    ("colbench", ("evaluate", "backend")): (["MISSING", "-o", "OUT"], 2),
    ("colbench", ("evaluate", "frontend")): (["MISSING", "-o", "OUT", "--scorer", "fallback"], 2),
    ("colbench", ("render",)): (["MISSING", "--output", "OUT"], 2),
    ("colbench", ("sandbox-info",)): (["--isolation", "bogus"], 2),
    ("colbench", ("tasks",)): (["show", "--tasks", "embeded:test", "0"], 2),
    ("colbench", ("tasks", "audit")): (["embeded:test"], 2),
    ("colbench", ("serve",)): (["--backend-tasks", "embeded:test", "--port", "PORT"], 2),
    ("sweet-agent", ("rollout",)): (["--tasks", "embeded:test", "--policy", "openai:m", "--base-url",
                                     "http://127.0.0.1:9/v1", "--output", "OUT"], 2),
    ("sweet-agent", ("evaluate",)): (["MISSING"], 2),
    ("sweet-agent", ("fetch-model",)): (["--model", "bogus"], 2),
    ("sweet-agent", ("train-critic",)): (["--config", "no-such-preset"], 2),
    ("sweet-agent", ("train-actor",)): (["--config", "no-such-preset"], 2),
    ("sweet-agent", ("mc-values",)): (["--data", "MISSING", "--output", "OUT"], 2),
    ("sweet-agent", ("critic-report",)): (["--values", "MISSING", "--scores", "x=MISSING"], 2),
    ("sweet-agent", ("merge-pairs",)): (["MISSING", "-o", "OUT"], 2),
    ("sweet-agent", ("train-rft",)): (["--config", "no-such-preset"], 2),
    ("sweet-agent", ("train-mtdpo",)): (["--config", "no-such-preset"], 2),
    ("sweet-agent", ("train-grpo",)): (["--config", "no-such-preset"], 2),
    ("sweet-agent", ("export",)): (["MISSING", "--output", "OUT"], 2),
    ("sweet-agent", ("view",)): (["MISSING", "--output", "OUT"], 2),
    ("sweet-agent", ("plot",)): (["MISSING", "--output", "OUT"], 2),
    ("sweet-agent", ("leaderboard",)): (["MISSING", "--out", "OUT"], 2),
    ("sweet-agent", ("submission", "check")): (["MISSING"], 2),
}


def test_every_subcommand_has_a_bad_argument_case():
    commands = {("colbench", w) for w, _, _ in COLBENCH_COMMANDS} | {("sweet-agent", w) for w, _, _ in SWEET_COMMANDS}
    assert set(BAD_ARGUMENTS) == commands  # a new command gets its row above


@pytest.mark.parametrize("prog,words", list(BAD_ARGUMENTS), ids=[f"{p} {' '.join(w)}" for p, w in BAD_ARGUMENTS])
def test_every_subcommand_reports_a_bad_argument_one_way(prog, words, tmp_path):
    """One prefix and one exit-status rule across both CLIs: ``<prog> <command>: error: <message>``
    as the last line on stderr (argparse's own errors read the same after their usage line), no
    traceback, nothing on stdout, and the status of the table above."""
    import socket

    args, status = BAD_ARGUMENTS[(prog, words)]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    values = {"MISSING": str(tmp_path / "missing.jsonl"), "OUT": str(tmp_path / "out" / "o.jsonl"), "PORT": port}
    proc = _cli(prog, *words, *(values.get(a, a) for a in args), timeout=300)
    assert proc.returncode == status, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "warn" not in ln.lower()]
    assert lines and lines[-1].startswith(f"{prog} {' '.join(words)}"), proc.stderr
    assert ": error: " in lines[-1] and lines[-1].count("error:") == 1, lines[-1]
    if status == 1:  # a failure while working is one line; a usage error may follow argparse's usage line
        assert len(lines) == 1, proc.stderr
    assert any(v in lines[-1] for v in ("missing.jsonl", "embeded:test", "bogus", "no-such-preset")), lines[-1]


def test_non_utf8_and_non_json_lines_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = {"task": {"problem_description": "p", "ground_truth": "def f(): pass", "test_cases": {"test1": "f()"}},
            "dialogue_history": [{"role": "user", "content": "p"}], "answer": "", "reward": 0.0}
    bad.write_bytes(json.dumps(good).encode() + b"\n\xff\xfe not text\n")
    for prog, args in (("colbench", ["evaluate", "backend", str(bad), "-o", str(tmp_path / "o.jsonl")]),
                       ("sweet-agent", ["evaluate", str(bad)])):
        line = _one_line_error(_cli(prog, *args), f"{bad}:2")
        assert "UTF-8" in line
    notjson = tmp_path / "notjson.jsonl"
    notjson.write_text('{"task": 1}\nnot json at all\n{}\n')
    _one_line_error(_cli("sweet-agent", "evaluate", str(notjson)), f"{notjson}:")


def test_wrong_shape_and_unparsable_task(tmp_path):
    shape = tmp_path / "shape.jsonl"
    shape.write_text(json.dumps({"task": "not an object", "answer": "x"}) + "\n")
    _one_line_error(_cli("colbench", "evaluate", "backend", str(shape), "-o", str(tmp_path / "o.jsonl")),
                    f"{shape}:1")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"task": {"problem_description": "p", "ground_truth": "def f(:\n",
                                           "test_cases": {"test1": "f("}}, "answer": "def f(): return 1"}) + "\n")
    _one_line_error(_cli("colbench", "evaluate", "backend", str(broken), "-o", str(tmp_path / "o.jsonl")),
                    f"{broken}:1")


def test_debug_flag_and_env_var_show_the_traceback(tmp_path):
    args = ["rollout", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--simulator", "nosuch",
            "--output", str(tmp_path / "o.jsonl")]
    assert "Traceback" not in _cli("sweet-agent", *args).stderr
    assert "Traceback" in _cli("sweet-agent", *args, "--debug").stderr
    assert "Traceback" in _cli("sweet-agent", *args, env={**ENV, "COLBENCH_DEBUG": "1"}).stderr


@pytest.mark.parametrize("flag,value", [("--max-turns", "0"), ("--concurrency", "0"), ("--k", "0"),
                                        ("--episodes", "-1")])
def test_rollout_rejects_non_positive_counts(tmp_path, flag, value):
    proc = _cli("sweet-agent", "rollout", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                "--output", str(tmp_path / "o.jsonl"), flag, value)
    assert proc.returncode == 2 and flag in proc.stderr and "Traceback" not in proc.stderr


def test_rollout_unknown_simulator_and_policy_fail_before_work(tmp_path):
    out = tmp_path / "o.jsonl"
    line = _one_line_error(_cli("sweet-agent", "rollout", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                                "--simulator", "nosuch", "--output", str(out)), "nosuch")
    assert "offline" in line  # names the choices
    _one_line_error(_cli("sweet-agent", "rollout", "--policy", str(tmp_path / "no-such-model"),
                         "--output", str(out)), "no-such-model")
    assert not out.exists()


def _read_only_bind(folder) -> list[str] | None:
    """A command prefix that runs a program with ``folder`` bind-mounted read-only (bubblewrap, which
    the base install ships): not even root can write there. None where bubblewrap cannot do it."""
    from colbench_gym.grading.sandbox import _bwrap_candidates

    for bwrap in _bwrap_candidates():
        prefix = [bwrap, "--unshare-user", "--dev-bind", "/", "/", "--ro-bind", str(folder), str(folder), "--"]
        try:
            probe = subprocess.run([*prefix, "touch", str(folder / "probe")], capture_output=True, timeout=60)
            works = subprocess.run([*prefix, "true"], capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.SubprocessError):
            continue
        if works and probe.returncode != 0 and not (folder / "probe").exists():
            return prefix
    return None


def test_unwritable_output_fails_before_any_model_call(tmp_path):
    """A read-only folder (permissions, for a user other than root) and a read-only bind mount
    (bubblewrap; this is the case that runs as root, as CI does): one line naming it, no request."""
    from tests.local_openai_server import LocalOpenAIServer

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    prefixes = [] if os.access(ro, os.W_OK) else [[]]  # root writes through permissions
    bind = _read_only_bind(ro)
    if bind is not None:
        prefixes.append(bind)
    if not prefixes:
        pytest.skip("running as root without a bubblewrap that can bind-mount a folder read-only")
    for prefix in prefixes:
        with LocalOpenAIServer(lambda body: "I WANT TO ANSWER: def f(): pass") as server:
            proc = subprocess.run([*prefix, sys.executable, "-m", "sweet_agent.cli", "rollout", "--policy", "openai:m",
                                   "--base-url", server.base_url, "--episodes", "1",
                                   "--output", str(ro / "sub" / "o.jsonl"), "--no-progress"],
                                  capture_output=True, text=True, env=ENV, timeout=600)
            line = _one_line_error(proc, str(ro))
            assert server.requests == []
            assert f"--output {ro / 'sub' / 'o.jsonl'}: cannot create its folder" in line  # the early check's words
            assert "pick a writable --output" in line
        assert not (ro / "sub").exists()


def test_output_under_a_file_fails_before_any_model_call(tmp_path):
    from tests.local_openai_server import LocalOpenAIServer

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with LocalOpenAIServer(lambda body: "I WANT TO ANSWER: def f(): pass") as server:
        proc = _cli("sweet-agent", "rollout", "--policy", "openai:m", "--base-url", server.base_url,
                    "--episodes", "1", "--output", str(blocker / "o.jsonl"), "--no-progress")
        _one_line_error(proc, str(blocker))
        assert server.requests == []
    ans = tmp_path / "answers.jsonl"
    ans.write_text(json.dumps({"task": {"problem_description": "p", "ground_truth": "def f():\n    return 1\n",
                                        "test_cases": {"test1": "f()"}}, "answer": "def f(): return 1"}) + "\n")
    _one_line_error(_cli("colbench", "evaluate", "backend", str(ans), "-o", str(blocker / "o.jsonl")), str(blocker))


def test_closed_stdout_pipe_is_reported_quietly(tmp_path):
    # `colbench tasks` prints many lines; the reader goes away after the first one.
    code = ("import subprocess, sys\n"
            f"p = subprocess.Popen([{sys.executable!r}, '-m', 'colbench_gym.cli', 'tasks', 'list', '--tasks', 'generated:train', '--limit', '3000'],"
            " stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)\n"
            "p.stdout.read(10); p.stdout.close(); err = p.stderr.read().decode(); rc = p.wait()\n"
            "print(rc); print(err)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120)
    rc, _, err = proc.stdout.partition("\n")
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert int(rc) != 0
