"""``sweet_agent.forkserver``: a command forked from the server that imported torch / transformers /
TRL once is the process ``python -m`` would have started (its own session and process group, its
working directory, environment, argv, output, exit status, ``atexit`` handlers), only without the
imports; a stop signal to its group ends it and what it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sweet_agent.forkserver import STATUS_UNKNOWN, ForkedCommand, can_fork

ROOT = Path(__file__).resolve().parents[2]
PROBE = "tests.agent.command_probe"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PROBE_VALUE": "forty-two", "OMP_NUM_THREADS": "3", **extra}


def _start(how: str, cmd: list[str], log: Path, cwd: Path, env: dict[str, str]):
    if how == "forked":
        return ForkedCommand(cmd, log=log, cwd=cwd, env=env)
    with open(log, "a", encoding="utf-8") as fh:
        return subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _first_line(log: Path, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in log.read_text(encoding="utf-8").splitlines() if log.exists() else ():
            if line.startswith("{"):
                return json.loads(line)
        time.sleep(0.05)
    raise AssertionError(f"{log} has no line from the probe: {log.read_text() if log.exists() else 'missing'}")


def test_a_forked_command_is_the_process_python_m_would_start(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    seen = {}
    for how in ("forked", "fresh"):
        log, out = tmp_path / f"{how}.log", tmp_path / f"{how}.atexit"
        proc = _start(how, [sys.executable, "-m", PROBE, str(out), "3", "two words"], log, cwd, _env())
        assert proc.wait(timeout=120) == 3 and proc.returncode == 3 and proc.poll() == 3
        seen[how] = s = _first_line(log)
        assert s["pid"] == proc.pid == s["pgid"] == s["sid"]  # its own session and process group
        assert s["cwd"] == str(cwd) and s["value"] == "forty-two" and s["name"] == "__main__"
        assert s["argv"][0].endswith("command_probe.py") and s["argv"][1:] == [str(out), "3", "two words"]
        assert "a line to stderr" in log.read_text()
        assert out.read_text() == "atexit ran\n"  # atexit handlers run (a forked child leaves with os._exit)
    # what differs: torch was imported by the server before the command ran; OMP_NUM_THREADS still applies
    assert seen["forked"]["torch_preloaded"] and seen["forked"]["threads"] == 3
    assert not seen["fresh"]["torch_preloaded"]


def test_a_real_command_prints_and_exits_the_same_forked_or_fresh(tmp_path):
    """The product's own CLI: a refused input gives the same one-line error and exit 2 both ways."""
    logs = {}
    for how in ("forked", "fresh"):
        log = tmp_path / f"{how}.log"
        cmd = [sys.executable, "-m", "sweet_agent.cli", "evaluate", str(tmp_path / "missing.jsonl")]
        assert _start(how, cmd, log, ROOT, _env()).wait(timeout=120) == 2
        logs[how] = log.read_text()
    assert logs["forked"] == logs["fresh"] and logs["forked"].startswith("sweet-agent evaluate: error: ")
    assert logs["forked"].count("\n") == 1


def _ended(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_sigterm_to_its_group_ends_the_command_and_what_it_started(tmp_path):
    log, pidfile = tmp_path / "probe.log", tmp_path / "child.pid"
    proc = ForkedCommand([sys.executable, "-m", PROBE, str(tmp_path / "out"), "0", "--child", str(pidfile), "--sleep"],
                         log=log, cwd=ROOT, env=_env())
    _first_line(log)
    for _ in range(1200):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    child = int(pidfile.read_text())
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    assert proc.returncode is None
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM  # as Popen reports a signal
    for _ in range(400):
        if _ended(child):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the command's own child outlived the stop")


def test_only_this_interpreters_module_commands_are_forked(tmp_path):
    assert can_fork([sys.executable, "-m", "sweet_agent.cli", "evaluate"])
    assert not can_fork([sys.executable, "-c", "print(1)"])
    assert not can_fork([sys.executable, "-m"])
    assert not can_fork([str(tmp_path / "python"), "-m", "sweet_agent.cli"])
    with pytest.raises(ValueError, match="start it with subprocess"):
        ForkedCommand([sys.executable, "-c", "pass"], log=tmp_path / "log", cwd=tmp_path, env=dict(os.environ))


def test_threads_end_before_atexit_and_an_interrupt_ends_by_sigint_forked_or_fresh(tmp_path):
    """The interpreter's own order at its end: non-daemon threads are joined, then atexit handlers
    run (a pool closed by atexit must not be pulled from under a thread); an uncaught
    KeyboardInterrupt ends the process by SIGINT."""
    for how in ("forked", "fresh"):
        out = tmp_path / f"{how}.order"
        cmd = [sys.executable, "-m", PROBE, str(out), "0", "--thread"]
        assert _start(how, cmd, tmp_path / f"{how}.log", ROOT, _env()).wait(timeout=120) == 0
        assert out.read_text().splitlines() == ["thread finished", "atexit ran"], how
        cmd = [sys.executable, "-m", PROBE, str(tmp_path / f"{how}.int"), "0", "--interrupt"]
        assert _start(how, cmd, tmp_path / f"{how}-int.log", ROOT, _env()).wait(timeout=120) == -signal.SIGINT, how


def test_each_forked_command_draws_its_own_random_numbers(tmp_path):
    """A fork copies the server's generators: without a fresh seed every stage would sample alike."""
    seen = []
    for i in range(2):
        log = tmp_path / f"{i}.log"
        ForkedCommand([sys.executable, "-m", PROBE, str(tmp_path / f"{i}.out"), "0"], log=log, cwd=ROOT,
                      env=_env()).wait(timeout=120)
        seen.append(_first_line(log))
    assert seen[0]["torch_seed"] != seen[1]["torch_seed"]
    assert seen[0]["numpy_draw"] != seen[1]["numpy_draw"]


def test_commands_started_from_two_threads_at_once_each_report_their_own_status(tmp_path):
    """Every start polls the children multiprocessing knows of; a command is forgotten by it once
    started, so another thread's start never reads its status (which gave 255 for an exit 0)."""
    import multiprocessing
    import threading

    results: dict[int, int] = {}

    def run(worker: int) -> None:
        for i in range(6):
            code = (worker + i) % 3
            cmd = [sys.executable, "-m", PROBE, str(tmp_path / f"{worker}-{i}.out"), str(code)]
            proc = ForkedCommand(cmd, log=tmp_path / f"{worker}-{i}.log", cwd=ROOT, env=_env())
            assert all(p.pid != proc.pid for p in multiprocessing.active_children())
            results[10 * worker + i] = (proc.wait(timeout=120), code)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    assert len(results) == 12 and all(got == want for got, want in results.values()), results


def test_a_command_outlives_a_dead_fork_server_is_still_waited_for_and_stopped(tmp_path):
    """If the server dies (the OOM killer, a signal to the benchmark's group), a running command is
    not reported as ended: its caller still waits for it and can stop it; its status is lost
    (STATUS_UNKNOWN); the next command gets a new server."""
    from multiprocessing import forkserver

    log = tmp_path / "probe.log"
    proc = ForkedCommand([sys.executable, "-m", PROBE, str(tmp_path / "out"), "0", "--sleep"], log=log, cwd=ROOT,
                         env=_env())
    _first_line(log)
    os.kill(forkserver._forkserver._forkserver_pid, signal.SIGKILL)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)
    assert proc.poll() is None and os.getpgid(proc.pid) == proc.pid  # still running, still its own group
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == STATUS_UNKNOWN
    assert _ended(proc.pid)  # ended when wait returned (an orphan's zombie is init's to reap)
    again = ForkedCommand([sys.executable, "-m", PROBE, str(tmp_path / "again"), "4"], log=tmp_path / "again.log",
                          cwd=ROOT, env=_env())
    assert again.wait(timeout=300) == 4 and _first_line(tmp_path / "again.log")["torch_preloaded"]


def test_the_stage_start_benchmark_compares_both_ways_on_the_same_command(capsys):
    """benchmarks/bench_stage_start.py: the same command started fresh and forked, alternating,
    the outputs compared (equal, or it exits 1), medians, the ratio and the server's start printed."""
    import re

    from tests.benchmark_modules import load_benchmark

    bench = load_benchmark("bench_stage_start")
    assert bench.main(["--rounds", "1", "--commands", "rollout,evaluate"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 starts each way (rollout,evaluate, 1 rounds, alternating)")
    fresh, forked = (float(x) for x in re.findall(r"median ([\d.]+) s", out))
    ratio = float(re.search(r"ratio fresh / forked: (\d+)x", out).group(1))
    assert abs(ratio - fresh / forked) <= 1 and "the server's own start" in out and "load average before" in out
