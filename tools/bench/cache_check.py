"""What `hologram up`'s check of the derived caches costs the start: `up` → every plugin ready with no cache, and
with a ``vectors.db`` of each size given, in the same run (alternating, several starts each); and SQLite's
``quick_check`` of each file alone.

    .venv/bin/python tools/bench/cache_check.py [--sizes-mb 20,200] [--starts 5]

The default graph (`hologram build`: every built-in plugin), no provider. The caches are filled with rows of
``vectors.db``'s real schema (a passage vector: 1 KiB of float16 and its key), so SQLite reads what it reads
for a user's file. The check runs in a thread beside the kernel's imports and is awaited before the memory
opens the caches (hologram/doctor/caches.py); a file over 256 MiB gets its header checked only.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time

from bench._kernel import BenchKernel
from hologram.storage.caches import cache_problem

SCHEMA = """
CREATE TABLE IF NOT EXISTS passage_vectors (
    event TEXT NOT NULL, ordinal INTEGER NOT NULL, fingerprint TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (event, ordinal, fingerprint)
) WITHOUT ROWID;
"""


def fill(path: Path, megabytes: int) -> None:
    """A vectors.db of about `megabytes` (a row takes ~4.7 kB on disk: its vector overflows to a page)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCHEMA)
    vector = bytes(range(256)) * 4
    db.execute("BEGIN")
    for i in range(megabytes * 1024 * 1024 // 4700):
        db.execute("INSERT INTO passage_vectors VALUES (?, ?, ?, ?)", (f"ev_{i:012x}", 0, "use/512", vector))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes-mb", default="20,200")
    parser.add_argument("--starts", type=int, default=5)
    options = parser.parse_args()
    sizes = [0, *(int(s) for s in options.sizes_mb.split(","))]
    root = Path(tempfile.mkdtemp(prefix="hologram-bench-caches-"))
    try:
        files = {}
        for size in sizes[1:]:
            files[size] = root / f"vectors-{size}.db"
            fill(files[size], size)
        kernel = BenchKernel(root / "k", "", builtins=True)
        kernel.start()  # warm: bytecode, the segmenter's and the model's caches
        kernel.stop()
        times: dict[int, list[float]] = {size: [] for size in sizes}
        for _ in range(options.starts):
            for size in sizes:
                target = kernel.data / "vectors.db"
                for old in kernel.data.glob("vectors.db*"):
                    old.unlink()
                if size:
                    shutil.copyfile(files[size], target)
                times[size].append(kernel.start())
                kernel.stop()
        print(f"hologram up -> every plugin ready, median of {options.starts} (alternating), and quick_check alone:")
        base = statistics.median(times[0])
        for size in sizes:
            median = statistics.median(times[size])
            if size:
                started = time.perf_counter()
                assert cache_problem(files[size]) is None
                check = f"quick_check {1000 * (time.perf_counter() - started):.0f} ms"
                label = f"vectors.db {files[size].stat().st_size / 1e6:.0f} MB"
            else:
                check, label = "", "no cache"
            print(f"  {label:<20} {median:6.2f} s  {median / base:5.2f}x  {check}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
