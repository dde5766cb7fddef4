"""Which ``[plugins.NAME]`` table of settings.toml a plugin starts with: the file as it is at that start.

The supervisor does not read settings itself (the file's models live in `hologram.config`, a layer it need not
know); whoever assembles it hands in a reader, `hologram up` the kernel's `SettingsFile.plugins` (config/
current.py), which raises `HologramError` for a file `up` would refuse. What such a file means depends on who
starts the plugin:

* a person (`hologram plugin restart|start`, the web UI) asked for this start, so the new values are the point:
  the start is refused with the file's errors before anything is stopped — the plugin keeps running, or stays
  as it was, with the values it started with (`check`);
* the supervisor itself (a crash restart, a dependent going back to waiting, `up --watch`, an added plugin):
  nobody is there to read a refusal, and an unrelated typo elsewhere in the file must not keep a plugin down;
  it starts with the tables last read without error, and the log says so once per distinct error (`tables`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hologram.base.errors import HologramError

log = logging.getLogger("hologram.supervisor")

Tables = dict[str, dict[str, Any]]
Reader = Callable[[], Tables]


class PluginSettings:
    """The ``[plugins.*]`` tables: fixed (``reader`` None: a test harness, a kernel without a file) or re-read
    through ``reader`` at each start."""

    def __init__(self, tables: Tables | None = None, reader: Reader | None = None) -> None:
        self.last: Tables = dict(tables or {})  # the tables last read without error
        self.reader = reader
        self._told = ""  # the last error logged, so a file that stays broken is said once, not at every start

    def tables(self) -> Tables:
        """The tables now; a file that cannot be used leaves the last good ones (logged)."""
        if self.reader is None:
            return self.last
        try:
            self.last = dict(self.reader())
            self._told = ""
        except HologramError as exc:
            text = exc.render()
            if text != self._told:
                self._told = text
                log.warning("settings.toml cannot be used; plugins start with the values last read from it:\n%s", text)
        return self.last

    def check(self) -> None:
        """Raise the file's `HologramError` if it cannot be used now (before a person's restart or start)."""
        if self.reader is not None:
            self.last = dict(self.reader())
            self._told = ""

    def table(self, name: str) -> dict[str, Any] | None:
        return self.tables().get(name)
