"""Where the soak's kernel memory goes: the sweep's soak turns with tracemalloc inside the kernel.

    nice -n 10 .venv/bin/python tools/bench/soak_diag.py --turns 3000 --at 1000,3000 [--frames 12] [--keep DIR]
                                                          [--profile 2000,9000 [--profile-turns 300]]

Runs `hologram up` as the sweep's soak does (same settings, same tool-using turns, round-robin over
sessions), with tools/bench/diag/ on the kernel's PYTHONPATH so its sitecustomize traces allocations; at each
turn of ``--at`` it asks the kernel for a snapshot (after a full collection) and reads the kernel's anonymous
memory from /proc. Then it prints, between the first and the last snapshot: the traced growth grouped by
traceback (the biggest first), live objects by type that grew, SQLite's own memory and glibc's heap. Why a
separate tool: tracemalloc slows the kernel and changes its memory, so the sweep itself must never run it.

``--profile`` samples every thread's stack in the kernel (every 5 ms, in-process: py-spy needs ptrace, which a
container may not allow) over ``--profile-turns`` turns from each turn given, and prints where each busy
thread's samples go (inclusive, by function) and the kernel's CPU a turn over that window — run with
``--frames 0`` (tracemalloc changes what a turn costs), diff an early window against a late one.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

from bench import _threads as threads
from bench._kernel import BenchKernel, configure_bytecode, kernel_env_option
from bench.sweep import CHINESE, ENGLISH, answered, cpu_s, private_kb, settings_for, tool_step
from hologram.clients import TurnClient
from mock_llm import MockLLM

DIAG = Path(__file__).resolve().parent / "diag"


def diagnosed_kernel(
    root: Path,
    keep: Path | None,
    *,
    frames: int,
    trace_late: bool = False,
    pins: bool = False,
    no_collect: bool = False,
    heapmap: bool = False,
) -> Path:
    """Make the kernels this process starts load tools/bench/diag/'s sitecustomize (through the environment they
    inherit) and write their snapshots to `keep` (or under `root`); returns where the snapshots go. Shared by
    this tool and http_long_diag.py so both start the kernel the same way."""
    where = keep or root / "diag"
    where.mkdir(parents=True, exist_ok=True)
    configure_bytecode(root)
    os.environ["HOLOGRAM_DIAG_DIR"] = str(where)
    os.environ["HOLOGRAM_DIAG_FRAMES"] = str(frames)
    for flag, on in (("HOLOGRAM_DIAG_TRACE_LATE", trace_late), ("HOLOGRAM_DIAG_PINS", pins),
                     ("HOLOGRAM_DIAG_NO_COLLECT", no_collect), ("HOLOGRAM_DIAG_HEAPMAP", heapmap)):  # fmt: skip
        if on:
            os.environ[flag] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DIAG), os.environ.get("PYTHONPATH")]))
    return where


def ask(where: Path, name: str, timeout: float = 600) -> dict[str, object]:
    """Ask the kernel's diagnostics thread for snapshot `name` and wait for it (a file appears when done)."""
    (where / f"req-{name}").write_text("")
    deadline = time.monotonic() + timeout
    while not (where / f"{name}.done").exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no snapshot {name} after {timeout} s")
        time.sleep(0.2)
    error = (where / f"{name}.done").read_text()
    if error:
        raise RuntimeError(f"snapshot {name}: {error}")
    answer = where / f"{name}.json"  # a profile's start and stop answer with no figures
    out: dict[str, object] = json.loads(answer.read_text()) if answer.exists() else {}
    return out


def report(where: Path, first: str, last: str, turns: int, top: int) -> None:
    if (where / f"{first}.snap").exists() and (where / f"{last}.snap").exists():
        traced(where, first, last, turns, top)
    ja, jb = json.loads((where / f"{first}.json").read_text()), json.loads((where / f"{last}.json").read_text())
    print(f"\n== objects {ja['objects']:,} -> {jb['objects']:,}; by type (grown) ==")
    ta, tb = ja["types"], jb["types"]
    diffs = sorted(((tb.get(k, 0) - ta.get(k, 0), k) for k in set(ta) | set(tb)), reverse=True)
    for d, k in diffs[:30]:
        if d:
            print(f"  {d:+8d}  {k}  ({tb.get(k, 0):,} now)")
    ca, cb = ja.get("census", {}), jb.get("census", {})
    rows = sorted(((cb.get(k, [0, 0])[0] - ca.get(k, [0, 0])[0], k) for k in set(ca) | set(cb)), reverse=True)
    total_a = sum(v[0] for k, v in ca.items() if not k.startswith("lru "))
    total_b = sum(v[0] for k, v in cb.items() if not k.startswith("lru "))
    print(
        f"\n== bytes held by owner.attribute or module:global (numpy buffers, containers' storage), grown; "
        f"total {total_a / 1024:.0f} -> {total_b / 1024:.0f} KiB =="
    )
    for k in sorted(set(ca) | set(cb)):  # functools.lru_cache entries (not bytes), grown
        if k.startswith("lru ") and cb.get(k, [0, 0])[0] != ca.get(k, [0, 0])[0]:
            print(f"  {k}: {ca.get(k, [0, 0])[0]:,} -> {cb.get(k, [0, 0])[0]:,} entries")
    rows = [(d, k) for d, k in rows if not k.startswith("lru ")]
    for d, k in rows[:25]:
        if d:
            was, now = ca.get(k, [0, 0]), cb.get(k, [0, 0])
            print(
                f"  {d / 1024:+9.1f} KiB  {k}  ({was[0] / 1024:.0f} -> {now[0] / 1024:.0f} KiB, {was[1]} -> {now[1]})"
            )
    for name, snap in ((first, ja), (last, jb)):
        print(f"\n== {name}: the full collection found {snap.get('collected', 0):,} unreachable objects ==")
        for kind, count in list(snap.get("garbage", {}).items())[:25]:
            print(f"  {count:7,d}  {kind}")
    ba, bb = ja.get("big", {}), jb.get("big", {})
    print("\n== blocks of 128 KiB and more (glibc maps each on its own), by holder: KiB, count, longest ==")
    for k in sorted(set(ba) | set(bb), key=lambda k: -(bb.get(k, [0])[0] - ba.get(k, [0])[0])):
        was, now = ba.get(k, [0, 0, 0]), bb.get(k, [0, 0, 0])
        print(
            f"  {(now[0] - was[0]) / 1024:+9.1f} KiB  {k}  ({was[0] / 1024:.0f} -> {now[0] / 1024:.0f} KiB, "
            f"{was[1]} -> {now[1]}, longest {was[2]:,} -> {now[2]:,})"
        )
    for kind, held in jb.get("holders", {}).items():
        print(f"  held: the newest {kind} objects are referred to by {held}")
    for name, row in sorted(jb.get("sqlite_by_file", {}).items()):
        was = ja.get("sqlite_by_file", {}).get(name, [0, 0, 0, 0])
        print(f"  SQLite {name} ({row[3]} connections): page cache {was[0] / 1024:.0f} -> {row[0] / 1024:.0f} KiB, "
              f"statements {was[2] / 1024:.0f} -> {row[2] / 1024:.0f} KiB")  # fmt: skip
    numbers = (
        k for k in jb if isinstance(jb[k], int) and k.startswith(("sqlite", "malloc", "traced", "anon", "blocks"))
    )
    for key in sorted(numbers):
        a, b = ja.get(key, 0), jb.get(key, 0)
        print(f"  {key}: {a:,} -> {b:,} ({(b - a) / 1024:+.1f} K, {(b - a) / turns:+.1f} a turn)")


def arenas(path: Path) -> dict[str, tuple[int, int]]:
    """glibc's arenas from a snapshot's malloc_info XML: arena number -> (bytes it holds from the system, bytes
    of it in use, i.e. less its free chunks); "mmap" -> (blocks, bytes) of the directly mmap-ed chunks."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    out: dict[str, tuple[int, int]] = {}
    for heap in root.findall("heap"):
        current = next((int(e.get("size", 0)) for e in heap.findall("system") if e.get("type") == "current"), 0)
        free = sum(int(e.get("size", 0)) for e in heap.findall("total") if e.get("type") in ("fast", "rest"))
        out[heap.get("nr", "?")] = (current, current - free)
    for total in root.findall("total"):
        if total.get("type") == "mmap":
            out["mmap"] = (int(total.get("count", 0)), int(total.get("size", 0)))
    return out


def arenas_report(where: Path, first: str, last: str) -> None:
    """Each arena's held and in-use bytes at both snapshots: which thread's heap grew (arena 0 is the main one,
    the event loop's)."""
    a_path, b_path = where / f"{first}.malloc.xml", where / f"{last}.malloc.xml"
    if not (a_path.exists() and b_path.exists()):
        return
    a, b = arenas(a_path), arenas(b_path)
    print("\n== glibc arenas: held / in use, KiB (mmap: blocks / KiB) ==")
    for nr in sorted(set(a) | set(b), key=lambda k: (k == "mmap", int(k) if k.isdigit() else 0)):
        (ha, ua), (hb, ub) = a.get(nr, (0, 0)), b.get(nr, (0, 0))
        if nr == "mmap":
            print(f"  mmap: {ha} -> {hb} blocks, {ua / 1024:.0f} -> {ub / 1024:.0f} KiB")
        else:
            print(f"  arena {nr}: held {ha / 1024:.0f} -> {hb / 1024:.0f}, in use {ua / 1024:.0f} -> {ub / 1024:.0f} "
                  f"({(ub - ua) / 1024:+.0f})")  # fmt: skip


def heap_report(where: Path, first: str, last: str, top: int) -> None:
    """The main heap's map at both snapshots (tools/bench/diag/heapmap.py): resident, live and free bytes, the
    resident and live bytes of each MiB of the heap, and the live chunks by kind with the resident-but-unused
    bytes of their pages charged to them (waste), the kinds whose live bytes or waste grew most first."""
    a_path, b_path = where / f"{first}.heap.json", where / f"{last}.heap.json"
    if not (a_path.exists() and b_path.exists()):
        return
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    if "error" in a or "error" in b:
        print(f"\n== the main heap: not walked ({a.get('error')}, {b.get('error')}) ==")
        return
    mb = 1 / 2**20
    print("\n== the main heap ([heap]) walked: MiB ==")
    for key in ("heap_hi", "resident", "live", "free", "live_chunks", "free_chunks", "top_chunk_at"):
        va, vb = a[key] - (a["heap_lo"] if key == "heap_hi" else 0), b[key] - (b["heap_lo"] if key == "heap_hi" else 0)
        scale = 1 if key.endswith("chunks") else mb
        print(f"  {key}: {va * scale:,.2f} -> {vb * scale:,.2f}")
    print(f"  free chunks by size: {a['free_sizes']} -> {b['free_sizes']}")
    for side, x in (("first", a), ("last", b)):
        pre = x.get("before_trim", {})
        if pre:
            print(f"  before the walk's trim ({side}): resident {pre['resident'] * mb:.2f} MiB, of it in free chunks "
                  f"{ {k: round(v * mb, 2) for k, v in pre['free_resident'].items()} } MiB by chunk size, "
                  f"top chunk {pre['top_resident'] * mb:.2f}")  # fmt: skip
    print("  by MiB of the heap: resident / live MiB")
    for band in sorted(set(a["bands"]) | set(b["bands"]), key=int):
        ra, la = a["bands"].get(band, [0, 0])
        rb, lb = b["bands"].get(band, [0, 0])
        print(f"    {band:>3}: {ra * mb:5.2f} / {la * mb:5.2f} -> {rb * mb:5.2f} / {lb * mb:5.2f}")
    ka, kb = a["by_kind"], b["by_kind"]
    zero = [0, 0, 0, 0]
    rows = sorted(set(ka) | set(kb), key=lambda k: -abs((kb.get(k, zero)[1] + kb.get(k, zero)[2])
                                                        - (ka.get(k, zero)[1] + ka.get(k, zero)[2])))  # fmt: skip
    print("  live chunks by kind: count, live KiB, waste KiB charged, pages alone (first -> last)")
    for k in rows[:top]:
        x, y = ka.get(k, zero), kb.get(k, zero)
        print(f"    {k[:70]:70} {x[0]:6d} -> {y[0]:6d}  {x[1] / 1024:8.0f} -> {y[1] / 1024:8.0f}  "
              f"{x[2] / 1024:7.0f} -> {y[2] / 1024:7.0f}  {x[3]:5d} -> {y[3]:5d}")  # fmt: skip


def traced(where: Path, first: str, last: str, turns: int, top: int) -> None:
    a = tracemalloc.Snapshot.load(str(where / f"{first}.snap"))
    b = tracemalloc.Snapshot.load(str(where / f"{last}.snap"))
    ignore = [
        tracemalloc.Filter(False, tracemalloc.__file__),
        tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    ]
    a, b = a.filter_traces(ignore), b.filter_traces(ignore)
    per = max(1, turns)
    for group in ("lineno", "traceback"):
        stats = b.compare_to(a, group)
        grown = sum(s.size_diff for s in stats)
        print(f"\n== traced growth by {group}: {grown / 1024:+.1f} KiB ({grown / per:+.1f} B a turn) ==")
        for s in stats[:top]:
            print(f"{s.size_diff / 1024:+9.1f} KiB {s.count_diff:+7d} blocks  ({s.size / 1024:.1f} KiB now)")
            frames = s.traceback.format()[-(14 if group == "traceback" else 2) :]
            for line in frames:
                print("      " + line.strip()[:160])


def profiled(where: Path, name: str, top: int) -> None:
    """The busy threads' samples of profile `name`, by function (inclusive) and by leaf."""
    lines = (where / f"{name}.prof").read_text().splitlines()
    rounds = int(lines[0].split()[1])
    cpu = {f[1]: float(f[2]) for f in (line.split("\t") for line in lines[1:] if line.startswith("cpu\t"))}
    lines = [line for line in lines if not line.startswith("cpu\t")]
    by_thread: dict[str, Counter[str]] = {}
    leaves: dict[str, Counter[str]] = {}
    busy: Counter[str] = Counter()
    for line in lines[1:]:
        n, thread, stack = line.split("\t", 2)
        if thread.endswith("(idle)"):
            continue
        frames = stack.split(";")
        busy[thread] += int(n)
        inclusive = by_thread.setdefault(thread, Counter())
        for fn in set(frames):
            inclusive[fn] += int(n)
        leaves.setdefault(thread, Counter())[frames[-1]] += int(n)
    print(f"\n== profile {name}: {rounds} rounds; busy samples by thread: {dict(busy.most_common(8))} ==")
    if cpu:  # over the window's turns (profile_turns): which thread's CPU grows from an early window to a late one
        print(
            f"  CPU seconds by thread: {', '.join(f'{t} {s:.2f}' for t, s in sorted(cpu.items(), key=lambda x: -x[1]))}"
        )
    for thread, _ in busy.most_common(4):
        print(f"  -- {thread}: inclusive")
        for fn, n in by_thread[thread].most_common(top):
            print(f"    {n:6d} {100 * n / busy[thread]:5.1f}%  {fn}")
        print(f"  -- {thread}: leaves")
        for fn, n in leaves[thread].most_common(12):
            print(f"    {n:6d} {100 * n / busy[thread]:5.1f}%  {fn}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--at", default="1000,3000", help="turns after which to snapshot")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--context-window", type=int, default=6000)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--keep", type=Path, help="keep the snapshots here (default: a temporary directory)")
    parser.add_argument(
        "--heapmap",
        action="store_true",
        help="walk glibc's main heap at each snapshot "
        "(tools/bench/diag/heapmap.py): which live chunks keep which resident pages",
    )
    parser.add_argument(
        "--mmap-threshold",
        type=int,
        help="set glibc's M_MMAP_THRESHOLD in the kernel after "
        '"ready" (the kernel fixes it at 128 KiB): blocks of this size and more are mapped and '
        "returned on free — what a request's arrays leave in [heap] without them",
    )
    parser.add_argument("--profile", default="", help="turns from which to sample the kernel's stacks")
    parser.add_argument("--profile-turns", type=int, default=300)
    parser.add_argument(
        "--census-every",
        type=int,
        default=250,
        help="print the kernel's anonymous memory, threads and glibc heaps every this many turns (0: never)",
    )
    parser.add_argument(
        "--trace-from",
        type=int,
        help="start tracemalloc (--frames frames) at this turn, not at start: the snapshots after it hold what "
        "was allocated since and is still alive (the turns before run at full speed)",
    )
    parser.add_argument(
        "--release-idle-s",
        type=float,
        help="[memory] release_idle_s for the kernel: on a loaded host the soak's turns slow past the default 2 s "
        "a session idles, so every turn releases and reads back its session, which a quiet host never does; a "
        "larger value keeps the quiet host's path",
    )
    parser.add_argument(
        "--kernel-env", action="append", default=[], metavar="NAME=VALUE", help="set for the kernel's process only"
    )
    args = parser.parse_args()
    kernel_env_option(args.kernel_env)
    at = sorted(int(t) for t in args.at.split(","))
    profile_at = {int(t) for t in args.profile.split(",") if t}
    profile_end = {t + args.profile_turns: t for t in profile_at}
    cpu_at: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        root = Path(tmp)
        where = diagnosed_kernel(
            root, args.keep, frames=args.frames, trace_late=bool(args.trace_from), heapmap=args.heapmap
        )
        settings = settings_for(mock, context_window=args.context_window)
        if args.release_idle_s is not None:
            settings += f"\n[memory]\nrelease_idle_s = {args.release_idle_s}\n"
        kernel = BenchKernel(root / "soak", settings, builtins=True)
        try:
            kernel.start(timeout=600)  # tracemalloc slows the start several times
            pid = int(kernel.status()["kernel"]["pid"])
            mock.reset()
            mock.script([], default=tool_step())
            if args.mmap_threshold:
                ask(where, f"mmap-{args.mmap_threshold}")
            ids: list[str | None] = [None] * args.sessions
            cpu_was, cpu_mark = [cpu_s(pid), 0.0], [0.0, 0.0]  # the previous census's CPU seconds and turn

            async def run() -> None:
                started = time.perf_counter()
                async with await TurnClient.connect(kernel.data, client="soak-diag") as client:
                    for i in range(args.turns):
                        slot = i % args.sessions
                        stream = await client.start(f"{ENGLISH if i % 2 == 0 else CHINESE} ({i})", session=ids[slot])
                        answered(await stream.result(), stream.events)
                        ids[slot] = stream.session
                        if (i + 1) % 100 == 0:
                            with mock.state.lock:
                                mock.state.requests.clear()
                        if args.census_every and (i + 1) % args.census_every == 0:
                            anon = private_kb(pid).get("anon_kb", 0) / 1024
                            cpu, cpu_mark[:] = cpu_s(pid), [cpu_s(pid), i + 1]  # the kernel's CPU a turn since
                            print(f"turn {i + 1}: anonymous {anon:.1f} MiB, {threads.line(threads.census(pid))}; "
                                  f"kernel CPU {1000 * (cpu - cpu_was[0]) / (i + 1 - cpu_was[1]):.1f} ms a turn",
                                  flush=True)  # fmt: skip
                            cpu_was[:] = cpu_mark
                        if i + 1 in profile_at:
                            await asyncio.to_thread(ask, where, f"profstart-p{i + 1}")
                            cpu_at[i + 1] = cpu_s(pid)
                        if i + 1 in profile_end:
                            first = profile_end[i + 1]
                            await asyncio.to_thread(ask, where, f"profstop-p{first}")
                            cpu = 1000 * (cpu_s(pid) - cpu_at[first]) / args.profile_turns
                            print(
                                f"profile p{first}: kernel CPU {cpu:.1f} ms a turn over turns {first}-{i + 1}",
                                flush=True,
                            )
                        if i + 1 == args.trace_from:
                            await asyncio.to_thread(ask, where, "tracestart")
                        if i + 1 in at:
                            got = await asyncio.to_thread(ask, where, f"t{i + 1}")
                            anon = private_kb(pid).get("anon_kb", 0)
                            got["anon_kb"] = anon
                            got["threads"] = threads.census(pid)
                            print(f"turn {i + 1}: the kernel's threads {got['threads'].get('thread_ids')}, "
                                  f"Python's {got.get('python_threads')}", flush=True)  # fmt: skip
                            (where / f"t{i + 1}.json").write_text(json.dumps(got))
                            print(f"turn {i + 1}: traced {int(got['traced']) / 2**20:.1f} MiB, objects "  # type: ignore[call-overload]
                                  f"{got['objects']:,}, anonymous {anon / 1024:.1f} MiB, "
                                  f"{(i + 1) / (time.perf_counter() - started):.1f} turns/s", flush=True)  # fmt: skip

            asyncio.run(run())
        finally:
            kernel.stop()
        for first, last in itertools.pairwise(at):
            print(f"\n######## turn {first} -> {last}")
            report(where, f"t{first}", f"t{last}", last - first, args.top)
            arenas_report(where, f"t{first}", f"t{last}")
            heap_report(where, f"t{first}", f"t{last}", args.top)
        time.sleep(0.5)  # the sampler writes its file after the stop's answer
        for first in sorted(profile_at):
            if (where / f"p{first}.prof").exists():
                profiled(where, f"p{first}", args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
