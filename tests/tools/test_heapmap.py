"""tools/bench/diag/heapmap.py: the walk of glibc's main heap that soak_diag.py --heapmap runs in the kernel.

Run in a fresh interpreter (a subprocess): what the walk reports is that process's own heap, and the test plants
in it what the walk must find — a numpy array held by an attribute (named by its owner), and a freed block between
live ones whose pages stay resident until a trim (counted as free-resident before the walk's trim, gone after)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DIAG = Path(__file__).resolve().parents[2] / "tools" / "bench" / "diag"

PROGRAM = """
import ctypes, json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import heapmap

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallopt(-3, 1 << 20)  # M_MMAP_THRESHOLD: the planted blocks stay in [heap]
libc.mallopt(-1, 1 << 24)  # M_TRIM_THRESHOLD: no trim on free, only the walk's own


class Holder:
    pass


holder = Holder()
holder.scores = np.ones(6000)  # 48,000 bytes of numpy data in the main heap
before = libc.malloc(64)
hole = libc.malloc(200 * 1024)  # touched, then freed between two live blocks: resident until a trim
ctypes.memset(hole, 1, 200 * 1024)
after = libc.malloc(64)
libc.free(hole)
out = heapmap.walk()
print(json.dumps({"walk": out, "data": holder.scores.__array_interface__["data"][0]}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap")
def test_walk_names_owned_arrays_and_counts_freed_pages_until_the_trim() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(DIAG)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    walk = got["walk"]
    # the array's data chunk, found by its address and named by the attribute that holds it
    owned = walk["by_kind"].get("ndarray float64 @Holder.scores")
    assert owned is not None, sorted(walk["by_kind"])[:40]
    count, live, _waste, _alone = owned
    assert count == 1 and 48_000 <= live < 48_000 + 64
    # the freed 200 KiB block: its whole pages resident before the trim, counted in the free chunks (by their size:
    # which bucket depends on what the interpreter allocated into the hole after the free — the walk's own lists,
    # json — so the buckets are summed)
    before = walk["before_trim"]
    assert sum(before["free_resident"].values()) >= 190 * 1024, before["free_resident"]
    # ... and not after it: what stays resident is the live chunks' pages (and their waste), nothing wholly free
    assert walk["resident"] <= before["resident"] - 190 * 1024
    assert walk["live"] <= walk["heap_hi"] - walk["heap_lo"]
    assert walk["top_chunk_at"] == walk["heap_hi"] - walk["heap_lo"]  # the walk reached the top chunk
