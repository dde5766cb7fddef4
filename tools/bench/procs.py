"""Process-guardian benchmark: what it costs that every shell_run / code_run call owns its processes.

    .venv/bin/python tools/bench/procs.py [--rounds 30] [--json]

Every call's command runs under a guardian (plugins/hologram_plugins/_process/guardian.py: a fresh
`python -I -S` that sets PR_SET_CHILD_SUBREAPER and kills the call's tree at its end). Measured, interleaved
round by round so a burst of load lands on all rows:

  * `true`                — fork/exec of /bin/true alone: the floor;
  * `python -I -S`        — a bare interpreter start (`-c pass`): what the guardian cannot go below;
  * `guardian true`       — /bin/true under a guardian, report read: the guardian's start cost is this minus `true`;
  * `guardian, 1 orphan`  — `(sleep 60 &)` under a guardian: the kill path (a /proc scan, SIGKILL, reap);
  * `shell_run true`      — one whole call through the shell plugin (a real plugin process, PluginHarness):
    the plugin protocol round trip, the guardian, `bash -c true`, the result.

Target: the guardian adds a few tens of ms at most per call (shell_run waits for a person's approval anyway).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins"))

from hologram_plugins._process.tree import guardian_argv, parse_report, read_report  # noqa: E402


def _timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    return time.perf_counter() - started


def _guarded(command: list[str]) -> float:
    read_fd, write_fd = os.pipe()
    started = time.perf_counter()
    subprocess.run(guardian_argv(command, report_fd=write_fd, max_processes=64), pass_fds=(write_fd,), check=True)
    os.close(write_fd)
    report = parse_report(read_report(read_fd))
    elapsed = time.perf_counter() - started
    os.close(read_fd)
    assert report.reason == "exit", report
    return elapsed


async def _shell_calls(rounds: int, workspace: str) -> list[float]:
    from hologram.sdk.testing import PluginHarness

    times = []
    config = {"workspace": workspace, "mode": "allow"}
    async with PluginHarness.from_manifest(ROOT / "manifests" / "shell.toml", config=config) as harness:
        await harness.call_tool("shell_run", {"command": "true"})  # warm: imports, bytecode
        for _ in range(rounds):
            started = time.perf_counter()
            result = await harness.call_tool("shell_run", {"command": "true"})
            times.append(time.perf_counter() - started)
            assert "[exit code 0" in result["content"], result
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: dict[str, Callable[[], float]] = {
        "true": lambda: _timed(["/bin/true"]),
        "python -I -S": lambda: _timed([sys.executable, "-I", "-S", "-c", "pass"]),
        "guardian true": lambda: _guarded(["/bin/true"]),
        "guardian, 1 orphan": lambda: _guarded(["sh", "-c", "(sleep 60 &)"]),
    }
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for run in rows.values():  # warm caches (bytecode of the guardian, the binaries)
        run()
    for _ in range(args.rounds):
        for name, run in rows.items():
            samples[name].append(run())
    with tempfile.TemporaryDirectory() as workspace:
        samples["shell_run true"] = asyncio.run(_shell_calls(args.rounds, workspace))
    summary: dict[str, Any] = {
        name: {"min_ms": min(v) * 1e3, "p50_ms": statistics.median(v) * 1e3, "max_ms": max(v) * 1e3}
        for name, v in samples.items()
    }
    cost = summary["guardian true"]["p50_ms"] - summary["true"]["p50_ms"]
    summary["guardian_start_p50_ms"] = cost
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{'':22s} {'min':>8s} {'p50':>8s} {'max':>8s}   ({args.rounds} rounds, interleaved)")
    for name in samples:
        row = summary[name]
        print(f"{name:22s} {row['min_ms']:7.1f}ms {row['p50_ms']:7.1f}ms {row['max_ms']:7.1f}ms")
    verdict = "ok" if cost < 50 else "MISSED"
    print(f"\nguardian start cost (p50 of `guardian true` - `true`): {cost:.1f} ms; target a few tens of ms: {verdict}")


if __name__ == "__main__":
    main()
