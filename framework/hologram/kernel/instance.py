"""One kernel per data directory, decided before anything in it is opened.

The control socket also refuses a second kernel, but only once that kernel has come far enough to listen: by
then it had opened the databases and a log file of its own. A lock taken on ``<data>/kernel.pid`` first thing
makes the second `hologram up` stop with one line and nothing touched. ``flock`` rather than the pid alone: the
kernel's death (kill -9 included) releases it, so no stale file ever blocks a start.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from hologram.base.errors import HologramError, Problem

PID_FILE = "kernel.pid"
_held: list[int] = []  # the lock's fd, open for the life of the process


def hold_data_dir(data_dir: Path) -> None:
    """Take the data directory for this process, or raise naming the kernel that has it."""
    path = data_dir / PID_FILE
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise HologramError(
            Problem(f"cannot open {PID_FILE}: {exc.strerror}", file=str(path), hint="check the directory's owner")
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        raise HologramError(
            Problem(
                f"a kernel is already running with this data directory (pid {other or 'unknown'})",
                file=str(path),
                hint="stop it first (Ctrl-C in its terminal, or `kill " + (other or "PID") + "`), "
                "or use another --data directory",
            )
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held.append(fd)
