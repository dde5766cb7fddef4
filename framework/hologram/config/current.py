"""The settings file as it is now, for what is read again while the kernel runs: the ``[plugins.NAME]`` tables.

Everything else in settings.toml is read once by `hologram up`. A plugin's table is different: a plugin starts
many times in one kernel's life (`hologram plugin restart`, a crash, `--watch`, `hologram plugin add`), and the
person who edits its table and restarts it expects the new values (docs/settings.md). So each start asks
`SettingsFile.plugins()`, which re-reads the file only when it changed (its size, mtime or inode), and
validates the whole file as `hologram up` does: a file `up` would refuse is refused here with the same
file:line errors, and the caller decides what that means for the plugin (supervisor/core.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hologram.config.settings import Settings, load_settings, settings_path

Signature = tuple[int, int, int] | None  # (size, mtime_ns, inode), None: no file


def _signature(path: Path) -> Signature:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


class SettingsFile:
    """``<data>/settings.toml``, re-read when it changed since the last read."""

    def __init__(self, data_dir: Path, settings: Settings | None = None) -> None:
        self.data_dir = data_dir
        self.path = settings_path(data_dir)
        # the signature is taken before the file is read: a change made while it is read shows next time
        self._signature = _signature(self.path)
        self._settings = settings if settings is not None else load_settings(data_dir, create=False)

    def current(self) -> Settings:
        """The settings as the file says now; raises `HologramError` (file, line, key) when it is damaged
        or invalid, and keeps what was last read for the next call."""
        signature = _signature(self.path)
        if signature != self._signature:
            settings = load_settings(self.data_dir, create=False)  # raises before anything is replaced
            self._settings, self._signature = settings, signature
        return self._settings

    def plugins(self) -> dict[str, dict[str, Any]]:
        """The ``[plugins.NAME]`` tables as the file says now (see `current`)."""
        return self.current().plugins
