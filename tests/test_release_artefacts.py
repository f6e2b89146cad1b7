"""The release artefacts, built and used as a user would (issue 39, item 1): ``python -m build``
makes the wheel and sdist of colbench-gym (the wheel built *from* the sdist, so the sdist is
complete) and of the OpenEnv hub package (hub/colbench_env); ``twine check --strict`` passes
both; every data file of the packages is in the wheel and the sdist; and the wheel, installed
into a fresh virtualenv (dependencies from pip's cache or the registry; torch not among them),
plays ``gym.make("ColBench-Backend-v0")`` episodes graded by the real grader, and its
``colbench`` command lists the task sources.

The build runs without isolation (``--no-isolation``: the running environment's setuptools, no
download). The fresh virtualenv's ``pip install`` takes what pip's configuration gives it (its
cache, ``PIP_FIND_LINKS``, the index); where the registry cannot be reached and the cache lacks a
dependency, the install test is skipped with pip's reason (never on any other pip failure).
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HUB = ROOT / "hub" / "colbench_env"
PACKAGES = ("colbench_gym", "sweet_agent")
#: What pip prints when it could not reach an index (then the test is skipped, not failed).
OFFLINE = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
           "Network is unreachable", "Max retries exceeded", "No matching distribution found")

pytest.importorskip("build", reason="the build frontend: pip install build (in colbench-gym[dev])")
pytest.importorskip("twine", reason="pip install twine (in colbench-gym[dev])")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _tree_files(root: Path) -> list[str]:
    """The files of the working tree that git would ship: tracked ones and new ones it does not
    ignore (a new data file must reach the wheel before it is committed)."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout (an unpacked sdist): every file but caches
        return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                and ".egg-info" not in str(p) and not p.name.endswith(".pyc")]
    return [f for f in out.stdout.split("\0") if f and (root / f).is_file()]


def _copy(files: list[str], src: Path, dst: Path) -> Path:
    for f in files:
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / f, dst / f)
    return dst


def _build(src: Path, out: Path) -> tuple[Path, Path]:
    """``python -m build`` (sdist, then the wheel from the sdist) of a copy of ``src``."""
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)])
    (wheel,), (sdist,) = out.glob("*.whl"), out.glob("*.tar.gz")
    _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)])
    return wheel, sdist


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_string(z.read(name).decode())


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory):
    base = tmp_path_factory.mktemp("release")
    files = _tree_files(ROOT)
    src = _copy([f for f in files if not f.startswith(("hub/", "runs/"))], ROOT, base / "src")
    hub_src = _copy([f for f in _tree_files(HUB) if not f.endswith("uv.lock")], HUB, base / "hub-src")
    wheel, sdist = _build(src, base / "dist")
    hub_wheel, hub_sdist = _build(hub_src, base / "hub-dist")
    data = sorted(f for f in files if f.startswith(tuple(p + "/" for p in PACKAGES)) and not f.endswith(".py"))
    return {"wheel": wheel, "sdist": sdist, "hub_wheel": hub_wheel, "hub_sdist": hub_sdist, "data": data,
            "python": [f for f in files if f.startswith(tuple(p + "/" for p in PACKAGES)) and f.endswith(".py")]}


def test_wheel_and_sdist_hold_every_module_and_data_file(artefacts):
    data = artefacts["data"]
    assert "colbench_gym/tasks/data/backend_test.jsonl" in data and "sweet_agent/viewer/assets/app.js" in data
    with zipfile.ZipFile(artefacts["wheel"]) as z:
        in_wheel = set(z.namelist())
    with tarfile.open(artefacts["sdist"]) as t:
        in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for f in [*data, *artefacts["python"]]:
        assert f in in_wheel, f"{f} is not in the wheel (add it to [tool.setuptools.package-data])"
        assert f in in_sdist, f"{f} is not in the sdist"
    assert {"README.md", "pyproject.toml"} <= in_sdist
    assert not any(n.startswith(("tests/", "benchmarks/", "examples/")) for n in in_wheel)


def test_wheel_metadata_names_the_package_its_commands_and_keeps_torch_optional(artefacts):
    meta = _metadata(artefacts["wheel"])
    assert meta["Name"] == "colbench-gym" and meta["License-Expression"] == "Apache-2.0"
    assert meta.get_content_type() == "text/plain" and meta["Description-Content-Type"] == "text/markdown"
    requires = meta.get_all("Requires-Dist")
    ml = [r for r in requires if r.split(">")[0].split("=")[0].split("[")[0].strip() in ("torch", "transformers", "trl")]
    assert ml and all("extra ==" in r for r in ml)  # the ML stack only with an extra
    with zipfile.ZipFile(artefacts["wheel"]) as z:
        entry_points = z.read(next(n for n in z.namelist() if n.endswith("entry_points.txt"))).decode()
    assert "colbench = colbench_gym.cli:main" in entry_points and "sweet-agent = sweet_agent.cli:main" in entry_points


def test_the_hub_package_builds_and_carries_its_manifest(artefacts):
    meta = _metadata(artefacts["hub_wheel"])
    assert meta["Name"] == "openenv-colbench_env"
    requires = meta.get_all("Requires-Dist")
    assert any(r.startswith("colbench-gym[serve]") for r in requires) and any(r.startswith("openenv-core") for r in requires)
    with zipfile.ZipFile(artefacts["hub_wheel"]) as z:
        names = set(z.namelist())
    assert {"colbench_env/openenv.yaml", "colbench_env/README.md", "colbench_env/client.py", "colbench_env/models.py",
            "colbench_env/server/app.py", "colbench_env/server/Dockerfile"} <= names
    with zipfile.ZipFile(artefacts["hub_wheel"]) as z:
        assert "app: server.app:app" in z.read("colbench_env/openenv.yaml").decode()
    with tarfile.open(artefacts["hub_sdist"]) as t:
        assert any(n.endswith("/openenv.yaml") for n in t.getnames())


EPISODE = textwrap.dedent('''
    import importlib.metadata, importlib.util, json, sys
    import gymnasium as gym
    import colbench_gym

    out = {"module": colbench_gym.__file__, "torch_spec": importlib.util.find_spec("torch") is not None}
    try:
        importlib.metadata.distribution("torch")
        out["torch_installed"] = True
    except importlib.metadata.PackageNotFoundError:
        out["torch_installed"] = False
    env = gym.make("ColBench-Backend-v0", reward_mode="fraction")   # embedded tasks, offline simulator
    rewards = []
    for answer in ("reference", "wrong"):
        obs, info = env.reset(seed=0, options={"task_index": 0})
        task = env.unwrapped.task
        obs, reward, terminated, truncated, info = env.step("What should happen with unusual input?")
        assert not terminated and isinstance(obs, str) and obs
        code = task.ground_truth if answer == "reference" else "def nothing():\\n    return None\\n"
        obs, reward, terminated, truncated, info = env.step("I WANT TO ANSWER:\\n```python\\n" + code + "```")
        rewards.append({"reward": reward, "terminated": terminated, "tests_passed": info["tests_passed"],
                        "tests_total": info["tests_total"], "success": info["success"]})
    env.close()
    out["episodes"] = rewards
    out["ml_modules"] = sorted(m for m in ("torch", "transformers", "trl", "datasets") if m in sys.modules)
    print(json.dumps(out))
''')


@pytest.mark.slow  # 45-70 s on 2 cores: a virtualenv, pip installing the dependencies, two graded episodes
def test_the_wheel_installs_in_a_fresh_venv_and_plays_a_graded_episode_without_torch(artefacts, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    proc = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                           "--find-links", str(artefacts["wheel"].parent), str(artefacts["wheel"])],
                          capture_output=True, text=True, env=environ, cwd=tmp_path)
    if proc.returncode != 0 and any(m in proc.stdout + proc.stderr for m in OFFLINE):
        pytest.skip(f"the registry is unreachable and pip's cache lacks a dependency: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = _run([str(py), "-c", EPISODE], env=environ, cwd=tmp_path)  # not the checkout: the installed package
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["module"].startswith(str(env_dir)) and "site-packages" in out["module"]
    assert out["torch_spec"] is False and out["torch_installed"] is False and out["ml_modules"] == []
    reference, wrong = out["episodes"]
    # the real grader: the reference passes its 10 hidden tests, a function that is not the asked one none
    assert reference == {"reward": 1.0, "terminated": True, "tests_passed": 10, "tests_total": 10, "success": True}
    assert wrong == {"reward": 0.0, "terminated": True, "tests_passed": 0, "tests_total": 10, "success": False}
    sources = _run([str(env_dir / "bin" / "colbench"), "tasks", "sources"], env=environ, cwd=tmp_path).stdout
    assert "embedded:test        backend     30 tasks" in sources and "collab:val" in sources
    listed = _run([str(env_dir / "bin" / "colbench"), "tasks", "list", "--tasks", "embedded:train", "--limit", "2"],
                  env=environ, cwd=tmp_path).stdout
    assert len(listed.strip().splitlines()) == 2
