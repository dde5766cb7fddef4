"""The turn events' ``seq``, monotonic across kernel restarts.

A client that reconnects passes the last ``seq`` it saw (``after``, SSE's ``Last-Event-ID``). If every kernel
process counted from 1, a browser that reconnects to a restarted kernel with ``Last-Event-ID: 500`` would be
sent nothing until the new counter passed 500. So the counter reserves blocks: the file holds the ceiling of
the block in use, written (atomically, fsynced) *before* a number from the block is given out, and a new
process starts at the ceiling it reads. A kill -9 loses at most the rest of a block; a number is never given
twice. A block is `BLOCK` numbers: one small write per 65,536 events, nothing per event.

A missing file starts at 1 (a new data directory). A damaged one starts at the current time in microseconds
— far above any count a data directory reached — and is rewritten: the order holds, nothing is refused.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

log = logging.getLogger("hologram.agent")
BLOCK = 65_536
FILE_NAME = "turn-seq"


class SeqCounter:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.last = 0
        self._ceiling = 0
        if path is not None:
            self.last = self._ceiling = self._read(path)

    @staticmethod
    def _read(path: Path) -> int:
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return 0
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("%s: unreadable (%s); turn event numbers continue from the clock", path, exc)
            return time.time_ns() // 1000
        if not text.isdigit():
            log.warning("%s: damaged (%r); turn event numbers continue from the clock", path, text[:40])
            return time.time_ns() // 1000
        return int(text)

    def __call__(self) -> int:
        self.last += 1
        if self.last > self._ceiling:
            self._reserve(self.last + BLOCK - 1)
        return self.last

    def reserve_ahead(self) -> None:
        """Reserve the next block now if the next number would need one: the write and its fsync (a few ms on
        the loop) before "ready", not in the first turn (issue 39 item 9). A block reserved and not used costs
        nothing but numbers."""
        if self.last >= self._ceiling:
            self._reserve(self.last + BLOCK)

    def _reserve(self, ceiling: int) -> None:
        self._ceiling = ceiling
        if self.path is None:
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, f"{ceiling}\n".encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:  # a full disk: events keep flowing; a restart may then reuse numbers of this block
            log.warning("%s: cannot reserve turn event numbers (%s); resume after a restart may repeat", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()
