"""Probing: what the sandbox sees and which fallbacks work on this machine (real processes)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from colbench_gym.grading import BackendGrader, SandboxUnavailable, probe_isolation
from colbench_gym.grading import sandbox as sb
from colbench_gym.tasks import BackendTask

REPO = Path(__file__).resolve().parents[2]


def _namespaces_or_skip():
    try:
        return probe_isolation("namespaces")
    except SandboxUnavailable as exc:  # pragma: no cover - depends on the machine
        pytest.skip(str(exc))


def test_minimal_view_holds_only_the_interpreter():
    iso = _namespaces_or_skip()
    assert iso.level == "namespaces" and iso.pid_namespace and iso.bwrap
    for path in iso.binds:
        assert not path.startswith(str(REPO)), f"the project is visible in the sandbox: {path}"
        assert not path.startswith(("/tmp", "/home", "/work", os.path.expanduser("~/.ssh"))), path
    if iso.view == "minimal":  # the interpreter, its stdlib, the libraries they link, nothing else
        prefix = os.path.realpath(sys.base_prefix)
        allowed = (prefix, "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache")
        assert iso.python in iso.binds
        assert all(p.startswith(allowed) for p in iso.binds), iso.binds


def test_system_view_also_works():
    iso = _namespaces_or_skip()
    binds, hidden = sb._system_view(iso.python)
    system = sb.Isolation("namespaces", iso.python, iso.bwrap, binds, hidden, "system", pid_namespace=True)
    assert sb._smoke(sb.bwrap_command(system, 1 << 24) + sb._python_args(iso.python), want_init=True)


def test_fallback_never_runs_answers_as_root():
    iso = probe_isolation("rlimits-only")
    assert iso.level == "rlimits-only" and iso.bwrap is None
    assert "filesystem isolation" in " ".join(iso.missing)
    task = BackendTask("uid", "def uid():\n    return 'unprivileged'\n", {"test1": "uid()"})
    probe = "import os\ndef uid():\n    return 'unprivileged' if os.getuid() != 0 or IN_NS else 'root'\n"
    # Root only stays root inside its own user namespace (then it is not root outside).
    in_userns = "--user" in iso.unshare
    with BackendGrader(isolation="rlimits-only") as g:
        res = g.grade(probe.replace("IN_NS", str(in_userns)), task)
    assert res.success, res


def test_bad_level():
    with pytest.raises(ValueError, match="isolation must be one of"):
        probe_isolation("docker")
