"""Cooling L2 → L3 on a real ColdStore and a real Kùzu database: who cools, block identity and a single holder,
call groups whole, a failed extraction left in L2, and a ``kill -9`` at both crash points of a move.

Mutation-checked (file copied to /tmp, edited, back): removing from L2 *before* the L3 move (delete-then-copy)
turns ``test_kill_9_mid_distillation_loses_and_duplicates_nothing[in-the-l3-transaction]`` red (the batch is
gone from both); a :func:`reconcile` that removes nothing turns ``[after-l3-commit-before-l2-delete]`` red
(blocks held twice after the restart); ignoring call groups turns ``test_a_call_group_moves_whole_or_not_at_all``
red; letting a failed run end the job's loop turns
``test_the_background_job_runs_each_interval_and_survives_a_failed_run`` red.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hologram.memory.cold.blocks import EventRecord, build_event
from hologram.memory.cold.store import ColdStore
from hologram.memory.graph import open_graph_store
from hologram.memory.graph.cooling import CoolingPolicy, distill, reconcile
from hologram.memory.graph.extract import DeterministicExtractor

HOUR = 3600.0
NOW = 1_800_000_000.0


def _turn(k: int, text: str, **kw: object) -> EventRecord:
    return build_event(timestamp=1_700_000_000 + k, input=text, session="s", origin=f"s:{k}", **kw)  # type: ignore[arg-type]


def _holders(cold: ColdStore, graph: object, records: list[EventRecord]) -> dict[str, int]:
    in_l2 = set(cold.ids())
    held = graph.held(b.id for r in records for b in r.blocks)  # type: ignore[attr-defined]
    return {b.id: (r.id in in_l2) + (b.id in held) for r in records for b in r.blocks}


def test_idle_rarely_used_events_move_with_their_block_ids(tmp_path: Path) -> None:
    cold = ColdStore(tmp_path / "cold.db")
    old = [_turn(k, f"Melanie: I love pottery number {k}. My favorite book is Book {k}.") for k in range(4)]
    used, recent = _turn(10, "Caroline: I went to Paris."), _turn(11, "Caroline: I adopted a puppy.")
    cold.put([*old, used], now=NOW - 80 * HOUR)
    cold.put([recent], now=NOW - 10 * HOUR)
    for _ in range(3):
        cold.touch([used.id], now=NOW - 79 * HOUR)  # 3 accesses, long ago: used, so it stays
    with open_graph_store(tmp_path / "graph.kz") as graph:
        report = asyncio.run(distill(cold, graph, DeterministicExtractor(), now=NOW))
        assert sorted(report.moved) == sorted(r.id for r in old) and report.eligible == 4
        assert set(cold.ids()) == {used.id, recent.id}
        # the same blocks, same ids and text, now held by L3 alone
        moved = graph.blocks(b.id for r in old for b in r.blocks)
        assert [(b.id, b.text) for b in moved] == [(b.id, b.text) for r in old for b in r.blocks]
        assert set(_holders(cold, graph, [*old, used, recent]).values()) == {1}
        facts = graph.triples_of_events([old[2].id])
        assert {(t.subject, t.predicate, t.value) for t in facts} == {
            ("Melanie", "love", "pottery number 2"),
            ("Melanie", "favorite book", "Book 2"),
        }
        # configurable: 8 idle hours and 3 accesses are enough now
        again = asyncio.run(distill(cold, graph, DeterministicExtractor(), now=NOW,
                                    policy=CoolingPolicy(max_accesses=3, idle_hours=8)))  # fmt: skip
        assert sorted(again.moved) == sorted([used.id, recent.id]) and cold.ids() == []
    cold.close()


def test_a_call_group_moves_whole_or_not_at_all(tmp_path: Path) -> None:
    cold = ColdStore(tmp_path / "cold.db")
    call = build_event(timestamp=1_700_000_001, tool_calls=[{"id": "c1", "name": "weather", "arguments": "{}"}],
                       session="s", group="g1")  # fmt: skip
    result = build_event(timestamp=1_700_000_002, tool_results=[{"call_id": "c1", "name": "weather", "content": "I love rain"}],
                         session="s", group="g1")  # fmt: skip
    cold.put([call, result], now=NOW - 80 * HOUR)
    cold.touch([result.id], now=NOW - 1 * HOUR)  # the result was used an hour ago: not idle
    with open_graph_store(tmp_path / "graph.kz") as graph:
        report = asyncio.run(distill(cold, graph, DeterministicExtractor(), now=NOW))
        assert report.moved == [] and report.held_back == [call.id]
        assert set(cold.ids()) == {call.id, result.id}
        later = asyncio.run(distill(cold, graph, DeterministicExtractor(), now=NOW + 80 * HOUR))
        assert sorted(later.moved) == sorted([call.id, result.id])
    cold.close()


class _Flaky:
    name = "flaky"

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on
        self.inner = DeterministicExtractor()

    async def extract(self, record: EventRecord) -> list:  # type: ignore[type-arg]
        if record.id == self.fail_on:
            raise TimeoutError("the model did not answer in 30 s")
        return self.inner.extract(record)


def test_a_failed_extraction_leaves_the_event_in_l2(tmp_path: Path) -> None:
    cold = ColdStore(tmp_path / "cold.db")
    records = [_turn(k, f"Jon: I love dancing style {k}.") for k in range(3)]
    cold.put(records, now=NOW - 80 * HOUR)
    with open_graph_store(tmp_path / "graph.kz") as graph:
        report = asyncio.run(distill(cold, graph, _Flaky(records[1].id), now=NOW))
        assert report.failed == [(records[1].id, "TimeoutError: the model did not answer in 30 s")]
        assert cold.ids() == [records[1].id] and not graph.events_held([records[1].id])
        retry = asyncio.run(distill(cold, graph, DeterministicExtractor(), now=NOW))
        assert retry.moved == [records[1].id] and cold.ids() == []
        assert graph.counts().triples == 3
    cold.close()


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from hologram.memory.cold.store import ColdStore
    from hologram.memory.graph import kuzu_store, open_graph_store
    from hologram.memory.graph.cooling import CoolingPolicy, distill, reconcile
    from hologram.memory.graph.extract import DeterministicExtractor

    data, point, now = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cold = ColdStore(data + "/cold.db")
    graph = open_graph_store(data + "/graph.kz")
    batches = {"n": 0}

    def park(what):
        print(what, flush=True)
        sys.stdin.readline()  # until the parent's SIGKILL

    copy = kuzu_store.KuzuGraphStore._copy
    def traced_copy(self, table, rows):
        copy(self, table, rows)
        if point == "mid-move" and table == "Block" and batches["n"] == 2:
            park("parked in the second batch's L3 transaction")
    kuzu_store.KuzuGraphStore._copy = traced_copy

    remove = ColdStore.remove
    def traced_remove(self, ids, **kw):
        ids = list(ids)
        batches["n"] += 1
        if point == "before-delete" and batches["n"] == 3:
            park("parked after the second batch's L3 commit")
        return remove(self, ids, **kw)
    ColdStore.remove = traced_remove
    # remove calls: 1 = reconcile's, 2 = batch 0's delete, 3 = batch 1's. So "mid-move" parks inside batch 1's
    # L3 transaction, "before-delete" between batch 1's L3 commit and its L2 delete.
    asyncio.run(distill(cold, graph, DeterministicExtractor(), now=now, policy=CoolingPolicy(batch_events=50)))
    print("done", flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "point", ["mid-move", "before-delete"], ids=["in-the-l3-transaction", "after-l3-commit-before-l2-delete"]
)
def test_kill_9_mid_distillation_loses_and_duplicates_nothing(tmp_path: Path, point: str) -> None:
    """A distilling process is SIGKILLed (parked at the crash point, so the kill lands exactly there); after
    the restart's run every event is held once — by L3 — with its triples once, as a run without a crash."""
    records = [_turn(k, f"Person{k % 5}: I love topic {k}. I went to place {k}.") for k in range(150)]
    cold = ColdStore(tmp_path / "cold.db")
    cold.put(records, now=NOW - 80 * HOUR)
    cold.close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), point, str(NOW)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the writer is parked at its crash point
    assert line.startswith("parked"), line
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    cold = ColdStore(tmp_path / "cold.db")
    with open_graph_store(tmp_path / "graph.kz") as graph:
        in_l3 = graph.events_held(r.id for r in records)
        assert len(in_l3) == (50 if point == "mid-move" else 100)  # batch 1 rolled back / committed
        assert len(cold.ids()) == 100  # nothing lost; after the commit, batch 1's 50 are held twice until reconciled
        assert len(reconcile(cold, graph)) == (0 if point == "mid-move" else 50)  # what a restart runs first
        assert set(_holders(cold, graph, records).values()) == {1}
        report = asyncio.run(distill(cold, graph, DeterministicExtractor(), now=NOW))
        assert report.reconciled == []
        assert cold.ids() == []
        assert set(_holders(cold, graph, records).values()) == {1}
        facts = graph.triples_of_events(r.id for r in records)
        assert len(facts) == len({t.id for t in facts}) == 2 * len(records)
    cold.close()


def test_the_background_job_runs_each_interval_and_survives_a_failed_run(tmp_path: Path) -> None:
    """Driven by events: the job's sleep hands control back to the test, which moves the clock and lets the
    next run go. A run that raises is recorded and the next run still happens."""
    from hologram.memory.graph.cooling import CoolingJob

    cold = ColdStore(tmp_path / "cold.db")
    first, second = _turn(1, "Jon: I love salsa."), _turn(2, "Jon: I went to Havana.")
    cold.put([first], now=NOW - 80 * HOUR)
    cold.put([second], now=NOW - 10 * HOUR)
    clock = {"now": NOW}

    async def run() -> CoolingJob:
        wakes: asyncio.Queue[asyncio.Event] = asyncio.Queue()

        async def sleep(seconds: float) -> None:
            assert seconds == 3600.0
            go = asyncio.Event()
            await wakes.put(go)
            await go.wait()

        async def woke() -> asyncio.Event:
            return await asyncio.wait_for(wakes.get(), 30)  # a failure bound: a dead loop never sleeps again

        with open_graph_store(tmp_path / "graph.kz") as graph:
            job = CoolingJob(cold, graph, DeterministicExtractor(), clock=lambda: clock["now"], sleep=sleep)
            job.start()
            go = await woke()  # run 1 done: only the 80 h idle event moved
            assert job.reports[-1].moved == [first.id]
            real = job.cold.eligible_for_distillation
            job.cold.eligible_for_distillation = lambda *a, **k: (_ for _ in ()).throw(OSError("disk gone"))  # type: ignore[method-assign]
            go.set()
            go = await woke()  # run 2 failed, and the loop went on
            assert [str(e) for e in job.errors] == ["disk gone"]
            job.cold.eligible_for_distillation = real  # type: ignore[method-assign]
            clock["now"] = NOW + 70 * HOUR
            go.set()
            await woke()  # run 3: the second event is idle long enough now
            assert job.reports[-1].moved == [second.id]
            await job.stop()
            return job

    job = asyncio.run(run())
    assert len(job.reports) == 2 and cold.ids() == []
    cold.close()
