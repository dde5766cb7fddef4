"""A dead first provider: turn latency through the product, against a healthy chain in the same run.

    .venv/bin/python tools/bench/fallback.py [--turns 8]

Two `hologram up` kernels, each with two providers pointing at strict mocks on loopback, default retry
settings (3 retries, backoff 1 s / 2 s / 3 s): in the *healthy* chain both answer; in the *dead* chain the
first answers HTTP 500 to everything. Each kernel gets the same turns through `hologram ask` (a new process
per turn, as a user runs it). The first turn with a dead provider pays its retry ladder once (~6 s); after
that it cools down (llm/health.py) and turns go straight to the fallback. Target (issue 10): turns after
the first within 1.5x of the healthy chain's. Printed: per-turn seconds, medians of turns 2..N, the ratio,
and how many requests the dead provider received.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: mock_llm

from bench._kernel import BenchKernel, provider_toml
from mock_llm import MockLLM

ANSWER = {"reasoning_content": "r", "content": "ok"}


def run_chain(root: Path, first: MockLLM, second: MockLLM, turns: int) -> list[float]:
    settings = provider_toml("first", first.base_url) + "\n" + provider_toml("second", second.base_url)
    kernel = BenchKernel(root, settings)
    kernel.start()
    try:
        times = []
        for i in range(turns):
            seconds, result = kernel.ask(f"turn {i}")
            assert result["output"] == "ok", result
            times.append(seconds)
        return times
    finally:
        kernel.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as a, MockLLM("deepseek") as b:
        a.script([], default=ANSWER)
        b.script([], default=ANSWER)
        healthy = run_chain(Path(tmp) / "healthy", a, b, args.turns)
        a.reset()
        b.reset()
        a.script([], default={"error": {"status": 500, "message": "down"}})
        b.script([], default=ANSWER)
        dead = run_chain(Path(tmp) / "dead", a, b, args.turns)
        dead_requests = len(a.requests)
    print(f"{'turn':>4} | {'healthy chain':>13} | {'first provider dead':>19}")
    for i, (h, d) in enumerate(zip(healthy, dead, strict=True), start=1):
        print(f"{i:>4} | {h:>12.2f}s | {d:>18.2f}s")
    base, later = statistics.median(healthy[1:]), statistics.median(dead[1:])
    ratio = later / base
    print(f"turns 2..{args.turns}: healthy median {base:.2f} s, dead-first median {later:.2f} s, ratio {ratio:.2f}x")
    print(f"requests the dead provider received: {dead_requests} (its retry ladder once: 4)")
    print(f"first turn with the dead provider: {dead[0]:.2f} s (the ladder: 1 + 2 + 3 s of backoff)")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
