"""The memory graph (L3) in a process of its own (issue 39 item 8): ``python -m hologram.memory.graph.worker``
behind :class:`WorkerGraphStore`, and what ``GraphMemory`` does when that process dies.

Real parts only: real worker subprocesses, a real Kùzu database in a tmp dir, real signals. The damaged file
is the issue's: 4 KB of random bytes in the middle of ``graph.kz``, which segfaults Kùzu at open.

Mutation checks (done, file copied to /tmp and back): ``GraphHealth.crashed`` never stopping after crashes at
open turns ``test_a_damaged_graph_is_tried_twice_then_stopped_with_the_fix`` red (a third process is started);
``GraphMemory.store`` ignoring a dead client (``alive`` not checked) turns
``test_a_process_killed_between_calls_is_a_crash_too`` red (the dead store is handed out, nothing reported); the worker not ignoring SIGINT turns ``test_sigint_to_the_group_does_not_end_the_worker`` red.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hologram.config.settings import MemorySettings
from hologram.memory.cold.store import ColdStore
from hologram.memory.graph import GraphBlock, GraphLockedError, Triple, open_graph_store
from hologram.memory.graph.health import GraphHealth
from hologram.memory.graph.remote import GraphWorkerCrashed, WorkerGraphStore
from hologram.memory.graph.service import GraphMemory
from tests.kit.wait import wait_until

TEXT = 'Caroline said: "I love pottery"\nmy friend Mel lives in 北京 — AZURE-17'


def block(i: int, text: str = TEXT) -> GraphBlock:
    return GraphBlock(f"blk_{i}", f"ev_{i}", 0, "text", f"{text} #{i}", '{"k": 1}', "s1", 1_700_000_000_000 + i)


def triples(i: int) -> list[Triple]:
    return [
        Triple("Caroline", "likes", "pottery", f"ev_{i}", f"blk_{i}", confidence=0.9, valid_at=5),
        Triple("Mel", "lives in", "北京", f"ev_{i}", f"blk_{i}"),
    ]


def fill(path: Path, n: int = 20) -> None:
    with open_graph_store(path) as store:
        store.move([block(i) for i in range(n)], [t for i in range(n) for t in triples(i)], now=1.0)


def damage(path: Path, seed: int) -> int:
    """4 KB of random bytes in the middle of the file (issue 39: Kùzu segfaults opening it). Which bytes the
    middle holds depends on the graph, and 4 KB there may hurt nothing Kùzu reads at open (free pages): then
    other seeds, then other places (a tenth of the file apart), each on the intact file, until opening it
    read-only in a child process fails (a signal, or the library refusing it). Returns that exit status."""
    intact = path.read_bytes()
    size = len(intact)
    for where in (0.5, 0.3, 0.7, 0.1, 0.9, 0.2, 0.4, 0.6, 0.8):
        for attempt in range(seed, seed + 4):
            path.write_bytes(intact)
            with open(path, "r+b") as f:
                f.seek(max(0, int(size * where) - 2048))
                f.write(random.Random(attempt).randbytes(4096))
            done = subprocess.run([sys.executable, "-m", "hologram.memory.graph.worker", "--check", str(path)],
                                  capture_output=True, timeout=120)  # fmt: skip
            if done.returncode != 0:
                return done.returncode
    raise AssertionError(f"{path}: no damaged copy failed to open; the test's premise no longer holds")


def test_every_call_answers_as_the_in_process_store(tmp_path: Path) -> None:
    fill(tmp_path / "a.kz", 3)
    with open_graph_store(tmp_path / "a.kz") as local:
        expected = (
            local.counts(), local.entities(), local.fact_events(), local.blocks(["blk_1", "blk_2"]),
            local.neighbourhood("mel", hops=2, limit=10), local.find_blocks(["azure-17", "北京"]),
            local.triples_of_events(["ev_0"]), local.blocks_of_events(["ev_2"]),
        )  # fmt: skip
    with WorkerGraphStore(tmp_path / "b.kz") as remote:
        assert remote.pid != os.getpid()
        report = remote.move([block(i) for i in range(3)], [t for i in range(3) for t in triples(i)], now=1.0)
        assert report.moved == ("ev_0", "ev_1", "ev_2") and report.triples == 6
        again = remote.move([block(0)], triples(0), now=2.0)  # a retried batch writes nothing twice
        assert again.moved == () and again.already_held == ("ev_0",)
        got = (
            remote.counts(), remote.entities(), remote.fact_events(), remote.blocks(["blk_1", "blk_2"]),
            remote.neighbourhood("mel", hops=2, limit=10), remote.find_blocks(["azure-17", "北京"]),
            remote.triples_of_events(["ev_0"]), remote.blocks_of_events(["ev_2"]),
        )  # fmt: skip
        assert got == expected
        assert remote.held(["blk_0", "nope"]) == {"blk_0"} and remote.events_held(["ev_1", "x"]) == {"ev_1"}
        assert remote.forget(["ev_0"]) == 1 and remote.counts().blocks == 2
        with pytest.raises(ValueError, match="source block blk_9 is not in this move"):  # raised in the worker
            remote.move([block(8)], triples(9), now=3.0)
        assert remote.counts().blocks == 2, "the worker goes on after an error"


def test_the_lock_is_reported_as_the_in_process_store_reports_it(tmp_path: Path) -> None:
    with open_graph_store(tmp_path / "graph.kz"), pytest.raises(GraphLockedError, match="open in another process"):
        WorkerGraphStore(tmp_path / "graph.kz")


def test_a_segfault_is_the_workers_not_the_callers(tmp_path: Path) -> None:
    store = WorkerGraphStore(tmp_path / "graph.kz")
    store.move([block(1)], triples(1), now=1.0)
    os.kill(store.pid, signal.SIGSEGV)
    with pytest.raises(GraphWorkerCrashed, match="killed by SIGSEGV while answering counts"):
        store.counts()
    assert not store.alive
    with pytest.raises(GraphWorkerCrashed):  # every later call at once, no hang
        store.entities()
    store.close()
    with WorkerGraphStore(tmp_path / "graph.kz") as fresh:  # what it committed before is there
        assert fresh.counts().blocks == 1


def test_a_damaged_graph_crashes_the_worker_at_open(tmp_path: Path) -> None:
    fill(tmp_path / "graph.kz")
    assert damage(tmp_path / "graph.kz", 1) == -signal.SIGSEGV
    with pytest.raises(GraphWorkerCrashed, match="SIGSEGV while opening the graph"):
        WorkerGraphStore(tmp_path / "graph.kz")


def test_the_worker_ends_when_the_kernel_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of the process holding the client: the worker reads the end of its stdin and exits."""
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from hologram.memory.graph.remote import WorkerGraphStore
        store = WorkerGraphStore(Path({str(tmp_path / "graph.kz")!r}))
        print(store.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    wait_until(lambda: not _exists(worker), timeout=30, what=f"the worker {worker} to exit after its parent died")
    with open_graph_store(tmp_path / "graph.kz") as store:  # and it let go of the database
        assert store.counts().blocks == 0


def test_sigint_to_the_group_does_not_end_the_worker(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole foreground group; the kernel decides when the graph closes."""
    with WorkerGraphStore(tmp_path / "graph.kz") as store:
        os.kill(store.pid, signal.SIGINT)
        store.move([block(1)], triples(1), now=1.0)  # the request after the signal is answered
        assert store.counts().blocks == 1


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except FileNotFoundError:
        return False


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def graph_memory(data: Path, clock: Clock) -> GraphMemory:
    cold = ColdStore(data / "cold.db")
    graph = GraphMemory.open(data, MemorySettings(), cold)
    graph.health = GraphHealth(graph.path, clock=clock)
    return graph


async def call_after_a_kill(graph: GraphMemory, signal_name: str) -> None:
    """The first call after the worker was killed: it fails naming the signal when the call met the crash, or
    answers nothing when the worker's watcher saw the death first (the process died while idle: the status
    says so) — which of the two depends on the scheduler, both are the crash policy's path."""
    try:
        hits = await graph.search("AZURE-17")
    except RuntimeError as exc:
        assert signal_name in str(exc), exc
    else:
        assert hits == [] and graph.status()["l3_state"] in ("restarting", "stopped"), graph.status()


def test_a_crash_while_working_restarts_by_the_crash_policy(tmp_path: Path) -> None:
    fill(tmp_path / "graph.kz", 2)
    clock = Clock()
    graph = graph_memory(tmp_path, clock)
    told: list[str] = []
    graph.notify = told.append

    async def scenario() -> None:
        store = await graph.store()
        assert store is not None and graph.status()["l3_state"] == "running"
        first = graph.status()["l3_pid"]
        assert isinstance(first, int) and first != os.getpid()
        assert [h.text for h in await graph.search("AZURE-17")]  # served by the worker
        os.kill(first, signal.SIGSEGV)
        await call_after_a_kill(graph, "SIGSEGV")
        status = graph.status()
        assert status["l3_state"] == "restarting" and status["l3_crashes"] == 1
        assert (
            "a new one starts when L3 is next needed, after 1 s" in status["l3_problem"]
            and "hologram doctor --repair" in status["l3_problem"]
        )
        assert told and "SIGSEGV" in told[-1]
        assert await graph.search("AZURE-17") == []  # within the policy's delay: no new process, no error
        clock.now += 1.0
        assert [h.text for h in await graph.search("AZURE-17")], "a new process serves after the delay"
        status = graph.status()
        assert status["l3_state"] == "running" and status["l3_pid"] not in (None, first)
        assert status["l3_problem"] is None
        for expected_delay in (2, 3):  # the kernel's crash policy: 1 s, 2 s, 3 s, then stop
            os.kill(graph.status()["l3_pid"], signal.SIGKILL)
            await call_after_a_kill(graph, "SIGKILL")
            assert f"after {expected_delay} s" in graph.status()["l3_problem"]
            clock.now += expected_delay
            assert await graph.search("AZURE-17")
        os.kill(graph.status()["l3_pid"], signal.SIGKILL)
        await call_after_a_kill(graph, "SIGKILL")
        status = graph.status()
        assert status["l3_state"] == "stopped" and "crashed 4 times in 5 minutes" in status["l3_problem"]
        clock.now += 3600
        assert await graph.store() is None, "stopped: no more restarts in this kernel"
        await graph.aclose()

    asyncio.run(scenario())
    graph.cold.close()


def test_a_process_killed_between_calls_is_a_crash_too(tmp_path: Path) -> None:
    clock = Clock()
    graph = graph_memory(tmp_path, clock)

    async def scenario() -> None:
        store = await graph.store()
        assert isinstance(store, WorkerGraphStore)
        os.kill(store.pid, signal.SIGKILL)
        wait_until(lambda: not store.alive, timeout=30, what="the killed worker to be seen dead")
        assert await graph.store() is None
        assert graph.status()["l3_state"] == "restarting" and "SIGKILL while idle" in graph.status()["l3_problem"]
        await graph.aclose()

    asyncio.run(scenario())
    graph.cold.close()


def test_a_damaged_graph_is_tried_twice_then_stopped_with_the_fix(tmp_path: Path) -> None:
    fill(tmp_path / "graph.kz")
    assert damage(tmp_path / "graph.kz", 2) == -signal.SIGSEGV
    graph = graph_memory(tmp_path, Clock())

    async def scenario() -> None:
        assert await graph.store() is None
        status = graph.status()
        assert status["l3_state"] == "stopped" and status["l3_crashes"] == 2, status
        problem = status["l3_problem"]
        assert str(tmp_path / "graph.kz") in problem and "crashed 2 times while opening" in problem
        assert f"hologram doctor --repair --data {tmp_path}" in problem and "SIGSEGV" in problem
        assert await graph.ranked("Caroline") == [] and await graph.search("pottery") == []
        assert graph.status()["l3_crashes"] == 2, "no third process"
        with pytest.raises(RuntimeError, match="crashed 2 times while opening"):
            await graph.distill(idle_hours=0)
        await graph.aclose()

    asyncio.run(scenario())
    graph.cold.close()


def test_the_wire_keeps_every_string_as_it_was() -> None:
    """orjson on the hot path; a lone surrogate (which orjson refuses) goes by the standard library."""
    from hologram.memory.graph import wire

    for message in ({"t": 'line\nbreak "quoted" 北京 \\ tab\t'}, {"t": "lone \udc80 surrogate", "n": [1, 2.5, None]}):
        line = wire.encode(message)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert wire.decode(line) == message
