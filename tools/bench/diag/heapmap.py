"""A map of glibc's main heap (``[heap]``, the loop thread's allocations over 512 bytes) from inside the kernel:
which live chunks keep which resident pages (tools/bench/soak_diag.py ``--heapmap``; bench-only).

Why: the soak's main heap grows resident by ~2 MB over 9,000 turns while glibc's in-use bytes stay nearly flat
(docs/memory.md, "soak9") — free memory inside the heap becoming resident around live chunks the trim cannot give
back (``malloc_trim`` returns only whole free pages). tracemalloc sizes what is alive, not where it is; this walks
the heap chunk by chunk (glibc's boundary tags: each chunk's size word, the next one's PREV_INUSE bit says it is in
use), asks the kernel which pages are resident (``mincore``), and names each live chunk where it can: a Python
object (its type pointer, at the chunk's start or after the 16-byte GC header), a container's storage (a list's
items, a dict's keys, a set's table) or a numpy array's data, each with the ``Owner.attribute`` that holds it when
the census finds one. Every resident page's bytes not covered by live chunks (its waste) are charged to the live
chunks on that page in proportion: a kind whose waste grows is what scatters the heap.

Run after a ``malloc_trim(0)`` (pages wholly free are then not resident) on a quiet kernel (the soak waits for the
snapshot); a concurrent malloc may make a chunk or two read inconsistently, which the walk stops at.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import struct
import sys
from pathlib import Path
from typing import Any

PAGE = 4096
_WORD = struct.Struct("<Q")


def heap_range() -> tuple[int, int]:
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.rstrip().endswith("[heap]"):
            lo, hi = line.split()[0].split("-")
            return int(lo, 16), int(hi, 16)
    return 0, 0


def resident(lo: int, hi: int) -> bytearray:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    pages = (hi - lo) // PAGE
    vec = (ctypes.c_ubyte * pages)()
    if libc.mincore(lo, hi - lo, vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return bytearray(b & 1 for b in vec)


def _all_types() -> dict[int, str]:
    out: dict[int, str] = {}
    todo: list[type] = [object]
    while todo:
        t = todo.pop()
        if id(t) in out:
            continue
        out[id(t)] = f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__
        try:
            todo.extend(type.__subclasses__(t))
        except TypeError:
            continue
    return out


def owners(objects: list[Any]) -> dict[int, str]:
    """Malloc'd pointers of containers' storage and numpy data, labelled by kind and, when an owner's attribute
    holds them, by ``Type.attribute`` (the census's labels)."""
    import numpy as np

    out: dict[int, str] = {}
    label: dict[int, str] = {}
    seen: set[int] = set()
    stack = list(objects)
    for o in stack:  # first: reading an instance's __dict__ below turns its inline values into a new dict
        for r in gc.get_referents(o):
            if type(r) is np.ndarray and id(r) not in seen:
                seen.add(id(r))
                stack.append(r)
    for o in objects:
        kind = type(o)
        if kind.__module__ in ("builtins", "gc", "types") or isinstance(o, type):
            continue
        held = getattr(o, "__dict__", None)
        attrs = dict(held) if isinstance(held, dict) else {}
        for klass in kind.__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if isinstance(slot, str) and slot not in attrs:
                    try:
                        attrs[slot] = object.__getattribute__(o, slot)
                    except Exception:
                        continue
        for name, value in attrs.items():
            label.setdefault(id(value), f"{kind.__qualname__}.{name}")
            if isinstance(value, (list, tuple, dict)):
                for item in value.values() if isinstance(value, dict) else value:
                    if isinstance(item, (np.ndarray, list, dict, bytes, str)):
                        label.setdefault(id(item), f"{kind.__qualname__}.{name}[]")

    def mark(ptr: int, what: str, holder: object) -> None:
        if ptr:
            out[ptr] = what + (" @" + label[id(holder)] if id(holder) in label else "")

    for o in stack:
        t = type(o)
        if t is list:
            mark(ctypes.c_void_p.from_address(id(o) + 24).value or 0, "list items", o)
        elif t is dict:
            mark(ctypes.c_void_p.from_address(id(o) + 32).value or 0, "dict keys", o)
            values = ctypes.c_void_p.from_address(id(o) + 40).value
            if values:
                mark(values, "dict values", o)
        elif t in (set, frozenset):
            mark(ctypes.c_void_p.from_address(id(o) + 40).value or 0, "set table", o)
        elif t is np.ndarray and o.base is None:
            mark(int(o.__array_interface__["data"][0]), f"ndarray {o.dtype}", o)
        elif t in (bytes, str) and id(o) in label:
            out[id(o)] = f"{t.__name__} @{label[id(o)]}"
    return out


def walk(trim: bool = True) -> dict[str, Any]:
    """The main heap's chunks and resident pages, by kind (module docstring)."""
    if trim:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    gc.collect()
    objects = gc.get_objects()
    named = owners(objects)
    del objects
    types = _all_types()
    lo, hi = heap_range()
    res = resident(lo, hi)
    read = ctypes.string_at
    chunks: list[tuple[int, int, bool]] = []  # (address, size, in use)
    c = (lo + 15) & ~15
    while c + 16 <= hi:
        size = _WORD.unpack(read(c + 8, 8))[0] & ~7
        if size < 32 or c + size > hi:
            break  # the top chunk's end, or a word changed under us
        nxt = c + size
        inuse = nxt + 16 <= hi and bool(_WORD.unpack(read(nxt + 8, 8))[0] & 1)
        chunks.append((c, size, inuse))
        c = nxt
    top = c
    live_in_page = collections.Counter[int]()
    for addr, size, inuse in chunks:
        if not inuse:
            continue
        first, last = addr // PAGE, (addr + size - 1) // PAGE
        for page in range(first, last + 1):
            start, end = max(addr, page * PAGE), min(addr + size, (page + 1) * PAGE)
            live_in_page[page] += end - start
    base = lo // PAGE
    by_kind: dict[str, list[float]] = {}  # kind -> [count, live bytes, waste bytes charged, lone pages]
    bands: dict[int, list[int]] = {}  # MiB band -> [resident bytes, live bytes]
    for i, r in enumerate(res):
        if r:
            band = bands.setdefault(i * PAGE // (1 << 20), [0, 0])
            band[0] += PAGE
            band[1] += live_in_page.get(base + i, 0)
    for addr, size, inuse in chunks:
        if not inuse:
            continue
        p = addr + 16
        kind = named.get(p)
        if kind is None:
            refcnt, tp = struct.unpack("<QQ", read(p, 16))
            if tp in types and 0 < refcnt < 1 << 32:
                kind = types[tp]
            else:
                refcnt, tp = struct.unpack("<QQ", read(p + 16, 16))
                kind = types[tp] if tp in types and 0 < refcnt < 1 << 32 else None
        if kind is None:
            kind = f"? {_size_class(size)}"
        row = by_kind.setdefault(kind, [0, 0, 0.0, 0])
        row[0] += 1
        row[1] += size
        first, last = addr // PAGE, (addr + size - 1) // PAGE
        for page in range(first, last + 1):
            if not res[page - base]:
                continue
            start, end = max(addr, page * PAGE), min(addr + size, (page + 1) * PAGE)
            live = live_in_page[page]
            row[2] += (PAGE - live) * (end - start) / live
            if live == end - start:
                row[3] += 1
    free = [(a, s) for a, s, u in chunks if not u]
    return {
        "heap_lo": lo,
        "heap_hi": hi,
        "top_chunk_at": top - lo,
        "resident": sum(res) * PAGE,
        "live": sum(s for _, s, u in chunks if u),
        "live_chunks": sum(1 for _, _, u in chunks if u),
        "free": sum(s for _, s in free),
        "free_chunks": len(free),
        "free_sizes": dict(collections.Counter(_size_class(s) for _, s in free)),
        "bands": {str(k): v for k, v in sorted(bands.items())},
        "by_kind": {k: [int(v[0]), int(v[1]), round(v[2]), int(v[3])] for k, v in by_kind.items()},
        "python": sys.version.split()[0],
    }


def _size_class(size: int) -> str:
    for limit in (1024, 4096, 16384, 65536, 131072):
        if size <= limit:
            return f"<={limit // 1024}K" if limit >= 1024 else f"<={limit}"
    return ">128K"
