"""The kernel's worker threads: a fixed number, all started (each with its malloc arena) before "ready".

The kernel hands its blocking work — SQLite writes, the embedding model, the scene's and the index's work, the
heap's trim — to the event loop's default executor (``asyncio.to_thread``, ``run_in_executor(None, …)``). The
loop's own executor is lazy: it starts a thread only when a job finds none idle, up to min(32, cores + 4). So a
moment with one more job at once than ever before — at turn 400 or at turn 5,000 — starts a thread, and glibc
gives a thread that mallocs while every arena is taken an arena of its own, whose working set (a few MB for the
kernel's turns) then stays resident for the life of the process. That is a step in the kernel's anonymous memory
at a random turn; the long soak (tools/bench/sweep.py, issue 39 item 7) saw one of +2–3 MB in every run.

Here the executor has :data:`WORKERS` threads, all started by :func:`install` when the kernel's loop begins, and
:meth:`Workers.started` (awaited before "ready") waits until each has run a job that mallocs, so their arenas exist from
the start and no burst of work later adds a thread. The number is fixed rather than per core: a turn keeps two
workers busy at once (the scene's and memory's indexing), the trim a third, and concurrent turns of other
sessions queue behind these short jobs for at most a few ms (tools/bench/http_turns.py --quick under load).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import threading

WORKERS = 4
"""The kernel's worker threads (the loop's default executor's, all started before "ready")."""

THREAD_PREFIX = "hologram-worker"
"""Their Python names' prefix, and (15 bytes, the kernel's limit) their name in /proc/PID/task/TID/comm."""
_PR_SET_NAME = 15

_MEET_S = 5.0  # a worker that cannot meet the others in this long is left to start its arena on its first job
_TOUCH_BYTES = 16 * 1024  # above pymalloc's 512 B and below glibc's mmap threshold: from the thread's arena


class Workers:
    """The executor and the jobs that started its threads."""

    def __init__(self, executor: concurrent.futures.ThreadPoolExecutor, jobs: list[asyncio.Future[int]]) -> None:
        self.executor = executor
        self.jobs = jobs

    async def started(self) -> int:
        """Wait for the starting jobs (before "ready"); returns how many distinct threads ran them."""
        return len(set(await asyncio.gather(*self.jobs)))


def install(loop: asyncio.AbstractEventLoop, workers: int = WORKERS) -> Workers:
    """Make `loop`'s default executor one of `workers` threads and start them all now (each job waits for the
    others, so the executor cannot hand two of them to one thread: it starts a thread only when none is
    idle); the jobs then malloc in their threads. Call before anything runs in the executor."""
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=THREAD_PREFIX)
    loop.set_default_executor(executor)
    meet = threading.Barrier(workers, timeout=_MEET_S)

    def job() -> int:
        _name_for_proc()
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait()
        buffer = bytearray(_TOUCH_BYTES)  # a malloc in this thread: glibc attaches its arena now
        del buffer
        return threading.get_native_id()

    return Workers(executor, [loop.run_in_executor(None, job) for _ in range(workers)])


def _name_for_proc() -> None:
    """Name the calling thread in /proc (``top -H``, the soak's census, the tests): Python before 3.14 leaves
    every thread of the process under the process's name there."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_NAME, THREAD_PREFIX.encode()[:15], 0, 0, 0)
