"""Find plugin manifests: built-ins, installed distributions, and directories the user names.

Third-party plugins are ordinary Python distributions that declare an entry point in the group
`hologram.plugins`. The entry point's value names the package that holds the manifest
(`hologram_weather` → `hologram_weather/plugin.toml`) or a file inside it
(`hologram_weather:manifests/weather.toml`). We locate the package with `importlib.util.find_spec`, which
does not execute it: building the lock must never run third-party code.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import tomli

from hologram.base.errors import HologramError, Problem
from hologram.base.protocol import facility_name
from hologram.manifest import LoadedManifest, load_manifest

ENTRY_POINT_GROUP = "hologram.plugins"
DEFAULT_MANIFEST_FILE = "plugin.toml"


BUILTINS_PACKAGE = "hologram_plugins"
"""The built-in plugins' code; the `hologram` wheel ships their manifests inside it, as `_manifests/`."""


def builtin_manifest_dir() -> Path:
    """Built-in manifests: `manifests/` of the source checkout this package is imported from, else beside the
    built-in plugins' code in an installed `hologram` (the wheel's `hologram_plugins/_manifests`). The
    checkout comes first: an editable install also leaves a copy of the manifests in site-packages, as they
    were at install time. Neither exists in an install of hologram-sdk alone: `discover` then has no
    built-ins. The package is located, not imported (building the lock runs no plugin code)."""
    checkout = Path(__file__).resolve().parents[3] / "manifests"  # framework/hologram/manifest/ → the root
    if checkout.is_dir():
        return checkout
    try:
        spec = importlib.util.find_spec(BUILTINS_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        installed = Path(location) / "_manifests"
        if installed.is_dir():
            return installed
    return checkout


BUILTINS_MISSING = Problem(
    "no built-in plugins: only hologram-sdk is installed here, and the built-ins come with the full Hologram",
    hint="pip install hologram (or build with --no-discover -m DIR)",
)


@dataclass
class Discovery:
    """What was found, plus problems with third-party sources that were skipped (not fatal by default)."""

    manifests: list[LoadedManifest] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """Fatal: manifests of named sources that failed to load (`discover(collect=True)` keeps going)."""
    broken: dict[str, str] = field(default_factory=dict)
    """Facility name → the file of a broken manifest that says it provides it (read from its raw TOML)."""
    opaque: list[str] = field(default_factory=list)
    """Broken manifests that are not even TOML: what they provide is unknown."""

    def note_broken(self, path: Path, problems: Iterable[Problem]) -> None:
        self.problems.extend(problems)
        provides = _raw_provides(path)
        if provides is None:
            self.opaque.append(str(path))
        for facility in provides or ():
            self.broken.setdefault(facility, str(path))


def _raw_provides(path: Path) -> list[str] | None:
    """The facility names a manifest that failed validation declares, best effort (None: not TOML)."""
    try:
        raw = tomli.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomli.TOMLDecodeError):
        return None
    provides = raw.get("facilities", {}).get("provides", []) if isinstance(raw.get("facilities"), dict) else []
    return [facility_name(str(f)) for f in provides] if isinstance(provides, list) else []


def _manifest_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.toml") if p.is_file())


def _entry_point_manifest(ep: EntryPoint) -> Path:
    package, _, relative = ep.value.partition(":")
    package = package.strip()
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as exc:
        raise HologramError(Problem(f"cannot locate package {package!r}: {exc}")) from None
    if spec is None or not spec.submodule_search_locations:
        raise HologramError(
            Problem(
                f"entry point {ep.name!r} names {package!r}, which is not an installed package",
                hint="the entry point's value must be the package that holds plugin.toml",
            )
        )
    path = Path(next(iter(spec.submodule_search_locations))) / (relative.strip() or DEFAULT_MANIFEST_FILE)
    if not path.is_file():
        raise HologramError(
            Problem(f"entry point {ep.name!r}: no manifest at {path}", hint="ship plugin.toml in the package")
        )
    return path


def _from_entry_points(found: Discovery, strict: bool, eps: Iterable[EntryPoint]) -> None:
    for ep in sorted(eps, key=lambda e: (e.name, e.value)):
        dist = ep.dist.name if ep.dist is not None else "unknown distribution"
        try:
            path = _entry_point_manifest(ep)
            found.manifests.append(load_manifest(path, source=f"entry-point:{dist}"))
        except HologramError as exc:
            problems = [
                Problem(
                    f"plugin from {dist} (entry point {ep.name!r}) skipped: {p.message}",
                    file=p.file,
                    line=p.line,
                    key=p.key,
                    hint=p.hint,
                )
                for p in exc.problems
            ]
            if strict:
                raise HologramError(problems) from None
            found.skipped.extend(problems)


def discover(
    extra_dirs: Sequence[Path] = (),
    *,
    builtins: bool = True,
    installed: bool = True,
    strict: bool = False,
    collect: bool = False,
) -> Discovery:
    """Load every manifest from the enabled sources; invalid manifests in named sources are fatal: raised
    at once, or — `collect` — gathered in `Discovery.problems` so the caller can resolve the others too and
    report everything in one run."""
    found = Discovery()
    problems: list[Problem] = []
    directories: list[tuple[Path, str]] = []
    if builtins:
        builtin = builtin_manifest_dir()
        if builtin.is_dir():
            directories.append((builtin, "builtin"))
        else:
            found.skipped.append(BUILTINS_MISSING)
    directories.extend((Path(d), "path") for d in extra_dirs)
    for directory, source in directories:
        if not directory.is_dir():
            problems.append(Problem("manifest directory does not exist", file=str(directory), hint="check the -m path"))
            continue
        for path in _manifest_files(directory):
            try:
                found.manifests.append(load_manifest(path, source=source))
            except HologramError as exc:
                found.note_broken(path, exc.problems)
    if installed:
        try:
            _from_entry_points(found, strict, entry_points(group=ENTRY_POINT_GROUP))
        except HologramError as exc:
            problems.extend(exc.problems)
    found.problems[:0] = problems
    if found.problems and not collect:
        raise HologramError(found.problems)
    return found
