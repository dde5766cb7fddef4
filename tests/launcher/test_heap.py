"""The start-up heap freeze (hologram/base/_heap.py): frozen objects leave the collector's generations."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading

import pytest

from hologram.base import _heap
from hologram.base._heap import freeze_startup_heap, freeze_when_loaded, release_free_heap


def test_freezing_moves_what_is_alive_out_of_the_collected_generations() -> None:
    loaded = [{"entry": i} for i in range(5_000)]  # tracked containers, as a loaded dictionary's would be
    try:
        frozen = freeze_startup_heap()
        assert frozen >= len(loaded)
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in tracked for o in loaded[:100])  # a full collection no longer visits them
        later = ["made after"]  # a list is always tracked
        assert any(o is later for o in gc.get_objects())  # objects made later are collected as usual
    finally:
        gc.unfreeze()  # leave the test process as it was


def test_the_freeze_waits_for_the_background_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The freeze is recorded in ``order`` too, so "after the load" is an order, not "not done 50 ms later"."""
    started, loaded = threading.Event(), threading.Event()
    order: list[str] = []

    def load() -> None:
        started.set()
        loaded.wait(30)
        order.append("loaded")

    def freeze() -> int:
        order.append("frozen")
        return freeze_startup_heap()

    monkeypatch.setattr(_heap, "freeze_startup_heap", freeze)

    async def scenario() -> int:
        task = asyncio.ensure_future(freeze_when_loaded([load]))
        assert await asyncio.to_thread(started.wait, 30), "the load never started"
        assert not task.done() and order == []
        loaded.set()
        return await task

    try:
        assert asyncio.run(scenario()) > 0 and order == ["loaded", "frozen"]
    finally:
        gc.unfreeze()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_the_c_heap_is_handed_back_where_libc_can() -> None:
    """The model's load buffers are returned to the OS by malloc_trim (glibc); elsewhere it is a no-op."""
    import platform

    assert release_free_heap() is (platform.libc_ver()[0] == "glibc")


_BLOCKS = """
import ctypes, sys
from hologram.base._heap import bound_free_heap
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "bound":
    assert bound_free_heap()
libc.free(libc.malloc(4 << 20))  # a model run's tensor, freed: glibc would raise its thresholds here
block = libc.malloc(4 << 20)  # the next run's
heap = next(line for line in open("/proc/self/maps") if line.rstrip().endswith("[heap]")).split()[0]
lo, hi = (int(x, 16) for x in heap.split("-"))
print("heap" if lo <= block < hi else "mapped")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
@pytest.mark.parametrize(("mode", "where"), [("bound", "mapped"), ("default", "heap")])
def test_after_start_up_a_large_block_stays_mapped_so_freeing_returns_it(mode: str, where: str) -> None:
    """glibc moves a large block into the heap (where freeing it keeps it resident) once one was freed;
    bound_free_heap keeps such blocks mmap-ed. The default case shows the test sees the difference."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _BLOCKS, mode], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == where


_IDLE = """
import asyncio, ctypes
from hologram.base._heap import IdleTrim
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

def anon_kb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("RssAnon:")).split()[1])

blocks = [libc.malloc(60_000) for _ in range(1500)]  # a turn's temporaries: small blocks in the heap
for b in blocks:
    libc.memset(b, 1, 60_000)
for b in blocks[:-1]:  # all freed but the top one, so glibc's own top trim cannot return them
    libc.free(b)
before = anon_kb()

async def main():
    trim = IdleTrim(after=0.01)
    trim.activity()
    trim.activity()  # more work: the first trim is pushed back, not doubled
    while trim.last is None:
        await asyncio.sleep(0.005)
    assert await trim.last
    await asyncio.sleep(0.1)
    print(before, anon_kb(), trim.trims)

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_an_idle_process_hands_its_freed_heap_back_once() -> None:
    """~90 MB freed in the middle of the heap stays resident until trimmed; once the process is idle it is
    handed back, by one trim however often work was reported. Mutation check (done): `_trim` not calling
    `release_free_heap` turns this red (nothing handed back)."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _IDLE], capture_output=True, text=True, check=True)
    before, after, trims = (int(x) for x in done.stdout.split())
    assert before - after > 60_000, (before, after)
    assert trims == 1


_BUSY = _IDLE.replace(
    """    trim = IdleTrim(after=0.01)
    trim.activity()
    trim.activity()  # more work: the first trim is pushed back, not doubled
    while trim.last is None:
        await asyncio.sleep(0.005)
    assert await trim.last""",
    """    trim = IdleTrim(after=3600, busy_every=0)  # never idle long enough: only the busy trim can run
    trim.activity()  # the busy period begins
    assert trim.last is None
    trim.activity()  # worked for busy_every since: a trim now, not after an idle second
    assert trim.last is not None
    running = trim.last
    trim.activity()  # that trim still running (or just done): at most one at a time
    assert trim.trims in (1, 2) and (trim.trims == 1 or running.done())
    assert await running""",
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_process_that_is_never_idle_still_hands_its_freed_heap_back() -> None:
    """A kernel several channels keep busy never idles for a second, yet what its work frees must not pile up:
    after `busy_every` seconds of work the next activity trims at once. Mutation check (done): `activity`
    without its busy branch turns this red (no trim: `trim.last` stays None)."""
    import subprocess

    assert "busy_every=0" in _BUSY  # the script above was derived from _IDLE's
    done = subprocess.run([sys.executable, "-c", _BUSY], capture_output=True, text=True, check=True)
    before, after, trims = (int(x) for x in done.stdout.split())
    assert before - after > 60_000, (before, after)
    assert trims >= 1
