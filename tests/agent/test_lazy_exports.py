"""The lazy package exports of sweet_agent (sweet_agent/lazy.py): every exported name resolves to
its module's object, the module loads only when the name is used, and an unknown name is an
AttributeError naming the package."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("package", ["sweet_agent.actor", "sweet_agent.critic", "sweet_agent.grpo"])
def test_every_export_resolves_and_unknown_names_fail(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        assert value is not None, name
        if callable(value):  # a class or function, defined in one of the package's modules
            assert value.__name__ == name and value.__module__.startswith(f"{package}."), (name, value.__module__)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_importing_a_package_loads_no_trainer():
    code = ("import sys, sweet_agent.critic, sweet_agent.actor, sweet_agent.grpo\n"
            "print(sorted(m for m in ('trl', 'sweet_agent.critic.trainer', 'sweet_agent.actor.trainer',"
            " 'sweet_agent.grpo.trainer') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
