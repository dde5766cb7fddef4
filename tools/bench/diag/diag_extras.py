"""The long-turns diagnostics' additions to tools/bench/diag/sitecustomize.py (tools/bench/http_long_diag.py):
pymalloc's statistics, glibc's per-arena report, what an idle release of SQLite's caches would give, and which
objects keep which pymalloc arena. Run in the kernel's diagnostics thread only; bench-only."""

from __future__ import annotations

import array
import bisect
import collections
import contextlib
import ctypes
import ctypes.util
import gc
import json
import os
import sqlite3
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path


def mallocstats() -> dict[str, object]:
    """sys._debugmallocstats (it writes to the C stderr): the arenas' and pools' counts, and the blocks in
    use by size class, read from a temporary file put on fd 2 for the call."""
    with tempfile.TemporaryFile() as f:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(f.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    out: dict[str, object] = {"pymalloc_text": text}
    for key, label in (("arenas_allocated_current", "# arenas allocated current"),
                       ("arenas_highwater", "# arenas highwater mark"),
                       ("bytes_in_allocated_blocks", "# bytes in allocated blocks"),
                       ("bytes_in_available_blocks", "# bytes in available blocks"),
                       ("unused_pool_bytes", "unused pools")):  # fmt: skip
        for line in text.splitlines():
            if label in line:
                out["pymalloc_" + key] = int(line.rsplit("=", 1)[-1].replace(",", "").strip())
    return out


def release_sqlite(connections: list[tuple[sqlite3.Connection, str]]) -> None:
    """What an idle release of every connection's cache would give: sqlite3_db_release_memory on each live
    connection (SQLite's serialized mode takes the connection's mutex), then malloc_trim(0). Asked by a
    snapshot name starting with ``released``."""
    lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    lib.sqlite3_db_release_memory.argtypes = [ctypes.c_void_p]
    for db, _ in connections:
        handle = ctypes.c_void_p.from_address(id(db) + 16).value
        if handle:
            lib.sqlite3_db_release_memory(handle)
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def malloc_info(path: Path) -> None:
    """glibc's malloc_info(0) (XML, every arena: its size and its free chunks) into ``<dir>/<name>.malloc.xml``."""
    libc = ctypes.CDLL("libc.so.6")
    libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
    handle = libc.fopen(str(path).encode(), b"w")
    if handle:
        libc.malloc_info(0, handle)
        libc.fclose(handle)


def short(o: object) -> str:
    try:
        return repr(o)[:100]
    except Exception:
        return type(o).__qualname__


def pins(objects: list[object]) -> dict[str, object]:
    """Which objects keep which pymalloc arena: each live object served by pymalloc (tracked ones and what
    they refer to; `sys.getsizeof` at most 512) by its pool (16 KiB-aligned; the pool header's ``arenaindex``
    at offset 32 in CPython 3.11), and for the arenas holding fewest of them, their types and a few reprs.
    An arena is returned only when all of it is free: a handful of survivors keep a whole MiB."""
    seen: set[int] = set()
    by_arena: dict[int, list[object]] = collections.defaultdict(list)
    ranges: list[tuple[int, int]] = []  # anonymous mappings: where arenas are (a static object's is not)
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) == 5 and "rw" in fields[1]:
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            ranges.append((lo, hi))
    starts = [lo for lo, _ in ranges]

    def add(o: object) -> None:
        if id(o) in seen:
            return
        seen.add(id(o))
        try:
            if sys.getsizeof(o) > 512:
                return
        except TypeError:
            return
        pool = id(o) & ~(16384 - 1)
        i = bisect.bisect_right(starts, pool) - 1
        if i < 0 or not (ranges[i][0] <= pool and id(o) < ranges[i][1]):
            return
        by_arena[ctypes.c_uint.from_address(pool + 32).value].append(o)

    for o in objects:
        add(o)
        for r in gc.get_referents(o):
            add(r)
    counts = {a: len(v) for a, v in by_arena.items()}
    few = sorted(counts, key=lambda a: counts[a])[:12]
    out: dict[str, object] = {"arenas_seen": len(counts), "objects_by_arena": dict(sorted(counts.items()))}
    for a in few:
        kinds = collections.Counter(type(o).__qualname__ for o in by_arena[a])
        out[f"arena {a}"] = {
            "n": counts[a],
            "types": dict(kinds.most_common(8)),
            "sample": [short(o) for o in by_arena[a][:6]],
        }
        if counts[a] <= 20:  # a handful of survivors keep the whole MiB: who holds each of them
            out[f"arena {a}"]["held_by"] = [holder(o) for o in by_arena[a]]  # type: ignore[index]
    return out


def holder(o: object) -> str:
    """``o`` and what refers to it (types, a dict's first keys, an object's attribute that holds it)."""
    found = []
    for r in gc.get_referrers(o):
        if isinstance(r, list) and len(r) > 10_000:
            continue  # the walk's own lists
        label = type(r).__qualname__
        if isinstance(r, dict):
            label += " keys " + ",".join(str(k)[:24] for k, v in r.items() if v is o)[:80]
            for rr in gc.get_referrers(r):
                if getattr(rr, "__dict__", None) is r:
                    label += f" of {type(rr).__qualname__}"
        else:
            for name in getattr(type(r), "__slots__", ()) or ():
                if getattr(r, name, None) is o:
                    label += f".{name}"
        found.append(label)
    return f"{short(o)} <- {found[:6]}"


def peak_sampler(path: Path, stop: object, every: float = 0.001) -> None:
    """What is alive at a long turn's pymalloc peak (``http_long_diag.py --peak``): every `every` s,
    ``sys.getallocatedblocks()``, and with it the loop thread's stack (its frames in hologram's code) at every
    new maximum and every 20th sample; written on stop to `path` as JSON: the maximum and the stack it was
    reached in, each stack's highest count, and the series (every 10th sample); under tracemalloc
    (``--trace-late``) a snapshot near the peak, `path` with ``.snap`` (what the turn allocated and holds).
    Why: the pools a long turn takes are set by how many small objects are alive at once, and where the loop
    is then names what holds them."""
    import threading
    import time
    import tracemalloc

    assert isinstance(stop, threading.Event)
    main = threading.main_thread().ident
    best, best_stack = 0, ""
    by_stack: dict[str, int] = {}
    series: list[tuple[float, int]] = []
    started = time.monotonic()
    n = 0
    snapped = sys.getallocatedblocks() + 10_000

    def stack() -> str:
        frame = sys._current_frames().get(main or 0)
        names: list[str] = []
        while frame is not None:
            code = frame.f_code
            if "hologram" in code.co_filename:
                names.append(f"{'/'.join(code.co_filename.rsplit('/', 2)[-2:])}:{code.co_name}")
            frame = frame.f_back
        return ";".join(reversed(names[:8]))

    while not stop.is_set():
        n += 1
        blocks = sys.getallocatedblocks()
        if blocks > best or n % 20 == 0:
            where = stack()
            by_stack[where] = max(by_stack.get(where, 0), blocks)
            if blocks > best:
                best, best_stack = blocks, where
        if blocks > snapped + 2000 and tracemalloc.is_tracing():  # with --trace-late: what the peak holds
            snapped = blocks
            tracemalloc.take_snapshot().dump(str(path.with_suffix(".snap")))
        if n % 10 == 0:
            series.append((round(time.monotonic() - started, 3), blocks))
        time.sleep(every)
    top = sorted(by_stack.items(), key=lambda kv: -kv[1])[:40]
    path.write_text(json.dumps({"max": best, "max_stack": best_stack, "samples": n, "by_stack": top, "series": series}))


def census(objects: list[object]) -> dict[str, list[int]]:
    """Bytes held through each owner's attribute, by ``Type.attribute``: numpy arrays (their base buffer's
    nbytes, each buffer counted once), and the storage of containers and strings (list, dict, set, str, bytes,
    bytearray, deque, array;
    ``sys.getsizeof``, the container itself, not what it refers to), plus numpy arrays found in lists, tuples
    and dicts held by an attribute (as ``Type.attribute[]``). Why: numpy data and a container's storage grow
    without new objects, so a count of objects by type (and pymalloc's blocks) is flat while glibc's in-use
    bytes grow; this names the owner. Each row is [bytes, how many]."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency of the kernel
        return {}
    seen: set[int] = set()
    out: dict[str, list[int]] = {}

    def add(key: str, value: object) -> None:
        if isinstance(value, np.ndarray):
            base = value
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) in seen or base.base is not None:  # counted, or a view of a mapped file / bytes
                return
            seen.add(id(base))
            size = int(base.nbytes)
        elif isinstance(value, (list, dict, set, frozenset, str, bytes, bytearray, collections.deque, array.array)):
            if id(value) in seen:
                return
            seen.add(id(value))
            size = sys.getsizeof(value)
            if isinstance(value, (list, collections.deque)):
                for item in value:
                    if isinstance(item, np.ndarray):
                        add(key + "[]", item)
            elif isinstance(value, dict):
                for item in value.values():
                    if isinstance(item, np.ndarray):
                        add(key + "[]", item)
        else:
            return
        row = out.setdefault(key, [0, 0])
        row[0] += size
        row[1] += 1

    def owned(o: object) -> None:
        kind = type(o)
        if isinstance(o, types.ModuleType) or (isinstance(o, type) and o.__module__ not in ("builtins",)):
            # a module's globals and a class's attributes (module-level caches and tables)
            for name, value in list(vars(o).items()):
                add(f"{getattr(o, '__name__', '?')}:{name}", value)
            return
        if kind.__module__ in ("builtins", "gc", "types") or isinstance(o, type):
            return
        attrs: dict[str, object] = {}
        held = getattr(o, "__dict__", None)
        if isinstance(held, dict):
            attrs.update(held)
        for klass in kind.__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if isinstance(slot, str) and slot not in attrs:
                    with contextlib.suppress(Exception):  # an unset slot
                        attrs[slot] = object.__getattribute__(o, slot)
        for name, value in attrs.items():
            add(f"{kind.__module__.rsplit('.', 1)[-1]}.{kind.__qualname__}.{name}", value)

    for o in objects:
        with contextlib.suppress(Exception):  # an object whose attributes raise (a model class's descriptors)
            owned(o)
    return {k: v for k, v in out.items() if v[0] >= 4096}


def lru_sizes(objects: list[object]) -> dict[str, int]:
    """Entries in each ``functools.lru_cache`` (their storage is out of reach of :func:`census`), by function."""
    out: dict[str, int] = {}
    for o in objects:
        if type(o).__name__ != "_lru_cache_wrapper":  # checked first: a getattr on ctypes' cdll loads a library
            continue
        with contextlib.suppress(Exception):
            size = int(o.cache_info().currsize)  # type: ignore[attr-defined]
            out[f"{getattr(o, '__module__', '?')}.{getattr(o, '__qualname__', '?')}"] = size
    return out


def big_blocks(objects: list[object], least: int = 128 * 1024) -> dict[str, list[int]]:
    """Objects whose own storage is at least `least` bytes (glibc maps each such block on its own: what the
    anonymous-by-kind census counts among the whole-MiB maps when it passes 1 MiB), by
    ``what <- holder``: lists, dicts, sets, bytearrays, arrays, strings and bytes (``sys.getsizeof``) and numpy
    arrays that own their data, each found as a referent of a tracked object (a dict of str to int is not
    tracked itself), named by the holder's type and, for an instance's ``__dict__``, the attribute. Each row
    is [bytes, how many, the longest's length]."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency of the kernel
        return {}
    seen: set[int] = set()
    out: dict[str, list[int]] = {}

    def candidates(o: object) -> Iterator[tuple[object, str]]:
        if isinstance(o, types.ModuleType):
            for name, value in list(vars(o).items()):
                yield value, f"{o.__name__}:{name}"
            return
        held = None if isinstance(o, type) else getattr(o, "__dict__", None)
        label = f"{type(o).__module__.rsplit('.', 1)[-1]}.{type(o).__qualname__}"
        if isinstance(held, dict):  # an instance's attributes (its dict may be made only when asked)
            for name, value in list(held.items()):
                yield value, f"{label}.{name}"
        for r in gc.get_referents(o):
            yield r, label

    for o in objects:
        with contextlib.suppress(Exception):  # an object whose attributes raise
            for r, holder in candidates(o):
                if id(r) in seen:
                    continue
                if isinstance(r, np.ndarray):
                    size = int(r.nbytes) if r.base is None else 0
                elif isinstance(r, (list, dict, set, frozenset, bytearray, array.array, str, bytes)):
                    size = sys.getsizeof(r)
                else:
                    continue
                if size < least:
                    continue
                seen.add(id(r))
                row = out.setdefault(f"{type(r).__name__} <- {holder}"[:160], [0, 0, 0])
                row[0] += size
                row[1] += 1
                row[2] = max(row[2], len(r) if hasattr(r, "__len__") else 0)
    return out


def garbage_kind(o: object) -> str:
    """A name for an object the cycle collector found unreachable: its type, and for a frame, a coroutine, a
    function or a cell what code it is or holds (which code leaves cycles behind)."""
    kind = type(o).__qualname__
    if isinstance(o, types.FrameType):
        return f"frame {o.f_code.co_filename.rsplit('/', 2)[-1]}:{o.f_code.co_name}"
    if isinstance(o, (types.CoroutineType, types.FunctionType)):
        return f"{kind} {o.__qualname__}"
    if isinstance(o, types.TracebackType):
        return f"traceback {o.tb_frame.f_code.co_name}"
    if isinstance(o, BaseException):
        return f"exception {kind}"
    return kind
