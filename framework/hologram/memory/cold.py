"""Cold context (L2): pruned events with their blocks, durable in SQLite, searched like L1.

**Durability.** One SQLite database in WAL mode with ``synchronous=FULL``: every write method commits one
transaction and returns only after the WAL is fsynced, so whatever a caller was told is stored survives a
kernel crash, ``kill -9`` and power loss. ``NORMAL`` would survive process death too (and the session store
uses it), but here an acknowledged ``put`` is the caller's licence to drop its L1 copy; under ``NORMAL`` a
power cut could then take the only copy of an event's place in memory. The price is one fsync per prune batch
or recall — a few ms, not per event. ``tests/memory/test_cold_durability.py`` kills a writer mid-stream and
checks every acknowledged batch is intact and no batch is half there.

**Holders.** A block is held by the store whose table contains it. ``put`` refuses an event or block ID L2
already holds (the whole batch is rolled back), so L2 never holds a block twice. Moves between L1 and L2 are
copy-then-delete and never delete-then-copy; a crash between the two steps leaves a duplicate, which
:meth:`ColdStore.reconcile` resolves by dropping the L2 copy of anything L1 holds.

**Search** is in memory (``coldindex.py``: BM25 postings with the store's IDF + dense matrices per model
fingerprint, the ``HybridScorer`` method), rebuilt from the stored term counts and vectors on open and
updated after each commit. Searching does not count as an access; :meth:`touch` does (automatic recall).

**Distillation bookkeeping** (for L3, not built yet): ``access_count``, ``last_access`` and ``added`` per event;
:meth:`eligible_for_distillation` lists events with ≤ 2 accesses idle for 72 h.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np

from hologram.memory.blocks import Block, EventRecord
from hologram.memory.coldindex import ColdIndex, IndexEntry
from hologram.memory.events import Query
from hologram.memory.tfidf import TermVector
from hologram.memory.vectors import DenseVector

__all__ = [
    "DISTILL_IDLE_SECONDS",
    "DISTILL_MAX_ACCESSES",
    "ColdHit",
    "ColdStore",
    "DuplicateBlockError",
]

DISTILL_MAX_ACCESSES = 2
DISTILL_IDLE_SECONDS = 72 * 3600.0
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cold_events (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session TEXT, origin TEXT, ts_ms INTEGER NOT NULL,
    channel TEXT, partner TEXT, scene TEXT, grp TEXT,
    added REAL NOT NULL, access_count INTEGER NOT NULL DEFAULT 0, last_access REAL,
    fingerprint TEXT, dim INTEGER, dense BLOB,
    terms TEXT NOT NULL, analyzer TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cold_blocks (
    id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS cold_blocks_by_event ON cold_blocks (event, ordinal);
CREATE INDEX IF NOT EXISTS cold_events_by_group ON cold_events (session, grp) WHERE grp IS NOT NULL;
CREATE INDEX IF NOT EXISTS cold_events_idle ON cold_events (access_count, coalesce(last_access, added));
"""

_EVENT_COLS = (
    "id, session, origin, ts_ms, channel, partner, scene, grp, added, access_count, last_access, "
    "fingerprint, dim, dense, terms, analyzer"
)


class DuplicateBlockError(ValueError):
    """An event or block L2 already holds: a block has exactly one holder, so the batch was refused."""


@dataclass(frozen=True, slots=True)
class ColdHit:
    """A search result: an L2 event and its score (fused z-scores, higher is better; not a probability)."""

    id: str
    score: float


class ColdStore:
    """The L2 store of one data directory. Thread-safe (one lock); write methods are durable on return."""

    def __init__(self, path: str | Path, *, synchronous: Literal["FULL", "NORMAL"] = "FULL") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._lock = threading.RLock()
        self.index = ColdIndex()
        self._load()

    def _load(self) -> None:
        for eid, session, origin, ts_ms, fp, dim, blob, terms, analyzer in self._db.execute(
            "SELECT id, session, origin, ts_ms, fingerprint, dim, dense, terms, analyzer FROM cold_events ORDER BY rid"
        ):
            self.index.add(
                IndexEntry(eid, session, ts_ms, origin, _terms(terms, analyzer), _dense(fp, dim, blob)),
            )

    # -- lifecycle ------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ColdStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self.index

    def ids(self) -> list[str]:
        """Every event L2 holds, in time order."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT id FROM cold_events ORDER BY ts_ms, origin, id")]

    def block_ids(self) -> set[str]:
        with self._lock:
            return {r[0] for r in self._db.execute("SELECT id FROM cold_blocks")}

    # -- writes ---------------------------------------------------------------------------------------

    def put(self, records: Sequence[EventRecord], *, now: float | None = None) -> None:
        """Store `records` (an L1 → L2 move) in one durable transaction: all or nothing.

        Raises :class:`DuplicateBlockError` if L2 already holds any of the events or blocks, and ValueError for
        a record whose IDs do not match its content (it was edited after its IDs were derived).
        """
        added = time.time() if now is None else now
        rows, block_rows, all_terms = [], [], []
        for r in records:
            if not r.ids_consistent():
                raise ValueError(f"event {r.id}: IDs do not match its content")
            terms = r.terms if r.terms is not None else TermVector.from_text(r.text)
            all_terms.append(terms)
            d = r.dense
            rows.append(
                (
                    r.id, r.session, r.origin, r.ts_ms, r.channel, r.partner, r.scene, r.group, added,
                    r.access_count, r.last_access,
                    d.fingerprint if d else None, d.dimension if d else None,
                    d.values.astype(np.float32).tobytes() if d else None,
                    json.dumps(dict(terms.counts), ensure_ascii=False), terms.analyzer,
                )
            )  # fmt: skip
            block_rows += [
                (b.id, r.id, i, b.kind, b.text, json.dumps(dict(b.meta), ensure_ascii=False, default=str))
                for i, b in enumerate(r.blocks)
            ]
        with self._lock:
            try:
                with self._transaction():
                    self._db.executemany(f"INSERT INTO cold_events ({_EVENT_COLS}) VALUES ({_marks(16)})", rows)
                    self._db.executemany("INSERT INTO cold_blocks VALUES (?, ?, ?, ?, ?, ?)", block_rows)
            except sqlite3.IntegrityError as exc:
                raise DuplicateBlockError(f"L2 already holds one of these events or blocks: {exc}") from exc
            for r, terms in zip(records, all_terms, strict=True):
                self.index.add(IndexEntry(r.id, r.session, r.ts_ms, r.origin, terms, r.dense))

    def remove(self, ids: Iterable[str]) -> list[str]:
        """Delete events and their blocks (the L2 side of a move to L1) in one durable transaction.

        Returns the ids actually removed; ids L2 does not hold are ignored (a concurrent recall got them).
        """
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            present = self._rows(wanted, "id, terms, analyzer")
            if not present:
                return []
            found = [row[0] for row in present]
            with self._transaction():
                for chunk in _chunks(found):
                    self._db.execute(f"DELETE FROM cold_blocks WHERE event IN ({_marks(len(chunk))})", chunk)
                    self._db.execute(f"DELETE FROM cold_events WHERE id IN ({_marks(len(chunk))})", chunk)
            for eid, terms, analyzer in present:
                self.index.remove(eid, _terms(terms, analyzer))
            return found

    def touch(self, ids: Iterable[str], *, now: float | None = None) -> None:
        """Record one access of each event (automatic recall injected it)."""
        at = time.time() if now is None else now
        wanted = list(dict.fromkeys(ids))
        with self._lock, self._transaction():
            for chunk in _chunks(wanted):
                self._db.execute(
                    "UPDATE cold_events SET access_count = access_count + 1, last_access = ? "
                    f"WHERE id IN ({_marks(len(chunk))})",
                    (at, *chunk),
                )

    def reconcile(self, l1_ids: Iterable[str]) -> list[str]:
        """Drop L2's copy of every event L1 also holds (a crash between copy and delete); returns them."""
        return self.remove([i for i in l1_ids if i in self.index])

    # -- reads ----------------------------------------------------------------------------------------

    def search(self, query: Query, k: int = 10, *, session: str | None = None) -> list[ColdHit]:
        """The `k` best L2 events for `query` (all sessions, or only `session`'s). Read-only, no access."""
        with self._lock:
            hits = self.index.top(query, k, session, any_session=session is None)
        return [ColdHit(eid, score) for eid, score in hits]

    def peek(self, ids: Iterable[str]) -> list[EventRecord]:
        """Full records (blocks, vectors, access history) of the given events L2 holds, in time order."""
        wanted = list(dict.fromkeys(ids))
        with self._lock:
            rows = self._rows(wanted, _EVENT_COLS)
            blocks: dict[str, list[Block]] = {}
            for chunk in _chunks([r[0] for r in rows]):
                for bid, event, kind, text, meta in self._db.execute(
                    f"SELECT id, event, kind, text, meta FROM cold_blocks WHERE event IN ({_marks(len(chunk))}) "
                    "ORDER BY event, ordinal",
                    chunk,
                ):
                    blocks.setdefault(event, []).append(Block(bid, kind, text, json.loads(meta)))
        records = [_record(row, tuple(blocks.get(row[0], ()))) for row in rows]
        return sorted(records, key=EventRecord.sort_key)

    def group_mates(self, ids: Iterable[str]) -> list[str]:
        """`ids` plus every L2 event sharing a tool-call group (same session) with one of them."""
        wanted = list(dict.fromkeys(ids))
        out = dict.fromkeys(wanted)
        with self._lock:
            groups = {(s, g) for _, s, g in self._rows(wanted, "id, session, grp") if g is not None}
            for session, grp in groups:
                for (eid,) in self._db.execute(
                    "SELECT id FROM cold_events WHERE session IS ? AND grp = ? ORDER BY ts_ms", (session, grp)
                ):
                    out.setdefault(eid)
        return list(out)

    def eligible_for_distillation(
        self,
        now: float,
        *,
        max_accesses: int = DISTILL_MAX_ACCESSES,
        idle_seconds: float = DISTILL_IDLE_SECONDS,
    ) -> list[str]:
        """Events with at most `max_accesses` accesses and none (nor their arrival in L2) for `idle_seconds`."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM cold_events WHERE access_count <= ? AND coalesce(last_access, added) <= ? "
                "ORDER BY ts_ms, origin, id",
                (max_accesses, now - idle_seconds),
            )
            return [r[0] for r in rows]

    def access(self, event_id: str) -> tuple[int, float | None]:
        """(access_count, last_access) of one event; KeyError if L2 does not hold it."""
        with self._lock:
            row = self._db.execute("SELECT access_count, last_access FROM cold_events WHERE id = ?", (event_id,))
            found = row.fetchone()
        if found is None:
            raise KeyError(event_id)
        return int(found[0]), found[1]

    # -- helpers --------------------------------------------------------------------------------------

    def _rows(self, ids: list[str], cols: str) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for chunk in _chunks(ids):
            out += self._db.execute(f"SELECT {cols} FROM cold_events WHERE id IN ({_marks(len(chunk))})", chunk)
        return out

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception (the connection is in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.db.execute("ROLLBACK")
            return
        try:
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise


def _marks(n: int) -> str:
    return ", ".join("?" * n)


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _terms(text: str, analyzer: str) -> TermVector:
    counts: dict[str, int] = json.loads(text)
    return TermVector(counts=counts, length=sum(counts.values()), analyzer=analyzer)


def _dense(fp: str | None, dim: int | None, blob: bytes | None) -> DenseVector | None:
    if fp is None or dim is None or blob is None:
        return None
    return DenseVector(fp, np.frombuffer(blob, dtype=np.float32, count=dim).copy())


def _record(row: tuple[Any, ...], blocks: tuple[Block, ...]) -> EventRecord:
    eid, session, origin, ts_ms, channel, partner, scene, grp, _added, count, last, fp, dim, blob, terms, an = row
    return EventRecord(
        id=eid,
        ts_ms=ts_ms,
        blocks=blocks,
        session=session,
        origin=origin,
        channel=channel,
        partner=partner,
        scene=scene,
        group=grp,
        dense=_dense(fp, dim, blob),
        terms=_terms(terms, an),
        access_count=count,
        last_access=last,
    )
