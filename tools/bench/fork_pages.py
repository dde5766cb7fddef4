"""Where a forked plugin's private memory goes: a fork-emulating probe (docs/performance.md, "What a forked
plugin's memory is").

    sudo .venv/bin/python tools/bench/fork_pages.py STEP[+STEP…] … [--settle] [--objects N]

A fresh interpreter does what the zygote does before forking — `hologram.zygote.main.preload()` and, with
``--settle``, `hologram.zygote.settle.settle()` — and maps its live objects (address, size, type). Then, per
argument, it forks a child that runs the steps (see `STEPS`; ``import:MODULE`` imports MODULE) and waits. A
second fork of the parent reads both processes (its own writes land in its own copies, never in the parent's
pages) and prints, for the child:

* pages copied from the parent (same address, another physical frame: /proc/PID/pagemap, which shows frame
  numbers to root only) and pages new to the child, by mapping ([anon]: pymalloc's arenas and large blocks);
* the copied pages by what differs from the parent's bytes (/proc/PID/mem): nothing (written and restored: a
  reference count raised and dropped), fields of known objects only, free space only (a new object in a hole
  of the parent's heap), or both;
* the objects written, by type and field (``refcnt``, ``gc`` header, ``bytecode`` of code objects …), and the
  code objects by file. ``--objects N`` lists the first N written objects.

Counts, not times: the same step gives the same pages run after run.
"""

from __future__ import annotations

import argparse
import bisect
import ctypes
import gc
import importlib
import os
import signal
import struct
import sys
import time
from collections import Counter
from collections.abc import Callable

PAGE = 4096
PFN_MASK = (1 << 55) - 1


def _become() -> None:
    """The child's set-up as `hologram.zygote.child.become` does it, without the fds and the plugin."""
    from hologram.zygote.child import set_environ

    os.setsid()
    for signum in signal.valid_signals():  # as the zygote's child restores every handler
        try:
            handler = signal.getsignal(signum)
            if handler is not None:
                signal.signal(signum, handler)
        except (OSError, ValueError, TypeError):
            pass
    set_environ(dict(os.environ))
    time.tzset()


def _loop() -> None:
    """The SDK's event loop started and stopped (`hologram.base._loop.run`)."""
    from hologram.base import _loop

    async def tick() -> None:
        import asyncio

        await asyncio.sleep(0)

    _loop.run(tick())


STEPS: dict[str, Callable[[], None]] = {"nothing": lambda: None, "become": _become, "loop": _loop}


def run_step(name: str) -> None:
    if name.startswith("import:"):
        importlib.import_module(name.split(":", 1)[1])
    else:
        STEPS[name]()


def object_map() -> list[tuple[int, int, str, int, str]]:
    """(start, size, type, GC-header bytes, description) of every object reachable from the collector, sorted;
    a dict's or a list's separate table is an entry of its own."""
    seen: dict[int, object] = {}
    todo = list(gc.get_objects())
    for o in todo:
        seen[id(o)] = o
    while todo:
        for r in gc.get_referents(todo.pop()):
            if id(r) not in seen:
                seen[id(r)] = r
                todo.append(r)
    out: list[tuple[int, int, str, int, str]] = []
    for address, o in seen.items():
        kind = type(o).__name__
        head = 16 if type(o).__flags__ & (1 << 14) else 0  # Py_TPFLAGS_HAVE_GC: a header before the object
        try:
            size = sys.getsizeof(o)
        except Exception:
            size = 16
        what = ""
        if kind == "str":
            what = repr(o)[:40]
        elif kind == "code":
            what = f"{o.co_qualname} {o.co_filename.rsplit('/', 1)[-1]}"  # type: ignore[attr-defined]
        elif isinstance(o, type):
            what = o.__qualname__
        if kind == "dict":
            out.append((address - head, 64, kind, head, what))
            keys = ctypes.c_void_p.from_address(address + 32).value
            if keys:
                out.append((keys, max(size - 64, 8), "dict-keys", 0, what))
        elif kind == "list":
            out.append((address - head, 56, kind, head, what))
            items = ctypes.c_void_p.from_address(address + 24).value
            if items:
                out.append((items, ctypes.c_ssize_t.from_address(address + 32).value * 8, "list-items", 0, ""))
        else:
            out.append((address - head, size, kind, head, what))
    out.sort()
    return out


def frames(pid: int) -> dict[int, tuple[int, str]]:
    """Resident pages of `pid`: address → (physical frame, mapping name)."""
    found: dict[int, tuple[int, str]] = {}
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            parts = line.split(maxsplit=5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            name = parts[5].strip().rsplit("/", 1)[-1] if len(parts) > 5 else "[anon]"
            if name == "[vsyscall]":
                continue
            pagemap.seek(start // PAGE * 8)
            for i, (entry,) in enumerate(struct.iter_unpack("<Q", pagemap.read((end - start) // PAGE * 8))):
                if entry >> 63:
                    found[start + i * PAGE] = (entry & PFN_MASK, name)
    return found


def _change(known: int, free: int) -> str:
    """What a copied page's changed words were: none, object fields, free space, or both."""
    if not known and not free:
        return "identical bytes"
    if not free:
        return "objects only"
    return "free space only" if not known else "objects and free space"


def analyse(label: str, parent: int, child: int, objects: list[tuple[int, int, str, int, str]], listed: int) -> None:
    starts = [o[0] for o in objects]
    mine, theirs = frames(parent), frames(child)
    if not any(pfn for pfn, _ in mine.values()):
        sys.exit("no frame numbers in /proc/PID/pagemap: run as root")
    copied = sorted(a for a, (pfn, _) in theirs.items() if a in mine and mine[a][0] != pfn)
    new = Counter(name for a, (_, name) in theirs.items() if a not in mine)
    by_map = Counter(theirs[a][1] for a in copied)
    kinds: Counter[str] = Counter()
    fields: Counter[tuple[str, str]] = Counter()
    files: Counter[str] = Counter()
    written: list[str] = []
    done: set[tuple[int, str]] = set()
    with open(f"/proc/{parent}/mem", "rb") as pmem, open(f"/proc/{child}/mem", "rb") as cmem:
        for page in copied:
            pmem.seek(page)
            cmem.seek(page)
            try:
                before, after = pmem.read(PAGE), cmem.read(PAGE)
            except OSError:
                continue
            known = free = 0
            for offset in range(0, PAGE, 8):
                if before[offset : offset + 8] == after[offset : offset + 8]:
                    continue
                address = page + offset
                i = bisect.bisect_right(starts, address) - 1
                if i < 0 or address >= objects[i][0] + objects[i][1]:
                    free += 1
                    continue
                known += 1
                start, _, kind, head, what = objects[i]
                inner = address - start - head
                field = (
                    "gc"
                    if inner < 0
                    else "refcnt"
                    if inner < 8
                    else "bytecode"
                    if kind == "code" and inner >= 200
                    else "field"
                )
                if (start, field) not in done:
                    done.add((start, field))
                    fields[(kind, field)] += 1
                    written.append(f"{kind}.{field} {what}")
                    if kind == "code" and what:
                        files[what.rsplit(" ", 1)[-1]] += 1
            kinds[_change(known, free)] += 1
    mb = PAGE / 1024 / 1024
    print(f"== {label}: copied {len(copied) * mb:.2f} MB, new {sum(new.values()) * mb:.2f} MB")
    print("  copied by mapping: " + ", ".join(f"{k} {v * mb:.2f}" for k, v in by_map.most_common(5)))
    print("  new by mapping:    " + ", ".join(f"{k} {v * mb:.2f}" for k, v in new.most_common(4)))
    print("  copied by change:  " + ", ".join(f"{k} {v * mb:.2f}" for k, v in kinds.most_common()))
    print("  writes (objects):  " + ", ".join(f"{k}.{f} {n}" for (k, f), n in fields.most_common(12)))
    print("  code written, by file: " + ", ".join(f"{k} {n}" for k, n in files.most_common(12)))
    for line in written[:listed]:
        print("    " + line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", nargs="+", help=f"STEP[+STEP…]; steps: {', '.join(STEPS)}, import:MODULE")
    parser.add_argument("--settle", action="store_true", help="run the zygote's settle step before forking")
    parser.add_argument("--objects", type=int, default=0, help="list this many written objects")
    parser.add_argument(
        "--pages-only", action="store_true", help="no object map (its own temporaries leave free space behind)"
    )
    args = parser.parse_args()
    from hologram.base._unused_imports import allow_unused_imports, refuse_unused_imports
    from hologram.zygote.main import preload

    refuse_unused_imports()
    preload()
    if args.settle:
        from hologram.zygote.settle import fill_pool_holes, settle

        settle()
    objects = [] if args.pages_only else object_map()
    if args.settle and not args.pages_only:
        fill_pool_holes()  # the holes the map's own temporaries left
    for combo in args.steps:
        ready_r, ready_w = os.pipe()
        child = os.fork()
        if child == 0:
            allow_unused_imports()
            for step in combo.split("+"):
                run_step(step)
            os.write(ready_w, b"x")
            signal.pause()
            os._exit(0)
        os.read(ready_r, 1)
        reader = os.fork()
        if reader == 0:
            analyse(combo, os.getppid(), child, objects, args.objects)
            sys.stdout.flush()
            os._exit(0)
        os.waitpid(reader, 0)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(ready_r)
        os.close(ready_w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
