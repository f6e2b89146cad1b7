"""The shipped ``--config`` presets of the training commands (``sweet_agent/configs/<folder>/``).

WHY a module of its own: ``--config NAME`` resolves a shipped preset by name, its error lists the
shipped ones, and every command's help lists them with one line each; all three read the preset
folder here, so a new YAML file there is a new preset everywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

PRESETS_DIR = Path(__file__).resolve().parent.parent / "configs"

_PREFIX = re.compile(r"^sweet-agent \S+ --config \S+:\s*")


def preset_path(command: str, name: str) -> Path:
    """The shipped preset ``name`` (``cpu``, ``paper``) of a trainer folder under configs/."""
    return PRESETS_DIR / command / f"{name}.yaml"


def preset_names(folder: str) -> list[str]:
    """The shipped presets of ``folder`` (``critic``, ``grpo``, ...), sorted."""
    return [p.stem for p in sorted((PRESETS_DIR / folder).glob("*.yaml"))]


def preset_summary(path: Path) -> str:
    """One line on what a preset is for: the first sentence of the comment block it opens with
    (``# sweet-agent train-critic --config cpu: a 2-core CPU, LoRA on ...``), its command-line
    prefix left out."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = _PREFIX.sub("", " ".join(lines))
    return text.split(". ", 1)[0].rstrip(".")


def shipped_presets(folder: str) -> dict[str, str]:
    """``{name: one line}`` of ``folder``'s shipped presets."""
    return {name: preset_summary(preset_path(folder, name)) for name in preset_names(folder)}


def resolve_config(prog: str, folder: str, args: list[str]) -> list[str]:
    """``args`` with ``--config NAME`` of a shipped preset replaced by its path (a YAML path
    stays as it is); a missing value or an unknown name is a one-line error listing the presets."""
    if "--config" not in args:
        return args
    args = list(args)
    k = args.index("--config")
    if k + 1 >= len(args):
        raise SystemExit(f"{prog}: --config needs a YAML file or a preset name ({', '.join(preset_names(folder))})")
    spec = args[k + 1]
    if not Path(spec).is_file():
        shipped = preset_path(folder, spec)
        if not shipped.is_file():
            raise SystemExit(f"{prog}: --config {spec}: no such file and no shipped preset of that name "
                             f"(shipped: {', '.join(preset_names(folder))})")
        args[k + 1] = str(shipped)
    return args
