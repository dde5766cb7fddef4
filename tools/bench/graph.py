"""The L3 store (memory/graph): batched insert throughput and 1-/2-hop recall latency, at 10k and 100k triples.

    .venv/bin/python tools/bench/graph.py [--sizes 10000,100000] [--batch 5000] [--queries 300] [--paths]
        [--threads 1,2]

Synthetic distillation output shaped like a conversation's: each event moves one block and yields 2 triples;
subjects are drawn from 20 "speaker" hubs half the time and otherwise from the entities seen recently (a
sliding window of 2,000), values are mostly new entities (70 %) — so the graph has hubs and locality, as
distilled chat has. Each size is built in a fresh temp directory through ``KuzuGraphStore.move`` (the
product's write path: one transaction of CSV copies per batch), ``--batch`` triples per move.

Printed per size: triples/s over the whole build (and the first and last batch's time: the commit grows with
the table; and per CPU-second of the process, all its threads: on a loaded machine wall time mostly
measures the other tenants), 1-hop and 2-hop ``neighbourhood`` p50/p99 for ``--queries`` entities drawn from
the triples' values (so mostly ordinary entities; a hub alone would only measure the LIMIT).
``--paths`` also measures the write paths the store did not choose (per-row execute, UNWIND+MATCH, COPY
from an UNWIND subquery) on 2k edges.
Targets (issue 15): >= 10k triples/s batched, 1-hop p50 < 5 ms at 100k. The machine is 2 shared cores
others use; figures move with its load, so the run prints ``os.getloadavg()`` beside them.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from hologram.memory.graph import GraphBlock, Triple, open_graph_store

HUBS = 20


def synthetic(n_triples: int, seed: int = 0) -> list[tuple[list[GraphBlock], list[Triple]]]:
    """Events (one block, two triples each) in time order (module docstring for the shape)."""
    rng = random.Random(seed)
    recent: list[str] = [f"speaker {h}" for h in range(HUBS)]
    events: list[tuple[list[GraphBlock], list[Triple]]] = []
    made = 0
    for k in range(n_triples // 2):
        block = GraphBlock(f"blk_{k}", f"ev_{k}", 0, "input", f"synthetic turn {k}", "{}", "s", 1_700_000_000_000 + k)
        triples = []
        for _ in range(2):
            subject = f"speaker {rng.randrange(HUBS)}" if rng.random() < 0.5 else rng.choice(recent[-2000:])
            if rng.random() < 0.7:
                value = f"thing {made}"
                made += 1
                recent.append(value)
            else:
                value = rng.choice(recent[-2000:])
            triples.append(
                Triple(subject, f"rel{rng.randrange(30)}", value, block.event, block.id, valid_at=block.ts_ms)
            )
        events.append(([block], triples))
    return events


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def run_size(n: int, batch: int, queries: int, threads: int = 1) -> None:
    events = synthetic(n)
    with (
        tempfile.TemporaryDirectory(prefix="graph-bench-") as tmp,
        open_graph_store(Path(tmp) / "graph.kz", threads=threads) as store,
    ):
        per_batch = max(1, batch // 2)
        times: list[float] = []
        started, cpu = time.perf_counter(), time.process_time()
        for i in range(0, len(events), per_batch):
            chunk = events[i : i + per_batch]
            t0 = time.perf_counter()
            store.move([b for bs, _ in chunk for b in bs], [t for _, ts in chunk for t in ts], now=time.time())
            times.append(time.perf_counter() - t0)
        total, cpu = time.perf_counter() - started, time.process_time() - cpu
        counts = store.counts()
        assert counts.triples == n, counts
        rng = random.Random(1)
        names = [t.value for _, ts in events for t in ts]
        probes = [rng.choice(names) for _ in range(queries)]
        lat: dict[int, list[float]] = {1: [], 2: []}
        sizes: dict[int, list[int]] = {1: [], 2: []}
        for hops in (1, 2):
            for name in probes:
                t0 = time.perf_counter()
                found = store.neighbourhood(name, hops=hops, limit=50)
                lat[hops].append((time.perf_counter() - t0) * 1000)
                sizes[hops].append(len(found))
        print(
            f"{n:>7} triples  batch {batch:>5}  threads {threads}: {n / total:>8,.0f} triples/s wall, "
            f"{n / cpu:,.0f} per CPU-second ({total:.1f} s; first batch "
            f"{times[0] * 1000:.0f} ms, last {times[-1] * 1000:.0f} ms; {counts.entities:,} entities)"
        )
        for hops in (1, 2):
            p50, p99 = _pct(lat[hops], 0.5), _pct(lat[hops], 0.99)
            print(
                f"{'':>9}{hops}-hop neighbourhood: p50 {p50:6.2f} ms  p99 {p99:6.2f} ms"
                f"  (median {statistics.median(sizes[hops]):.0f} triples returned, limit 50)"
            )


def compare_paths(edges: int = 2000) -> None:
    """The write paths the store did not choose, measured on the same schema (module docstring of kuzu_store)."""
    import kuzu

    with tempfile.TemporaryDirectory(prefix="graph-paths-") as tmp:
        rng = random.Random(2)
        nodes = [{"id": f"e{i}", "name": f"E{i}"} for i in range(edges)]
        rows = [
            {"s": f"e{rng.randrange(edges)}", "o": f"e{rng.randrange(edges)}", "id": f"t{i}", "p": "rel"}
            for i in range(edges)
        ]
        for name in ("per-row execute in one transaction", "UNWIND $rows MATCH … CREATE", "COPY FROM (UNWIND …)"):
            db = kuzu.Database(str(Path(tmp) / name.split()[0].replace("$", "")))
            conn = kuzu.Connection(db)
            conn.execute("CREATE NODE TABLE Entity(id STRING PRIMARY KEY, name STRING)")
            conn.execute("CREATE REL TABLE Fact(FROM Entity TO Entity, id STRING, predicate STRING)")
            conn.execute("UNWIND $rows AS r CREATE (:Entity {id: r.id, name: r.name})", {"rows": nodes})
            t0 = time.perf_counter()
            if name.startswith("per-row"):
                conn.execute("BEGIN TRANSACTION")
                for r in rows:
                    conn.execute(
                        "MATCH (a:Entity {id: $s}), (b:Entity {id: $o}) "
                        "CREATE (a)-[:Fact {id: $id, predicate: $p}]->(b)",
                        r,
                    )
                conn.execute("COMMIT")
            elif name.startswith("UNWIND"):
                conn.execute(
                    "UNWIND $rows AS r MATCH (a:Entity {id: r.s}), (b:Entity {id: r.o}) "
                    "CREATE (a)-[:Fact {id: r.id, predicate: r.p}]->(b)",
                    {"rows": rows},
                )
            else:
                conn.execute("COPY Fact FROM (UNWIND $rows AS r RETURN r.s, r.o, r.id, r.p)", {"rows": rows})
            dt = time.perf_counter() - t0
            print(f"  {name:<38} {edges / dt:>8,.0f} edges/s ({dt * 1000 / edges:.2f} ms/edge, {edges:,} edges)")
            conn.close()
            db.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--batch", type=int, default=5000, help="triples per move (one transaction)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--paths", action="store_true", help="also measure the write paths not chosen")
    ap.add_argument("--threads", default="1", help="database worker threads, e.g. 1,2 to compare")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared machine: figures move with it)")
    for threads in (int(t) for t in args.threads.split(",")):
        for n in (int(s) for s in args.sizes.split(",")):
            run_size(n, args.batch, args.queries, threads)
    if args.paths:
        compare_paths()


if __name__ == "__main__":
    main()
