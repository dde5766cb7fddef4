"""`hologram plugin list`: every plugin this project knows of, installed vs locked (the running state is
merged in by whoever asks the kernel).

Installed: a manifest discovery finds now, from the sources the lock records (built-ins, installed
distributions, its manifest directories). Locked: in the lock. Added: brought by `hologram plugin add` (the
record in the data directory). A plugin installed but not locked starts after `hologram build`; one locked but
no longer installed is what `hologram up` will refuse (its manifest is missing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hologram.install import record
from hologram.manifest.discovery import discover
from hologram.manifest.facility import KERNEL
from hologram.plan.lock import LockFile, Sources


def inventory(lock: LockFile | None, lock_path: Path, data_dir: Path) -> list[dict[str, Any]]:
    """One row per plugin, sorted by name: name, version, source, installed, locked, added (how, or None)."""
    sources = lock.sources if lock is not None else Sources()
    found = discover(
        sources.directories(lock_path.parent), builtins=sources.builtins, installed=sources.installed, collect=True
    )
    installed = {m.name: m for m in found.manifests}
    locked = {p.name: p for p in (lock.plugins if lock else ()) if p.name != KERNEL}
    added = {name: entry for entry in record.read(data_dir) for name in entry.plugins}
    rows = []
    for name in sorted({*installed, *locked, *added}):
        manifest = installed.get(name)
        entry = added.get(name)
        plugin = locked.get(name)
        rows.append(
            {
                "name": name,
                "version": manifest.manifest.plugin.version if manifest else (plugin.version if plugin else None),
                "source": manifest.source if manifest else (plugin.source if plugin else None),
                "installed": manifest is not None,
                "locked": plugin is not None,
                "added": None if entry is None else {"kind": entry.kind, "target": entry.target},
            }
        )
    return rows
