"""Benchmark `hologram build` on synthetic plugin trees of 10 … 5,000 manifests.

Each tree is a random DAG: plugin i provides `f.i` and requires ~5 facilities of earlier plugins, so the
graph is valid and deep. The timing covers everything `hologram build` does after the interpreter and
imports are up: discovery, TOML parsing, validation, resolution, sorting, rendering and writing the lock.
Printed per size: best-of-N wall time, the ratio to the 10-manifest run, and the per-manifest cost ratio,
which stays near 1 for linear growth and grows like log n for O(n log n).

Then the graph users lock: every built-in manifest, discovered as `hologram build` does.

    python tools/bench/build.py [--sizes 10,100,1000,5000] [--repeat 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from pathlib import Path

from hologram.manifest.discovery import builtin_manifest_dir
from hologram.plan.lock import Sources, build


def write_tree(directory: Path, count: int, rng: random.Random) -> None:
    directory.mkdir(parents=True)
    for index in range(count):
        wanted = min(index, 5)
        requires = sorted({f"f.p{rng.randrange(index)}" for _ in range(wanted)}) if index else []
        requires.append("kernel.tools")
        stage = f"[stages]\nbefore_output = {{ order = {rng.randrange(100)} }}\n" if index % 7 == 0 else ""
        (directory / f"p{index}.toml").write_text(
            f'[plugin]\nname = "p{index}"\nversion = "1.0.{index}"\ndescription = "synthetic plugin {index}"\n'
            f'run = {{ module = "bench.p{index}" }}\n\n'
            f'[facilities]\nprovides = ["f.p{index}"]\nrequires = {requires!r}\n\n{stage}'.replace("'", '"'),
            encoding="utf-8",
        )


def time_build(directory: Path, repeat: int, sources: Sources | None = None) -> float:
    """Best of ``repeat`` builds of the manifests in ``directory`` (or of ``sources``, the lock written there)."""
    sources = sources or Sources(builtins=False, installed=False, paths=(str(directory),))
    best = math.inf
    for attempt in range(repeat):
        lock = directory.parent / f"hologram-{attempt}.lock"
        started = time.perf_counter()
        build(lock, sources)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,1000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    # Warm up imports and caches so the first size is not charged for them.
    with tempfile.TemporaryDirectory() as scratch:
        write_tree(Path(scratch) / "warm", 10, rng)
        time_build(Path(scratch) / "warm", 1)
    results: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            directory = Path(scratch) / f"tree{size}"
            write_tree(directory, size, rng)
            results.append((size, time_build(directory, args.repeat)))
    base_size, base_time = results[0]
    print(f"{'manifests':>10} {'wall s':>9} {'× base':>8} {'per-manifest × base':>20} {'n log n × base':>15}")
    for size, seconds in results:
        per = (seconds / size) / (base_time / base_size)
        nlogn = (size * math.log2(size)) / (base_size * math.log2(base_size))
        print(
            f"{size:>10} {seconds:>9.3f} {seconds / base_time:>8.1f} {per:>20.2f} {nlogn / (size / base_size):>15.2f}"
        )
    thousand = dict(results).get(1000)
    if thousand is not None:
        verdict = "meets" if thousand < 0.5 else "MISSES"
        print(f"1,000 manifests: {thousand:.3f} s ({verdict} the 0.5 s target)")
    # The graph a user locks: every shipped plugin's manifest (their config schemas read and carried too).
    with tempfile.TemporaryDirectory() as scratch:
        shipped = len(list(builtin_manifest_dir().glob("*.toml")))
        seconds = time_build(Path(scratch) / "builtins", args.repeat, Sources(builtins=True, installed=False))
    verdict = "meets" if seconds < 0.5 else "MISSES"
    print(f"the {shipped} built-ins: {seconds:.3f} s, {seconds / base_time:.1f} × base ({verdict} the 0.5 s target)")


if __name__ == "__main__":
    main()
