"""The kernel's log file: one per start, ``<data>/logs/hologram-<time>-<pid>.log``, plugin stderr in it, rotated
by size.

Why rotated: everything a plugin writes on its stderr lands here (supervisor/managed.py), and so do the HTTP
server's refusals; a plugin that prints in a loop filled the disk (issue 41). So the file is a
`logging.handlers.RotatingFileHandler`: past ``[log] max_bytes`` it is renamed ``.1`` (``.1`` to ``.2`` …) and
a new one begun, ``[log] backups`` of them kept, so one start's log takes at most ``max_bytes × (backups + 1)``;
the logs of the ``[log] keep_starts`` newest starts are kept and older ones deleted at start. The Plugins → Log
view reads the current file and then its backups (`log_files`), so it keeps its lines across a rotation.

Only `hologram up` opens it, and only the kernel imports this module: ``logging.handlers`` (with ``socket``,
``pickle``, ``queue``) stays out of the zygote and the plugins (docs/guards.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from datetime import datetime, timezone
from logging.handlers import RotatingFileHandler
from pathlib import Path

from hologram.config.settings import LogSettings

__all__ = ["LogFile", "apply_log_settings", "log_files", "open_log_file"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
PATTERN = "hologram-*.log"  # a start's file; its backups add ``.1``, ``.2`` …


class LogFile(RotatingFileHandler):
    """The log file, rotated by size; a write that fails (a full disk) is said once on stderr, not as a
    traceback per line."""

    _failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if not self._failed:
            self._failed = True
            error = sys.exc_info()[1]
            why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            print(f"hologram: cannot write the log file {self.baseFilename}: {why}", file=sys.stderr)


def open_log_file(data_dir: Path, settings: LogSettings | None = None) -> Path:
    """Start this start's log file, `<data>/logs/hologram-<time>-<pid>.log`, as the ``hologram`` logger's
    handler (the defaults of ``[log]`` until the kernel has read the settings: `apply_log_settings`)."""
    limits = settings or LogSettings()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = data_dir / "logs" / f"hologram-{stamp}-{os.getpid()}.log"
    handler = LogFile(path, maxBytes=limits.max_bytes, backupCount=limits.backups, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger("hologram")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return path


def apply_log_settings(settings: LogSettings, logs: Path) -> None:
    """The settings' ``[log]`` on the open log file (it was opened before they were read), and the logs of
    starts older than the ``keep_starts`` newest deleted from `logs`."""
    current: set[Path] = set()
    for handler in logging.getLogger("hologram").handlers:
        if isinstance(handler, LogFile):
            handler.maxBytes, handler.backupCount = settings.max_bytes, settings.backups
            current.add(Path(handler.baseFilename))
    starts = sorted(
        (p for p in logs.glob(PATTERN) if p not in current), key=lambda p: _mtime(p), reverse=True
    )  # fmt: skip
    for old in starts[max(0, settings.keep_starts - len(current)) :]:
        for path in log_files(old):
            with contextlib.suppress(OSError):
                path.unlink()


def log_files(path: Path) -> list[Path]:
    """A start's log file and its backups that exist, newest first: ``path``, ``path.1``, ``path.2`` …"""
    found = [path] if path.exists() else []
    n = 1
    while (backup := path.with_name(f"{path.name}.{n}")).exists():
        found.append(backup)
        n += 1
    return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
