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
fingerprint, the ``HybridScorer`` method), built from the stored term counts and vectors by the first
:meth:`search` (or use of :attr:`ColdStore.index`) and updated after each commit from then on. Searching does
not count as an access; :meth:`touch` does (automatic recall).

**Opening is cheap** (issue 11 item 4): it reads only the set of event ids (from the ``id`` index, 60-130 ms
for 100k events on the 2-core dev VM, ~20 MB), which is all membership — what the kernel asks on every
request — needs. Building the index at open took 8.5 s for 100k events (and ~320 MB the kernel kept whether
or not anyone searched); ``tools/bench/cold_open.py`` measures both. The damage check below still reads every
row, but in SQL on a second connection in a background thread started by the open (~0.6 s CPU for 100k
events, SQLite's share without the GIL); every method waits for it before it answers, so what any caller sees
is exactly what a check at open would have given — a request in the first second after open may wait.

**Damage** (docs/memory.md, "Damaged files"). A smashed header, a truncated file or a page SQLite reports
as malformed stops the open with one `DamagedDatabaseError` naming the file and `hologram doctor --repair`.
A *row* SQLite reads but that does not decode (text that is not UTF-8, terms or meta that are not JSON, a
vector of the wrong length) costs that one event: it is moved, bytes unchanged, into
``cold_damaged_events`` / ``cold_damaged_blocks`` and dropped from L2 — the session log still holds the
event, so it is simply back in L1, and a later prune can move it to L2 again without colliding with the
damaged copy. Event rows are checked after open (:meth:`ColdStore._check_rows`: UTF-8 of every text column,
terms a JSON object, the vector long enough, in SQL; a row that fails is confirmed by
:func:`event_row_problem`, the same decoding the index uses); a row with a subtler fault (JSON values that
are not numbers) is quarantined when the index is built, a damaged block when the event is peeked.
A page SQLite reports as malformed *inside* the events table (not the header, schema or id index, which
the open reads) is found by that check after the open, logged as an error naming
``hologram doctor --repair``, and the store serves what it can read.

**Distillation bookkeeping**: ``access_count``, ``last_access`` and ``added`` per event;
:meth:`eligible_for_distillation` lists events with ≤ 2 accesses idle for 72 h.

**Which events L3 holds** (``l3_events``): an event cooled into the memory graph (L3) is neither L1 nor L2 —
it must never be in a history again, nor be ``put`` back here by a prune. Every request asks that question for
every event of its session, so it is answered here, from an id set read at open like L2's own, and never by
opening the graph (``import kuzu`` costs the idle kernel megabytes; a kernel that never cooled has an empty
table and pays nothing). The set is written in the *same* SQLite transaction that deletes the events from L2
(``remove(ids, into_l3=True)``), so an event is always in exactly one of "L2" and "recorded as L3"; the
crash window between the graph's commit and that transaction leaves the event in L2, which the cooling's
``reconcile`` (at every start and every run) then moves the same way. It is a rowid table like the others,
so ``hologram doctor --repair`` salvages it by rowid ranges (hologram/storage/salvage.py) when the file is
damaged: losing it would put cooled events back into histories.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np

from hologram.memory.cold.blocks import Block, EventRecord
from hologram.memory.cold.coldindex import ColdIndex, IndexEntry
from hologram.memory.cold.idfile import MappedHashSet
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.index.idhash import HashSet, id_hashes
from hologram.memory.rank.events import Query
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokenizer import CURRENT_ANALYZERS
from hologram.storage.dbfile import DamagedDatabaseError, check_file, is_damage
from hologram.storage.sqlmem import in_chunks, limit_cache, marks

__all__ = [
    "DISTILL_IDLE_SECONDS",
    "DISTILL_MAX_ACCESSES",
    "ColdHit",
    "ColdStore",
    "DuplicateBlockError",
]

log = logging.getLogger("hologram.memory")

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
CREATE TABLE IF NOT EXISTS l3_events (
    id TEXT PRIMARY KEY,
    session TEXT,
    moved REAL NOT NULL
);
"""

# Where a damaged event and its blocks are moved (same columns, no constraints, plus when and why): their
# bytes are kept, and L2 no longer holds the event.
_QUARANTINE = (
    "CREATE TABLE IF NOT EXISTS cold_damaged_events AS SELECT *, 0.0 AS found, '' AS reason FROM cold_events WHERE 0",
    "CREATE TABLE IF NOT EXISTS cold_damaged_blocks AS SELECT *, 0.0 AS found FROM cold_blocks WHERE 0",
)
_DENSE_COLUMN = 7  # of _LOAD: the one BLOB, never decoded
_LOAD_COLS = "rid, id, session, origin, ts_ms, fingerprint, dim, dense, terms, analyzer"
_LOAD = f"SELECT {_LOAD_COLS} FROM cold_events ORDER BY rid"
# The damage check (_check_rows), per range of rids, all in SQL: every text column's bytes concatenated (the
# caller decodes them, in C, in one go; a newline between values, so a truncated UTF-8 sequence at the end
# of one value cannot be completed by the next), and the rids of rows whose terms are not a JSON object (valid
# JSON starting with "{", as put writes it: json_type would parse it a second time) or whose vector is shorter
# than its dimension. A row flagged either way is confirmed by event_row_problem.
_CHECK_STEP = 2000
_CHECK_TEXT = " || char(10) || ".join(
    f"coalesce(CAST({c} AS BLOB), X'')" for c in ("id", "session", "origin", "fingerprint", "terms", "analyzer")
)
_CHECK_SUSPECT = (
    "typeof(terms) != 'text' OR substr(terms, 1, 1) != '{' OR NOT json_valid(terms) "
    "OR (fingerprint IS NOT NULL AND dim IS NOT NULL AND dense IS NOT NULL "
    "AND (typeof(dense) != 'blob' OR typeof(dim) != 'integer' OR dim < 0 OR length(dense) < 4 * dim))"
)
_CHECK = (
    f"SELECT CAST(group_concat({_CHECK_TEXT}, char(10)) AS BLOB), "
    f"group_concat(CASE WHEN {_CHECK_SUSPECT} THEN rid END) FROM cold_events WHERE rid >= ? AND rid < ?"
)
# Damage a row can carry that SQLite does not see: text that is not UTF-8, JSON that is not JSON, a vector blob
# of the wrong length (numpy's ValueError), a value of the wrong type.
_ROW_DAMAGE = (ValueError, TypeError, KeyError, AttributeError)

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
            check_file(Path(self.path))  # a smashed header or a truncated file: the error names the fix
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._lock = threading.RLock()
        self._index: ColdIndex | None = None
        """Built by the first `index` use (search), then kept up to date by every write."""
        self._ids: HashSet | MappedHashSet = HashSet()
        """Every event id L2 holds, as sorted 64-bit hashes (membership without the index): in a file mapped per
        lookup for a store on disk (cold/idfile.py: only the changes since its last rewrite stay in memory),
        in memory (8 bytes an id) for ``:memory:``."""
        self._per_session: Counter[str | None] = Counter()
        """How many events L2 holds per session (None: unknown, e.g. undecodable rows at open — then every
        session is taken to hold some): whether a request offers the ``coldcontext_query`` tool."""
        self._per_session_known = False
        self._l3 = HashSet()
        """Every event id recorded as held by L3, hashed like `_ids` (module docstring: "Which events L3 holds")."""
        self._changes: Counter[str | None] = Counter()
        """Per session, how many writes changed which of its events L2 or L3 holds (:meth:`membership_stamp`)."""
        self._epoch = 0
        """Bumped by a change whose sessions are not known (quarantine, forgetting L3 records)."""
        self._checked = threading.Event()
        """Set once the damage check of the rows present at open is done (every method waits for it)."""
        self._checker: threading.Thread | None = None
        try:
            limit_cache(self._db)  # reads the schema: damage is reported here, converted below
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            self._load_ids()
            self._count_sessions()
            self._l3 = HashSet(r[0] for r in self._db.execute("SELECT id FROM l3_events"))
            stored = self.path != ":memory:" and (bool(self._ids) or self._has_rows())
        except sqlite3.DatabaseError as exc:
            self._db.close()
            if is_damage(exc):
                raise DamagedDatabaseError(Path(self.path), f'SQLite reports "{exc}"') from None
            raise
        if not stored:
            self._checked.set()  # nothing stored before this open: nothing to check
        else:
            self._checker = threading.Thread(target=self._check_rows, name="hologram-cold-check", daemon=True)
            self._checker.start()

    def _count_sessions(self) -> None:
        try:
            rows = self._db.execute("SELECT session, count(*) FROM cold_events GROUP BY session").fetchall()
        except sqlite3.OperationalError:  # an undecodable session id: unknown, so every session "holds some"
            self._per_session_known = False
            return
        self._per_session = Counter({session: int(n) for session, n in rows})
        self._per_session_known = True

    def session_holds(self, session: str | None) -> bool:
        """Whether L2 holds any event of `session` (in memory: asked before every LLM request)."""
        return not self._per_session_known or self._per_session.get(session, 0) > 0

    def _load_ids(self) -> None:
        """The id set, read from the ``id`` index alone. An id that is not UTF-8 is left out (as if it were
        quarantined already): the damage check finds its row and moves it aside."""
        try:
            self._ids = self._id_set(r[0] for r in self._db.execute("SELECT id FROM cold_events"))
        except sqlite3.OperationalError as exc:
            if not _undecodable(exc):
                raise
            rows = self._db.execute("SELECT CAST(id AS BLOB) FROM cold_events")
            self._ids = self._id_set(eid for (raw,) in rows if (eid := _utf8(raw)) is not None)

    def _id_set(self, ids: Iterable[str]) -> HashSet | MappedHashSet:
        if self.path == ":memory:":
            return HashSet(ids)
        if isinstance(self._ids, MappedHashSet):
            self._ids.close()  # the set this replaces (a reopen's): its file goes with its descriptor
        return MappedHashSet(Path(self.path).parent, ids)

    def _has_rows(self) -> bool:
        return self._db.execute("SELECT 1 FROM cold_events LIMIT 1").fetchone() is not None

    def _check_rows(self) -> None:
        """The damage check of every event row present at open (module docstring), on its own connection;
        damaged rows are quarantined. Runs in the background thread the open starts.

        Mutation check (done): skipping the quarantine of what this finds turns
        tests/memory/test_cold_damage.py::test_a_row_that_does_not_decode_costs_only_its_event red."""
        damaged: list[tuple[int, str]] = []
        try:
            db = sqlite3.connect(self.path, check_same_thread=False)
            try:
                db.text_factory = bytes
                lo, hi = db.execute("SELECT min(rid), max(rid) FROM cold_events").fetchone()
                for start in range(int(lo or 0), int(hi or -1) + 1, _CHECK_STEP):
                    damaged += _check_range(db, start, start + _CHECK_STEP)
            finally:
                db.close()
            if damaged:
                self._quarantine(damaged)
        except sqlite3.Error as exc:
            hint = "run `hologram doctor --repair`" if is_damage(exc) else "the rows are served as they are"
            log.error("%s: checking the cold events for damage failed: %s; %s", self.path, exc, hint)
        finally:
            self._checked.set()

    def _wait_checked(self) -> None:
        if not self._checked.is_set():
            self._checked.wait()

    @property
    def index(self) -> ColdIndex:
        """The search index, built from every stored event on first use. A row that does not decode is
        skipped and quarantined (module docstring), never the whole build."""
        self._wait_checked()
        with self._lock:
            if self._index is None:
                self._index = self._build_index()
            return self._index

    @property
    def index_built(self) -> bool:
        return self._index is not None

    def _build_index(self) -> ColdIndex:
        """Mutation check (done): letting a row's decoding error propagate turns
        tests/memory/test_cold_damage.py::test_a_row_only_the_index_build_rejects_is_quarantined_by_the_first_search
        red (the search fails)."""
        index, damaged, stale = ColdIndex(), list[tuple[int, str]](), list[IndexEntry]()
        try:
            self._index_rows(index, self._db.execute(_LOAD), damaged, stale, as_bytes=False)
        except sqlite3.OperationalError as exc:
            if not _undecodable(exc):
                raise
            index, damaged, stale = ColdIndex(), [], []  # again, text as bytes, decoded row by row
            self._db.text_factory = bytes
            try:
                self._index_rows(index, self._db.execute(_LOAD), damaged, stale, as_bytes=True)
            finally:
                self._db.text_factory = str
        if damaged:
            self._quarantine(damaged)
        if stale:
            self._reanalyse(index, stale)
        return index

    def _reanalyse(self, index: ColdIndex, stale: Sequence[IndexEntry]) -> None:
        """Term vectors stored by an older analyzer (before an upgrade of the tokenizer) are derived again
        from the events' text and stored, so old and new events are scored alike.

        Mutation check (done): adding the stale entries as stored turns
        tests/memory/test_cold.py::test_terms_stored_by_an_older_tokenizer_are_derived_again red."""
        texts: dict[str, list[str]] = {}
        ids = [e.id for e in stale]
        for chunk in in_chunks(ids):
            rows = self._db.execute(
                f"SELECT event, text FROM cold_blocks WHERE event IN ({marks(len(chunk))}) ORDER BY event, ordinal",
                chunk,
            ).fetchall()
            for event, text in rows:
                if text:
                    texts.setdefault(str(event), []).append(str(text))
        fresh = [replace(e, terms=TermVector.from_text("\n".join(texts.get(e.id, [])))) for e in stale]
        with self._transaction():
            self._db.executemany(
                "UPDATE cold_events SET terms = ?, analyzer = ? WHERE id = ?",
                [(json.dumps(dict(e.terms.counts), ensure_ascii=False), e.terms.analyzer, e.id) for e in fresh],
            )
        for entry in fresh:
            index.add(entry)
        log.info("re-analysed the terms of %d cold event(s) stored by an older tokenizer", len(fresh))

    @staticmethod
    def _index_rows(
        index: ColdIndex,
        rows: Iterable[tuple[Any, ...]],
        damaged: list[tuple[int, str]],
        stale: list[IndexEntry],
        *,
        as_bytes: bool,
    ) -> None:
        for row in rows:
            try:
                _, eid, session, origin, ts_ms, fp, dim, blob, terms, analyzer = _text(row) if as_bytes else row
                entry = IndexEntry(eid, session, ts_ms, origin, _terms(terms, analyzer), _dense(fp, dim, blob))
            except _ROW_DAMAGE as exc:
                damaged.append((int(row[0]), _reason(exc)))
                continue
            if analyzer in CURRENT_ANALYZERS:
                index.add(entry)
            else:
                stale.append(entry)

    def _quarantine(self, damaged: Sequence[tuple[int, str]]) -> None:
        """Move damaged events (by rid) and their blocks, bytes unchanged, out of L2 into the side tables."""
        now = time.time()
        with self._lock:
            for rid, _ in damaged:  # out of L2 for this run whether or not the move below succeeds
                found = self._db.execute("SELECT CAST(id AS BLOB) FROM cold_events WHERE rid = ?", (rid,)).fetchone()
                if found is not None and (eid := _utf8(found[0])) is not None:
                    self._ids.discard([eid])
            self._epoch += 1
        try:
            with self._lock, self._transaction():
                for statement in _QUARANTINE:  # not executescript: it would commit the open transaction
                    self._db.execute(statement)
                owner = "(SELECT id FROM cold_events WHERE rid = ?)"
                for rid, reason in damaged:
                    copy = f"INSERT INTO cold_damaged_blocks SELECT *, ? FROM cold_blocks WHERE event = {owner}"
                    self._db.execute(copy, (now, rid))
                    self._db.execute(f"DELETE FROM cold_blocks WHERE event = {owner}", (rid,))
                    copy = "INSERT INTO cold_damaged_events SELECT *, ?, ? FROM cold_events WHERE rid = ?"
                    self._db.execute(copy, (now, reason, rid))
                    self._db.execute("DELETE FROM cold_events WHERE rid = ?", (rid,))
        except sqlite3.Error as exc:  # read-only, full disk: the events stay out of the index all the same
            log.error("%s: could not move %d damaged event(s) aside: %s", self.path, len(damaged), exc)
            return
        for rid, reason in damaged:
            log.warning(
                "%s: cold event rid %d is damaged (%s); moved to cold_damaged_events, it is back in its "
                "session's L1 (hologram doctor lists such rows)",
                self.path, rid, reason,
            )  # fmt: skip

    # -- lifecycle ------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close, after the damage check of the open is done (so an open-and-close quarantines as before)."""
        self._wait_checked()
        with self._lock:
            self._db.close()
            if isinstance(self._ids, MappedHashSet):
                self._ids.close()

    def __enter__(self) -> ColdStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __len__(self) -> int:
        self._wait_checked()
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        self._wait_checked()
        return event_id in self._ids

    def holds(self, ids: Sequence[str]) -> np.ndarray:
        """Which of `ids` L2 holds, as a bool array: one set lookup per id without a Python frame each
        (every request asks it for every event of its session)."""
        self._wait_checked()
        return self._ids.contains(id_hashes(ids))

    def holds_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Which of the events with these id hashes (:mod:`hologram.memory.index.idhash`) L2 holds: one vectorised
        lookup (what every request asks for every event of its session)."""
        self._wait_checked()
        return self._ids.contains(hashes)

    def membership_stamp(self, session: str | None) -> tuple[int, int]:
        """A value that changes whenever which of `session`'s events L2 or L3 holds may have changed: what a
        caller remembering the answer of :meth:`holds_hashes` and :meth:`in_l3_hashes` for a session checks
        before it asks again (hologram/memory/layers.py). Lock-free: two ints read under the GIL."""
        return self._epoch, self._changes[session]

    def in_l3_hashes(self, hashes: np.ndarray) -> np.ndarray:
        """Like :meth:`holds_hashes`, for the events recorded as held by L3."""
        return self._l3.contains(hashes)

    def in_l3(self, ids: Sequence[str]) -> np.ndarray:
        """Which of `ids` L3 holds (cooled out of L2), as a bool array, like :meth:`holds`."""
        return self._l3.contains(id_hashes(ids)) if self._l3 else np.zeros(len(ids), dtype=bool)

    @property
    def l3_count(self) -> int:
        """How many events are recorded as held by L3."""
        return len(self._l3)

    def ids(self) -> list[str]:
        """Every event L2 holds, in time order."""
        self._wait_checked()
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT id FROM cold_events ORDER BY ts_ms, origin, id")]

    def block_ids(self) -> set[str]:
        self._wait_checked()
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
        l3 = [r.id for r in records if r.id in self._l3]
        if l3:
            raise DuplicateBlockError(f"L3 holds {len(l3)} of these events (first {l3[0]}): they never return to L2")
        self._wait_checked()
        with self._lock:
            try:
                with self._transaction():
                    self._db.executemany(f"INSERT INTO cold_events ({_EVENT_COLS}) VALUES ({marks(16)})", rows)
                    self._db.executemany("INSERT INTO cold_blocks VALUES (?, ?, ?, ?, ?, ?)", block_rows)
            except sqlite3.IntegrityError as exc:
                raise DuplicateBlockError(f"L2 already holds one of these events or blocks: {exc}") from exc
            self._ids.add(r.id for r in records)
            self._per_session.update(r.session for r in records)
            self._changes.update({r.session for r in records})
            if self._index is not None:
                for r, terms in zip(records, all_terms, strict=True):
                    self._index.add(IndexEntry(r.id, r.session, r.ts_ms, r.origin, terms, r.dense))

    def remove(self, ids: Iterable[str], *, into_l3: bool = False, now: float | None = None) -> list[str]:
        """Delete events and their blocks (the L2 side of a move to L1) in one durable transaction.

        `into_l3`: the events were moved into the memory graph (the graph committed them): the same
        transaction records them as held by L3 (module docstring). Returns the ids actually removed; ids L2
        does not hold are ignored (a concurrent recall got them).
        """
        at = time.time() if now is None else now
        wanted = list(dict.fromkeys(ids))
        self._wait_checked()
        with self._lock:
            index = self._index  # without an index, only the ids are needed (no terms to take out of its IDF)
            present = self._rows(wanted, "id, session, terms, analyzer" if index is not None else "id, session")
            if not present:
                return []
            found = [row[0] for row in present]
            sessions = Counter(row[1] for row in present)
            with self._transaction():
                for chunk in in_chunks(found):
                    if into_l3:
                        self._db.execute(
                            "INSERT OR IGNORE INTO l3_events (id, session, moved) SELECT id, session, ? "
                            f"FROM cold_events WHERE id IN ({marks(len(chunk))})",
                            (at, *chunk),
                        )
                    self._db.execute(f"DELETE FROM cold_blocks WHERE event IN ({marks(len(chunk))})", chunk)
                    self._db.execute(f"DELETE FROM cold_events WHERE id IN ({marks(len(chunk))})", chunk)
            self._ids.discard(found)
            self._per_session.subtract(sessions)
            self._changes.update(sessions.keys())
            if into_l3:
                self._l3.add(found)
            if index is not None:
                for eid, _session, terms, analyzer in present:
                    index.remove(eid, _terms(terms, analyzer))
            return found

    def l3_of_session(self, session: str) -> list[str]:
        """The events of ``session`` recorded as held by L3."""
        self._wait_checked()
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT id FROM l3_events WHERE session IS ?", (session,))]

    def forget_l3(self, ids: Iterable[str]) -> None:
        """Drop the L3 records of `ids` (L3 deleted them: their session was deleted)."""
        wanted = list(dict.fromkeys(ids))
        self._wait_checked()
        with self._lock, self._transaction():
            for chunk in in_chunks(wanted):
                self._db.execute(f"DELETE FROM l3_events WHERE id IN ({marks(len(chunk))})", chunk)
            self._l3.discard(wanted)
            self._epoch += 1

    def remove_session(self, session: str) -> list[str]:
        """Delete every L2 event of ``session`` (the session itself was deleted)."""
        self._wait_checked()
        with self._lock:
            ids = [row[0] for row in self._db.execute("SELECT id FROM cold_events WHERE session=?", (session,))]
        return self.remove(ids)

    def touch(self, ids: Iterable[str], *, now: float | None = None, once: bool = False) -> None:
        """Record one access of each event (automatic recall injected it). `once`: the access counts only if the
        event has none yet — automatic recall counts once per session (an L2 event is recalled only into its own
        session, so once at all), while ``last_access`` still moves: an event a session keeps using is not idle,
        but using it every turn must not hold it out of L3 forever by its count (issue 39)."""
        at = time.time() if now is None else now
        wanted = list(dict.fromkeys(ids))
        count = "MAX(access_count, 1)" if once else "access_count + 1"
        self._wait_checked()
        with self._lock, self._transaction():
            for chunk in in_chunks(wanted):
                self._db.execute(
                    f"UPDATE cold_events SET access_count = {count}, last_access = ? WHERE id IN ({marks(len(chunk))})",
                    (at, *chunk),
                )

    def reconcile(self, l1_ids: Iterable[str]) -> list[str]:
        """Drop L2's copy of every event L1 also holds (a crash between copy and delete); returns them."""
        return self.remove([i for i in l1_ids if i in self])

    # -- reads ----------------------------------------------------------------------------------------

    def search(self, query: Query, k: int = 10, *, session: str | None = None) -> list[ColdHit]:
        """The `k` best L2 events for `query` (all sessions, or only `session`'s). Read-only, no access."""
        index = self.index  # built here the first time
        with self._lock:
            hits = index.top(query, k, session, any_session=session is None)
        return [ColdHit(eid, score) for eid, score in hits]

    def peek(self, ids: Iterable[str]) -> list[EventRecord]:
        """Full records (blocks, vectors, access history) of the given events L2 holds, in time order."""
        wanted = list(dict.fromkeys(ids))
        self._wait_checked()
        with self._lock:
            try:
                records = self._peek(wanted)
            except (sqlite3.OperationalError, *_ROW_DAMAGE) as exc:
                if isinstance(exc, sqlite3.OperationalError) and not _undecodable(exc):
                    raise
                records = self._peek_each(wanted)
        return sorted(records, key=EventRecord.sort_key)

    def _peek(self, wanted: list[str]) -> list[EventRecord]:
        rows = self._rows(wanted, _EVENT_COLS)
        blocks: dict[str, list[Block]] = {}
        for chunk in in_chunks([r[0] for r in rows]):
            for bid, event, kind, text, meta in self._db.execute(
                f"SELECT id, event, kind, text, meta FROM cold_blocks WHERE event IN ({marks(len(chunk))}) "
                "ORDER BY event, ordinal",
                chunk,
            ):
                blocks.setdefault(event, []).append(Block(bid, kind, text, json.loads(meta)))
        return [_record(row, tuple(blocks.get(row[0], ()))) for row in rows]

    def _peek_each(self, wanted: list[str]) -> list[EventRecord]:
        """`_peek` one event at a time, after one of them did not decode: the damaged ones are quarantined
        (and so reported missing, as if a concurrent recall had taken them), the rest come back."""
        records: list[EventRecord] = []
        damaged: list[tuple[int, str]] = []
        for eid in wanted:
            try:
                records += self._peek([eid])
            except (sqlite3.OperationalError, *_ROW_DAMAGE) as exc:
                if isinstance(exc, sqlite3.OperationalError) and not _undecodable(exc):
                    raise
                found = self._db.execute("SELECT rid FROM cold_events WHERE id = ?", (eid,)).fetchone()
                if found is not None:
                    damaged.append((int(found[0]), _reason(exc)))
                    if self._index is not None:
                        self._index.remove(eid, self._stored_terms(int(found[0])))
        if damaged:
            self._quarantine(damaged)
        return records

    def _stored_terms(self, rid: int) -> TermVector:
        """The term counts the index was built with (to take them out of its IDF), or none if unreadable."""
        try:
            row = self._db.execute("SELECT terms, analyzer FROM cold_events WHERE rid = ?", (rid,)).fetchone()
            return _terms(row[0], row[1])
        except (sqlite3.OperationalError, *_ROW_DAMAGE):
            return TermVector(counts={}, length=0, analyzer="")

    def group_mates(self, ids: Iterable[str]) -> list[str]:
        """`ids` plus every L2 event sharing a tool-call group (same session) with one of them."""
        wanted = list(dict.fromkeys(ids))
        out = dict.fromkeys(wanted)
        self._wait_checked()
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
        self._wait_checked()
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM cold_events WHERE access_count <= ? AND coalesce(last_access, added) <= ? "
                "ORDER BY ts_ms, origin, id",
                (max_accesses, now - idle_seconds),
            )
            return [r[0] for r in rows]

    def access(self, event_id: str) -> tuple[int, float | None]:
        """(access_count, last_access) of one event; KeyError if L2 does not hold it."""
        self._wait_checked()
        with self._lock:
            row = self._db.execute("SELECT access_count, last_access FROM cold_events WHERE id = ?", (event_id,))
            found = row.fetchone()
        if found is None:
            raise KeyError(event_id)
        return int(found[0]), found[1]

    # -- helpers --------------------------------------------------------------------------------------

    def _rows(self, ids: list[str], cols: str) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        for chunk in in_chunks(ids):
            out += self._db.execute(f"SELECT {cols} FROM cold_events WHERE id IN ({marks(len(chunk))})", chunk)
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


def _check_range(db: sqlite3.Connection, start: int, stop: int) -> list[tuple[int, str]]:
    """The damaged event rows with `start` <= rid < `stop` (`db` reads text as bytes): `_CHECK` flags, the
    decoding the index does confirms (only the flagged rows, or all of the range if its text is not UTF-8)."""
    try:
        text, suspects = db.execute(_CHECK, (start, stop)).fetchone()
    except sqlite3.OperationalError:  # not damage SQLite sees (that is a DatabaseError): check row by row
        text, suspects = None, None
    else:
        if text is None:  # no rows here
            return []
    if text is not None and _utf8(text) is not None:
        if not suspects:
            return []
        rids = [int(r) for r in suspects.split(b",")]
        rows = db.execute(f"SELECT {_LOAD_COLS} FROM cold_events WHERE rid IN ({marks(len(rids))})", rids)
    else:
        rows = db.execute(f"SELECT {_LOAD_COLS} FROM cold_events WHERE rid >= ? AND rid < ?", (start, stop))
    return [(int(row[0]), problem) for row in rows if (problem := event_row_problem(row)) is not None]


def _utf8(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _undecodable(exc: sqlite3.Error) -> bool:
    """sqlite3's error for a TEXT value that is not UTF-8 (it fails the whole query, not the row)."""
    return str(exc).startswith("Could not decode to UTF-8")


def _text(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row read with ``text_factory=bytes``, its text decoded (UnicodeDecodeError, a ValueError, if not)."""
    return tuple(v.decode("utf-8") if isinstance(v, bytes) and i != _DENSE_COLUMN else v for i, v in enumerate(row))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, (UnicodeDecodeError, sqlite3.OperationalError)):
        return "text that is not UTF-8"
    if isinstance(exc, json.JSONDecodeError):
        return "JSON that does not parse"
    return f"values of the wrong shape ({type(exc).__name__}: {exc})"


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


LOAD_SQL = _LOAD
BLOCKS_SQL = "SELECT id, event, kind, text, meta FROM cold_blocks ORDER BY rowid"


def event_row_problem(row: tuple[Any, ...]) -> str | None:
    """Why a row of `LOAD_SQL` (read with text as bytes) would be quarantined at open, or None."""
    try:
        _, eid, session, origin, ts_ms, fp, dim, blob, terms, analyzer = _text(row)
        IndexEntry(eid, session, ts_ms, origin, _terms(terms, analyzer), _dense(fp, dim, blob))
    except _ROW_DAMAGE as exc:
        return _reason(exc)
    return None


def block_row_problem(row: tuple[Any, ...]) -> str | None:
    """Why a row of `BLOCKS_SQL` (read with text as bytes) would make its event's recall fail, or None."""
    try:
        values: list[Any] = [v.decode("utf-8") if isinstance(v, bytes) else v for v in row]
        bid, _, kind, text, meta = values
        Block(bid, kind, text, json.loads(meta))
    except _ROW_DAMAGE as exc:
        return _reason(exc)
    return None
