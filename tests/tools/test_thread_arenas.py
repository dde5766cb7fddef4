"""tools/bench/_threads.py `thread_arenas` against `thread_heaps`, read from a real interpreter's memory.

Why both: glibc caps a process's arenas (M_ARENA_MAX), not its heaps — an arena that outgrows its 64 MiB heap goes
on in a second one. The kernel's allocator test (tests/e2e/test_kernel_allocator_e2e.py) counted heaps and failed
once in CI with two at "ready" under a cap of one thread arena. Here a child interpreter starts threads that each
malloc (blocks over pymalloc's 512 bytes go to the C library), then one of them fills more than 64 MiB below the
mmap threshold: without a cap each thread has an arena of its own; with MALLOC_ARENA_MAX=2 they share one, which
then spans two heaps — two heaps, one arena.

Mutation check (done): `thread_arenas` counting every heap (the `prev == 0` test dropped) — red (2 arenas)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from bench._threads import thread_arenas, thread_heaps

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc, /proc")

THREADS = 3
CHILD = f"""
import sys, threading
go, done, kept = threading.Event(), threading.Barrier({THREADS} + 1), []
def work(i):
    kept.append([bytearray(4096) for _ in range(64)])  # the thread's first mallocs: its arena
    if i == 0 and sys.argv[1] == "fill":
        kept.append([bytearray(64 << 10) for _ in range(1200)])  # ~75 MiB, below the 128 KiB mmap threshold
    done.wait()
    go.wait()
threads = [threading.Thread(target=work, args=(i,)) for i in range({THREADS})]
for t in threads:
    t.start()
done.wait()
print("ready", flush=True)
sys.stdin.readline()
go.set()
"""


@contextmanager
def child(arena_max: int | None, fill: bool) -> Iterator[int]:
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "PYTHONMALLOC")}
    if arena_max is not None:
        env["MALLOC_ARENA_MAX"] = str(arena_max)
    args = [sys.executable, "-c", CHILD, "fill" if fill else "-"]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline() == "ready\n"
        yield proc.pid
    finally:
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.wait(timeout=60)


def test_each_thread_has_an_arena_of_its_own_without_a_cap() -> None:
    with child(None, fill=False) as pid:
        assert thread_arenas(pid) == thread_heaps(pid) == THREADS


def test_an_arena_that_outgrew_its_heap_counts_once() -> None:
    with child(2, fill=True) as pid:
        assert thread_heaps(pid) == 2  # the shared arena's first heap, full, and the one it went on in
        assert thread_arenas(pid) == 1
