"""The first answer after "ready" against a warm turn (issue 39 item 9: within 1.2x).

    PYTHONPATH=tools .venv/bin/python tools/bench/first_turn.py [--starts 5] [--rounds 10] [--trace] [--plugins-ready]
    PYTHONPATH=tools .venv/bin/python tools/bench/first_turn.py --ask|--http [--starts 3] [--rounds 5]

Each start is a real `hologram up` of the default graph with the strict mock as its provider (instant
answers), as tools/bench/sweep.py starts it: wait for "ready" — the summary line ("Hologram is up"), which
comes once the start-up loads are done and the heap frozen, i.e. ``status``'s ``kernel.heap_frozen`` set just
before it (``--plugins-ready``: as soon as every plugin is ready, the old "ready") — then one-word turns through
the turn API, each from a new client connection — *first* (a new session), *second new* (another new session:
what a new session costs on a kernel that has answered once), then *warm* turns in that session. The
ratios are per start (first / median warm of the same start), reported as their median and worst.

``--trace`` records which modules the kernel imports during the first turn (an audit hook through a
``sitecustomize`` on the kernel's path, times on the system's monotonic clock): what still loads lazily on
the first answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

from bench._kernel import BenchKernel, configure_bytecode
from bench.proctree import tree
from bench.sweep import HELLO, settings_for, turn
from mock_llm import MockLLM

TRACER = """\
import sys, time
if any(a == "up" for a in sys.argv[1:3]):
    _out = open({path!r} + "/imports-%d.txt" % __import__("os").getpid(), "w", buffering=1)
    def _hook(event, args):
        if event == "import":
            _out.write("%.6f %s\\n" % (time.monotonic(), args[0]))
    sys.addaudithook(_hook)
"""


def cpu_ns(pid: int) -> int:
    """CPU time of every thread of `pid` so far, in ns (schedstat: the scheduler's clock, not 10 ms ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that just ended
            total += int((task / "schedstat").read_text().split()[0])
    return total


def timed(kernel: BenchKernel, session: str | None) -> tuple[float, float, str, float]:
    """One turn: (wall s, the kernel's CPU s over it, session, the CPU s of its plugins' processes)."""
    assert kernel.process is not None
    pid = kernel.process.pid
    others = [p for p in tree(pid) if p != pid]
    before, before_others = cpu_ns(pid), sum(cpu_ns(p) for p in others)
    wall, sid = asyncio.run(turn(kernel.data, "hello", session))
    plugins = (sum(cpu_ns(p) for p in others) - before_others) / 1e9
    return wall, (cpu_ns(pid) - before) / 1e9, sid, plugins


def ask_start(root: Path, mock: MockLLM, rounds: int) -> dict[str, float]:
    """`--ask`: the first `hologram ask` after ready (a new process, as the issue measured it) and warm ones."""
    kernel = BenchKernel(root, settings_for(mock), builtins=True)
    try:
        kernel.start()
        while not kernel.status()["kernel"]["heap_frozen"]:
            time.sleep(0.02)
        mock.script([], default=HELLO)
        first = kernel.ask("hello")[0]
        warm = [kernel.ask("hello")[0] for _ in range(rounds)]
    finally:
        kernel.stop()
    return {"first": first, "warm": statistics.median(warm)}


def http_start(root: Path, mock: MockLLM, rounds: int) -> dict[str, float]:
    """`--http`: the first ``POST /v1/chat/completions`` of the http plugin after ready, and warm ones (one
    session, as tools/bench/sweep.py and the peers are measured)."""
    import json

    import httpx

    kernel = BenchKernel(root, settings_for(mock), builtins=True)
    try:
        kernel.start()
        while not kernel.status()["kernel"]["heap_frozen"]:
            time.sleep(0.02)
        mock.script([], default=HELLO)
        info = json.loads((kernel.data / "http.json").read_text(encoding="utf-8"))
        token = (kernel.data / "http-token").read_text(encoding="utf-8").strip()
        headers = {"authorization": f"Bearer {token}", "x-hologram-session": "first-turn"}
        body = {"model": "hologram", "messages": [{"role": "user", "content": "hello"}]}
        times = []
        with httpx.Client(base_url=info["url"], headers=headers, timeout=60) as client:
            for _ in range(rounds + 1):
                started = time.perf_counter()
                client.post("/v1/chat/completions", json=body).raise_for_status()
                times.append(time.perf_counter() - started)
    finally:
        kernel.stop()
    return {"first": times[0], "warm": statistics.median(times[1:])}


def one_start(root: Path, mock: MockLLM, rounds: int, settle: bool = True) -> dict[str, float]:
    kernel = BenchKernel(root, settings_for(mock), builtins=True)
    try:
        kernel.start()
        while settle and not kernel.status()["kernel"]["heap_frozen"]:
            time.sleep(0.02)
        mock.script([], default=HELLO)
        began = time.monotonic()
        first, first_cpu, _, first_plugins = timed(kernel, None)
        first_end = time.monotonic()
        second, _, session, _ = timed(kernel, None)
        warm = [timed(kernel, session) for _ in range(rounds)]
        idle = []
        for _ in range(3):  # a warm turn after the kernel went idle (its idle trim ran), as the first one comes
            time.sleep(2.0)
            idle.append(timed(kernel, session)[0])
    finally:
        kernel.stop()
    return {
        "first": first, "second": second, "warm": statistics.median(w[0] for w in warm),
        "idle": statistics.median(idle), "first_cpu": first_cpu, "warm_cpu": statistics.median(w[1] for w in warm),
        "first_plugins": first_plugins, "warm_plugins": statistics.median(w[3] for w in warm),
        "t0": began, "t1": first_end,
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trace", action="store_true", help="list the kernel's imports during the first turn")
    ap.add_argument(
        "--plugins-ready", action="store_true", help="the first turn once every plugin is ready, before the loads"
    )
    ap.add_argument("--ask", action="store_true", help="time `hologram ask` (a new process each) instead")
    ap.add_argument("--http", action="store_true", help="time the HTTP API's chat completions instead")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        scratch = Path(tmp)
        configure_bytecode(scratch)
        if args.trace:
            hook = scratch / "hook"
            hook.mkdir()
            (hook / "sitecustomize.py").write_text(TRACER.format(path=str(hook)))
            os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
        one_start(scratch / "warm-up", mock, 2)  # fills the bytecode cache and the page cache
        if args.ask or args.http:
            start = ask_start if args.ask else http_start
            asks = [start(scratch / f"a{i}", mock, args.rounds) for i in range(args.starts)]
            for i, row in enumerate(asks):
                print(f"start {i}: first {row['first'] * 1000:.0f} ms, warm median {row['warm'] * 1000:.0f} ms")
            ratios = sorted(r["first"] / r["warm"] for r in asks)
            print(
                f"{'hologram ask' if args.ask else 'HTTP API'}, first after ready / warm: "
                f"median {statistics.median(ratios):.2f}x, "
                f"worst {ratios[-1]:.2f}x"
            )
            return 0
        for i in range(args.starts):
            for old in (scratch / "hook").glob("imports-*.txt") if args.trace else ():
                old.unlink()
            row = one_start(scratch / f"s{i}", mock, args.rounds, not args.plugins_ready)
            rows.append(row)
            print(
                f"start {i}: first {row['first'] * 1000:.1f} ms, second new session {row['second'] * 1000:.1f} ms, "
                f"warm median {row['warm'] * 1000:.1f} ms, warm after 2 s idle {row['idle'] * 1000:.1f} ms: "
                f"first / warm {row['first'] / row['warm']:.2f}x; kernel CPU first {row['first_cpu'] * 1000:.1f} ms, "
                f"warm median {row['warm_cpu'] * 1000:.1f} ms ({row['first_cpu'] / row['warm_cpu']:.2f}x); "
                f"the plugins' "
                f"CPU first {row['first_plugins'] * 1000:.1f} ms, warm {row['warm_plugins'] * 1000:.1f} ms",
                flush=True,
            )
            if args.trace:
                for path in sorted((scratch / "hook").glob("imports-*.txt")):
                    during = []
                    for line in path.read_text().splitlines():
                        stamp, name = line.split(" ", 1)
                        if row["t0"] <= float(stamp) <= row["t1"]:
                            during.append(name)
                    if during:
                        print(f"  {path.name}: {len(during)} imports during the first turn: {', '.join(during[:60])}")
    ratios = sorted(r["first"] / r["warm"] for r in rows)
    seconds = sorted(r["second"] / r["warm"] for r in rows)
    idles = sorted(r["first"] / r["idle"] for r in rows)
    cpus = sorted(r["first_cpu"] / r["warm_cpu"] for r in rows)
    print(
        f"first answer after ready / warm turn: median {statistics.median(ratios):.2f}x, worst {ratios[-1]:.2f}x; "
        f"a second new session / warm: median {statistics.median(seconds):.2f}x ({len(rows)} starts, "
        f"{args.rounds} warm turns each); first / warm after 2 s idle: median {statistics.median(idles):.2f}x, "
        f"worst {idles[-1]:.2f}x; the kernel's CPU, first / warm: median {statistics.median(cpus):.2f}x, "
        f"worst {cpus[-1]:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
