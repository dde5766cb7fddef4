"""The kernel's start-up heap, frozen out of the garbage collector's full collections.

A full (generation 2) collection walks every tracked object. In a kernel with memory on, most of them
are loaded once and live as long as the process: the embedding model's session, the cold-context
indexes, and until hologram.memory.segment replaced it jieba's ~500k-entry dictionary, with which alone
one full collection took 22 ms on the development VM — an event-loop stall, for every session and plugin
RPC, each time CPython decides to run one. After
`gc.freeze()` (CPython ≥ 3.7) those objects sit in a permanent generation that collections skip: the
same full collection took under 0.01 ms. Objects made later (sessions, turns) are collected as usual;
what is frozen is never freed by the cycle collector, which for objects that live as long as the kernel
changes nothing.

The C heap is handed back too (:func:`release_free_heap`): loading the embedding model leaves ~35 MB of
freed but still resident malloc memory (onnxruntime's parse of the 72 MB graph), which glibc keeps until
asked; ``malloc_trim(0)`` returns it (kernel idle RSS 244 -> 210 MB on its own, tools/bench/footprint.py).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
from collections.abc import Callable, Iterable
from functools import cache

log = logging.getLogger("hologram.kernel")


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None)  # the C library the interpreter runs on
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)  # glibc only (not musl, not macOS)
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim  # type: ignore[no-any-return]


def release_free_heap() -> bool:
    """Give the C heap's free pages back to the OS (glibc ``malloc_trim(0)``, every malloc arena; a few ms).

    Memory freed by C code (a model's load buffers) otherwise stays resident until malloc happens to reuse
    it. Returns False where the C library has no such call (nothing to do there)."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
HEAP_THRESHOLD = 128 * 1024
"""glibc's default for both thresholds, kept fixed (setting them turns off the dynamic raise)."""


def bound_free_heap() -> bool:
    """Blocks of HEAP_THRESHOLD and more are mmap-ed and returned on free, and free memory above it at the
    heap's top is trimmed, from now on; False where the C library has no ``mallopt`` (glibc only)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, HEAP_THRESHOLD))


def freeze_startup_heap() -> int:
    """Collect what start-up left behind, then freeze everything alive and return the C heap's free pages to
    the OS; returns the frozen count."""
    gc.collect()
    gc.freeze()
    release_free_heap()
    bound_free_heap()
    return gc.get_freeze_count()


async def freeze_when_loaded(waits: Iterable[Callable[[], object]]) -> int:
    """Wait (each in a worker thread) for the background loads to finish, then freeze the heap."""
    for wait in waits:
        await asyncio.to_thread(wait)
    frozen = freeze_startup_heap()
    log.info("start-up heap frozen: %d objects that full collections now skip", frozen)
    return frozen
