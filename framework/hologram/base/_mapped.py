"""A read-only file mapping's resident pages handed back after use: the embedding model's weights.

onnxruntime maps the USE model's external weights (``weights.bin``, 65 MB, hologram/memory/embed/onnx_weights.py)
instead of copying them, and ``Gather`` reads only the token-embedding rows of the text at hand. But every row
it ever read stays resident, counted in the kernel's RSS and PSS: over a 10,000-turn soak the file paged in
+20.5 MB and would go on to its full size (tools/bench/sweep.py --soak). The pages are clean copies of the
file in the OS's page cache, so ``madvise(MADV_DONTNEED)`` on the mapping drops them from the process at no
risk — the next read faults them back from the cache (a minor fault, ~1 µs a page) — and the process holds
only what recent batches touched. onnxruntime maps the file private and writable (``rw-p``), though it never
writes a weight; a private page that *was* written would be an anonymous copy, and dropping it would lose the
change, so a mapping is released only while ``/proc/self/smaps`` shows none (``Anonymous: 0 kB``). Reading
smaps costs ~1 ms, so a release runs at most every few seconds (after a run of the model).

Linux only (``/proc/self/maps`` and glibc's ``madvise``); elsewhere :meth:`MappedPages.release` does nothing.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

__all__ = ["MADV_DONTNEED", "MappedPages", "clean_ranges"]

MADV_DONTNEED = 4  # linux/mman.h


@cache
def _madvise() -> Callable[[int, int, int], int] | None:
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    return fn


def clean_ranges(path: Path, smaps: str = "/proc/self/smaps") -> list[tuple[int, int]]:
    """(start, length) of this process's mappings of `path` none of whose pages is a private copy
    (``Anonymous: 0 kB``): every resident page is then the file's own, and dropping it loses nothing."""
    target = os.path.realpath(path)
    out: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    try:
        with open(smaps, encoding="utf-8", errors="replace") as f:
            for line in f:
                head = line.split(None, 5)
                if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    current = None
                    if len(head) == 6 and head[5].rstrip("\n") == target:
                        lo, hi = (int(x, 16) for x in head[0].split("-"))
                        current = (lo, hi - lo)
                elif current is not None and line.startswith("Anonymous:"):
                    if int(line.split()[1]) == 0:
                        out.append(current)
                    current = None
    except OSError:
        return []
    return out


class MappedPages:
    """The mappings of one file whose resident pages are handed back, at most every `interval_s`."""

    def __init__(self, path: Path, *, interval_s: float = 5.0) -> None:
        self.path = path
        self.interval_s = interval_s
        self._last = -math.inf
        self._lock = threading.Lock()

    def release(self, *, force: bool = False) -> int:
        """Drop the resident pages of the file's clean mappings, unless the last release is under
        `interval_s` old (reading smaps costs ~1 ms); returns the bytes advised (0: none, too soon, or not
        supported here)."""
        fn = _madvise()
        if fn is None:
            return 0
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < self.interval_s:
                return 0
            self._last = now
            done = 0
            for start, length in clean_ranges(self.path):
                if fn(start, length, MADV_DONTNEED) == 0:
                    done += length
            return done

    def release_soon(self) -> bool:
        """:meth:`release` in a daemon thread when one is due: the model's caller (a turn's query embedding)
        never waits for the smaps read. Returns whether one was started (one per interval, however many runs)."""
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.interval_s:
                return False
            self._last = now
        threading.Thread(
            target=self.release, kwargs={"force": True}, name="hologram-release-weights", daemon=True
        ).start()
        return True
