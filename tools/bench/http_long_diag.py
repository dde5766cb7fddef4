"""What the kernel keeps after long turns: http_turns.py --long's turns with the diagnostics inside the kernel.

    nice -n 10 .venv/bin/python tools/bench/http_long_diag.py [--sessions 3] [--frames 5] [--keep DIR]

Runs the long-turns bench's kernel (tools/bench/http_long.py: http and files plugins, the strict mock, one long
turn a session) with tools/bench/diag/ on the kernel's PYTHONPATH, and takes a snapshot (tools/bench/diag:
objects by type, allocated blocks, pymalloc's arenas and pools, mallinfo2, SQLite per connection, a tracemalloc
snapshot when ``--frames`` > 0) idle after the warm-up turn (``t0``), idle after the first long turn (``t1``)
and idle after the last (``tN``), each beside /proc/PID/smaps's anonymous mappings grouped by kind ([heap],
1 MiB pymalloc arenas, glibc thread arenas, other). Then it prints t0 -> t1 and t1 -> tN with
tools/bench/soak_diag.py's report. Why: the bench's target is set by what the *first* long turn leaves
(``--sessions 1`` reaches most of the 28 sessions' growth); this names it. Bench-only; tracemalloc slows the
kernel several times, so the bench itself never runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

import xml.etree.ElementTree as ET

import httpx

from bench import http_long
from bench._kernel import BenchKernel
from bench.http_long import anon_mappings
from bench.soak_diag import ask, diagnosed_kernel, report
from mock_llm import MockLLM


async def turns(
    kernel: BenchKernel,
    mock: MockLLM,
    sessions: int,
    calls: int,
    answer: str,
    where: Path,
    settle: float,
    release: bool,
    every: bool = False,
    trace_late: bool = False,
    peak: bool = False,
    at: frozenset[int] = frozenset(),
) -> None:
    info = json.loads((kernel.data / "http.json").read_text())
    token = (kernel.data / "http-token").read_text().strip()
    memory = http_long.Memory(kernel)
    pid = memory.kernel_pid

    async def snap(name: str, settle: float = http_long.IDLE_S) -> None:
        await asyncio.sleep(settle)
        got = await asyncio.to_thread(ask, where, name)
        got.update({f"anon_{k}": v * 1024 for k, v in anon_mappings(pid).items()})
        (where / f"{name}.smaps").write_text(Path(f"/proc/{pid}/smaps").read_text())
        got["anon_pss"] = int(memory.now()["kernel_anon"] * 2**20)
        (where / f"{name}.json").write_text(json.dumps(got))
        mib = {k: got[f"anon_{k}"] / 2**20 for k in ("anon_total", "heap", "arena_1m", "thread_arena", "other_anon")}
        print(f"{name}: objects {got['objects']:,}, blocks {got['blocks']:,}, "
              f"arenas {got.get('pymalloc_arenas_allocated_current')}, anonymous {mib['anon_total']:.1f} MiB "
              f"(heap {mib['heap']:.1f}, 1 MiB maps {mib['arena_1m']:.1f}, threads {mib['thread_arena']:.1f}, "
              f"other {mib['other_anon']:.1f})", flush=True)  # fmt: skip

    async with httpx.AsyncClient(
        base_url=info["url"], headers={"authorization": f"Bearer {token}"}, timeout=1800
    ) as client:
        mock.script(http_long.turn_script(http_long.CALLS_PER_STEP, "warm"))
        http_long.checked(await http_long.one_turn(client, "warm-up", "go"), "warm")
        await http_long.settled(kernel)
        await snap("t0", settle)  # the embedder loads in a thread from the start: slower under tracemalloc
        if trace_late:  # what the long turns allocate and leave alive, and nothing from before
            await asyncio.to_thread(ask, where, "tracestart")
        for i in range(sessions):
            mock.script(http_long.turn_script(calls, answer))
            if peak and i == 0:  # what is alive at the first long turn's peak, and where the loop is then
                await asyncio.to_thread(ask, where, "peakstart-p1")
            http_long.checked(await http_long.one_turn(client, f"long-{i}", "a long task"), answer)
            if peak and i == 0:
                await asyncio.to_thread(ask, where, "peakstop-p1")
                show_peak(where / "p1.peak.json")
            if every or i + 1 in at or (not at and i in (0, sessions - 1)):
                await snap(f"t{i + 1}")
                if release:  # the same kernel after every SQLite connection's cache is let go, and a heap trim
                    await snap(f"released{i + 1}", 0.0)


def arenas(where: Path, first: str, end: str) -> None:
    """glibc's arenas (malloc_info): size, free chunks and what is in use, first -> end."""

    def load(name: str) -> dict[str, tuple[int, int]]:
        out = {}
        for heap in ET.parse(where / f"{name}.malloc.xml").getroot().findall("heap"):
            current = heap.find("system[@type='current']")
            size = int(current.get("size", 0)) if current is not None else 0
            out[heap.get("nr", "?")] = (size, sum(int(t.get("size", 0)) for t in heap.findall("total")))
        return out

    if not (where / f"{first}.malloc.xml").exists():
        return
    a, b = load(first), load(end)
    for nr in sorted(set(a) | set(b), key=lambda n: int(n) if n.isdigit() else -1):
        (sa, fa), (sb, fb) = a.get(nr, (0, 0)), b.get(nr, (0, 0))
        if sa != sb or fa != fb:
            print(f"  malloc arena {nr}: size {sa >> 10} -> {sb >> 10} KiB, in use {(sa - fa) >> 10} -> "
                  f"{(sb - fb) >> 10} KiB")  # fmt: skip


def show_peak(path: Path) -> None:
    """The first long turn's most pymalloc blocks alive at once (--peak), and the loop's stacks by their highest."""
    got = json.loads(path.read_text())
    series = [b for _, b in got["series"]]
    print(f"peak: {got['max']:,} blocks ({got['samples']:,} samples; first {series[0]:,}, last {series[-1]:,})")
    print(f"  at: {got['max_stack']}")
    for stack, blocks in got["by_stack"][:15]:
        print(f"  {blocks:>10,}  {stack[-160:]}")


def pinned(pins: dict[str, object]) -> None:
    """The pymalloc arenas holding fewest live objects (--pins), and what those objects are."""
    for key, value in pins.items():
        if key.startswith("arena ") and isinstance(value, dict) and value["n"] < 200:
            print(f"  pymalloc {key}: {value['n']} objects {value['types']}")
            for sample in value["sample"][:4]:
                print(f"      {sample}")
            for held in value.get("held_by", []):
                print(f"      held: {held}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--answer-kb", type=int, default=120)
    parser.add_argument("--frames", type=int, default=5, help="tracemalloc frames (0: no tracemalloc)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--settle", type=float, default=30.0, help="seconds idle after the warm-up before t0")
    parser.add_argument("--settings", default="", help="TOML added to settings.toml (\\n for new lines)")
    parser.add_argument("--release", action="store_true", help="also snapshot after SQLite's caches are let go")
    parser.add_argument("--pins", action="store_true", help="name the objects that keep each pymalloc arena")
    parser.add_argument("--trace-late", action="store_true", help="tracemalloc from t0 on (--frames deep), not start")
    parser.add_argument("--no-collect", action="store_true", help="snapshots without a full collection first")
    parser.add_argument("--every", action="store_true", help="snapshot after every long turn, not the first and last")
    parser.add_argument(
        "--at",
        default="",
        help="snapshot after these sessions only (e.g. 1,2,4,8,16,28), the turns between back to back as the "
        "bench runs them (--every's idle pauses let each session's release finish before the next turn)",
    )
    parser.add_argument("--peak", action="store_true", help="sample the blocks alive during the first long turn")
    parser.add_argument("--keep", type=Path, help="keep the snapshots here (default: a temporary directory)")
    args = parser.parse_args()
    answer = http_long.answer_text(args.answer_kb)
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        root = Path(tmp)
        where = diagnosed_kernel(
            root, args.keep, frames=args.frames, trace_late=args.trace_late, pins=args.pins, no_collect=args.no_collect
        )
        (root / "k" / "manifests").mkdir(parents=True)
        for name in ("http", "files"):
            for suffix in (".toml", ".config.schema.json"):
                (root / "k" / "manifests" / f"{name}{suffix}").write_bytes(
                    (http_long.REPO / "manifests" / f"{name}{suffix}").read_bytes()
                )
        steps = args.calls // http_long.CALLS_PER_STEP + 2
        settings = f"[agent]\nmax_steps = {steps}\nmax_tool_calls = {max(args.calls, 1)}\nloop_repeats = 0\n\n"
        settings += http_long.provider_toml("mock", mock.base_url, max_retries=0)
        settings += "\n" + args.settings.replace("\\n", "\n")
        kernel = BenchKernel(root / "k", settings, manifests=["manifests"])
        started = time.perf_counter()
        try:
            kernel.start(timeout=600)
            asyncio.run(
                turns(
                    kernel,
                    mock,
                    args.sessions,
                    args.calls,
                    answer,
                    where,
                    args.settle,
                    args.release,
                    args.every,
                    args.trace_late,
                    args.peak,
                    frozenset(int(n) for n in args.at.split(",") if n.strip()),
                )
            )
        finally:
            kernel.stop()
        print(f"({time.perf_counter() - started:.0f} s)")
        last = f"t{args.sessions}"
        points = [0, *sorted(int(n) for n in args.at.split(",") if n.strip())]
        pairs = [(f"t{i}", f"t{i + 1}") for i in range(args.sessions)] if args.every else []
        pairs = pairs or [(f"t{a}", f"t{b}") for a, b in itertools.pairwise(points)]
        pairs = pairs or ([("t0", "t1"), ("t1", last)] if args.sessions > 1 else [("t0", "t1")])
        for first, end in pairs:
            print(f"\n######## {first} -> {end}")
            report(where, first, end, 1, args.top)
            a, b = json.loads((where / f"{first}.json").read_text()), json.loads((where / f"{end}.json").read_text())
            for key in sorted(k for k in b if "pymalloc_" in k and isinstance(b[k], int)):
                print(f"  {key}: {a.get(key, 0):,} -> {b[key]:,}")
            arenas(where, first, end)
            pinned(b.get("pins", {}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
