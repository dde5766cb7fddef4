"""Lines for the terminal of a command that may outlive it: `hologram up | tee up.log`, then Ctrl-C.

The interrupt reaches the whole process group, so ``tee`` is gone before the kernel has stopped its plugins;
each "stopping"/"stopped" line then met a closed pipe, and every one was a ``BrokenPipeError`` traceback in the
log (14-16 of them, issue 41). So a line goes out through `say`: once the reader is gone (EPIPE, or EIO from a
terminal that hung up) the stream's file descriptor is pointed at ``/dev/null`` — the rest of the run, and
Python's flush at exit, write nowhere without an error — and the log says so in one line. The kernel goes on
stopping as it would have; its log has the whole story.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from typing import TextIO

__all__ = ["say"]

log = logging.getLogger("hologram.cli")
_GONE = (errno.EPIPE, errno.EIO)
_detached: set[int] = set()


def say(text: str, stream: TextIO | None = None) -> None:
    """``print(text, file=stream, flush=True)`` (stdout by default) that survives the reader going away."""
    out = sys.stdout if stream is None else stream
    try:
        print(text, file=out, flush=True)
    except OSError as exc:
        if exc.errno not in _GONE:
            raise
        _detach(out, exc)


def _detach(stream: TextIO, exc: OSError) -> None:
    """Point `stream`'s descriptor at /dev/null (what is still buffered goes there on the next flush)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # not a real file (a test's StringIO cannot lose its reader)
        return
    if fd in _detached:
        return
    _detached.add(fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    name = {1: "stdout", 2: "stderr"}.get(fd, f"fd {fd}")
    log.info("the terminal's %s closed (%s): the rest of this run's output is in this log only", name, exc.strerror)
