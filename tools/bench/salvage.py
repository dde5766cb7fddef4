"""What `hologram doctor --repair` recovers: the share of rows back, byte for byte, per kind of damage.

    .venv/bin/python tools/bench/salvage.py [--seeds 5] [--turns 300] [--events 400]

For sessions.db (a kernel-like log: 300 turns of input, response with two calls, two results — some 6 KB,
on overflow pages — answer, output; 1,505 rows) and cold.db (400 events with blocks and vectors): build the
file, damage it on disk (tools/damaged_files.py: truncated to half, the 100-byte header smashed, 512 random
bytes in the middle of a table page halfway through), run the repair, and compare every table's rows
with the rows before the damage. "recovered" counts rows identical to the original (same rowid, same
bytes); "garbage" counts rows the repair produced that never existed (damaged cells read as rows).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from damaged_files import (
    build_cold,
    build_sessions,
    recovered_share,
    scribble,
    smash_header,
    table_rows,
    truncate_half,
)
from hologram.doctor.repair import repair

DAMAGES: dict[str, Callable[[Path, int], object]] = {
    "truncated to half": lambda path, seed: truncate_half(path),
    "header smashed": smash_header,
    "random bytes mid-file": scribble,
}


def run(name: str, build: Callable[[Path], object], seeds: int) -> list[dict[str, object]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        pristine = Path(tmp) / "pristine" / name
        pristine.parent.mkdir()
        build(pristine)
        before = table_rows(pristine)
        for damage, apply in DAMAGES.items():
            shares, garbage, seconds = [], [], []
            for seed in range(seeds):
                work = Path(tmp) / f"{damage}-{seed}"
                work.mkdir()
                target = work / name
                shutil.copyfile(pristine, target)
                apply(target, seed)
                started = time.perf_counter()
                repair(target)
                seconds.append(time.perf_counter() - started)
                same, total, extra = recovered_share(before, table_rows(target))
                shares.append(same / total)
                garbage.append(extra)
            out.append(
                {
                    "file": name,
                    "damage": damage,
                    "rows": sum(len(r) for r in before.values()),
                    "recovered_min": min(shares),
                    "recovered_median": statistics.median(shares),
                    "garbage_rows_max": max(garbage),
                    "repair_s_median": statistics.median(seconds),
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = run("sessions.db", lambda p: build_sessions(p, args.turns), args.seeds)
    rows += run("cold.db", lambda p: build_cold(p, args.events), args.seeds)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'file':12} {'damage':22} {'rows':>5} {'recovered (min / median)':>26} {'garbage':>8} {'repair':>8}")
    for r in rows:
        share = f"{r['recovered_min']:.1%} / {r['recovered_median']:.1%}"
        print(
            f"{r['file']!s:12} {r['damage']!s:22} {r['rows']!s:>5} {share:>26} {r['garbage_rows_max']!s:>8} "
            f"{float(str(r['repair_s_median'])):>7.2f}s"
        )


if __name__ == "__main__":
    main()
