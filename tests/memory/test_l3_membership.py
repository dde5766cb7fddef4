"""L1/L2/L3 membership: an event cooled into the memory graph (L3) is neither L1 nor L2 — never in a history
again, never ``put`` back into L2 by a prune — and that survives a restart; knowing it never imports the
graph database when nothing was ever moved.

Real SessionStore, ColdStore and Kùzu database in a tmp dir; cooling through ``GraphMemory.distill``.

Mutation checks (done, file copied to /tmp and back): ``_in_l3`` returning all False in
``SessionMemory`` turns ``test_a_cooled_event_is_neither_l1_nor_l2_and_stays_so_after_a_restart`` red (the
cooled events are back in the history, then ``put`` into L2 again → DuplicateBlockError); ``remove`` not
recording ``into_l3`` turns it red too (after the restart nothing says L3 holds them); dropping the check in
``ColdStore.put`` turns ``test_l2_refuses_an_event_l3_holds`` red.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hologram.config.settings import MemorySettings
from hologram.memory.cold.store import ColdStore, DuplicateBlockError
from hologram.memory.graph.service import GraphMemory
from hologram.memory.session_memory import SessionMemory, record_of
from hologram.sessions import SessionStore

from .test_session_memory import EN_TOPICS, assert_valid, long_session, window_for

WINDOW = window_for(600)


@dataclass
class Kernelish:
    """What the kernel holds for memory, on one data directory."""

    data: Path
    store: SessionStore
    cold: ColdStore
    mem: SessionMemory
    graph: GraphMemory

    async def close(self) -> None:
        await self.graph.aclose()
        self.cold.close()
        self.store.close()


def open_memory(data: Path, settings: MemorySettings | None = None) -> Kernelish:
    store = SessionStore(data / "sessions.db")
    cold = ColdStore(data / "cold.db")
    mem = SessionMemory(store, cold, None)
    graph = GraphMemory.open(data, settings or MemorySettings(), cold)
    mem.graph = graph
    return Kernelish(data, store, cold, mem, graph)


async def turn(mem: SessionMemory, sid: str, text: str, window: int = WINDOW) -> list[int]:
    mem.store.append(sid, "input", {"text": text})
    prepared = await mem.prepare(sid, text, window_tokens=window, fixed_tokens=0)
    assert_valid(prepared)
    mem.store.append(sid, "response", {"content": "Noted.", "reasoning": None})
    return prepared.seqs


def ids_of(mem: SessionMemory, sid: str) -> dict[int, str]:
    return {e.seq: r.id for e in mem.store.events(sid) if (r := record_of(e)) is not None}


async def cooled(k: Kernelish, sid: str = "s1") -> list[str]:
    """A long session pruned into L2, then everything in L2 cooled into L3 now. Returns the cooled ids."""
    long_session(k.store, sid, turns=30)
    await turn(k.mem, sid, EN_TOPICS[0])
    in_l2 = k.mem.cold_ids(sid)
    assert in_l2, "the prune moved events to L2"
    report = await k.graph.distill(idle_hours=0)
    assert sorted(report.moved) == sorted(in_l2) and not report.failed
    return in_l2


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


def test_a_cooled_event_is_neither_l1_nor_l2_and_stays_so_after_a_restart(data: Path) -> None:
    async def first() -> list[str]:
        k = open_memory(data)
        moved = await cooled(k)
        assert k.mem.cold_ids("s1") == [] and sorted(k.mem.l3_ids("s1")) == sorted(moved)
        l1 = {ids_of(k.mem, "s1")[e.seq] for e in k.mem.l1_events("s1") if e.seq in ids_of(k.mem, "s1")}
        assert not l1 & set(moved), "an L3 event is not L1"
        # many more turns with a tight window: prunes run every time, none may touch an L3 event
        for topic in EN_TOPICS[1:] * 2:
            seqs = await turn(k.mem, "s1", topic)
            sent = {ids_of(k.mem, "s1")[s] for s in seqs}
            assert not sent & set(moved), "an L3 event came back into the history"
        assert not set(k.cold.ids()) & set(moved), "an L3 event was put back into L2"
        assert k.mem.cold_ids("s1"), "the prunes still moved the new turns to L2"
        await k.close()
        return moved

    moved = asyncio.run(first())

    async def after_restart() -> None:
        store, cold = SessionStore(data / "sessions.db"), ColdStore(data / "cold.db")
        mem = SessionMemory(store, cold, None)  # no graph at all: cold.db alone knows
        assert sorted(mem.l3_ids("s1")) == sorted(moved)
        await turn(mem, "s1", "And what about the weekend plans?", window=window_for(300))
        prepared = await mem.prepare("s1", "wifi password lake house", window_tokens=window_for(300), fixed_tokens=0)
        sent = {ids_of(mem, "s1")[s] for s in prepared.seqs}
        assert not sent & set(moved) and not set(prepared.pruned) & set(moved)
        assert not set(cold.ids()) & set(moved)
        cold.close()
        store.close()

    asyncio.run(after_restart())


def test_l2_refuses_an_event_l3_holds(data: Path) -> None:
    async def run() -> None:
        k = open_memory(data)
        moved = await cooled(k)
        record = next(r for e in k.store.events("s1") if (r := record_of(e)) is not None and r.id == moved[0])
        with pytest.raises(DuplicateBlockError, match="L3 holds"):
            k.cold.put([record])
        await k.close()

    asyncio.run(run())


def test_a_crash_between_the_graph_commit_and_the_l2_delete_is_reconciled_into_l3(data: Path) -> None:
    """The graph committed, L2 still holds the events (nothing recorded as L3 yet): the next start's
    reconcile moves them out of L2 *and* records them as L3's in the same transaction."""

    async def run() -> None:
        k = open_memory(data)
        long_session(k.store, "s1", turns=30)
        await turn(k.mem, "s1", EN_TOPICS[0])
        in_l2 = k.mem.cold_ids("s1")
        store = await k.graph.store()
        assert store is not None
        from hologram.memory.graph.cooling import graph_blocks

        records = k.cold.peek(in_l2)
        store.move([b for r in records for b in graph_blocks(r)], [], now=0.0)  # the commit, then "the crash"
        assert k.cold.l3_count == 0 and sorted(k.cold.ids()) == sorted(in_l2)
        await k.close()
        k = open_memory(data, MemorySettings.model_validate({"cooling": {"enabled": False}}))
        k.graph.start()  # the start's reconcile (cooling disabled: nothing else runs)
        task = k.graph._task
        assert task is not None
        await task
        assert k.cold.ids() == [] and sorted(k.mem.l3_ids("s1")) == sorted(in_l2)
        await k.close()

    asyncio.run(run())


def test_nothing_imports_the_graph_database_until_something_cools(data: Path) -> None:
    """The idle kernel's footprint: with nothing eligible and no graph on disk, a cooling run, a request with
    L3 recall on and the membership mask all work without importing kuzu."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from hologram.memory.cold.store import ColdStore
        from hologram.memory.graph.service import GraphMemory
        from hologram.memory.session_memory import SessionMemory
        from hologram.config.settings import MemorySettings
        from hologram.sessions import SessionStore

        async def main():
            data = Path({str(data)!r})
            store, cold = SessionStore(data / "sessions.db"), ColdStore(data / "cold.db")
            mem = SessionMemory(store, cold, None)
            mem.graph = graph = GraphMemory.open(data, MemorySettings(), cold)
            graph.start()
            store.create_session("cli", "s")
            store.append("s", "input", {{"text": "Melanie: my favorite book is Charlotte's Web."}})
            prepared = await mem.prepare("s", "what does Melanie read?", window_tokens=4000, fixed_tokens=0)
            report = await graph.distill()
            assert report.moved == [] and prepared.l3_events == [], (report, prepared)
            assert graph.counts() is None
            await graph.aclose()
            print("kuzu" in sys.modules)

        asyncio.run(main())
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stderr
