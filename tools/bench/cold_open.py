"""Opening a large cold context (L2): `ColdStore` open and `hologram up` readiness, empty vs 100k events.

    .venv/bin/python tools/bench/cold_open.py [--events 100000] [--rounds 3] [--reuse PATH]

Builds an L2 of N synthetic events (``memory.py``'s generator: Zipfian 20k-word vocabulary, 5-40 words and a
512-d vector per event, 500 events per session) in a temp data directory, then measures, in the same run:

(a) ``ColdStore(path)`` open time on an empty ``cold.db`` vs the N-event one (alternately, median of
    ``--rounds * 3``); on the N-event one, the time to the first membership answer (it waits for the damage
    check the open starts in the background) and the first ``search()`` (it builds the in-memory index, which
    open no longer does);
(b) the product path: `hologram up` on the default graph (builtins, a provider on a closed loopback port:
    nothing is asked) with an empty data directory vs one whose ``cold.db`` holds the N events, started
    alternately ``--rounds`` times each. Ready = every plugin ready on the control socket (`BenchKernel`).
    Then the kernel is left idle until its start-up heap is frozen (the embedding model and the segmenter
    loaded, hologram/base/_heap.py) plus 1 s, and its RSS (``VmRSS``, /proc/PID/status) and PSS (smaps_rollup)
    are read.

Printed: medians, and the ratios N-event / empty (target for readiness, issue 11 item 4: <= 1.2x).
``--reuse PATH`` keeps the built ``cold.db`` at PATH (and reuses it if it exists) to skip the ~25 s build.
The N-event file is read from the page cache in every measurement (it was just written or read).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench

import numpy as np

from bench._kernel import BenchKernel, provider_toml
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.rank.events import Query
from hologram.memory.text.tfidf import TermVector
from memory import synthetic_cold_records


def build_cold(path: Path, n: int) -> None:
    records, _ = synthetic_cold_records(np.random.default_rng(0), n)
    with ColdStore(path, synchronous="NORMAL") as store:  # the same rows as FULL; only the build is faster
        for start in range(0, n, 5000):
            store.put(records[start : start + 5000])


def open_seconds(path: Path) -> float:
    started = time.perf_counter()
    store = ColdStore(path)
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed


def after_open(path: Path) -> tuple[float, float, float]:
    """Seconds from open to the first membership answer (it waits for the damage check the open started in
    the background), the CPU seconds of this process meanwhile (the check's), and the first search (it
    builds the index)."""
    rng = np.random.default_rng(1)
    qv = rng.standard_normal(512).astype(np.float32)
    query = Query("w1 w2 w30", TermVector.from_terms(["w1", "w2", "w30"]), DenseVector("synthetic/512", qv))
    started, cpu = time.perf_counter(), time.process_time()
    with ColdStore(path) as store:
        assert "ev_none" not in store
        answered, check_cpu = time.perf_counter() - started, time.process_time() - cpu
        started = time.perf_counter()
        store.search(query, 10)
        return answered, check_cpu, time.perf_counter() - started


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, Pss) of a process, in kB."""

    def field(text: str, name: str) -> int:
        line = next(line for line in text.splitlines() if line.startswith(name + ":"))
        return int(line.split()[1])

    rss = field(Path(f"/proc/{pid}/status").read_text(), "VmRSS")
    pss = field(Path(f"/proc/{pid}/smaps_rollup").read_text(), "Pss")
    return rss, pss


def wait_idle(kernel: BenchKernel, timeout: float = 60) -> None:
    """Until the start-up heap is frozen (models loaded), then one more second."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not kernel.status()["kernel"]["heap_frozen"]:
        time.sleep(0.1)
    time.sleep(1.0)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def ensure_cold(path: Path, events: int) -> Path:
    """`path`, a cold.db of `events` synthetic events, built unless it is already there (``--reuse``)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        build_cold(path, events)
        print(f"built {events:,} events in {time.perf_counter() - started:.1f} s: {path}", flush=True)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reuse", type=Path, help="keep (or reuse) the built cold.db here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        big = ensure_cold(args.reuse or root / "big" / "cold.db", args.events)
        with ColdStore(big) as store:
            n = len(store)
        size_mb = sum(p.stat().st_size for p in big.parent.glob(big.name + "*")) / 1e6
        empty = root / "empty" / "cold.db"
        ColdStore(empty).close()

        # (a) the store alone
        opens: dict[str, list[float]] = {"empty": [], "full": []}
        for _ in range(args.rounds * 3):
            opens["empty"].append(open_seconds(empty))
            opens["full"].append(open_seconds(big))
        answered, check_cpu, searched = after_open(big)
        e, f = median(opens["empty"]), median(opens["full"])
        print(
            f"ColdStore open: empty {e * 1000:.1f} ms, {n:,} events ({size_mb:.0f} MB) {f * 1000:.1f} ms "
            f"(ratio {f / e:.1f}x); first answer after open {answered * 1000:.0f} ms (the damage check in the "
            f"background, {check_cpu * 1000:.0f} ms CPU); first search {searched * 1000:.0f} ms (builds the index)"
        )

        # (b) the product: hologram up, default graph
        settings = provider_toml("idle", "http://127.0.0.1:9", max_retries=0)
        kernels = {"empty": BenchKernel(root / "k-empty", settings, builtins=True)}
        kernels["full"] = BenchKernel(root / "k-full", settings, builtins=True)
        shutil.copy(big, kernels["full"].data / "cold.db")
        ready: dict[str, list[float]] = {"empty": [], "full": []}
        memory: dict[str, list[tuple[int, int]]] = {"empty": [], "full": []}
        for i in range(args.rounds):
            for name in ("empty", "full") if i % 2 == 0 else ("full", "empty"):
                kernel = kernels[name]
                try:
                    ready[name].append(kernel.start())
                    wait_idle(kernel)
                    memory[name].append(memory_kb(int(kernel.status()["kernel"]["pid"])))
                finally:
                    kernel.stop()
                rss, pss = memory[name][-1]
                print(
                    f"  round {i + 1} {name:5}: ready {ready[name][-1]:.2f} s, idle RSS {rss / 1024:.0f} MB, "
                    f"PSS {pss / 1024:.0f} MB",
                    flush=True,
                )
        re_, rf = median(ready["empty"]), median(ready["full"])
        rss_e = median([m[0] for m in memory["empty"]]) / 1024
        rss_f = median([m[0] for m in memory["full"]]) / 1024
        pss_e = median([m[1] for m in memory["empty"]]) / 1024
        pss_f = median([m[1] for m in memory["full"]]) / 1024
        verdict = "ok" if rf <= 1.2 * re_ else "MISSED"
        print(
            f"hologram up ready: empty {re_:.2f} s, {n:,}-event L2 {rf:.2f} s: ratio {rf / re_:.2f}x "
            f"(target <= 1.2x: {verdict})"
        )
        print(
            f"kernel idle: RSS empty {rss_e:.0f} MB, {n:,}-event L2 {rss_f:.0f} MB (+{rss_f - rss_e:.0f} MB); "
            f"PSS empty {pss_e:.0f} MB, {n:,}-event L2 {pss_f:.0f} MB"
        )
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
