"""A process's threads and glibc heaps from /proc, for the soak's samples (sweep.py, soak_diag.py).

Why: the soak's kernel takes one step of +2–3 MB anonymous memory at a random turn and then stays flat (issue 39
item 7). glibc gives every thread that first mallocs while all arenas are busy an arena of its own (up to 8 × the
cores), whose working set then stays resident; a thread started late — the default executor starts one only when
no idle one is free — would be such a step. So each sample records how many threads the process has (and their
kernel-visible names), how many glibc thread heaps are mapped, and the anonymous memory by mapping kind
(http_long.anon_mappings: pymalloc's whole-MiB maps, [heap], thread arenas, other).
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from pathlib import Path
from typing import Any

_HEAP_ALIGN = 64 << 20  # glibc's non-main heaps are HEAP_MAX_SIZE-aligned (64 MiB on 64-bit)

Map = tuple[int, int, str, str]  # lo, hi, permissions, name


def thread_ids(pid: int) -> list[int]:
    """The process's thread ids, oldest first (a new thread's id is larger, short of the pid space wrapping)."""
    return sorted(int(task.name) for task in Path(f"/proc/{pid}/task").iterdir())


def thread_names(pid: int) -> Counter[str]:
    """The process's threads by /proc/PID/task/TID/comm (Python < 3.14 names none of its own threads there, so
    they count under the process's name; native pools such as onnxruntime's show theirs)."""
    out: Counter[str] = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[(task / "comm").read_text().strip()] += 1
        except OSError:  # the thread ended while we looked
            continue
    return out


def thread_heaps(pid: int) -> int:
    """glibc's thread heaps mapped in the process (each arena has one, or more once it outgrows 64 MiB; the main
    arena is [heap] and not counted): see :func:`is_thread_heap`."""
    return len(_heap_maps(pid))


def _heap_maps(pid: int) -> list[Map]:
    """The process's glibc thread heaps, from /proc/PID/maps (:func:`is_thread_heap` of each mapping and the one
    above it)."""
    maps: list[Map] = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        head = line.split()
        lo, hi = (int(x, 16) for x in head[0].split("-"))
        maps.append((lo, hi, head[1], head[5] if len(head) > 5 else ""))
    return [m for m, above in zip(maps, [*maps[1:], None], strict=True) if is_thread_heap(m, above)]


def thread_arenas(pid: int) -> int:
    """glibc's thread arenas (the main arena not counted): the thread heaps that begin one.

    An arena whose heap fills its 64 MiB (or cannot grow in place) goes on in a second heap, so heaps are not
    arenas: a kernel capped at one thread arena showed two heaps at "ready" once in a CI run (the embedding
    model's load buffers). Each heap starts with glibc's ``heap_info`` — ``ar_ptr`` (its arena), ``prev`` (the
    arena's previous heap, NULL in the first) —, and a first heap holds its arena right after that header. Read
    through /proc/PID/mem (the reader must be allowed to trace the process: its parent or root)."""
    arenas = 0
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for lo, *_ in _heap_maps(pid):
            ar_ptr, prev = struct.unpack("<QQ", os.pread(mem.fileno(), 16, lo))
            arenas += prev == 0 and lo < ar_ptr < lo + _HEAP_INFO_MAX
    return arenas


_HEAP_INFO_MAX = 64
"""``sizeof(heap_info)`` is 32 or 48 bytes (glibc before and after 2.35), the arena right after it."""


def is_thread_heap(vma: Map, above: Map | None) -> bool:
    """A glibc thread heap: an anonymous read-write map starting 64 MiB-aligned (HEAP_MAX_SIZE) whose reserve,
    ``---p``, follows it up to the next 64 MiB boundary — or all 64 MiB in use. Alignment alone is not enough:
    the kernel places some large anonymous maps on 2 MiB boundaries (transparent huge pages), and 1 in 32 of
    those is on a 64 MiB one."""
    lo, hi, perms, name = vma
    if name or not perms.startswith("rw") or lo % _HEAP_ALIGN:
        return False
    if hi - lo == _HEAP_ALIGN:
        return True
    return above is not None and above[0] == hi and above[2].startswith("---") and above[1] == lo + _HEAP_ALIGN


def census(pid: int) -> dict[str, Any]:
    """Threads, their names, glibc thread heaps and anonymous MB by mapping kind, now; empty if it is gone."""
    from bench.http_long import anon_mappings  # imported here: http_long imports sweep, which imports this

    try:
        names = thread_names(pid)
        tids = thread_ids(pid)
        heaps = thread_heaps(pid)
        kinds = anon_mappings(pid)
    except OSError:
        return {}
    return {
        "threads": sum(names.values()),
        "thread_names": dict(names),
        "thread_ids": tids,
        "thread_heaps": heaps,
        "anon_mb_by_kind": {k: round(v / 1024, 2) for k, v in kinds.items() if k not in ("file", "arena_1m_mapped")},
    }


def line(sample: dict[str, Any]) -> str:
    """One printed line: threads, thread heaps, and the anonymous MB by kind."""
    if not sample:
        return "threads ?"
    kinds = sample["anon_mb_by_kind"]
    return (
        f"threads {sample['threads']}, thread heaps {sample['thread_heaps']}; anon MB: pymalloc "
        f"{kinds['arena_1m']:.1f}, heap {kinds['heap']:.1f}, thread arenas {kinds['thread_arena']:.1f}, "
        f"other {kinds['other_anon']:.1f}"
    )
