"""Diagnostics inside a benchmark's kernel (tools/bench/soak_diag.py puts this directory on PYTHONPATH).

Only in the kernel's process (`hologram up`), only when ``HOLOGRAM_DIAG_DIR`` is set: tracemalloc from the
start (``HOLOGRAM_DIAG_FRAMES`` frames), and a daemon thread that answers a request file ``<dir>/req-<name>``
with ``<dir>/<name>.snap`` (a tracemalloc snapshot after a full collection), ``<dir>/<name>.json`` (live
objects by type, SQLite's own memory, glibc's heap) and then ``<dir>/<name>.done``. Why a file and a thread:
the kernel has no diagnostics call, and the loop's thread must not be what answers (a turn may be running).
A process forked from the kernel stops tracing (plugins are not what is measured).
"""

from __future__ import annotations

import os
import sys


def _start() -> None:
    import collections
    import contextlib
    import cProfile
    import ctypes
    import ctypes.util
    import gc
    import json
    import threading
    import time
    import tracemalloc
    from collections.abc import Callable
    from pathlib import Path

    where = Path(os.environ["HOLOGRAM_DIAG_DIR"])
    frames = int(os.environ.get("HOLOGRAM_DIAG_FRAMES", "12"))
    if frames > 0 and not os.environ.get("HOLOGRAM_DIAG_TRACE_LATE"):  # 0: object counts only (tracemalloc
        # slows a turn several times); late: started by a `tracestart` request
        tracemalloc.start(frames)
    os.register_at_fork(after_in_child=tracemalloc.stop)
    previous: dict[str, int] = {}
    import sqlite3

    connections: list[tuple[sqlite3.Connection, str]] = []  # strong: a Connection takes no weak reference
    connect = sqlite3.connect

    def recorded(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        """sqlite3.connect, remembering each connection and its file (for its cache figures)."""
        db = connect(database, *args, **kwargs)  # type: ignore[arg-type]
        connections.append((db, str(database).rsplit("/", 1)[-1]))
        return db

    sqlite3.connect = recorded  # type: ignore[assignment]

    def per_connection() -> dict[str, list[int]]:
        """file -> [page cache bytes, schema bytes, statement bytes] of each live connection (summed by file):
        sqlite3_db_status on the connection's handle (CPython 3.11 keeps it right after the object header)."""
        lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
        lib.sqlite3_db_status.argtypes = (
            [ctypes.c_void_p, ctypes.c_int] + [ctypes.POINTER(ctypes.c_int)] * 2 + [ctypes.c_int]
        )
        out: dict[str, list[int]] = {}
        for db, name in connections:
            handle = ctypes.c_void_p.from_address(id(db) + 16).value
            if not handle:
                continue
            row = out.setdefault(name, [0, 0, 0, 0])
            row[3] += 1
            for i, op in enumerate((1, 2, 3)):  # CACHE_USED, SCHEMA_USED, STMT_USED
                cur, high = ctypes.c_int(), ctypes.c_int()
                lib.sqlite3_db_status(handle, op, ctypes.byref(cur), ctypes.byref(high), 0)
                row[i] += cur.value
        return out

    def sqlite_memory() -> dict[str, int]:
        try:
            import _sqlite3  # noqa: F401  (loads the library the kernel uses)

            lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
            lib.sqlite3_memory_used.restype = ctypes.c_int64
            return {"sqlite_memory_used": int(lib.sqlite3_memory_used())}
        except Exception as exc:  # a diagnostic never breaks the kernel
            return {"sqlite_error": hash(str(exc))}

    def mallinfo() -> dict[str, int]:
        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in
                        ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                         "fordblks", "keepcost")]  # fmt: skip

        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallinfo2.restype = Info
            info = libc.mallinfo2()
            return {f"malloc_{n}": int(getattr(info, n)) for n, _ in Info._fields_}
        except Exception:
            return {}

    def holders(objects: list[object], kind: str, n: int = 20) -> dict[str, int]:
        """What holds the newest `n` live objects of type `kind`: referrer types (and a dict's first keys)."""
        mine = [o for o in objects if type(o).__qualname__ == kind][-n:]
        seen: collections.Counter[str] = collections.Counter()
        for o in mine:
            for r in gc.get_referrers(o):
                if r is objects or r is mine:
                    continue
                label = type(r).__qualname__
                if isinstance(r, dict):
                    label += " keys " + ",".join(str(k)[:30] for k in list(r)[:4])
                elif isinstance(r, (list, tuple, set)):
                    label += f" len {len(r)}"
                seen[label] += 1
        return dict(seen.most_common(8))

    def every_class() -> list[type]:
        out: list[type] = []
        todo = [object]
        while todo:
            cls = todo.pop()
            out.append(cls)
            with contextlib.suppress(TypeError):  # type.__subclasses__ unbound
                todo.extend(cls.__subclasses__())
        return out

    import diag_extras  # beside this file: the long-turns diagnostics (tools/bench/http_long_diag.py)

    def answer(name: str) -> None:
        if os.environ.get("HOLOGRAM_DIAG_HEAPMAP"):  # first: the walks below allocate
            import heapmap

            try:
                (where / f"{name}.heap.json").write_text(json.dumps(heapmap.walk()))
            except Exception as exc:  # a diagnostic never loses the snapshot
                (where / f"{name}.heap.json").write_text(json.dumps({"error": repr(exc)}))
        if name.startswith("released"):
            diag_extras.release_sqlite(connections)
        uncollected = diag_extras.mallocstats()  # pymalloc as the kernel left it, before a full collection
        collected = 0
        garbage: dict[str, int] = {}
        if not os.environ.get("HOLOGRAM_DIAG_NO_COLLECT"):
            # what the full collection finds unreachable (objects in reference cycles, freed only by the cycle
            # collector), by type — a frame or a coroutine by its code's name
            gc.set_debug(gc.DEBUG_SAVEALL)
            collected = gc.collect()
            gc.set_debug(0)
            found = collections.Counter(diag_extras.garbage_kind(o) for o in gc.garbage)
            gc.garbage.clear()
            gc.collect()  # what DEBUG_SAVEALL kept is still in its cycles: freed now
            garbage = dict(found.most_common(40))
        after_collect = diag_extras.mallocstats()  # and after it, before the walks below allocate
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(str(where / f"{name}.snap"))
        pinned: dict[str, object] = {}
        if os.environ.get("HOLOGRAM_DIAG_PINS"):  # every object in the walk, the frozen start-up heap's too
            gc.unfreeze()
            pinned = diag_extras.pins(gc.get_objects())
            gc.freeze()
        gc.unfreeze()  # the census (and the counts by type) see what the start-up froze too (the stores,
        # SessionMemory); not frozen again, so every snapshot counts the same objects
        objects = gc.get_objects()
        types = collections.Counter(type(o).__qualname__ for o in objects)
        grown = sorted(((types[k] - previous.get(k, 0), k) for k in types), reverse=True)[:6]
        held = {k: holders(objects, k) for d, k in grown if previous and d > 50}
        previous.clear()
        previous.update(types)
        try:
            every = gc.get_objects()  # every object: the start-up's were unfrozen above
            held_by = diag_extras.census(every)
            held_by.update({f"lru {k}": [v, -1] for k, v in diag_extras.lru_sizes(every).items() if v})
            big = diag_extras.big_blocks(every)
            del every
        except Exception as exc:  # a diagnostic: the snapshot goes on without it
            held_by = {f"census failed: {exc!r}"[:200]: [0, 0]}
            big = {}
        del objects
        out = {
            "census": held_by,
            "big": big,
            "traced": tracemalloc.get_traced_memory()[0],
            "blocks": sys.getallocatedblocks(),
            "types": dict(types.most_common(400)),
            "holders": held,
            "objects": sum(types.values()),
            **sqlite_memory(),
            "sqlite_by_file": per_connection(),
            **mallinfo(),
            **diag_extras.mallocstats(),
            "pins": pinned,
            "gc_counts": list(gc.get_count()),
            "collected": collected,
            "garbage": garbage,
            "python_threads": {str(t.native_id): t.name for t in threading.enumerate()},
            "modules": sorted(sys.modules),  # what a long turn imported that the warm-up did not (t0 -> t1)
            "validators": sorted(  # pydantic models whose validator a turn built (they defer it to first use)
                f"{c.__module__}.{c.__qualname__}"
                for c in every_class()
                if "__pydantic_validator__" in c.__dict__
                and type(c.__dict__["__pydantic_validator__"]).__name__ == "SchemaValidator"
            ),
            **{f"before_collect_{k}": v for k, v in uncollected.items() if isinstance(v, int)},
            **{f"after_collect_{k}": v for k, v in after_collect.items() if isinstance(v, int)},
        }
        (where / f"{name}.json").write_text(json.dumps(out))
        diag_extras.malloc_info(where / f"{name}.malloc.xml")
        (where / f"{name}.done").write_text("")

    sampling: dict[str, threading.Event] = {}

    def thread_cpu() -> dict[str, float]:
        """CPU seconds (user + system) of every thread of this process by name — the Python thread's, summed over
        a pool's threads (``hologram-worker_0`` … count as ``hologram-worker``), ``native`` for threads Python did
        not start (onnxruntime's, SQLite's none): which thread's work grows between an early and a late window."""
        names = {t.native_id: t.name.split("_")[0] for t in threading.enumerate()}
        tick = os.sysconf("SC_CLK_TCK")
        out: dict[str, float] = collections.defaultdict(float)
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:  # the thread ended
                continue
            out[names.get(int(task), "native")] += (int(fields[11]) + int(fields[12])) / tick
        return dict(out)

    def sample(name: str, stop: threading.Event, every: float = 0.005) -> None:
        """A sampling profiler of every other thread (what py-spy would give, where ptrace is not allowed):
        each `every` s, each thread's stack; written on stop as (thread, inclusive function counts, leaf
        counts, collapsed stacks). A thread waiting (select, a lock, a queue) is counted apart as idle."""
        me = threading.get_ident()
        cpu_before = thread_cpu()
        idle_leaves = {"select", "poll", "wait", "_wait_for_tstate_lock", "get", "sleep", "acquire", "epoll",
                       "_worker", "run_until_complete", "run_forever", "_log_and_reap", "run", "watch"}  # fmt: skip
        stacks: collections.Counter[tuple[str, str]] = collections.Counter()
        rounds = 0
        while not stop.is_set():
            rounds += 1
            tnames = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                names = []
                f = frame
                while f is not None:
                    code = f.f_code
                    names.append(f"{'/'.join(code.co_filename.rsplit('/', 2)[-2:])}:{code.co_name}")
                    f = f.f_back
                leaf = frame.f_code.co_name
                thread = str(tnames.get(ident, ident)).split("_")[0]
                if leaf in idle_leaves:
                    thread += " (idle)"
                stacks[(thread, ";".join(reversed(names)))] += 1
            frame = f = None  # keep no thread's frame (and its locals) alive between samples
            time.sleep(every)
        cpu_after = thread_cpu()
        with (where / f"{name}.prof").open("w") as out:
            out.write(f"rounds {rounds}\n")
            for thread, seconds in sorted(cpu_after.items()):  # CPU seconds each thread spent in the window
                out.write(f"cpu\t{thread}\t{seconds - cpu_before.get(thread, 0.0):.3f}\n")
            for (thread, stack), n in stacks.most_common():
                out.write(f"{n}\t{thread}\t{stack}\n")
        (where / f"{name}.done").write_text("")

    profilers: dict[str, cProfile.Profile] = {}

    def on_loop(call: Callable[[], None]) -> None:
        """Run `call` on the running event loop's thread and wait for it (cProfile profiles the thread that
        enables it: the kernel's main thread, whose turns a late soak window makes slower)."""
        import asyncio

        # the loop of any task (every task registers in asyncio's set of all tasks; the loop is not found
        # among the collector's objects: uvloop's is not tracked)
        loops = [t.get_loop() for t in list(asyncio.tasks._all_tasks) if t.get_loop().is_running()]
        done = threading.Event()

        def run() -> None:
            try:
                call()
            finally:
                done.set()

        loops[0].call_soon_threadsafe(run)
        done.wait(30)

    def watch() -> None:
        while True:
            for req in sorted(where.glob("req-*")):
                name = req.name[4:]
                req.unlink()
                try:
                    if name.startswith("mmap-"):  # soak_diag.py --mmap-threshold: glibc's, from now on
                        libc = ctypes.CDLL("libc.so.6")
                        libc.mallopt(-3, int(name[5:]))  # M_MMAP_THRESHOLD
                        (where / f"{name}.done").write_text("")
                    elif name == "tracestart":  # --trace-from: trace what is allocated from this turn on
                        tracemalloc.start(max(1, frames))
                        (where / f"{name}.done").write_text("")
                    elif name.startswith("profstart-"):
                        sampling[name[10:]] = threading.Event()
                        threading.Thread(target=sample, args=(name[10:], sampling[name[10:]]), daemon=True).start()
                        (where / f"{name}.done").write_text("")
                    elif name.startswith("peakstart-"):  # http_long_diag.py --peak
                        sampling["peak-" + name[10:]] = stop = threading.Event()
                        out = where / f"{name[10:]}.peak.json"
                        threading.Thread(target=diag_extras.peak_sampler, args=(out, stop), daemon=True).start()
                        (where / f"{name}.done").write_text("")
                    elif name.startswith("peakstop-"):
                        sampling.pop("peak-" + name[9:]).set()
                        time.sleep(0.1)  # the sampler writes its file
                        (where / f"{name}.done").write_text("")
                    elif name.startswith("profstop-"):
                        sampling.pop(name[9:]).set()
                        (where / f"{name}.done").write_text("")
                    elif name.startswith("cprofstart-"):  # cProfile the event loop's thread (calls counted)
                        on_loop(profilers.setdefault(name[11:], cProfile.Profile()).enable)
                        (where / f"{name}.done").write_text("")
                    elif name.startswith("cprofstop-"):
                        prof = profilers.pop(name[10:])
                        on_loop(prof.disable)
                        prof.dump_stats(str(where / f"{name[10:]}.pstats"))
                        (where / f"{name}.done").write_text("")
                    else:
                        answer(name)
                except Exception as exc:
                    (where / f"{name}.done").write_text(repr(exc))
            time.sleep(0.2)

    threading.Thread(target=watch, name="hologram-diag", daemon=True).start()


if (
    os.environ.get("HOLOGRAM_DIAG_DIR")
    and "up" in getattr(sys, "orig_argv", [])[1:]
    and "hologram" in " ".join(getattr(sys, "orig_argv", []))
):
    _start()
