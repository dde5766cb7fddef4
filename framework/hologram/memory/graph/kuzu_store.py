"""The L3 store on Kùzu (or LadybugDB, its maintained fork with the same Python API).

**Schema.** ``Block`` nodes (the blocks moved out of L2, primary key = block id), ``Entity`` nodes (primary
key = :func:`~hologram.memory.graph.store.entity_key`, with the first spelling seen as ``name``) and ``Fact``
relations ``Entity → Entity`` carrying the triple (its subject and value spelled as read, so an undirected
2-hop read needs no orientation step), confidence, source event and block, ``valid_at`` / ``invalid_at``
(UTC ms) and ``created``.

**Write path, chosen by measurement** (``tools/bench/graph.py``; kuzu 0.11.3, 2 shared cores, no pyarrow in the
environment so ``COPY … FROM`` a dataframe is not available; figures in docs/memory.md "L3"):

* per-row ``execute`` of ``MATCH … CREATE``: ~0.5-2 ms per edge even inside one explicit transaction;
* ``UNWIND $rows … MATCH (a {id}), (b {id}) CREATE``: 0.16 ms per edge into an empty graph, 24 ms per edge
  into one of 100k triples (the match does not use the primary-key index);
* ``UNWIND … MERGE … CREATE``: ~1 ms per edge at 100k;
* ``COPY … FROM`` a CSV file written next to the database: fast to run, but its commit into a non-empty
  relation table costs ~1-2 s at 100k triples whatever the batch size, so moves should be large: 14.4k
  triples/s with moves of 10k triples at 100k, 6.6k with 5k.

So every :meth:`KuzuGraphStore.move` is one explicit transaction of up to three CSV copies (new entities, the
blocks, the facts) — COPY runs inside an explicit transaction in this version, which is what makes a batch
all-or-nothing under ``kill -9`` (tests/memory/test_graph_store.py). The CSV is written with every field
quoted by Python's ``csv`` and read with ``PARALLEL=false`` (the parallel reader does not accept newlines
inside quoted fields); the file path is the only value spliced into Cypher, and it is ours (checked for
quotes at open). Reads always pass values as parameters. The CSV holds block text only for the length of the
copy, inside the data directory (the database's own protection), and is deleted after it, or at the next open
if the process died mid-copy.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import importlib
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from hologram.base.errors import HologramError, Problem
from hologram.memory.graph.store import (
    BACKENDS,
    GraphBlock,
    GraphCounts,
    GraphLockedError,
    MoveReport,
    Triple,
    entity_key,
)

__all__ = ["KuzuGraphStore"]

_SCHEMA = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(id STRING PRIMARY KEY, name STRING, created DOUBLE)",
    "CREATE NODE TABLE IF NOT EXISTS Block(id STRING PRIMARY KEY, event STRING, ordinal INT64, kind STRING, "
    "text STRING, meta STRING, session STRING, ts_ms INT64, moved DOUBLE)",
    "CREATE REL TABLE IF NOT EXISTS Fact(FROM Entity TO Entity, id STRING, subject STRING, predicate STRING, "
    "value STRING, confidence DOUBLE, source_event STRING, source_block STRING, valid_at INT64, "
    "invalid_at INT64, created DOUBLE)",
)
_FACT_COLS = (
    "f.id, f.subject, f.predicate, f.value, f.confidence, f.source_event, f.source_block, f.valid_at, "
    "f.invalid_at, f.created"
)
_BLOCK_COLS = "b.id, b.event, b.ordinal, b.kind, b.text, b.meta, b.session, b.ts_ms"
_HOP1 = f"MATCH (a:Entity {{id: $k}})-[f:Fact]-(:Entity) RETURN DISTINCT {_FACT_COLS} LIMIT $n"
_HOP2 = (
    "MATCH (a:Entity {id: $k})-[:Fact]-(m:Entity)-[f:Fact]-(:Entity) WHERE m.id <> $k "
    f"RETURN DISTINCT {_FACT_COLS} LIMIT $n"
)
#: The database's page cache, a cap it grows to on demand. Kùzu's default is 80 % of the machine's memory, and
#: its bookkeeping for that alone cost +45 MB RSS at open on a 24 GB host (+8 MB with this cap, measured in
#: a fresh process); 256 MB holds a graph of 100k triples with their blocks (docs/memory.md "L3").
BUFFER_POOL_BYTES = 256 * 1024 * 1024
_COPY_OPTIONS = "(HEADER=false, QUOTE='\"', ESCAPE='\"', PARALLEL=false)"


def _backend_module(backend: str, path: Path) -> ModuleType:
    names = BACKENDS.get(backend)
    if names is None:
        raise HologramError(
            Problem(
                f"unknown graph backend {backend!r}",
                file=str(path),
                key="memory.graph.backend",
                hint=f"use one of {', '.join(sorted(BACKENDS))}",
            )
        )
    for name in names:
        with contextlib.suppress(ImportError):
            return importlib.import_module(name)
    raise HologramError(
        Problem(
            f"graph backend {backend!r} is not installed (no module {' or '.join(names)})",
            file=str(path),
            key="memory.graph.backend",
            hint=f'pip install {"ladybug" if backend == "ladybug" else backend}, or set backend = "kuzu"',
        )
    )


class KuzuGraphStore:
    """:class:`~hologram.memory.graph.store.GraphStore` on an embedded Kùzu-API database at `path`."""

    def __init__(self, path: Path, *, backend: str = "kuzu", threads: int = 1) -> None:
        """`threads`: the database's worker threads. One by default, by measurement: 100k triples in batches
        of 10k went in at 12.1k triples/s (13.4k per CPU-second) with one, 8.6k (10.6k) with two, on the
        2-core VM in the same minute — the kernel's graph work runs in one worker thread beside the event loop
        and the embedder, and the copies and 1-hop reads are too small to gain from a second thread."""
        self.path = path
        if "'" in str(path) or "\\" in str(path):
            raise HologramError(
                Problem(
                    "the memory graph's path contains a quote or backslash, which COPY cannot name",
                    file=str(path),
                    hint="choose a data directory whose path has neither",
                )
            )
        module = _backend_module(backend, path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(f"{path}.lock", "a+b")  # noqa: SIM115 - held for the store's lifetime
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_file.close()
            raise GraphLockedError(path) from None
        self._copy_dir = Path(f"{path}.copy")
        shutil.rmtree(self._copy_dir, ignore_errors=True)  # what a crashed copy left
        self._copy_dir.mkdir()
        self._mutex = threading.Lock()
        self._blocks: set[str] = set()
        """Every block id L3 holds, and below every entity key: loaded at open, updated after each commit.
        Only this process has the database open (the lock), so the sets are exact; a ``WHERE id IN $list``
        per move scanned the table against the list and made each batch slower than the last (10.7 s per
        5k-triple batch at 100k triples, before)."""
        self._entities: set[str] = set()
        self._events: set[str] = set()
        try:
            self._db = module.Database(str(path), max_num_threads=threads, buffer_pool_size=BUFFER_POOL_BYTES)
            self._conn = module.Connection(self._db)
            for statement in _SCHEMA:
                self._conn.execute(statement)
            rows = self._rows("MATCH (b:Block) RETURN b.id, b.event", {})
            self._blocks = {str(r[0]) for r in rows}
            self._events = {str(r[1]) for r in rows}
            self._entities = {str(r[0]) for r in self._rows("MATCH (e:Entity) RETURN e.id", {})}
        except BaseException:
            self._release()
            raise

    # -- writes -----------------------------------------------------------------------------------------

    def move(self, blocks: Sequence[GraphBlock], triples: Sequence[Triple], *, now: float) -> MoveReport:
        by_event: dict[str, list[GraphBlock]] = {}
        for b in blocks:
            by_event.setdefault(b.event, []).append(b)
        block_ids = {b.id for b in blocks}
        for t in triples:
            if t.source_block not in block_ids:
                raise ValueError(
                    f"triple {t.id} ({t.subject!r} {t.predicate!r} {t.value!r}): its source block "
                    f"{t.source_block} is not in this move; pass the block with the triples read from it"
                )
        with self._mutex:
            held = self._held(block_ids)
            done = {e for e, bs in by_event.items() if any(b.id in held for b in bs)}
            new_blocks = [b for e, bs in by_event.items() if e not in done for b in bs]
            facts = list({t.id: t for t in triples if t.source_event not in done}.values())
            names: dict[str, str] = {}
            for t in facts:
                names.setdefault(entity_key(t.subject), t.subject)
                names.setdefault(entity_key(t.value), t.value)
            if not new_blocks:
                return MoveReport((), tuple(sorted(done)), 0)
            self._conn.execute("BEGIN TRANSACTION")
            try:
                self._copy("Entity", [(k, n, now) for k, n in names.items() if k not in self._entities])
                self._copy(
                    "Block",
                    [(b.id, b.event, b.ordinal, b.kind, b.text, b.meta, b.session, b.ts_ms, now) for b in new_blocks],
                )
                self._copy("Fact", [_fact_row(t, now) for t in facts])
                self._conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    self._conn.execute("ROLLBACK")
                raise
            self._blocks.update(b.id for b in new_blocks)
            self._events.update(b.event for b in new_blocks)
            self._entities.update(names)
        moved = tuple(e for e in by_event if e not in done)
        return MoveReport(moved, tuple(sorted(done)), len(facts))

    def forget(self, event_ids: Iterable[str]) -> int:
        wanted = [e for e in dict.fromkeys(event_ids) if e in self._events]
        if not wanted:
            return 0
        with self._mutex:
            self._conn.execute("BEGIN TRANSACTION")
            try:
                for chunk in _chunks(wanted):
                    self._conn.execute("MATCH ()-[f:Fact]->() WHERE f.source_event IN $ids DELETE f", {"ids": chunk})
                    self._conn.execute("MATCH (b:Block) WHERE b.event IN $ids DELETE b", {"ids": chunk})
                self._conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    self._conn.execute("ROLLBACK")
                raise
            rows = self._rows("MATCH (b:Block) RETURN b.id, b.event", {})
            self._blocks = {str(r[0]) for r in rows}
            self._events = {str(r[1]) for r in rows}
        return len(wanted)

    def _copy(self, table: str, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        file = self._copy_dir / f"{table}.csv"
        with open(file, "w", newline="", encoding="utf-8") as f:
            csv.writer(f, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").writerows(
                tuple("" if v is None else v for v in row) for row in rows
            )
        try:
            self._conn.execute(f"COPY {table} FROM '{file}' {_COPY_OPTIONS}")
        finally:
            file.unlink(missing_ok=True)

    # -- reads ------------------------------------------------------------------------------------------

    def held(self, block_ids: Iterable[str]) -> set[str]:
        with self._mutex:
            return self._held(set(block_ids))

    def events_held(self, event_ids: Iterable[str]) -> set[str]:
        with self._mutex:
            return set(event_ids) & self._events

    def _held(self, ids: set[str]) -> set[str]:
        return ids & self._blocks

    def blocks(self, block_ids: Iterable[str]) -> list[GraphBlock]:
        out: list[GraphBlock] = []
        with self._mutex:
            for chunk in _chunks(list(dict.fromkeys(block_ids))):
                rows = self._rows(f"MATCH (b:Block) WHERE b.id IN $ids RETURN {_BLOCK_COLS}", {"ids": chunk})
                out += [_block(r) for r in rows]
        return sorted(out, key=lambda b: (b.ts_ms, b.event, b.ordinal))

    def neighbourhood(self, entity: str, *, hops: int = 1, limit: int = 50) -> list[Triple]:
        if hops not in (1, 2):
            raise ValueError(f"hops={hops}: the graph is read 1 or 2 hops out")
        key = entity_key(entity)
        with self._mutex:
            rows = self._rows(_HOP1, {"k": key, "n": limit})
            if hops == 2 and len(rows) < limit:
                seen = {r[0] for r in rows}
                rows += [r for r in self._rows(_HOP2, {"k": key, "n": limit}) if r[0] not in seen][: limit - len(rows)]
        return [_triple(r) for r in rows]

    def triples_of_events(self, event_ids: Iterable[str]) -> list[Triple]:
        with self._mutex:
            rows = self._rows(
                f"MATCH (:Entity)-[f:Fact]->(:Entity) WHERE f.source_event IN $ids RETURN {_FACT_COLS}",
                {"ids": list(dict.fromkeys(event_ids))},
            )
        return [_triple(r) for r in rows]

    def entities(self) -> dict[str, str]:
        with self._mutex:
            return {str(k): str(n or k) for k, n in self._rows("MATCH (e:Entity) RETURN e.id, e.name", {})}

    def fact_events(self) -> set[str]:
        with self._mutex:
            rows = self._rows("MATCH ()-[f:Fact]->() RETURN DISTINCT f.source_event", {})
        return {str(r[0]) for r in rows if r[0]}

    def blocks_of_events(self, event_ids: Iterable[str]) -> list[GraphBlock]:
        out: list[GraphBlock] = []
        with self._mutex:
            for chunk in _chunks([e for e in dict.fromkeys(event_ids) if e in self._events]):
                rows = self._rows(f"MATCH (b:Block) WHERE b.event IN $ids RETURN {_BLOCK_COLS}", {"ids": chunk})
                out += [_block(r) for r in rows]
        return sorted(out, key=lambda b: (b.ts_ms, b.event, b.ordinal))

    def find_blocks(self, words: Sequence[str], *, limit: int = 50) -> list[tuple[GraphBlock, int]]:
        wanted = [w.casefold() for w in dict.fromkeys(words) if w.strip()][:8]
        if not wanted:
            return []
        hits = " + ".join(f"CASE WHEN lower(b.text) CONTAINS $w{i} THEN 1 ELSE 0 END" for i in range(len(wanted)))
        query = (
            f"MATCH (b:Block) WITH b, {hits} AS n WHERE n > 0 "
            f"RETURN {_BLOCK_COLS}, n ORDER BY n DESC, b.ts_ms DESC LIMIT $limit"
        )
        params: dict[str, Any] = {f"w{i}": w for i, w in enumerate(wanted)} | {"limit": limit}
        with self._mutex:
            rows = self._rows(query, params)
        return [(_block(r[:-1]), int(r[-1])) for r in rows]

    def counts(self) -> GraphCounts:
        with self._mutex:
            blocks = self._rows("MATCH (b:Block) RETURN count(b)", {})[0][0]
            entities = self._rows("MATCH (e:Entity) RETURN count(e)", {})[0][0]
            triples = self._rows("MATCH ()-[f:Fact]->() RETURN count(f)", {})[0][0]
        return GraphCounts(int(blocks), int(entities), int(triples))

    def _rows(self, query: str, params: dict[str, Any]) -> list[list[Any]]:
        result = self._conn.execute(query, params)
        rows: list[list[Any]] = result.get_all()
        return rows

    # -- lifetime ---------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._mutex:
            with contextlib.suppress(Exception):
                self._conn.close()
            with contextlib.suppress(Exception):
                self._db.close()
            self._release()

    def _release(self) -> None:
        shutil.rmtree(self._copy_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()

    def __enter__(self) -> KuzuGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fact_row(t: Triple, now: float) -> tuple[Any, ...]:
    return (
        entity_key(t.subject), entity_key(t.value), t.id, t.subject, t.predicate, t.value, float(t.confidence),
        t.source_event, t.source_block, t.valid_at, t.invalid_at, t.created or now,
    )  # fmt: skip


def _triple(r: list[Any]) -> Triple:
    tid, subject, predicate, value, confidence, event, block, valid_at, invalid_at, created = r
    return Triple(
        subject=subject or "",
        predicate=predicate or "",
        value=value or "",
        source_event=event or "",
        source_block=block or "",
        confidence=float(confidence),
        valid_at=valid_at,
        invalid_at=invalid_at,
        created=float(created),
        id=tid,
    )


def _block(r: list[Any]) -> GraphBlock:
    bid, event, ordinal, kind, text, meta, session, ts_ms = r
    return GraphBlock(bid, event, int(ordinal), kind or "", text or "", meta or "{}", session or None, int(ts_ms))


def _chunks(items: list[str], size: int = 1000) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
