"""Start-up as a user meets it: the CLI's own start, a warm `hologram ask`, and `hologram up` until it answers.

    .venv/bin/python tools/bench/cli_start.py [--runs 15] [--starts 5] [--plugins 0] [--json]

Everything runs the product's real path: `hologram` subprocesses (the console script), the default graph
(`hologram build` with the built-ins, as `make up` does), the strict mock as the provider (instant answers).

  * ``--version`` and ``status``: a new process each, median and p90 of ``--runs``. Target: --version ≤ 0.15 s.
  * ``ask``: a warm `hologram ask --json` (a new process per turn, the kernel already up and answered once),
    median and p90. Target ≤ 0.3 s.
  * ``up → ready`` and ``up → first answer``: `hologram up` started cold ``--starts`` times; "ready" is the
    first `status` that shows every plugin ready (polled every 10 ms), the first answer is a turn started
    through the turn API (`TurnClient`, as a channel would) the moment it is ready, timed to its
    ``turn.ended``. Target: first answer ≤ 0.6 s with the default graph, and with ``--plugins 50`` (extra
    synthetic plugins, tools/bench/synthetic_plugin.py, zero delay) ≤ 1.2× that.
The machine is shared and times are noisy: the figures are medians, and `python -X importtime -m hologram.cli
--version` gives the import count behind the first row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: mock_llm, bench

from bench._kernel import BenchKernel, provider_toml, stop_on_terminate
from hologram.clients import TurnClient
from hologram.kernel.control import call
from mock_llm import MockLLM

HOLOGRAM = str(Path(sys.executable).with_name("hologram"))  # the console script, as a user runs it
ANSWER = {"content": "ok"}
HERE = Path(__file__).resolve().parent


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


CPU: dict[str, list[float]] = {}  # per row: the child's user+sys CPU seconds (steadier than wall on a busy box)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path, row: str) -> float:
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, cwd=cwd, text=True)
    elapsed = time.perf_counter() - started
    CPU.setdefault(row, []).append(children_cpu() - cpu)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr}")
    if row.startswith("hologram ask") and json.loads(done.stdout).get("output") != "ok":
        raise RuntimeError(f"unexpected answer: {done.stdout}")
    return elapsed


def synthetic_manifests(directory: Path, count: int) -> None:
    """`count` plugins that need only the kernel and are ready at once (their start is the cost measured)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (directory / f"synthetic{i}.toml").write_text(
            f'[plugin]\nname = "synthetic{i:02d}"\nversion = "1.0.0"\n'
            f'run = {{ module = "synthetic_plugin", env = {{ PYTHONPATH = "{HERE}" }} }}\n\n'
            f'[facilities]\nprovides = ["bench.s{i}"]\nrequires = ["kernel.tools"]\n\n[config]\ndelay = 0.0\n',
            encoding="utf-8",
        )


async def first_answer(data: Path) -> None:
    async with await TurnClient.connect(data, client="bench") as client:
        turn = await client.start("hello")
        ended = await turn.result()
        if ended.output != "ok":
            raise RuntimeError(f"unexpected answer: {ended}")


def cold_start(kernel: BenchKernel) -> tuple[float, float]:
    """(up → every plugin ready, up → first answer), seconds from the `hologram up` process start."""
    stop_on_terminate()
    started = time.perf_counter()
    process = subprocess.Popen(
        [HOLOGRAM, "up", "--port", "0", "--lock", str(kernel.lock), "--data", str(kernel.data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=kernel.root,
    )
    try:
        deadline = time.monotonic() + 120
        ready = 0.0
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"hologram up exited with {process.returncode}")
            try:
                status = call(kernel.data, "status", timeout=5)
            except Exception:
                time.sleep(0.01)
                continue
            if status["plugins"] and all(p["state"] == "ready" or p.get("on_demand") for p in status["plugins"]):
                ready = time.perf_counter() - started
                break
            time.sleep(0.01)
        else:
            raise RuntimeError("the kernel did not get ready")
        asyncio.run(first_answer(kernel.data))
        return ready, time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def row(name: str, values: list[float], target: float | None = None) -> dict[str, Any]:
    med = statistics.median(values)
    result: dict[str, Any] = {"name": name, "median_s": round(med, 4), "p90_s": round(p90(values), 4)}
    result["n"] = len(values)
    if name in CPU:
        result["cpu_median_s"] = round(statistics.median(CPU[name]), 4)
    if target is not None:
        result["target_s"] = target
        result["met"] = med <= target
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="processes per CLI row")
    parser.add_argument("--starts", type=int, default=5, help="cold `hologram up` starts")
    parser.add_argument("--plugins", type=int, default=0, help="extra synthetic plugins in the graph")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, MockLLM("deepseek") as mock:
        mock.script([], default=ANSWER)
        root = Path(tmp)
        kernel = BenchKernel(root / "k", provider_toml("mock", mock.base_url), builtins=True)
        if args.plugins:
            synthetic_manifests(root / "synthetic", args.plugins)
            subprocess.run(
                [HOLOGRAM, "build", "-o", str(kernel.lock), "-m", str(root / "synthetic")],
                check=True,
                capture_output=True,
                cwd=kernel.root,
            )
        plugins = 0
        version = "hologram --version"
        rows.append(row(version, [timed([HOLOGRAM, "--version"], root, version) for _ in range(args.runs)], 0.15))
        starts = [cold_start(kernel) for _ in range(args.starts)]
        rows.append(row("up → all ready", [s[0] for s in starts]))
        rows.append(row("up → first answer", [s[1] for s in starts], 0.6 if not args.plugins else None))
        kernel.start()
        try:
            kernel.ask("warm up")
            status_argv = [HOLOGRAM, "status", "--data", str(kernel.data)]
            status = "hologram status"
            rows.append(row(status, [timed(status_argv, root, status) for _ in range(args.runs)]))
            ask = "hologram ask (warm)"
            ask_argv = [HOLOGRAM, "ask", "--json", "--data", str(kernel.data), "hello"]
            rows.append(row(ask, [timed(ask_argv, root, ask) for _ in range(args.runs)], 0.3))
            plugins = len(kernel.status()["plugins"])
        finally:
            kernel.stop()
    if args.json:
        print(json.dumps({"plugins": plugins, "rows": rows}, indent=2))
        return 0
    print(f"graph: {plugins} plugins (default graph + {args.plugins} synthetic); shared machine, times are noisy")
    print(f"{'measure':<22} {'median':>8} {'p90':>8} {'CPU':>8} {'target':>10}")
    for r in rows:
        target = f"{r['target_s']:.2f}" + (" ok" if r["met"] else " MISS") if "target_s" in r else ""
        cpu = f"{r['cpu_median_s']:.3f}s" if "cpu_median_s" in r else ""
        print(f"{r['name']:<22} {r['median_s']:>7.3f}s {r['p90_s']:>7.3f}s {cpu:>8} {target:>10}")
    print("CPU: the command's own user+sys seconds (median); wall times include waiting for a busy machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
