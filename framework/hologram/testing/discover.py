"""Which manifest a plugin repository's tests are about, found as `hologram check .` finds it."""

from __future__ import annotations

from pathlib import Path

from hologram.manifest.discovery import DEFAULT_MANIFEST_FILE, ENTRY_POINT_GROUP


class NoManifest(Exception):
    """No single manifest in the repository; the message says how to name one."""


def discover_manifest(root: Path) -> Path:
    """The repository's one manifest: the one its pyproject.toml declares in the 'hologram.plugins' entry-point
    group, else ``plugin.toml`` at its root, else its only ``manifests/*.toml``."""
    from hologram.plan.check import CheckReport, entry_point_manifests

    report = CheckReport()
    found = entry_point_manifests(root, report)
    if not found and (root / DEFAULT_MANIFEST_FILE).is_file():
        found = [root / DEFAULT_MANIFEST_FILE]
    if not found:
        found = sorted(p for p in (root / "manifests").glob("*.toml") if p.is_file())
    if len(found) == 1:
        return found[0]
    fix = (
        "override the `hologram_manifest` fixture in conftest.py to return the path, or pass it: "
        'hologram_conformance("path/to/plugin.toml")'
    )
    if not found:
        problems = "; ".join(p.render().replace("\n", " ") for p in report.errors)
        where = f" ({problems})" if problems else ""
        raise NoManifest(
            f"no plugin manifest found in {root}{where}: declare it in pyproject.toml's '{ENTRY_POINT_GROUP}' entry "
            f"points, or put {DEFAULT_MANIFEST_FILE} at the root; or {fix}"
        )
    names = ", ".join(str(p.relative_to(root)) for p in found)
    raise NoManifest(f"{len(found)} manifests in {root} ({names}): say which one to test: {fix}")
