"""The kernel's executor jobs, one line each (tools/bench/first_turn.py --jobs puts this directory on PYTHONPATH).

Only in the kernel's process (`hologram up`), only when ``HOLOGRAM_JOBS_DIR`` is set: every job a
``concurrent.futures`` thread pool runs (``asyncio.to_thread``, ``run_in_executor``) writes
``<start> <end> <thread> <cpu ms> <what> FROM <who submitted it>`` to ``<dir>/jobs-<pid>.txt`` — the start and end
on the monotonic clock, the CPU on the worker's own thread clock, what ran (the function, through
``functools.partial`` and ``Context.run``) and the hologram frames of the coroutine that submitted it. Why: the
first turn's worker threads ran more CPU than later turns' and schedstat per thread cannot say which job did
(docs/performance.md, "The first turn's worker threads"). A process forked from the kernel stops recording.
"""

from __future__ import annotations

import os
import sys


def _start() -> None:
    import functools
    import threading
    import time
    import traceback
    from concurrent.futures import thread

    out = open(os.path.join(os.environ["HOLOGRAM_JOBS_DIR"], f"jobs-{os.getpid()}.txt"), "w", buffering=1)  # noqa: SIM115
    run, init = thread._WorkItem.run, thread._WorkItem.__init__

    def name(fn: object, args: tuple[object, ...]) -> str:
        while isinstance(fn, functools.partial):
            fn, args = fn.func, fn.args
        label = str(getattr(fn, "__qualname__", type(fn).__name__))
        if label == "Context.run" and args:
            return name(args[0], args[1:])
        return label

    def recorded_init(self: thread._WorkItem, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        frames = traceback.extract_stack(limit=16)[:-1]
        self._who = " <- ".join(  # type: ignore[attr-defined]
            f"{f.name}:{f.lineno}" for f in reversed(frames) if "/hologram/" in f.filename
        )

    def recorded_run(self: thread._WorkItem) -> None:
        began, cpu = time.monotonic(), time.thread_time()
        try:
            run(self)
        finally:
            spent = (time.thread_time() - cpu) * 1000
            what = name(self.fn, self.args)
            out.write(f"{began:.6f} {time.monotonic():.6f} {threading.get_native_id()} {spent:.3f} {what} FROM "
                      f"{getattr(self, '_who', '')}\n")  # fmt: skip

    thread._WorkItem.__init__ = recorded_init  # type: ignore[method-assign]
    thread._WorkItem.run = recorded_run  # type: ignore[method-assign]

    def stop() -> None:
        thread._WorkItem.__init__, thread._WorkItem.run = init, run  # type: ignore[method-assign]

    os.register_at_fork(after_in_child=stop)


if os.environ.get("HOLOGRAM_JOBS_DIR") and any(a == "up" for a in sys.argv[1:3]):
    _start()
