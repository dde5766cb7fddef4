"""What one memory request leaves in glibc's main heap, by session length, and which allocations it is.

    nice -n 10 .venv/bin/python tools/bench/heap_request.py [--events 1500,4500] [--rounds 5]

Why: the soak's kernel's main heap (``[heap]``) grows ~1 MB between turns 1,000 and 3,000 in its samples, while
after a ``malloc_trim(0)`` it stays flat (``soak_diag.py --heapmap``: +0.1 MB). So what grows is the pages a
request touched and freed, resident until the next trim (every 2 s while busy: ``base/_heap.py``), and that
grows with the session. This measures it without a kernel: a real long session (tests/memory/long_session.py:
SessionStore, ColdStore and index segments on disk, the soak's turns, a hashing embedder) at each length; per
round, the session's kept columns dropped as when another session's request came between (the soak's four
sessions in turn), the heap trimmed, one request (``SessionMemory.preview``), and the heap's resident pages inside
free chunks counted (tools/bench/diag/heapmap.py): in this small process that figure is dominated by where glibc
happens to place the request, not by the session's length (1.4 MB at 1,250 events, 1.0 at 12,500). Then the same
requests under tracemalloc with a thread sampling the live blocks of 4 KiB and more (``--big``, ``--below``) every
few ms: the tracebacks with the most bytes alive at once mid-request, numpy's buffers included (tracemalloc domain
389047) — that sum follows the session (366 KiB at 1,250 events, 2,680 KiB at 12,500).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools" / "bench" / "diag"), str(ROOT)]

import heapmap  # noqa: E402  (tools/bench/diag)
from tests.memory.long_session import build  # noqa: E402

from hologram.base._heap import bound_free_heap  # noqa: E402

NUMPY = 389047


def trim() -> None:
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def sampled(run: object, every: float, big: int, below: int = 1 << 62) -> Counter[str]:
    """Run `run()` while a thread snapshots tracemalloc every `every` s: per traceback (innermost frames), the
    most bytes of blocks >= `big` it had alive at one snapshot."""
    most: Counter[str] = Counter()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            snap = tracemalloc.take_snapshot()
            now: Counter[str] = Counter()
            for trace in snap.traces:
                if big <= trace.size < below:
                    frames = " > ".join(
                        f"{'/'.join(f.filename.rsplit('/', 2)[-2:])}:{f.lineno}" for f in trace.traceback
                    )
                    now[("numpy " if trace.domain == NUMPY else "") + frames] += trace.size
            for k, v in now.items():
                most[k] = max(most[k], v)
            time.sleep(every)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        run()  # type: ignore[operator]
    finally:
        stop.set()
        thread.join()
    return most


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", default="1500,4500")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window-tokens", type=int, default=6000)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--no-trace", action="store_true")
    parser.add_argument("--big", type=int, default=4096, help="sample blocks of this many bytes and more")
    parser.add_argument("--below", type=int, default=1 << 62, help="... and fewer than this many")
    args = parser.parse_args()
    sizes = [int(x) for x in args.events.split(",")]
    bound_free_heap()  # the kernel's fixed thresholds (glibc's dynamic mmap threshold would move with our copies)
    traced: dict[int, Counter[str]] = {}
    for events in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            long = asyncio.run(build(Path(tmp), events, args.window_tokens))
            index = long.mem._state(long.sid).index
            question = "Where is the spare key to the boathouse?"
            for _ in range(2):
                long.ask(question)  # warm: the segments opened, caches made
            freed, live = [], []
            for _ in range(args.rounds):
                index.forget_between_requests()  # as when another session's request came between
                trim()
                before = heapmap.free_resident()
                long.ask(question)
                after = heapmap.free_resident()
                freed.append(sum(after["free_resident"].values()) + after["top_resident"])
                live.append(after["resident"] - before["resident"])
            print(
                f"{len(index):,} events: a request's freed pages resident in [heap] until a trim: median "
                f"{statistics.median(freed) / 1024:.0f} KiB (rounds {[round(f / 1024) for f in freed]}); "
                f"[heap] resident +{statistics.median(live) / 1024:.0f} KiB over the request",
                flush=True,
            )
            if not args.no_trace:
                tracemalloc.start(6)

                def rounds(index: Any = index, long: Any = long, question: str = question) -> None:
                    for _ in range(args.rounds):
                        index.forget_between_requests()
                        long.ask(question)

                traced[events] = sampled(rounds, 0.002, args.big, args.below)
                tracemalloc.stop()
            long.close()
    for events, most in traced.items():
        total = sum(most.values())
        sizes = f"{args.big}-{min(args.below, 1 << 40)} bytes"
        print(f"\n== {events:,} events: blocks of {sizes} alive at once mid-request, most per traceback "
              f"(sum of maxima {total / 1024:.0f} KiB) ==")  # fmt: skip
        for k, v in most.most_common(args.top):
            print(f"  {v / 1024:8.1f} KiB  {k[:230]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
