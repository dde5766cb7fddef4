"""What the kernel pays for its configuration models — settings, provider settings, the lock, the manifests —
before it can answer: this tree against a baseline tree (old code), alternating, in one run.

    .venv/bin/python tools/bench/config_cost.py --baseline /tmp/old [--rounds 7] [--starts 7] [--commands 7]

``--baseline`` is a source tree of the old code (``git -C /work/main archive main | tar -x -C /tmp/old``); its
``framework`` and ``plugins`` go first on ``PYTHONPATH`` for its runs, with this venv.

(a) imports, a fresh interpreter a round: after ``import numpy, httpx, asyncio, sqlite3`` (what the kernel holds
    anyway), import the readers (`hologram.config.settings`, `hologram.plan.lock`, `hologram.llm.settings`,
    `hologram.manifest`), then use them as `hologram up` does on the default graph (read the lock, check its
    manifests are current, load the settings with a provider). Each step's delta of anonymous memory
    (``RssAnon``, /proc/self/status) and of process CPU (``time.process_time``). The baseline is run a second way
    with ``import pydantic`` and ``pydantic.main`` as steps of their own before the readers: pydantic's share,
    by import deltas.
(b) start: `hologram up` of the default graph, the strict mock as provider, cold, ``--starts`` times per tree,
    alternating; the kernel's main-thread CPU (/proc/PID/task/PID/schedstat, ns) and process CPU
    (/proc/PID/stat, user+system) when the control socket first accepts a client and when the first answer
    (a turn started the moment it accepts) has arrived, and the wall-clock seconds to each.
(c) commands that read manifests: `hologram build` of the default graph and `hologram check` of a shipped
    manifest, ``--commands`` times per tree, alternating: the process's CPU (getrusage of the child).

Printed: medians per tree and the ratio this/baseline. CPU counts survive a busy machine better than wall
times; the machine is shared, so read the wall column with that in mind.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench, mock_llm

from bench._kernel import configure_bytecode, provider_toml, stop_on_terminate
from hologram.base.errors import HologramError
from hologram.clients import TurnClient
from mock_llm import MockLLM

HERE = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The readers by the layout of either tree (hologram.config/plan since issue 34's layout, top-level before).
READERS = """
try:
    import hologram.config.settings, hologram.plan.lock, hologram.llm.settings, hologram.manifest
    from hologram.plan.lock import read_lock, changed_manifests
    from hologram.config.settings import load_settings
except ImportError:
    import hologram.settings, hologram.lock, hologram.llm.settings, hologram.manifest
    from hologram.lock import read_lock, changed_manifests
    from hologram.settings import load_settings
"""
PROBE = """
import json, sys, time
from pathlib import Path

def anon_kb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])

marks = []
def mark(step):
    marks.append((step, anon_kb(), time.process_time()))

mark("start")
import numpy, httpx, asyncio, sqlite3
mark("base")
for step in sys.argv[3:]:
    exec(step)
    mark(step.split(" ")[1].rstrip(","))
READERS
mark("readers")
lock = read_lock(Path(sys.argv[1]))
assert changed_manifests(lock) == [], "the lock is stale"
settings = load_settings(Path(sys.argv[2]), create=False)
assert settings.providers and len(lock.plugins) >= 9
mark("use")
print(json.dumps(marks))
""".replace("READERS", READERS)


def env_for(tree: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = f"{tree / 'framework'}:{tree / 'plugins'}"
    return env


def hologram(tree: Path | None, *args: str, cwd: Path) -> None:
    argv = [sys.executable, "-m", "hologram", *args]
    subprocess.run(argv, check=True, capture_output=True, cwd=cwd, env=env_for(tree))


def prepare(root: Path, tree: Path | None, mock: MockLLM) -> tuple[Path, Path]:
    """A default-graph lock built by `tree`'s code and a data directory whose settings name the mock."""
    root.mkdir(parents=True)
    lock, data = root / "hologram.lock", root / "data"
    hologram(tree, "build", "-o", str(lock), cwd=root)
    data.mkdir()
    settings = data / "settings.toml"
    settings.write_text(provider_toml("mock", mock.base_url))
    settings.chmod(0o600)
    return lock, data


def probe(tree: Path | None, lock: Path, data: Path, steps: list[str]) -> dict[str, tuple[float, float]]:
    """Per step: (anonymous MB added, CPU ms spent)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(lock), str(data), *steps],
        check=True,
        capture_output=True,
        text=True,
        env=env_for(tree),
        cwd=lock.parent,
    )
    marks = json.loads(done.stdout)
    out = {}
    for (_, kb0, cpu0), (step, kb1, cpu1) in itertools.pairwise(marks):
        out[step] = ((kb1 - kb0) / 1024, (cpu1 - cpu0) * 1000)
    out["total"] = ((marks[-1][1] - marks[1][1]) / 1024, (marks[-1][2] - marks[1][2]) * 1000)
    out["anon_mb"] = (marks[-1][1] / 1024, 0.0)
    return out


def main_thread_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0])


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14 and 15 of stat)


def start(tree: Path | None, lock: Path, data: Path, timeout: float = 90) -> dict[str, float]:
    """One cold `hologram up`: CPU and wall at the socket's first accept and at the first answer."""
    stop_on_terminate()
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "hologram", "up", "--port", "0", "--lock", str(lock), "--data", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=lock.parent,
        env=env_for(tree),
    )
    out: dict[str, float] = {}

    async def run() -> None:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"hologram up exited with {process.returncode}")
            try:
                client = await TurnClient.connect(data, client="bench")
                break
            except (HologramError, OSError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.005)
        out["socket_wall_s"] = time.perf_counter() - began
        out["socket_main_cpu_s"] = main_thread_ns(process.pid) / 1e9
        out["socket_process_cpu_s"] = process_cpu_s(process.pid)
        async with client:
            stream = await client.start("hello")
            ended = await stream.result()
            if ended.stop_reason != "answer":
                raise RuntimeError(f"the first turn ended {ended.stop_reason}: {ended.errors}")
        out["answer_wall_s"] = time.perf_counter() - began
        out["answer_main_cpu_s"] = main_thread_ns(process.pid) / 1e9
        out["answer_process_cpu_s"] = process_cpu_s(process.pid)

    try:
        asyncio.run(run())
    finally:
        process.send_signal(2)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return out


def command_cpu_s(tree: Path | None, argv: list[str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    hologram(tree, *argv, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def median_of(runs: list[dict[str, Any]], key: str, index: int | None = None) -> float:
    return statistics.median(r[key] if index is None else r[key][index] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="a source tree of the old code")
    parser.add_argument("--rounds", type=int, default=7, help="import probes per tree")
    parser.add_argument("--starts", type=int, default=7, help="cold starts per tree")
    parser.add_argument("--commands", type=int, default=7, help="runs of each command per tree")
    parser.add_argument(
        "--no-pyc-cache", action="store_true", help="keep the environment's bytecode setting (default: a cache)"
    )
    args = parser.parse_args()
    trees: dict[str, Path | None] = {"baseline": args.baseline.resolve(), "this": None}
    with tempfile.TemporaryDirectory(prefix="config-cost-") as scratch, MockLLM("deepseek") as mock:
        print("bytecode:", configure_bytecode(Path(scratch), not args.no_pyc_cache))  # as an install has it
        mock.script([], default={"content": "Hello!"})
        paths = {name: prepare(Path(scratch) / name, tree, mock) for name, tree in trees.items()}
        imports: dict[str, list[Any]] = {name: [] for name in trees}
        attributed: list[Any] = []
        for i in range(args.rounds):
            for name in trees if i % 2 == 0 else list(trees)[::-1]:
                imports[name].append(probe(trees[name], *paths[name], []))
            attributed.append(probe(trees["baseline"], *paths["baseline"], ["import pydantic", "import pydantic.main"]))
        starts: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for name in trees:  # one warm-up start each: bytecode, page cache
            start(trees[name], *paths[name])
        for i in range(args.starts):
            for name in trees if i % 2 == 0 else list(trees)[::-1]:
                starts[name].append(start(trees[name], *paths[name]))
        commands: dict[str, dict[str, list[float]]] = {name: {"build": [], "check": []} for name in trees}
        for i in range(args.commands + 1):  # the first round warms the bytecode and page cache
            for name in trees if i % 2 == 0 else list(trees)[::-1]:
                root = paths[name][0].parent
                build = command_cpu_s(trees[name], ["build", "-o", str(root / "again.lock")], root)
                tree = trees[name] or HERE  # each tree checks its own shipped manifest (the format may differ)
                check = command_cpu_s(trees[name], ["check", str(tree / "manifests" / "shell.toml")], root)
                if i:
                    commands[name]["build"].append(build)
                    commands[name]["check"].append(check)

    print(f"(a) imports, fresh interpreter, median of {args.rounds}: anonymous MB / CPU ms added by each step")
    print(f"{'step':<34}{'baseline':>20}{'this':>20}{'this/baseline':>16}")
    for step in ("readers", "use", "total"):
        old = (median_of(imports["baseline"], step, 0), median_of(imports["baseline"], step, 1))
        new = (median_of(imports["this"], step, 0), median_of(imports["this"], step, 1))
        ratio = f"{new[0] / old[0]:.2f} / {new[1] / old[1]:.2f}" if old[0] and old[1] else "-"
        print(f"{step:<34}{old[0]:>9.1f} / {old[1]:>6.0f}{new[0]:>9.1f} / {new[1]:>6.0f}{ratio:>16}")
    old_anon, new_anon = median_of(imports["baseline"], "anon_mb", 0), median_of(imports["this"], "anon_mb", 0)
    print(f"{'RssAnon at the end (MB)':<34}{old_anon:>20.1f}{new_anon:>20.1f}{new_anon / old_anon:>16.2f}")
    print("baseline, pydantic's share by import deltas (anonymous MB / CPU ms):")
    for step in ("pydantic", "pydantic.main", "readers", "use"):
        mb, ms = median_of(attributed, step, 0), median_of(attributed, step, 1)
        print(f"  {step:<32}{mb:>9.1f} / {ms:>6.0f}")
    print(f"\n(b) `hologram up`, default graph, median of {args.starts} cold starts (s)")
    print(f"{'':<34}{'baseline':>12}{'this':>12}{'this/baseline':>16}")
    for key in (
        "socket_main_cpu_s",
        "socket_process_cpu_s",
        "socket_wall_s",
        "answer_main_cpu_s",
        "answer_process_cpu_s",
        "answer_wall_s",
    ):
        old_v, new_v = median_of(starts["baseline"], key), median_of(starts["this"], key)
        print(f"{key:<34}{old_v:>12.3f}{new_v:>12.3f}{new_v / old_v:>16.2f}")
    for name in trees:
        runs = ", ".join(f"{r['answer_main_cpu_s']:.2f}" for r in starts[name])
        print(f"  {name} main-thread CPU at the first answer, each start: {runs}")
    print(f"\n(c) process CPU of a command, median of {args.commands} (s)")
    for command in ("build", "check"):
        old_c, new_c = (statistics.median(commands[name][command]) for name in trees)
        print(f"{'hologram ' + command:<34}{old_c:>12.3f}{new_c:>12.3f}{new_c / old_c:>16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
