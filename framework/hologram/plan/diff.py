"""What changes between two locks: the text a person reviews, and the plugins a running kernel touches.

`hologram plugin add/remove` show both before they ask: the unified diff of the lock (the file is written
one key per line, so each changed fact is a line), and which plugins start, stop or restart when the running
kernel adopts it — by the same rule the supervisor applies (`Supervisor.replace_specs`: a plugin whose lock
entry changed, or that was removed, restarts or stops with everything that waits for it).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import tomli

from hologram.manifest.facility import KERNEL
from hologram.plan.lock import LockedPlugin, LockFile


def unified(old: str | None, new: str, name: str = "hologram.lock") -> list[str]:
    """The lock's unified diff, without line ends (empty when nothing changed)."""
    before = (old or "").splitlines()
    after = new.splitlines()
    return list(difflib.unified_diff(before, after, f"{name} (before)", f"{name} (after)", lineterm="", n=2))


def parse(text: str | None) -> LockFile | None:
    """A lock's text as the typed file (None for no lock, or one that does not read as a lock)."""
    if not text:
        return None
    try:
        data: dict[str, Any] = tomli.loads(text)
        return LockFile.model_validate(data)
    except (tomli.TOMLDecodeError, ValueError):
        return None


@dataclass(frozen=True)
class Changes:
    """Plugins by what adopting the new lock does to them (names sorted; the kernel never appears)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    restarted: tuple[str, ...]
    """Plugins in both locks that restart: their entry changed, or a plugin they wait for changed or left."""

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.restarted)


def _plugins(lock: LockFile | None) -> dict[str, LockedPlugin]:
    return {p.name: p for p in (lock.plugins if lock else ()) if p.name != KERNEL}


def changes(old: LockFile | None, new: LockFile) -> Changes:
    before, after = _plugins(old), _plugins(new)
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = [n for n in before if n in after and before[n] != after[n]]
    dependents: dict[str, set[str]] = {}
    for plugin in before.values():
        for provider in plugin.after:
            dependents.setdefault(provider, set()).add(plugin.name)
    seen: set[str] = set()
    queue = [*changed, *removed]
    while queue:
        name = queue.pop()
        if name not in seen:
            seen.add(name)
            queue.extend(dependents.get(name, ()))
    restarted = sorted(n for n in seen if n in after and n in before)
    return Changes(tuple(added), tuple(removed), tuple(restarted))
