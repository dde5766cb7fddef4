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
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable, Iterable

log = logging.getLogger("hologram.kernel")


def freeze_startup_heap() -> int:
    """Collect what start-up left behind, then freeze everything alive; returns the frozen count."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


async def freeze_when_loaded(waits: Iterable[Callable[[], object]]) -> int:
    """Wait (each in a worker thread) for the background loads to finish, then freeze the heap."""
    for wait in waits:
        await asyncio.to_thread(wait)
    frozen = freeze_startup_heap()
    log.info("start-up heap frozen: %d objects that full collections now skip", frozen)
    return frozen
