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
    """[heap]'s address range (the kernel may list it as several adjacent mappings: take them all)."""
    spans = [
        tuple(int(x, 16) for x in line.split()[0].split("-"))
        for line in Path("/proc/self/maps").read_text().splitlines()
        if line.rstrip().endswith("[heap]")
    ]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else (0, 0)


def _mappings() -> tuple[list[int], list[tuple[int, str]]]:
    """Every mapping's start, and (end, short name): what a pointer found in an unnamed chunk points into."""
    starts, rest = [], []
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split()
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        name = parts[5].rsplit("/", 1)[-1] if len(parts) > 5 else "anon"
        starts.append(lo)
        rest.append((hi, name.split(".so")[0][:24]))
    return starts, rest


def _points(word: int, maps: tuple[list[int], list[tuple[int, str]]]) -> str:
    import bisect

    k = bisect.bisect_right(maps[0], word) - 1
    if k >= 0 and word < maps[1][k][0]:
        return maps[1][k][1]
    return "-"


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
        try:
            held = getattr(o, "__dict__", None)
        except Exception:  # a class whose __dict__ is a property that raises (pydantic's BaseModel)
            continue
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


def free_resident() -> dict[str, Any]:
    """Before a trim: the heap's resident bytes, and those inside free chunks (whole pages), by the free chunk's
    size — what the last requests freed and the next trim would give back."""
    lo, hi = heap_range()
    res = resident(lo, hi)
    mem = ctypes.string_at(lo, hi - lo)
    word = _WORD.unpack_from
    by_size: collections.Counter[str] = collections.Counter()
    c = (lo + 15) & ~15
    while c + 16 <= hi:
        size = word(mem, c + 8 - lo)[0] & ~7
        if size < 32 or c + size > hi:
            break
        nxt = c + size
        if nxt + 16 <= hi and not word(mem, nxt + 8 - lo)[0] & 1:
            first, last = (c + 48 + PAGE - 1) // PAGE, (c + size) // PAGE  # glibc keeps the header's page
            pages = sum(res[i - lo // PAGE] for i in range(first, last))
            by_size[_size_class(size)] += pages * PAGE
        c = nxt
    top_pages = sum(res[(c - lo) // PAGE + 1 :]) * PAGE
    return {"resident": sum(res) * PAGE, "free_resident": dict(by_size), "top_resident": top_pages}


def walk(trim: bool = True) -> dict[str, Any]:
    """The main heap's chunks and resident pages, by kind (module docstring)."""
    before = free_resident()
    gc.collect()
    gc.unfreeze()  # the start-up's frozen objects too (the snapshot's census unfreezes them anyway)
    objects = gc.get_objects()
    named = owners(objects)
    del objects
    types = _all_types()
    traced = _tracer()
    maps = _mappings()
    by_band: dict[int, dict[str, int]] = {}  # MiB band -> kind -> live bytes starting there
    if trim:  # after the walk's own allocations above, so that what it measures is what a trim leaves
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    lo, hi = heap_range()
    res = resident(lo, hi)
    mem = ctypes.string_at(lo, hi - lo)  # one copy (mmap-ed, out of this heap); unread pages map the zero page
    word = _WORD.unpack_from
    chunks: list[tuple[int, int, bool]] = []  # (address, size, in use)
    c = (lo + 15) & ~15
    while c + 16 <= hi:
        size = word(mem, c + 8 - lo)[0] & ~7
        if size < 32 or c + size > hi:
            break  # the top chunk's end, or a word changed under us
        nxt = c + size
        inuse = nxt + 16 <= hi and bool(word(mem, nxt + 8 - lo)[0] & 1)
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
            refcnt, tp = struct.unpack_from("<QQ", mem, p - lo)
            if tp in types and 0 < refcnt < 1 << 32:
                kind = types[tp]
            else:
                refcnt, tp = struct.unpack_from("<QQ", mem, p + 16 - lo)
                kind = types[tp] if tp in types and 0 < refcnt < 1 << 32 else None
        if kind is None and traced is not None and size > 64:  # not tracemalloc's own entries
            kind = traced(p)
        if kind is None:
            w0, w1 = struct.unpack_from("<QQ", mem, p - lo)
            kind = f"? {_size_class(size)} {_points(w0, maps)},{_points(w1, maps)}"
        band = by_band.setdefault((addr - lo) >> 20, {})
        band[kind] = band.get(kind, 0) + size
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
        "band_kinds": {str(b): dict(sorted(k.items(), key=lambda kv: -kv[1])[:12]) for b, k in sorted(by_band.items())},
        "before_trim": before,
        "python": sys.version.split()[0],
    }


NUMPY_DOMAIN = 389047
"""The tracemalloc domain numpy reports its data buffers under."""


def _tracer() -> Any:
    """While tracemalloc traces: the allocation's traceback of a malloc'd pointer (CPython's own allocators' and
    numpy's), its innermost frames as one label; None otherwise. Through ``_PyTraceMalloc_GetTraceback``, the call
    behind ``tracemalloc.get_object_traceback`` that takes an address rather than an object."""
    import tracemalloc

    if not tracemalloc.is_tracing():
        return None
    get = ctypes.pythonapi._PyTraceMalloc_GetTraceback
    get.argtypes, get.restype = [ctypes.c_uint, ctypes.c_size_t], ctypes.py_object

    def label(ptr: int) -> str | None:
        for domain, tag in ((0, ""), (NUMPY_DOMAIN, "numpy ")):
            frames = get(domain, ptr)
            if frames:
                where = " < ".join(f"{'/'.join(f.rsplit('/', 2)[-2:])}:{n}" for f, n in frames[:4])
                return f"traced {tag}{where}"
        return None

    return label


def _size_class(size: int) -> str:
    for limit in (1024, 4096, 16384, 65536, 131072):
        if size <= limit:
            return f"<={limit // 1024}K" if limit >= 1024 else f"<={limit}"
    return ">128K"
