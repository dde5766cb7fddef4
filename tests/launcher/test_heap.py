"""The start-up heap freeze (hologram/_heap.py): frozen objects leave the collector's generations."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading

import pytest

from hologram import _heap
from hologram._heap import freeze_startup_heap, freeze_when_loaded, release_free_heap


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
from hologram._heap import bound_free_heap
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
