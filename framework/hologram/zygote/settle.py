"""Leave the zygote's heap in the state that forks cheapest, once, after the preload and before the first fork.

A forked plugin shares the zygote's pages until it writes to one; then Linux copies that 4 KiB page into the
plugin's private memory, however few bytes changed. Nearly all of an idle plugin's PSS is such copies
(docs/performance.md, "What a forked plugin's memory is"), and part of them come from where the plugin's *new*
objects land: pymalloc hands out the free blocks of the zygote's partly used pools first, and the free lists
(tuples, floats, dicts …) first of all, so a child's first few thousand small objects are scattered one or two
per zygote page, each page copied whole. Filled up beforehand, those holes send the children's objects to fresh
pools, packed 100 to a page that only the child ever had. What this costs the zygote are blocks it had
resident anyway.

Steps, in order (each one measured with tools/bench/footprint.py --turns):

1. ``gc.collect()`` — frees the preload's garbage and, a full collection, empties the interpreter's free lists
   into pymalloc, so that their blocks become holes the next step fills.
2. `fill_pool_holes` — one object per free block of every size class (``sys._debugmallocstats`` tells how many),
   kept alive for the zygote's lifetime.
3. ``gc.freeze()`` — the zygote's objects leave the collector's generations: a full collection in a long-running
   plugin would otherwise write the header of every object the zygote had, copying nearly all its pages.
4. ``malloc_trim(0)`` — the C heap's free pages go back to the OS instead of waiting to be copied.

CPython without ``sys._debugmallocstats`` or pymalloc (another implementation, a debug allocator) skips step 2;
a C library without ``malloc_trim`` skips step 4: both are optimisations only.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from hologram.base._heap import release_free_heap

_BYTES_HEADER = sys.getsizeof(b"") - 1  # a bytes object of length n takes this + n + 1 bytes (33 on 64-bit)
_HELD: list[list[object]] = []  # the fillers: alive as long as the zygote, never looked at


@dataclass(frozen=True)
class Settled:
    """What `settle` did: objects collected, pool holes filled (blocks), objects frozen, heap trimmed."""

    collected: int
    filled: int
    frozen: int
    trimmed: bool


def free_blocks() -> dict[int, int]:
    """Free blocks in pymalloc's used pools, by size class in bytes; {} where the interpreter cannot say.

    ``sys._debugmallocstats()`` prints its table to the C-level stderr, so it is read back through a file put
    on fd 2 for the call: the rows are ``class size pools blocks-in-use free-blocks``."""
    stats = getattr(sys, "_debugmallocstats", None)
    if stats is None:
        return {}
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(out.fileno(), 2)
            stats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode("ascii", "replace")
    holes: dict[int, int] = {}
    for line in text.splitlines():
        cells = line.split()
        if len(cells) == 5 and all(c.isdigit() for c in cells):
            holes[int(cells[1])] = int(cells[4])
    return holes


def _filler(size: int) -> Callable[[int], object] | None:
    """A function making one new object that pymalloc serves from the size class `size`, or None if none fits.

    bytes objects are not tracked by the collector, have no free list and take exactly header + length + 1
    bytes, so every class from 48 bytes up has one; 16 is a bare ``object()``, 32 a float (24 bytes)."""
    if size == 16:
        return lambda n: object()
    if size == 32:
        return float  # float(n): a new 24-byte object per call
    payload = size - _BYTES_HEADER - 1
    if payload < 2:  # b"" and one-byte bytes are shared singletons
        return None
    return lambda n: bytes(payload)


def fill_pool_holes() -> int:
    """Allocate, and keep, one object per free block of pymalloc's partly used pools; returns how many.

    What was freed at start-up left holes in pools whose other blocks are alive; a forked child's new objects
    would land in them first, one page copied per hole. The count is read before allocating, so the loop's own
    temporaries may start a fresh pool per class: a few pages, not the zygote's whole heap."""
    holes = free_blocks()
    fillers = [(make, count) for size, count in holes.items() if count and (make := _filler(size)) is not None]
    held: list[object] = [None] * sum(count for _, count in fillers)
    at = 0
    for make, count in fillers:
        for n in range(count):
            held[at] = make(n)
            at += 1
    _HELD.append(held)
    return at


def settle() -> Settled:
    """Steps 1-4 of the module docstring; call once, in the zygote, after the preload and before any fork."""
    collected = gc.collect()
    filled = 0
    with contextlib.suppress(OSError, ValueError):
        filled = fill_pool_holes()
    gc.freeze()
    return Settled(collected, filled, gc.get_freeze_count(), release_free_heap())
