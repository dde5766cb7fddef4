"""What running the memory graph in a process of its own costs a request (issue 39 item 8).

    .venv/bin/python tools/bench/graph_process.py [--blocks 2000] [--calls 300] [--rounds 3]

A graph of `--blocks` cooled blocks with two triples each is written once; then ``GraphMemory.ranked`` — the
L3 part of every request (route 2: the entities the input names, their triples and source blocks; route 1:
the session's L3-held events the request's scorer found) and ``GraphMemory.search`` (``memory_recall``'s
passages, the inspection search) are timed with the store opened in the kernel's process (the baseline, as
before item 8: ``open_graph_store``) and through the worker (``WorkerGraphStore``), alternately, `--rounds`
times, in the same run. Prints p50/p99 of each and the ratio, and the open time of each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench

from hologram.config.settings import MemorySettings
from hologram.memory.cold.store import ColdStore
from hologram.memory.graph import GraphBlock, Triple, open_graph_store
from hologram.memory.graph.service import GraphMemory
from hologram.memory.graph.store import GraphStore

QUERIES = ("What does Caroline like?", "Who lives in 北京?", "tell me about person blk_17", "pottery lesson 42")


def write(path: Path, blocks: int) -> list[tuple[str, float]]:
    """The graph; returns route-1 hits (event, score) as a request's scorer would pass them."""
    moved = [
        GraphBlock(f"blk_{i}", f"ev_{i}", 0, "text", f"Caroline said: I love pottery, lesson {i} in 北京", "{}",
                   "s-bench", 1_700_000_000_000 + i)
        for i in range(blocks)
    ]  # fmt: skip
    facts = [
        t
        for b in moved
        for t in (
            Triple("Caroline", "likes", f"pottery {b.id}", b.event, b.id),
            Triple(f"person {b.id}", "lives in", "北京", b.event, b.id),
        )
    ]
    with open_graph_store(path) as store:
        store.move(moved, facts, now=time.time())
    return [(f"ev_{i}", 1.0 + i / blocks) for i in range(0, blocks, max(1, blocks // 8))]


def p(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] * 1000


async def measure(data: Path, worker: bool, calls: int, hits: list[tuple[str, float]]) -> dict[str, list[float]]:
    cold = ColdStore(data / "cold.db")
    graph = GraphMemory.open(data, MemorySettings(), cold)
    if not worker:  # the baseline: the store in this process, as before item 8

        def in_process() -> GraphStore:
            store = open_graph_store(graph.path)
            graph._refresh(store)
            return store

        graph._open_store = in_process  # type: ignore[method-assign]
    started = time.perf_counter()
    await graph.store()
    out: dict[str, list[float]] = {"open": [time.perf_counter() - started], "ranked": [], "search": []}
    for i in range(calls):
        text = QUERIES[i % len(QUERIES)]
        started = time.perf_counter()
        await graph.ranked(text, session_hits=hits)
        out["ranked"].append(time.perf_counter() - started)
        if i % 5 == 0:
            started = time.perf_counter()
            await graph.search(text, limit=10, passages_only=True)
            out["search"].append(time.perf_counter() - started)
    await graph.aclose()
    cold.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        hits = write(data / "graph.kz", args.blocks)
        seen: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
        for r in range(args.rounds):
            for worker in (False, True) if r % 2 == 0 else (True, False):
                got = asyncio.run(measure(data, worker, args.calls, hits))
                for k, v in got.items():
                    seen[worker].setdefault(k, []).extend(v)
    print(f"L3 with {args.blocks:,} blocks, {2 * args.blocks:,} triples; {args.rounds} rounds x {args.calls} calls")
    for what in ("ranked", "search", "open"):
        base, split = seen[False][what], seen[True][what]
        print(
            f"  {what:7} in process p50 {p(base, 0.5):7.2f} ms p99 {p(base, 0.99):7.2f} ms | worker p50 "
            f"{p(split, 0.5):7.2f} ms p99 {p(split, 0.99):7.2f} ms | p50 ratio "
            f"{statistics.median(split) / statistics.median(base):.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
