"""The L3 store on a real Kùzu database in a temp dir: round trip, holder uniqueness, the lock, and a
``kill -9`` in the middle of a move that loses and duplicates nothing on reopen.

Mutation-checked (file copied to /tmp, edited, copied back): running :meth:`KuzuGraphStore.move`'s three
copies without the explicit transaction turns ``test_kill_9_mid_move_loses_and_duplicates_nothing`` red
(the killed batch's entities and blocks are there without their facts); skipping the "already held" check
turns ``test_a_move_retried_writes_nothing_twice`` red (the retry fails on the duplicate primary key).
"""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hologram.memory.graph import GraphBlock, GraphLockedError, GraphStore, Triple, entity_key, open_graph_store

WEIRD = 'she said "hi, there"\r\nsecond line\\ \t  trailing  ,\n中文，逗号'


def _event(n: int, blocks: int = 2, triples: int = 2) -> tuple[list[GraphBlock], list[Triple]]:
    bs = [
        GraphBlock(f"blk_{n}_{i}", f"ev_{n}", i, "input", f"text {n} {i}", "{}", "s", 1000 + n) for i in range(blocks)
    ]
    ts = [
        Triple(f"Person{n % 7}", "likes", f"thing {n} {j}", f"ev_{n}", bs[0].id, valid_at=1000 + n)
        for j in range(triples)
    ]
    return bs, ts


def test_blocks_and_triples_round_trip(tmp_path: Path) -> None:
    """Blocks keep their ids and exact text (quotes, CR/LF, backslashes, commas, Chinese); entities merge by
    their key only; 1- and 2-hop reads find the facts."""
    with open_graph_store(tmp_path / "graph.kz") as store:
        assert isinstance(store, GraphStore)
        blocks = [
            GraphBlock("blk_a", "ev_a", 0, "input", WEIRD, '{"k": 1}', None, 5),
            GraphBlock("blk_b", "ev_a", 1, "response", "", "{}", "s", 5),
        ]
        triples = [
            Triple("Caroline", "likes", "pottery", "ev_a", "blk_a", 0.8, valid_at=5),
            Triple(" caroline", "lives in", "Berlin", "ev_a", "blk_a"),
            Triple("Berlin", "is in", "Germany", "ev_a", "blk_b"),
            Triple("Carol", "likes", "tea", "ev_a", "blk_b"),
        ]
        report = store.move(blocks, triples, now=100.0)
        assert report.moved == ("ev_a",) and report.triples == 4
        assert store.blocks(["blk_b", "blk_a"]) == blocks
        counts = store.counts()
        assert (counts.blocks, counts.entities, counts.triples) == (2, 6, 4)  # Carol is not Caroline
        one = {(t.subject, t.predicate, t.value) for t in store.neighbourhood("CAROLINE")}
        assert one == {("Caroline", "likes", "pottery"), (" caroline", "lives in", "Berlin")}
        two = {(t.value) for t in store.neighbourhood("caroline", hops=2)}
        assert two == {"pottery", "Berlin", "Germany"}
        first = store.neighbourhood("pottery")[0]
        assert (first.confidence, first.valid_at, first.invalid_at, first.source_block) == (0.8, 5, None, "blk_a")
        assert first.created == 100.0


def test_a_move_retried_writes_nothing_twice(tmp_path: Path) -> None:
    """An event already in L3 is skipped whole (its triples committed with it); a new one in the same batch
    is written."""
    with open_graph_store(tmp_path / "graph.kz") as store:
        b1, t1 = _event(1)
        store.move(b1, t1, now=1.0)
        b2, t2 = _event(2)
        report = store.move(b1 + b2, t1 + t2, now=2.0)
        assert report.already_held == ("ev_1",) and report.moved == ("ev_2",) and report.triples == 2
        assert store.counts().triples == 4 and store.counts().blocks == 4
        assert store.held(["blk_1_0", "blk_2_1", "blk_3_0"]) == {"blk_1_0", "blk_2_1"}


def test_a_triple_must_come_from_a_block_of_the_move(tmp_path: Path) -> None:
    with open_graph_store(tmp_path / "graph.kz") as store:
        b, _ = _event(1)
        orphan = Triple("x", "is", "y", "ev_9", "blk_elsewhere")
        with pytest.raises(ValueError, match="source block blk_elsewhere is not in this move"):
            store.move(b, [orphan], now=1.0)
        assert store.counts().blocks == 0


def test_a_second_process_cannot_open_it(tmp_path: Path) -> None:
    """Only the kernel opens L3: another process gets the error naming the fix, not a backend failure."""
    path = tmp_path / "graph.kz"
    with open_graph_store(path):
        probe = "import sys\nfrom hologram.memory.graph import open_graph_store\nopen_graph_store(sys.argv[1])"
        out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=60)
        assert out.returncode != 0
        assert "GraphLockedError" in out.stderr and "open in another process" in out.stderr
    with pytest.raises(GraphLockedError), open_graph_store(path):
        open_graph_store(path)
    open_graph_store(path).close()  # released on close


def test_unknown_backend_names_the_setting(tmp_path: Path) -> None:
    from hologram.base.errors import HologramError

    with pytest.raises(HologramError, match="unknown graph backend 'neo'") as info:
        open_graph_store(tmp_path / "g.kz", backend="neo")
    assert "memory.graph.backend" in str(info.value) and "kuzu, ladybug" in str(info.value)


@pytest.mark.skipif(
    any(importlib.util.find_spec(m) for m in ("real_ladybug", "ladybug")), reason="LadybugDB is installed here"
)
def test_ladybug_backend_not_installed_names_the_package(tmp_path: Path) -> None:
    from hologram.base.errors import HologramError

    with pytest.raises(
        HologramError, match=r"graph backend 'ladybug' is not installed \(no module real_ladybug or ladybug\)"
    ) as info:
        open_graph_store(tmp_path / "g.kz", backend="ladybug")
    assert "pip install ladybug" in str(info.value)
    assert not (tmp_path / "g.kz.lock").exists()  # refused before anything was created


WRITER = textwrap.dedent(
    """
    import sys
    from hologram.memory.graph import GraphBlock, Triple, open_graph_store
    from hologram.memory.graph import kuzu_store

    path, batches, size, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "hold"
    store = open_graph_store(path)
    copy = kuzu_store.KuzuGraphStore._copy
    state = {"batch": -1}

    def traced(self, table, rows):
        copy(self, table, rows)
        if table == "Block" and state["batch"] == batches - 1:
            print(f"copied Block {state['batch']}", flush=True)
            if hold:
                sys.stdin.readline()  # parked mid-transaction until the parent's SIGKILL

    kuzu_store.KuzuGraphStore._copy = traced
    for n in range(batches):
        state["batch"] = n
        blocks, triples = [], []
        for i in range(size):
            k = n * size + i
            b = GraphBlock(f"blk_{k}", f"ev_{k}", 0, "input", f"event {k} text", "{}", "s", k)
            blocks.append(b)
            triples += [Triple(f"person {k % 50}", "mentions", f"item {k}", f"ev_{k}", b.id),
                        Triple(f"item {k}", "part of", f"batch {n}", f"ev_{k}", b.id)]
        store.move(blocks, triples, now=float(n))
        print(f"ack {n}", flush=True)
    """
)


def _batch_events(n: int, size: int) -> list[str]:
    return [f"ev_{n * size + i}" for i in range(size)]


@pytest.mark.slow
@pytest.mark.parametrize("hold", [True, False], ids=["parked-after-block-copy", "during-fact-copy"])
def test_kill_9_mid_move_loses_and_duplicates_nothing(tmp_path: Path, hold: bool) -> None:
    """A writer is SIGKILLed inside its last move — parked right after the Block copy (deterministic), or while
    the Fact copy runs. On reopen every acknowledged batch is whole, the killed one is all there or not at all
    (never blocks without their facts), and retrying it writes exactly what is missing."""
    path, batches, size = tmp_path / "graph.kz", 3, 400
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), str(batches), str(size), "hold" if hold else "run"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    acked: list[int] = []
    reached = False
    for line in proc.stdout:  # to EOF: what was printed before the kill is still read
        word, n = line.split()[0], int(line.split()[-1])
        if word == "ack":
            acked.append(n)
        elif not reached:
            reached = True
            proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert reached and proc.returncode == -signal.SIGKILL
    assert acked == list(range(batches - 1))  # the last batch was never acknowledged

    with open_graph_store(path) as store:
        for n in acked:
            found = store.triples_of_events(_batch_events(n, size))
            assert len(found) == 2 * size and len({t.id for t in found}) == 2 * size
        last = _batch_events(batches - 1, size)
        blocks_there = store.held(f"blk_{(batches - 1) * size + i}" for i in range(size))
        facts_there = store.triples_of_events(last)
        if hold:
            assert not blocks_there and not facts_there  # killed before COMMIT: rolled back whole
        else:
            assert (len(blocks_there), len(facts_there)) in ((0, 0), (size, 2 * size)), "a batch is half there"
        # the retry (as cooling does after a restart): all of it again, the store writes only what is missing
        blocks, triples = [], []
        for n in range(batches):
            for i in range(size):
                k = n * size + i
                b = GraphBlock(f"blk_{k}", f"ev_{k}", 0, "input", f"event {k} text", "{}", "s", k)
                blocks.append(b)
                triples += [Triple(f"person {k % 50}", "mentions", f"item {k}", f"ev_{k}", b.id),
                            Triple(f"item {k}", "part of", f"batch {n}", f"ev_{k}", b.id)]  # fmt: skip
        store.move(blocks, triples, now=9.0)
        counts = store.counts()
        assert (counts.blocks, counts.triples) == (batches * size, 2 * batches * size)
        assert counts.entities == 50 + batches * size + batches
        assert entity_key("Person 3") == "person 3"
