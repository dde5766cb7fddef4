"""Start-up benchmark: the event-driven supervisor vs a level-by-level ("wave") launcher vs the physical limit.

    .venv/bin/python tools/bench/startup.py [--sizes 10,50,100,200] [--seed 1] [--no-pyc-cache]
                                            [--what-if-spawn-ms MS] [--kernel]

For each size N: N synthetic plugins (tools/bench/synthetic_plugin.py, real `python -m` processes) on a
random DAG. Plugin i provides `bench.pI` and requires 1-3 facilities of earlier plugins (the first ~N/10
require only `kernel.tools`); its on_start sleeps a random 50-500 ms before it is ready. `hologram build`
writes the lock; then, in the same run:

1. the real `Supervisor` (event-driven) starts the graph: time from `start()` to the last plugin READY;
2. a wave launcher, a Supervisor subclass that only changes `schedule()`: level k (longest distance from the
   kernel) is spawned once every plugin of level k-1 has announced all its facilities; spawn code identical;
3. the limits, from the DAG and costs measured in this run:
   * `crit`: the critical path (longest path of ready delays): what infinitely fast process start gives;
   * `crit+spawn`: the longest path with each node weighing its delay + the spawn cost of one plugin started
     alone (spawn → READY of a zero-delay plugin, median of 5): the issue's target reference;
   * `sim`: the same DAG replayed in a model of this machine, in which a spawn costs the measured alone cost
     but concurrent spawns share the CPUs (processor sharing at the parallelism measured by a burst of 16
     zero-delay plugins). With 2 cores, 20 plugins released at once cannot all start in one spawn time,
     whatever the launcher does; `sim` is what an ideal event-driven launcher could reach here, and the
     `sim` model of waves checks that the model predicts the wave launcher too.

Children get a private bytecode cache (PYTHONPYCACHEPREFIX in a temp dir, warmed first), as an installed
plugin would have; `--no-pyc-cache` keeps the environment as it is (PYTHONDONTWRITEBYTECODE=1 then makes every
plugin compile the hologram modules it imports at every start). Every plugin process is stopped through
`Supervisor.shutdown()` before the next launch.

Plugins are spawned as `hologram up` spawns them: by default forked from the zygote (started by the warm-up
launch, so its own start is not in any measurement); `HOLOGRAM_ZYGOTE=0` measures the classic fork/exec.

``--kernel`` adds, per size, the same DAG launched by the real kernel: a `hologram up` process on the DAG's
lock, with everything the default install loads as users get it (the kernel's imports, memory's segmenter
and embedding model, the agent), so whatever those loads take from the CPU or the event loop shows. Its
all-ready time runs from the kernel's start (`Kernel.started_at`, read from `status` as now − uptime) to the
last plugin ready (its on_start + delay, on the shared monotonic clock), and is held to the same 1.10×
crit+spawn target. Each DAG starts twice in the same data directory and the second start is the figure (the
first also creates the databases, once per install; it is printed beside it).

Where the time goes is printed per size: for every plugin, the scheduling lag (its last requirement ready →
spawn begins, the supervisor's share), then exec (spawn → first line of plugin code: fork/exec and interpreter
start), SDK import, handshake (→ on_start) and ready (on_start → READY, minus the configured delay); and
the realised critical chain: the chain of last-ready requirements that ended at the last plugin, split the
same way. Plugin-side timestamps come from the plugin (CLOCK_MONOTONIC is shared by all processes).
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench

from bench._kernel import configure_bytecode, stop_on_terminate
from hologram.kernel import plugin_specs
from hologram.kernel.control import call
from hologram.manifest.facility import KERNEL
from hologram.plan.lock import Sources, build, read_lock
from hologram.supervisor import ManagedPlugin, PluginSpec, State, Supervisor, zygote

HERE = Path(__file__).resolve().parent
MODULE = "synthetic_plugin"
DELAY_RANGE = (0.050, 0.500)
LAUNCH_TIMEOUT_S = 120.0


# -- the synthetic graph ----------------------------------------------------------------------------------


@dataclass
class Dag:
    delays: list[float]  # seconds, per plugin
    parents: list[list[int]]  # plugins whose facility each plugin requires

    @property
    def size(self) -> int:
        return len(self.delays)

    def levels(self) -> list[int]:
        level: list[int] = []
        for parents in self.parents:  # parents are always earlier plugins
            level.append(1 + max((level[p] for p in parents), default=-1))
        return level

    def longest_path(self, per_node: float = 0.0) -> tuple[float, list[int]]:
        """Longest path where node i weighs delays[i] + per_node; returns its length and its nodes."""
        best: list[float] = []
        via: list[int | None] = []
        for i, parents in enumerate(self.parents):
            before = max(parents, key=lambda p: best[p], default=None)
            best.append((best[before] if before is not None else 0.0) + self.delays[i] + per_node)
            via.append(before)
        end = max(range(self.size), key=lambda i: best[i])
        path = [end]
        while (previous := via[path[-1]]) is not None:
            path.append(previous)
        return best[end], path[::-1]


def random_dag(size: int, rng: random.Random) -> Dag:
    roots = max(1, size // 10)
    delays = [round(rng.uniform(*DELAY_RANGE), 3) for _ in range(size)]
    parents = [[] if i < roots else sorted(rng.sample(range(i), min(i, rng.randint(1, 3)))) for i in range(size)]
    return Dag(delays, parents)


def plugin_name(index: int) -> str:
    return f"p{index:03d}"


def write_manifests(directory: Path, dag: Dag) -> None:
    directory.mkdir(parents=True)
    for i in range(dag.size):
        requires = [f"bench.{plugin_name(p)}" for p in dag.parents[i]] or ["kernel.tools"]
        (directory / f"{plugin_name(i)}.toml").write_text(
            "[plugin]\n"
            f'name = "{plugin_name(i)}"\n'
            'version = "1.0.0"\n'
            f'run = {{ module = "{MODULE}", env = {{ PYTHONPATH = "{HERE}" }} }}\n\n'
            "[facilities]\n"
            f'provides = ["bench.{plugin_name(i)}"]\n'
            f"requires = {json.dumps(requires)}\n\n"
            "[start]\n"
            f'timeout_s = {LAUNCH_TIMEOUT_S:g}\nrestart = "never"\n\n'
            "[config]\n"
            f"delay = {dag.delays[i]}\n",
            encoding="utf-8",
        )


def lock_specs(directory: Path, dag: Dag) -> tuple[list[PluginSpec], list[str]]:
    """`hologram build` of the DAG's manifests, then the specs `hologram up` would give the supervisor."""
    write_manifests(directory / "manifests", dag)
    lock_path = directory / "hologram.lock"
    build(lock_path, Sources(builtins=False, installed=False, paths=("manifests",)))
    lock = read_lock(lock_path)
    return plugin_specs(lock), list(lock.kernel.provides)


# -- the launchers ----------------------------------------------------------------------------------------


class TimedSupervisor(Supervisor):
    """The real supervisor, plus a clock on every `facility/ready` (measurement only)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.announced_at: dict[str, float] = {}

    def _facility_ready(self, plugin: ManagedPlugin, facility: str) -> None:
        self.announced_at[plugin.name] = time.monotonic()
        super()._facility_ready(plugin, facility)


class WaveSupervisor(TimedSupervisor):
    """Level-by-level launch: same spawn, handshake and readiness code; only `schedule()` differs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.level_of: dict[str, int] = {}
        for name in self.order:  # the lock's order is topological
            providers = set(self.plugins[name].spec.requires.values()) - {KERNEL}
            self.level_of[name] = 1 + max((self.level_of[p] for p in providers), default=-1)
        self.top = max(self.level_of.values(), default=0)
        self.level = 0

    def _level_ready(self, level: int) -> bool:
        return all(
            set(p.spec.provides) <= p.ready_facilities
            for name, p in self.plugins.items()
            if self.level_of[name] == level
        )

    def schedule(self) -> None:
        while self.level < self.top and self._level_ready(self.level):
            self.level += 1
        if self._shutting_down:
            return
        for name in self.order:
            plugin = self.plugins[name]
            if (
                self.level_of[name] <= self.level
                and plugin.state is State.WAITING
                and plugin.wanted
                and not self.blockers(plugin)
            ):
                self._launch(plugin)


@dataclass
class Timeline:
    """One plugin's start, on the shared monotonic clock, relative to `Supervisor.start()`."""

    eligible: float  # its last requirement announced ready (0 for plugins needing only the kernel)
    spawn: float  # ManagedPlugin.start() began (arena, fork/exec)
    main: float  # first line of plugin code ran
    imported: float  # SDK imported
    on_start: float  # handshake done, on_start called
    ready: float  # the kernel saw it READY
    delay: float  # configured on_start sleep
    child_cpu: float  # the plugin's CPU seconds at on_start
    last_parent: str | None  # the requirement that was ready last

    @property
    def overhead(self) -> float:
        """Spawn → READY minus the configured delay: what starting a process costs."""
        return self.ready - self.spawn - self.delay


@dataclass
class Launch:
    seconds: float  # start() → last plugin READY
    shutdown_s: float
    kernel_cpu: float  # CPU of this process (all threads) from start() to all READY
    timelines: dict[str, Timeline] = field(default_factory=dict)


async def launch(
    cls: type[TimedSupervisor],
    specs: Sequence[PluginSpec],
    kernel_facilities: Sequence[str],
    data_dir: Path,
    delays: dict[str, float],
) -> Launch:
    supervisor = cls(specs, data_dir, kernel_facilities=kernel_facilities)
    done = asyncio.Event()
    problems: list[str] = []

    def listener(plugin: ManagedPlugin) -> None:
        if plugin.state in (State.FAILED, State.CRASHED):
            problems.append(f"{plugin.name}: {plugin.state.value}: {plugin.reason}")
            done.set()
        elif all(p.state is State.READY for p in supervisor.plugins.values()):
            done.set()

    supervisor.listeners.append(listener)
    cpu_before = time.process_time()
    try:
        supervisor.start()
        try:
            await asyncio.wait_for(done.wait(), LAUNCH_TIMEOUT_S)
        except asyncio.TimeoutError:
            stuck = [
                f"{p.name}: {p.state.value} {p.reason or supervisor.waiting_reason(p)}".strip()
                for p in supervisor.plugins.values()
                if p.state is not State.READY
            ]
            raise RuntimeError(f"not all READY after {LAUNCH_TIMEOUT_S:g} s: " + "; ".join(stuck[:10])) from None
        kernel_cpu = time.process_time() - cpu_before
        if problems:
            raise RuntimeError("launch failed: " + "; ".join(problems))
        origin = supervisor.started_at
        seconds = max(p.ready_at or 0.0 for p in supervisor.plugins.values()) - origin
        result = Launch(seconds, 0.0, kernel_cpu)
        for name, plugin in supervisor.plugins.items():
            timing = json.loads((data_dir / "plugins" / name / "timing.json").read_text(encoding="utf-8"))
            parents = [p for p in set(plugin.spec.requires.values()) if p != KERNEL]
            last = max(parents, key=lambda p: supervisor.announced_at[p], default=None)
            result.timelines[name] = Timeline(
                eligible=supervisor.announced_at[last] - origin if last else 0.0,
                spawn=(plugin.started_at or 0.0) - origin,
                main=timing["main"] - origin,
                imported=timing["imported"] - origin,
                on_start=timing["on_start"] - origin,
                ready=(plugin.ready_at or 0.0) - origin,
                delay=delays.get(name, 0.0),
                child_cpu=timing["cpu_at_start"],
                last_parent=last,
            )
    finally:
        stop_began = time.monotonic()
        await supervisor.shutdown()
        shutdown_s = time.monotonic() - stop_began
    result.shutdown_s = shutdown_s
    leftovers = [p.name for p in supervisor.plugins.values() if p.runtime is not None]
    if leftovers:
        raise RuntimeError(f"plugins still running after shutdown: {leftovers}")
    return result


# -- the real kernel ---------------------------------------------------------------------------------------


def kernel_launch(directory: Path, dag: Dag) -> float:
    """`hologram up` on the DAG's lock (a new process, as a user starts it): seconds from the kernel's start to
    the last plugin ready."""
    if not (directory / "hologram.lock").is_file():
        lock_specs(directory, dag)  # writes directory/hologram.lock
    data = directory / "data"
    stop_on_terminate()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hologram",
            "up",
            "--port",
            "0",
            "--lock",
            str(directory / "hologram.lock"),
            "--data",
            str(data),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=directory,
    )
    try:
        origin: float | None = None
        deadline = time.monotonic() + LAUNCH_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"hologram up exited with {process.returncode}")
            try:
                asked = time.monotonic()
                status = call(data, "status", timeout=5)
            except Exception:
                time.sleep(0.01)
                continue
            if origin is None:
                origin = asked - float(status["kernel"]["uptime_s"])
            states = [p["state"] for p in status["plugins"]]
            if any(state in ("failed", "crashed") for state in states):
                raise RuntimeError(f"launch failed: {status['plugins']}")
            if all(state == "ready" for state in states):
                break
            time.sleep(0.01)
        else:
            raise RuntimeError(f"not all READY after {LAUNCH_TIMEOUT_S:g} s")
        assert origin is not None
        ready, first = [], []
        for i, delay in enumerate(dag.delays):
            timing = json.loads((data / "plugins" / plugin_name(i) / "timing.json").read_text(encoding="utf-8"))
            ready.append(timing["on_start"] + delay)
            first.append(timing["main"])
        print(f"  kernel: first plugin code ran {ms(min(first) - origin)} after the kernel's start")
        return max(ready) - origin
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- spawn cost, measured in this run ---------------------------------------------------------------------


def zero_delay_dag(size: int) -> Dag:
    return Dag([0.0] * size, [[] for _ in range(size)])


async def launch_dag(directory: Path, dag: Dag, cls: type[TimedSupervisor] = TimedSupervisor) -> Launch:
    specs, kernel_facilities = lock_specs(directory, dag)
    delays = {plugin_name(i): d for i, d in enumerate(dag.delays)}
    return await launch(cls, specs, kernel_facilities, directory / "data", delays)


@dataclass
class SpawnCost:
    alone: float  # spawn → READY of one zero-delay plugin, median
    parts: dict[str, float]  # median exec / import / handshake / ready of the alone runs
    child_cpu: float  # plugin CPU to on_start, median
    kernel_cpu: float  # supervisor CPU per plugin (burst)
    burst: float  # time for BURST zero-delay plugins released at once
    parallelism: float  # effective concurrent spawns at full speed: BURST * alone / burst


BURST = 16


def split(timeline: Timeline) -> dict[str, float]:
    return {
        "exec": timeline.main - timeline.spawn,
        "import": timeline.imported - timeline.main,
        "handshake": timeline.on_start - timeline.imported,
        "ready": timeline.ready - timeline.on_start - timeline.delay,
    }


async def measure_spawn(scratch: Path, tag: str, repeat: int = 5) -> SpawnCost:
    alone: list[Timeline] = []
    for attempt in range(repeat):
        run = await launch_dag(scratch / f"{tag}-alone{attempt}", zero_delay_dag(1))
        alone.append(run.timelines[plugin_name(0)])
    burst = await launch_dag(scratch / f"{tag}-burst", zero_delay_dag(BURST))
    median_alone = statistics.median(t.overhead for t in alone)
    parts = {key: statistics.median(split(t)[key] for t in alone) for key in split(alone[0])}
    return SpawnCost(
        alone=median_alone,
        parts=parts,
        child_cpu=statistics.median(t.child_cpu for t in alone),
        kernel_cpu=burst.kernel_cpu / BURST,
        burst=burst.seconds,
        parallelism=min(float(os.cpu_count() or 1), BURST * median_alone / burst.seconds),
    )


# -- the model of this machine ----------------------------------------------------------------------------


def simulate(dag: Dag, spawn: float, parallelism: float, *, waves: bool) -> float:
    """Replay the DAG: a launched plugin needs `spawn` seconds of service, shared by all plugins spawning at
    that moment at `parallelism` full-speed slots (processor sharing), then sleeps its delay; it is ready
    after that. Event-driven: a plugin launches when its requirements are ready; waves: when its level may."""
    n = dag.size
    level = dag.levels()
    children: list[list[int]] = [[] for _ in range(n)]
    for i, parents in enumerate(dag.parents):
        for p in parents:
            children[p].append(i)
    missing = [len(parents) for parents in dag.parents]
    per_level = [0] * (max(level) + 1)
    for lv in level:
        per_level[lv] += 1
    ready_in_level = [0] * len(per_level)
    open_level = 0
    spawning: dict[int, float] = {}  # plugin -> remaining service
    sleeping: list[tuple[float, int]] = []
    now = 0.0
    done = 0

    def may_launch(i: int) -> bool:
        return missing[i] == 0 and (not waves or level[i] <= open_level)

    for i in range(n):
        if may_launch(i):
            spawning[i] = spawn
    launched = set(spawning)
    while done < n:
        rate = min(1.0, parallelism / len(spawning)) if spawning else 0.0
        next_spawn = min(spawning.values()) / rate if spawning else float("inf")
        next_wake = sleeping[0][0] - now if sleeping else float("inf")
        step = min(next_spawn, next_wake)
        now += step
        finished = []
        for i in list(spawning):
            spawning[i] -= rate * step
            if spawning[i] <= 1e-12:
                finished.append(i)
        for i in finished:
            del spawning[i]
            heapq.heappush(sleeping, (now + dag.delays[i], i))
        while sleeping and sleeping[0][0] <= now + 1e-12:
            _, i = heapq.heappop(sleeping)
            done += 1
            ready_in_level[level[i]] += 1
            for c in children[i]:
                missing[c] -= 1
            while open_level < len(per_level) - 1 and ready_in_level[open_level] == per_level[open_level]:
                open_level += 1
            for c in range(n) if waves else children[i]:
                if c not in launched and may_launch(c):
                    launched.add(c)
                    spawning[c] = spawn
    return now


# -- reporting --------------------------------------------------------------------------------------------


def realised_chain(timelines: dict[str, Timeline]) -> list[str]:
    """From the last plugin to be ready back through the requirement that was ready last, each time."""
    name: str | None = max(timelines, key=lambda n: timelines[n].ready)
    chain = []
    while name is not None:
        chain.append(name)
        name = timelines[name].last_parent
    return chain[::-1]


def describe(label: str, run: Launch) -> list[str]:
    timelines = run.timelines.values()
    lag = [t.spawn - t.eligible for t in timelines]
    over = [t.overhead for t in timelines]
    parts = {key: statistics.median(split(t)[key] for t in timelines) for key in ("exec", "import", "handshake")}
    chain = [run.timelines[n] for n in realised_chain(run.timelines)]
    chain_lag = sum(t.spawn - t.eligible for t in chain)
    chain_delay = sum(t.delay for t in chain)
    chain_parts = {key: sum(split(t)[key] for t in chain) for key in ("exec", "import", "handshake", "ready")}
    return [
        f"  {label:<5} all plugins: sched lag p50 {ms(statistics.median(lag))} max {ms(max(lag))}; "
        f"spawn→READY−delay p50 {ms(statistics.median(over))} p90 {ms(quantile(over, 0.9))} max {ms(max(over))} "
        f"(p50 exec {ms(parts['exec'])}, import {ms(parts['import'])}, handshake {ms(parts['handshake'])}); "
        f"kernel CPU {run.kernel_cpu:.2f} s ({ms(run.kernel_cpu / len(run.timelines))}/plugin); "
        f"shutdown {run.shutdown_s:.2f} s",
        f"  {label:<5} realised chain of {len(chain)}: {run.seconds:.2f} s = delays {chain_delay:.2f} + sched lag "
        f"{chain_lag:.3f} + exec {chain_parts['exec']:.2f} + import {chain_parts['import']:.2f} + handshake "
        f"{chain_parts['handshake']:.2f} + ready {chain_parts['ready']:.3f}",
    ]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def quantile(values: Iterable[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- main -------------------------------------------------------------------------------------------------


def spawn_mode() -> str:
    if zygote.enabled():
        return "forked from the zygote (HOLOGRAM_ZYGOTE=0 for the classic fork/exec of `python -m`)"
    return "classic fork/exec of `python -m` (HOLOGRAM_ZYGOTE=0; unset it to fork from the zygote)"


async def run(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="hologram-startup-") as tmp:
        scratch = Path(tmp)
        bytecode = configure_bytecode(scratch, not args.no_pyc_cache)
        await launch_dag(scratch / "warm", zero_delay_dag(2))  # fills the bytecode cache, warms the page cache
        cost = await measure_spawn(scratch, "spawn")
        print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; plugin bytecode: {bytecode}")
        print(f"plugin spawn: {spawn_mode()}")
        print(
            f"spawn cost, one zero-delay plugin alone (median of 5): {ms(cost.alone)} spawn→READY = exec "
            f"{ms(cost.parts['exec'])} + SDK import {ms(cost.parts['import'])} + handshake "
            f"{ms(cost.parts['handshake'])} + ready {ms(cost.parts['ready'])}; plugin CPU to on_start "
            f"{ms(cost.child_cpu)}"
        )
        print(
            f"burst of {BURST} zero-delay plugins at once: all READY in {ms(cost.burst)} → effective parallelism "
            f"{cost.parallelism:.2f} spawns at full speed; supervisor CPU {ms(cost.kernel_cpu)}/plugin"
        )
        rows: list[Row] = []
        for size in sizes:
            dag = random_dag(size, rng)
            event = await launch_dag(scratch / f"n{size}-event", dag)
            wave = await launch_dag(scratch / f"n{size}-wave", dag, WaveSupervisor)
            row = Row(
                size,
                dag,
                max(dag.levels()) + 1,
                event,
                wave,
                dag.longest_path()[0],
                dag.longest_path(cost.alone)[0],
                simulate(dag, cost.alone, cost.parallelism, waves=False),
                simulate(dag, cost.alone, cost.parallelism, waves=True),
            )
            if args.kernel:  # the first start creates the data directory's databases (once per install)
                first = kernel_launch(scratch / f"n{size}-kernel", dag)
                row.kernel = kernel_launch(scratch / f"n{size}-kernel", dag)
                print(f"  kernel: all ready in {first:.2f} s at the first start, {row.kernel:.2f} s at the next")
            rows.append(row)
            path = dag.longest_path()[1]
            print(f"\nN = {size}: {row.levels} levels; critical path {row.crit:.2f} s over {len(path)} plugins")
            for line in describe("event", event) + describe("wave", wave):
                print(line)
        print()
        header = (
            f"{'N':>4} {'levels':>6} {'event s':>8} {'wave s':>7} {'crit s':>7} {'crit+spawn':>10} {'sim ev':>7} "
            f"{'sim wave':>8} │ {'ev/limit':>8} {'wave/limit':>10} {'wave/ev':>7} {'ev/sim':>6} {'wave/sim':>8}"
        )
        print(header)
        print("─" * len(header))
        for r in rows:
            ev, wv = r.event.seconds, r.wave.seconds
            print(
                f"{r.size:>4} {r.levels:>6} {ev:>8.2f} {wv:>7.2f} {r.crit:>7.2f} {r.limit:>10.2f} {r.sim_event:>7.2f} "
                f"{r.sim_wave:>8.2f} │ {ev / r.limit:>8.2f} {wv / r.limit:>10.2f} {wv / ev:>7.2f} "
                f"{ev / r.sim_event:>6.2f} {wv / r.sim_wave:>8.2f}"
            )
        print(
            "limit = crit+spawn: the longest path of (ready delay + alone spawn cost); sim ev / sim wave: the same "
            "DAG on a model of this machine where concurrent spawns share the measured parallelism"
        )
        if args.what_if_spawn_ms is not None:
            spawn = args.what_if_spawn_ms / 1000
            print(f"what if a spawn cost {args.what_if_spawn_ms:g} ms (same model, same DAGs, same parallelism):")
            for r in rows:
                limit = r.dag.longest_path(spawn)[0]
                sim_event = simulate(r.dag, spawn, cost.parallelism, waves=False)
                sim_wave = simulate(r.dag, spawn, cost.parallelism, waves=True)
                print(
                    f"  N={r.size}: crit+spawn {limit:.2f} s, model event-driven {sim_event:.2f} s "
                    f"({sim_event / limit:.2f}×), model waves {sim_wave:.2f} s ({sim_wave / limit:.2f}×)"
                )
        for r in rows:
            if r.kernel is not None:
                verdict = "meets" if r.kernel <= 1.10 * r.limit else "MISSES"
                print(
                    f"N={r.size}: in the real kernel (`hologram up`, its loads as users get them) all ready in "
                    f"{r.kernel:.2f} s = {r.kernel / r.limit:.2f}× crit+spawn ({verdict} the 1.10× target), "
                    f"{r.kernel / r.event.seconds:.2f}× the bare supervisor's launch"
                )
            verdict = "meets" if r.event.seconds <= 1.10 * r.limit else "MISSES"
            print(
                f"N={r.size}: event-driven {r.event.seconds / r.limit:.2f}× crit+spawn ({verdict} the 1.10× target), "
                f"{r.event.seconds / r.sim_event:.2f}× the contended limit; waves take "
                f"{r.wave.seconds / r.event.seconds:.2f}× as long as event-driven"
            )


@dataclass
class Row:
    size: int
    dag: Dag
    levels: int
    event: Launch
    wave: Launch
    crit: float
    limit: float
    sim_event: float
    sim_wave: float
    kernel: float | None = None  # --kernel: all ready in a real `hologram up`


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,50,100,200", help="comma-separated plugin counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-pyc-cache", action="store_true", help="keep the inherited bytecode settings")
    parser.add_argument(
        "--what-if-spawn-ms", type=float, help="also print the model's prediction for this per-plugin spawn cost"
    )
    parser.add_argument(
        "--kernel", action="store_true", help="also launch each DAG in a real `hologram up` (its loads included)"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
