"""Offline Tailwind: where the npm packages that stand in for the Tailwind CDNs live, and how to get them.

WebSight-style pages load Tailwind from a CDN (the v3 play script ``cdn.tailwindcss.com`` or a v2
stylesheet link on jsdelivr/unpkg). Offline, those requests fail and the page renders unstyled,
which makes every screenshot comparison meaningless. We serve the same files from npm packages
unpacked once into a local folder:

- ``tailwindcss-cdn`` (v3 play script, same code as ``cdn.tailwindcss.com``),
- ``@tailwindcss/browser`` (v4 browser build),
- ``tailwindcss@2.2.19`` (only its ``dist/*.css``; the v2 stylesheet links point there).

The folder is ``$COLBENCH_WEB_ASSETS`` if set, else ``<sys.prefix>/share/colbench-web-assets``
(inside the virtualenv). Install with ``python -m colbench_gym.rendering.assets install`` (needs
``npm``; ``scripts/setup.sh`` does it for you). ``npm pack`` is used rather than ``npm install``
so no dependency tree (and no install script) is pulled in: we only need static files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from colbench_gym.jsonl import write_text_atomic

ENV_VAR = "COLBENCH_WEB_ASSETS"

#: name -> (npm spec, folder, files kept from the tarball's ``package/`` prefix)
PACKAGES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "play-v3": ("tailwindcss-cdn@3.4.10", "tailwindcss-cdn", ("tailwindcss", "package.json", "LICENSE", "README")),
    "browser-v4": ("@tailwindcss/browser@4.3.4", "tailwindcss-browser", ("dist/", "package.json", "LICENSE")),
    "css-v2": ("tailwindcss@2.2.19", "tailwindcss-2", ("dist/", "package.json", "LICENSE")),
}
MANIFEST = "colbench-web-assets.json"


class WebAssetsMissing(RuntimeError):
    """The offline Tailwind files are not installed; the message says how to install them."""


def default_dir() -> Path:
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path(sys.prefix) / "share" / "colbench-web-assets"


def install_hint(target: Path | None = None) -> str:
    target = target or default_dir()
    return (
        f"offline Tailwind files are missing in {target}. Install them with\n"
        f"    python -m colbench_gym.rendering.assets install --dir {target}\n"
        f"(needs `npm`, e.g. `apt-get install npm`; in this repo `bash scripts/setup.sh` does it), "
        f"or point ${ENV_VAR} at a folder holding them. Without them Tailwind pages render unstyled."
    )


@dataclass(frozen=True)
class WebAssets:
    """Paths of the files served in place of the Tailwind CDNs."""

    root: Path

    @property
    def play_v3(self) -> Path:
        return self.root / "tailwindcss-cdn" / "tailwindcss.js"

    def play_v3_with_plugins(self) -> Path:
        return self.root / "tailwindcss-cdn" / "tailwindcss-with-all-plugins.js"

    @property
    def browser_v4(self) -> Path:
        return self.root / "tailwindcss-browser" / "dist" / "index.global.js"

    def css_v2(self, name: str = "tailwind.min.css") -> Path:
        path = self.root / "tailwindcss-2" / "dist" / os.path.basename(name)
        return path if path.is_file() else self.root / "tailwindcss-2" / "dist" / "tailwind.min.css"

    def missing(self) -> list[Path]:
        return [p for p in (self.play_v3, self.browser_v4, self.css_v2()) if not p.is_file()]


def locate(root: str | os.PathLike[str] | None = None, *, required: bool = True) -> WebAssets | None:
    """Return the installed assets, or raise :class:`WebAssetsMissing` (``required``) / return None."""
    assets = WebAssets(Path(root).expanduser() if root else default_dir())
    if assets.missing():
        if required:
            raise WebAssetsMissing(install_hint(assets.root))
        return None
    return assets


def _keep(member: str, prefixes: tuple[str, ...]) -> bool:
    rel = member.removeprefix("package/")
    return any(rel.startswith(p) for p in prefixes) and ".." not in Path(rel).parts


def install(target: str | os.PathLike[str] | None = None, *, quiet: bool = False) -> Path:
    """Fetch the pinned packages with ``npm pack`` and unpack their static files into ``target``.

    Idempotent: a folder whose manifest lists the same pins is left alone. Each package is
    unpacked into a temporary folder first and moved into place, so an interrupted run never
    leaves a half-written package behind.
    """
    root = Path(target).expanduser() if target else default_dir()
    pins = {k: spec for k, (spec, _, _) in PACKAGES.items()}
    manifest = root / MANIFEST
    if manifest.is_file() and locate(root, required=False) is not None:
        try:
            if json.loads(manifest.read_text()).get("packages") == pins:
                return root
        except (OSError, json.JSONDecodeError):
            pass
    npm = shutil.which("npm")
    if npm is None:
        raise WebAssetsMissing(
            "`npm` is not on PATH, so the offline Tailwind packages cannot be fetched. Install npm "
            f"(e.g. `apt-get install npm`) and run `python -m colbench_gym.rendering.assets install --dir {root}`, "
            f"or set ${ENV_VAR} to a folder that already holds them."
        )
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="colbench-web-", dir=root) as tmp:
        for spec, folder, prefixes in PACKAGES.values():
            if not quiet:
                print(f"[web-assets] fetching {spec}", file=sys.stderr)
            proc = subprocess.run(
                [npm, "pack", spec, "--pack-destination", tmp, "--silent", "--no-audit", "--no-fund"],
                check=False, capture_output=True, text=True, timeout=300,
            )
            tgz = [p for p in Path(tmp).glob("*.tgz")]
            if proc.returncode != 0 or not tgz:
                raise WebAssetsMissing(f"`npm pack {spec}` failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
            stage = Path(tmp) / ("stage-" + folder)
            with tarfile.open(tgz[0]) as tar:
                members = [m for m in tar.getmembers() if m.isfile() and _keep(m.name, prefixes)]
                for m in members:
                    m.name = m.name.removeprefix("package/")
                tar.extractall(stage, members=members, filter="data")
            tgz[0].unlink()
            final = root / folder
            old = Path(tmp) / ("old-" + folder)
            if final.exists():
                final.rename(old)
            stage.rename(final)
        write_text_atomic(manifest, json.dumps({"packages": pins}, indent=1))
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m colbench_gym.rendering.assets", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_install = sub.add_parser("install", help="fetch the pinned Tailwind packages with npm (idempotent)")
    p_install.add_argument("--dir", default=None, help=f"target folder (default: ${ENV_VAR} or {default_dir()})")
    p_install.add_argument("--quiet", action="store_true")
    p_where = sub.add_parser("where", help="print the assets folder and whether it is complete")
    p_where.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "install":
            print(install(args.dir, quiet=args.quiet))
            return 0
        assets = WebAssets(Path(args.dir) if args.dir else default_dir())
        missing = assets.missing()
        print(assets.root, "complete" if not missing else "missing: " + ", ".join(map(str, missing)))
        return 0 if not missing else 1
    except WebAssetsMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
