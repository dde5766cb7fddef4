"""The kernel's start-up heap, frozen out of the garbage collector's full collections.

A full (generation 2) collection walks every tracked object. In a kernel with memory on, most of them
are loaded once and live as long as the process: the embedding model's session, the cold-context
indexes, and until hologram.memory.text.segment replaced it jieba's ~500k-entry dictionary, with which alone
one full collection took 22 ms on the development VM — an event-loop stall, for every session and plugin
RPC, each time CPython decides to run one. After
`gc.freeze()` (CPython ≥ 3.7) those objects sit in a permanent generation that collections skip: the
same full collection took under 0.01 ms. Objects made later (sessions, turns) are collected as usual;
what is frozen is never freed by the cycle collector, which for objects that live as long as the kernel
changes nothing.

The C heap is handed back too (:func:`release_free_heap`): loading the embedding model leaves ~35 MB of
freed but still resident malloc memory (onnxruntime's parse of the 72 MB graph), which glibc keeps until
asked; ``malloc_trim(0)`` returns it (kernel idle RSS 244 -> 210 MB on its own, tools/bench/footprint.py).
And again whenever the process goes idle, or every :data:`BUSY_TRIM_S` while it never does
(:class:`IdleTrim`): a turn's work — requests, JSON, numpy temporaries, in several threads each with its own
malloc arena — leaves freed pages in the middle of the heaps that glibc keeps for the next allocation; an idle
kernel after an English and a Chinese turn held ~5 MB of them, the http plugin after serving the
OpenAI-compatible API ~0.7 MB.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import sys
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


def allocator() -> str:
    """The allocator this interpreter's objects come from, read from the interpreter itself: ``"pymalloc"``
    (CPython's default: small objects in 1 MiB arenas, an arena returned only when all its objects are gone)
    or ``"malloc"`` (``PYTHONMALLOC=malloc``: every object from the C library's malloc, whose free pages the
    trims below hand back). Without pymalloc the interpreter counts no allocated blocks."""
    return "pymalloc" if sys.getallocatedblocks() > 0 else "malloc"


IDLE_TRIM_S = 1.0
"""How long nothing must happen after some work before the heap's free pages are handed back."""

BUSY_TRIM_S = 2.0
"""At most this long between trims while the work never stops. A kernel that several channels keep busy is
never idle for :data:`IDLE_TRIM_S`, and its turns' freed pages pile up in the malloc arenas: 2,000 turns back to
back (``tools/bench/sweep.py``'s soak) left the kernel +5 MB anonymous, and the trim after them gave back
6.6 MB. With a trim every 10 s the soak's kernel still swung by ~3 MB between trims (16 turns a second). A trim
costs ~3 ms in a worker thread (a 300 MB heap of mixed objects and arrays); one in 2 s of work is ~0.15 % of a
core, and the pages it returns are faulted in again at ~1 µs each."""


class IdleTrim:
    """``malloc_trim(0)`` once the process has been idle for `after` seconds since its last work, and at least
    every `busy_every` seconds while it never is.

    Callers say when work ended (:meth:`activity`: a turn, a served call); each call pushes the idle trim back,
    so a process busy for a moment does not trim — the pages would only be faulted in again — and an idle one
    does once. One that stays busy trims every `busy_every` seconds, so what its work frees cannot pile up for
    as long as the work lasts. Trims run in a worker thread (a few ms, locking malloc's arenas, not the event
    loop); a busy trim waits until the previous trim is done."""

    def __init__(self, after: float = IDLE_TRIM_S, busy_every: float = BUSY_TRIM_S) -> None:
        self.after = after
        self.busy_every = busy_every
        self.trims = 0
        """Trims started (what tests wait for)."""
        self.last: asyncio.Future[bool] | None = None
        """The latest trim, running or done."""
        self.on_idle: list[Callable[[], object]] = []
        """Called on the loop's thread before each idle trim (not a busy one), to let go of what an idle
        process does not need — the kernel's SQLite page caches (hologram.storage.idle_cache)."""
        self._pending: asyncio.TimerHandle | None = None
        self._since: float | None = None
        """When the current busy period began: the first work after an idle trim, or the latest busy trim."""

    def activity(self) -> None:
        """Work just ended: trim once nothing else has happened for `after` seconds, or now if the process has
        worked for `busy_every` seconds since the last trim (needs a running loop)."""
        if _malloc_trim() is None:
            return
        if self._pending is not None:
            self._pending.cancel()
        loop = asyncio.get_running_loop()
        if self._since is None:
            self._since = loop.time()
        elif loop.time() - self._since >= self.busy_every and (self.last is None or self.last.done()):
            self._trim(busy=True)
        self._pending = loop.call_later(self.after, self._trim)

    def _trim(self, busy: bool = False) -> None:
        """`busy`: a trim in the middle of work, from which the next busy period counts; after an idle trim it
        counts from the next work (a person's turns, minutes apart, each get the idle trim alone)."""
        loop = asyncio.get_running_loop()
        self._pending = None
        self._since = loop.time() if busy else None
        self.trims += 1
        if not busy:
            for release in self.on_idle:
                release()
        try:
            self.last = loop.run_in_executor(None, release_free_heap)
        except RuntimeError:  # the loop is shutting down (its executor is gone): the process is leaving anyway
            self.last = None


idle_trim = IdleTrim()
"""The process's own: the kernel's turns and a plugin's served calls report to it."""


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # glibc malloc.h
HEAP_THRESHOLD = 128 * 1024
"""glibc's default for both thresholds, kept fixed (setting them turns off the dynamic raise)."""


@cache
def _mallopt() -> Callable[[int, int], int] | None:
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc only (not musl, not macOS)
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def bound_free_heap() -> bool:
    """Blocks of HEAP_THRESHOLD and more are mmap-ed and returned on free, and free memory above it at the
    heap's top is trimmed, from now on; False where the C library has no ``mallopt`` (glibc only)."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, HEAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, HEAP_THRESHOLD))


ARENA_MAX = 2
"""glibc malloc arenas the kernel may have: the main heap and one more for all its other threads.

By default glibc gives threads that malloc at once arenas of their own, up to 8 per core; each keeps its
working set resident for the life of the process, and a turn's freed chunks are spread over all of them. The
kernel's threads (the loop, four workers, the embedder's) hold the GIL for most of what they allocate, so
they seldom contend for an arena. Measured (tools/bench/http_turns.py --long, docs/memory.md "#### pin41"):
idle anonymous memory ~5 MB lower before and after the long turns, the growth over them the same, CPU the
same."""


def limit_arenas(arenas: int = ARENA_MAX) -> bool:
    """At most `arenas` malloc arenas from now on (glibc ``mallopt(M_ARENA_MAX)``): call before the process
    starts its threads — a thread that already has an arena keeps it. A MALLOC_ARENA_MAX in the environment
    (read by glibc itself) is left to rule. False where the C library has no ``mallopt`` or it refused."""
    mallopt = _mallopt()
    if "MALLOC_ARENA_MAX" in os.environ or mallopt is None:
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))


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
