"""Memory across sessions (issue 39 item 2): what a person told the agent in one session, in the request of
another session of the same person that needs it — with no tool call.

Why a store of its own. A session's index holds that session only, and L2 (``cold.db``) holds only what a
session's requests pruned: a short chat whose events never left L1 would never reach another session, and the
entity route of L3 fires only when the new input names an entity key the extractor made. So every *input* (the
person's own words: a turn's text, a group message stored with ``sessions/append``) is also kept here, whatever
its layer, with its session, time and speaker: ``<data>/across.db`` (SQLite) and, for the statements among them,
in memory, BM25 postings and one dense vector each (:class:`~hologram.memory.cold.coldindex.ColdIndex`, the L2 search
structure; ~2 KB a statement, a dense scan of ~0.25 ms per 1,000). It is derived data — a damaged file is moved
aside with one warning and refilled from the session log (memory/across/across_backfill.py) — so it is never a reason
a request fails.

**Ranking.** A request's input is scored against the other sessions' inputs of the same person that *tell*
something (statements, not their questions or requests: memory/text/utterance.py): dense cosine (the session index's
model) and lexical coverage — the share of the query's BM25 weight (IDF over this store) the input matches —
averaged. Absolute scores, not z-scores over the candidates: a new kernel with two stored inputs must not recall
one of them just because it is the better of two. Above a floor (:data:`MIN_SCORE`) the best (at most
:data:`MAX_HITS`) join the request's note within the request's budget: a share (:data:`SHARE`) reserved before
the history is fitted, then whatever the history left unused. A later statement of the same thing (vectors at
cosine >= :data:`RESTATED`, or a little less close and read as its correction by memory/across/corrections.py's rules)
comes with a recalled one, ranked just above it. The note
shows them in time order, each with its date and session, so a later statement of the same fact comes after
the earlier one ("it was a Tesla… now a BYD") and the model reads the order.

**Privacy.** An input is recalled only into a session of the *same person*: the speaker of the request's latest
input, ``channel:partner`` when the channel named a partner (a QQ user in a group or a private chat; the turn
API's ``partner``), else the owner — the turns with no partner (cli, web, the HTTP API without one). So what one
person said is never shown in another person's conversation. A session several people speak in (a QQ group:
its inputs name more than one partner) gets nothing from other sessions: the group would read it.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from hologram.memory.across.aliases import named
from hologram.memory.cold.coldindex import ColdIndex, IndexEntry
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokens import estimate_tokens
from hologram.memory.text.utterance import tells
from hologram.storage.sqlmem import SMALL_CACHE_KIB, in_chunks, limit_cache, marks

__all__ = [
    "ACROSS_DB",
    "HEADER",
    "MAX_HITS",
    "MIN_SCORE",
    "OWNER",
    "SHARE",
    "AcrossHit",
    "AcrossNote",
    "AcrossStore",
    "Said",
    "person_of",
    "render",
]

log = logging.getLogger("hologram.memory")

ACROSS_DB = "across.db"
#: The person of turns whose channel named no partner: the kernel's owner (cli, web, HTTP without a partner).
OWNER = "owner"
#: A stored input is a candidate at this score (cosine and lexical coverage averaged). Paraphrased questions
#: share few words with their fact, and the multilingual USE puts a question and its fact at cosine 0.24-0.58 while
#: unrelated statements of the same person reach 0.3-0.5: no threshold separates "needed" from "not needed"
#: (measured on the dev facts of tools/bench/memory_cross.py: at 0.15 / 0.2 the English dev facts fell to 0.7 /
#: 0.4 in the request). So this is a floor, and what decides is the rank among the person's statements (only
#: those: memory/text/utterance.py) with at most :data:`MAX_HITS` lines — a request that needs nothing costs their
#: ~150 tokens (docs/memory.md, "Across sessions").
MIN_SCORE = 0.1
#: A later input whose vector is this close to a recalled one says the same thing again — a correction ("my
#: number is now ...") or a restatement — and comes with it, ranked just above it. On the set's six corrections
#: per language the pairs score 0.35-0.74 (10 of 12 at >= 0.5), distinct facts at most 0.43 (English) and 0.55
#: (Chinese) apart (tools/bench/memory_cross.py).
RESTATED = 0.5
#: Less close than that, a later input still comes with a recalled one when the rules read it as its correction
#: (a shared key and a correction cue: memory/across/corrections.py) — "our flat is on Harrow Street" … "we moved
#: house, the new address is 48 Quarry Lane" are at cosine 0.35; unrelated statements of the same person reach
#: 0.3-0.5, which is why the rules decide below :data:`RESTATED`, never the cosine alone.
KEYED_RESTATED = 0.25
#: How many of those the rules read per recalled statement (the closest first).
KEYED_CANDIDATES = 8
#: At most this many inputs of other sessions per request.
MAX_HITS = 6
#: The share of the history budget the note of other sessions may take before the history is fitted (it gets
#: more when the history leaves room: a new session leaves almost all of it).
SHARE = 0.15
#: In front of a note line a later line corrects (memory/across/corrections.py's rules).
SUPERSEDED = "(superseded by a later one)"
#: What of a stored input is kept and shown (a pasted document is not "what the person told").
TEXT_CHARS = 1200
#: How much of an input is embedded (its start: one vector an input).
EMBED_CHARS = 1000
HEADER = (
    "[memory] From the person's other conversations (what they said there, oldest first; a later statement "
    "of the same thing replaces an earlier one):"
)
_PENDING = """
SELECT id, text FROM said WHERE told = 1 AND fp IS NULL
UNION ALL SELECT id, text FROM said WHERE told = 1 AND fp < ?1
UNION ALL SELECT id, text FROM said WHERE told = 1 AND fp > ?1 LIMIT ?2
"""
"""Stored inputs without a vector of the model ``?1``: three seeks in the ``said_fp`` index, which are empty when
every input is embedded. Asked after every turn; written as ``fp IS NULL OR fp != ?`` it scanned every input the
person ever said (SQLite does not split that OR over the index): in the 10,000-turn soak 3.3 % of the kernel's
busy worker samples by turn 9,000, up from none at turn 1,000 (tools/bench/soak_diag.py --profile)."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS said (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL,
    person TEXT NOT NULL,
    text TEXT NOT NULL,
    told INTEGER NOT NULL,
    terms TEXT NOT NULL,
    fp TEXT,
    vec BLOB
);
CREATE INDEX IF NOT EXISTS said_session ON said(session);
CREATE INDEX IF NOT EXISTS said_fp ON said(fp) WHERE told = 1;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS alias (
    person TEXT NOT NULL,
    relation TEXT NOT NULL,
    name TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    PRIMARY KEY (person, relation)
);
"""


def person_of(channel: str | None, partner: str | None) -> str:
    """Whose words these are (module docstring, privacy): ``channel:partner``, or :data:`OWNER`."""
    return f"{channel or ''}:{partner}" if partner else OWNER


@dataclass(frozen=True, slots=True)
class Said:
    """One input to store: the event id (the session's record id), where and when, who, the text."""

    id: str
    session: str
    seq: int
    ts_ms: int
    person: str
    text: str


@dataclass(frozen=True, slots=True)
class AcrossHit:
    id: str
    session: str
    seq: int
    ts_ms: int
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class AcrossNote:
    hits: list[AcrossHit]
    """What the note carries, in time order."""
    note: str
    tokens: int


NONE = AcrossNote([], "", 0)


@dataclass(frozen=True, slots=True)
class _Meta:
    session: str
    seq: int
    ts_ms: int
    person: str
    told: bool
    """It tells something (memory/text/utterance.py): only such inputs are recalled."""
    wording: int
    """:func:`_wording` of its text: the same words said again in another session are one line of the note."""


class AcrossStore:
    """The inputs of every session (module docstring). Thread-safe: writes run in worker threads, searches on
    the event loop; one lock around the in-memory index."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._index = ColdIndex()
        self._meta: dict[str, _Meta] = {}
        self._persons: dict[str, set[str]] = {}
        self._loaded = False
        self._closed = False
        self._names: dict[str, dict[str, tuple[str, int]]] = {}
        """person -> relation -> (name, ts_ms): who "my wife" is (memory/across/aliases.py), the latest said."""
        self._unembedded: set[str] = set()
        """Statements held without a vector yet (the embedder computes them in the background, or a request
        does when they are few: `SessionMemory._across_hits`)."""

    # -- open / load ------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        limit_cache(db, SMALL_CACHE_KIB)  # SQLite's default (2,000 KiB) filled over thousands of turns (sqlmem.py)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        if "session" not in {str(row[1]) for row in db.execute("PRAGMA table_info(alias)")}:
            db.execute("ALTER TABLE alias ADD COLUMN session TEXT")  # a store from before it: told where
        return db

    def load(self) -> None:
        """Open the file and build the index from it (once; a worker thread's job). A damaged file is moved
        aside with one warning and an empty one takes its place: this store is derived data."""
        with self._lock:
            if self._loaded or self._closed:
                return
            try:
                self._db = self._connect()
                rows = self._db.execute(
                    "SELECT id, session, seq, ts_ms, person, told, terms, fp, vec, text FROM said"
                ).fetchall()
            except sqlite3.DatabaseError as exc:
                if self._db is not None:
                    self._db.close()
                aside = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
                log.warning("%s is damaged (%s); moved to %s and started empty (it is rebuilt as sessions speak)",
                            self.path, exc, aside.name)  # fmt: skip
                for suffix in ("", "-wal", "-shm"):
                    src = Path(f"{self.path}{suffix}")
                    if src.exists():
                        src.replace(Path(f"{aside}{suffix}"))
                self._db = self._connect()
                rows = []
            for person, relation, name, ts_ms in self._db.execute("SELECT person, relation, name, ts_ms FROM alias"):
                self._names.setdefault(str(person), {})[str(relation)] = (str(name), int(ts_ms))
            for eid, session, seq, ts_ms, person, told, terms, fp, vec, text in rows:
                self._persons.setdefault(session, set()).add(person)
                counts = _counts(terms)
                if told and counts is not None:  # only statements are recalled, so only they are held in memory
                    meta = _Meta(session, seq, ts_ms, person, True, _wording(str(text)))
                    self._add_locked(meta, eid, counts, _dense(fp, vec))
            self._loaded = True

    def close(self) -> None:
        with self._lock:
            self._closed = True  # a load after this (the backfill thread) opens nothing
            if self._db is not None:
                self._db.close()
                self._db = None

    def backfilled(self) -> bool:
        """Whether the session log's earlier inputs were added once (memory/across/across_backfill.py)."""
        with self._lock:
            if self._db is None:  # closed: nothing to fill
                return True
            return self._db.execute("SELECT 1 FROM meta WHERE key = 'backfilled'").fetchone() is not None

    def mark_backfilled(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('backfilled', '1')")

    # -- writes ---------------------------------------------------------------------------------------------

    def _add_locked(self, meta: _Meta, eid: str, terms: TermVector, dense: DenseVector | None) -> None:
        """Hold a statement in the in-memory index (its term counts live in the index's postings and in SQLite:
        no per-input copy here — a soak of 10,000 turns must not grow by one object per input)."""
        self._meta[eid] = meta
        self._index.add(_entry(eid, meta, terms, dense))
        if dense is None:
            self._unembedded.add(eid)

    def unembedded(self) -> int:
        """How many statements have no vector yet."""
        return len(self._unembedded)

    def _stored_terms(self, ids: Sequence[str]) -> dict[str, TermVector]:
        assert self._db is not None
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(f"SELECT id, terms FROM said WHERE id IN ({marks})", list(ids)).fetchall()
        return {str(i): t for i, raw in rows if (t := _counts(raw)) is not None}

    def add(self, said: Sequence[Said]) -> int:
        """Store inputs not stored yet (an id already here is skipped: a restart re-reads a session's tail).
        Returns how many were new. Blocking: call from a worker thread."""
        self.load()
        fresh = [s for s in said if s.id not in self._meta and s.text.strip()]
        if not fresh:
            return 0
        terms = [TermVector.from_text(s.text[:TEXT_CHARS]) for s in fresh]
        flags = [tells(s.text[:TEXT_CHARS]) for s in fresh]
        rows = [
            (s.id, s.session, s.seq, s.ts_ms, s.person, s.text[:TEXT_CHARS], int(told), _json(t))
            for s, t, told in zip(fresh, terms, flags, strict=True)
        ]
        with self._lock:
            if self._db is None:  # closed meanwhile (the kernel stops while the backfill runs)
                return 0
            self._db.executemany(
                "INSERT OR IGNORE INTO said (id, session, seq, ts_ms, person, text, told, terms) "
                "VALUES (?,?,?,?,?,?,?,?)",
                rows,
            )
            self._name_locked(fresh, flags)
            for s, t, told in zip(fresh, terms, flags, strict=True):
                self._persons.setdefault(s.session, set()).add(s.person)
                if told and s.id not in self._meta:
                    meta = _Meta(s.session, s.seq, s.ts_ms, s.person, True, _wording(s.text[:TEXT_CHARS]))
                    self._add_locked(meta, s.id, t, None)
        return len(fresh)

    def _name_locked(self, said: Sequence[Said], told: Sequence[bool]) -> None:
        """Record who the person's relations are ("my wife Elena": memory/across/aliases.py), the latest said."""
        assert self._db is not None
        for s, flag in zip(said, told, strict=True):
            if not flag:
                continue
            for relation, name in named(s.text[:TEXT_CHARS]):
                held = self._names.setdefault(s.person, {}).get(relation)
                if held is not None and held[1] > s.ts_ms:
                    continue
                self._names[s.person][relation] = (name, s.ts_ms)
                self._db.execute(
                    "INSERT OR REPLACE INTO alias (person, relation, name, ts_ms, session) VALUES (?,?,?,?,?)",
                    (s.person, relation, name, s.ts_ms, s.session),
                )

    def names(self, person: str) -> dict[str, str]:
        """relation -> name, as `person` told them (memory/across/aliases.py)."""
        if not self._loaded:
            self.load()
        with self._lock:
            return {r: n for r, (n, _) in self._names.get(person, {}).items()}

    def pending(self, fingerprint: str, limit: int = 64) -> list[tuple[str, str]]:
        """(id, text) of stored inputs that tell something and have no vector of `fingerprint` yet (to embed;
        the others are never recalled, so never embedded)."""
        self.load()
        with self._lock:
            if self._db is None:  # closed
                return []
            rows = self._db.execute(_PENDING, (fingerprint, limit)).fetchall()
        return [(str(i), str(t)[:EMBED_CHARS]) for i, t in rows]

    def set_vectors(self, fingerprint: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store the inputs' vectors and put them in the index (remove and add again: slots are cheap)."""
        with self._lock:
            if self._db is None:  # closed
                return
            self._db.executemany(
                "UPDATE said SET fp = ?, vec = ? WHERE id = ?",
                [(fingerprint, np.asarray(v, dtype=np.float16).tobytes(), i) for i, v in items],
            )
            stored = self._stored_terms([eid for eid, _ in items if eid in self._meta])
            for eid, values in items:
                self._unembedded.discard(eid)
                meta = self._meta.get(eid)
                terms = stored.get(eid)
                if meta is None or terms is None:
                    continue
                self._index.remove(eid, terms)
                dense = DenseVector(fingerprint, np.asarray(values, dtype=np.float32))
                self._index.add(
                    IndexEntry(eid, meta.session, meta.ts_ms, f"{meta.session}:{meta.seq:012d}", terms, dense)
                )

    def remove_session(self, session: str) -> int:
        """A deleted session's inputs leave the store."""
        self.load()
        with self._lock:
            if self._db is None:  # closed
                return 0
            gone = [i for i, m in self._meta.items() if m.session == session]
            stored = self._stored_terms(gone) if gone else {}
            for eid in gone:
                self._unembedded.discard(eid)
                if eid in stored:
                    self._index.remove(eid, stored[eid])
                del self._meta[eid]
            self._persons.pop(session, None)
            self._db.execute("DELETE FROM said WHERE session = ?", (session,))
            # who "my wife" is, as that session told it, leaves with it (an earlier name is not brought back)
            gone_names = self._db.execute("SELECT person, relation FROM alias WHERE session = ?", (session,)).fetchall()
            for person, relation in gone_names:
                self._names.get(str(person), {}).pop(str(relation), None)
            self._db.execute("DELETE FROM alias WHERE session = ?", (session,))
        return len(gone)

    # -- reads ----------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Statements held for recall (the inputs that tell something)."""
        return len(self._meta)

    @property
    def loaded(self) -> bool:
        return self._loaded

    def persons(self, session: str) -> set[str]:
        """Who spoke in `session` (as stored here)."""
        with self._lock:
            return set(self._persons.get(session, ()))

    def has_other(self, session: str, person: str) -> bool:
        """Whether any other session of `person` stored an input (a cheap test before embedding a query)."""
        with self._lock:
            return any(s != session and person in p for s, p in self._persons.items())

    def search(
        self,
        terms: TermVector,
        vector: DenseVector | None,
        *,
        person: str,
        session: str,
        k: int | None = None,
        also: TermVector | None = None,
    ) -> list[AcrossHit]:
        """The inputs of `person`'s other sessions that clearly match (score >= :data:`MIN_SCORE`), best first
        (ties: the newer first), at most `k`. `also`: words a statement may match besides the query's (the
        other names of a person the query names: memory/across/aliases.py) — they add to a statement's match, never
        to what the query asks to be covered."""
        if not self._loaded:
            self.load()
        with self._lock:
            index = self._index
            n = len(index.ids)
            if n == 0:
                return []
            idf = index.tfidf
            weight = sum(idf.idf(t) for t in terms.counts) if terms.counts else 0.0
            searched = terms
            if also is not None and also.counts:
                counts = {**also.counts, **terms.counts}
                searched = TermVector(counts=counts, length=sum(counts.values()), analyzer=terms.analyzer)
            bm25 = index.bm25(searched)[:n]
            # (with `also`: a name the store knows stands for the relation the query says, and is counted so)
            known = sum(idf.idf(t) for t in searched.counts if t in idf.df) if searched.counts else 0.0
            lexical = np.minimum(bm25 / weight, 1.0) if weight > 0 else np.zeros(n, dtype=np.float32)
            cos, defined = index.cosine(vector)
            # Without a vector (the model still loading after a start, or none installed) the words alone decide,
            # over the query's words this store knows: its other words (most of a paraphrase's) weigh on every
            # candidate alike, and at a few stored statements they kept even a shared rare word under the floor.
            alone = np.minimum(bm25 / known, 1.0) if known > 0 else np.zeros(n, dtype=np.float32)
            score = np.where(defined[:n], 0.5 * lexical + 0.5 * cos[:n], alone)
            score[~index.alive[:n]] = -1.0
            order = np.flatnonzero(score >= MIN_SCORE)
            limit = MAX_HITS if k is None else k
            picked: dict[str, tuple[float, _Meta]] = {}
            said: dict[int, str] = {}  # wording -> the id picked for it (the newest)
            for slot in order[np.argsort(-score[order], kind="stable")].tolist():
                eid = index.ids[slot]
                meta = self._meta.get(eid) if eid is not None else None
                if meta is None or meta.session == session or meta.person != person or not meta.told:
                    continue
                if _repeat(picked, said, str(eid), float(score[slot]), meta):
                    continue
                if len(picked) >= limit:
                    break
            for eid, (s, meta) in list(picked.items()):  # a later statement of the same thing outranks it
                if eid not in picked:
                    continue
                for later in self._restated(eid, meta, session, person, vector):
                    lm = self._meta[later]
                    if lm.wording == meta.wording:  # the same words again: one line (`_repeat`), not two
                        continue
                    if later not in picked or picked[later][0] <= s:
                        _repeat(picked, said, later, s + 1e-3, lm)
            ranked = sorted(picked.items(), key=lambda p: (-round(p[1][0], 6), -p[1][1].ts_ms, p[0]))[:limit]
            if not picked or self._db is None:
                return []
            texts = self._texts_locked([p[0] for p in ranked])
        return [AcrossHit(eid, m.session, m.seq, m.ts_ms, str(texts.get(eid, "")), s) for eid, (s, m) in ranked]

    def _restated(self, eid: str, meta: _Meta, session: str, person: str, query: DenseVector | None) -> list[str]:
        """Later inputs of `person` (outside `session`) that say the same thing as `eid` — their vectors at
        cosine >= :data:`RESTATED` — newest last. Called with the lock held."""
        if query is None:
            return []
        space = self._index.dense.get((query.fingerprint, query.dimension))
        slot = self._index.slot_of.get(eid)
        row = space.row_of_slot.get(slot) if space is not None and slot is not None else None
        if space is None or row is None:
            return []
        sims = np.einsum("ij,j->i", space.mat[: space.n], space.mat[row])
        out = []
        keyed_candidates: list[tuple[float, str]] = []
        for r in np.flatnonzero(sims >= KEYED_RESTATED).tolist():
            other_slot = int(space.slot_of_row[r])
            other = self._index.ids[other_slot] if other_slot >= 0 else None
            m = self._meta.get(other) if other is not None else None
            if m is None or other == eid or m.ts_ms <= meta.ts_ms or m.session == session or m.person != person:
                continue
            if not m.told:
                continue
            if sims[r] >= RESTATED:
                out.append(str(other))
            else:
                keyed_candidates.append((float(sims[r]), str(other)))
        out += self._keyed_corrections(eid, keyed_candidates)
        return sorted(out, key=lambda i: self._meta[i].ts_ms)

    def _texts_locked(self, ids: Sequence[str]) -> dict[str, str]:
        """The stored texts of `ids` (one padded ``IN`` list per chunk: storage/sqlmem.py). Lock held, file open."""
        assert self._db is not None
        out: dict[str, str] = {}
        for chunk in in_chunks(list(ids)):
            out.update(self._db.execute(f"SELECT id, text FROM said WHERE id IN ({marks(len(chunk))})", chunk))
        return out

    def _keyed_corrections(self, eid: str, candidates: list[tuple[float, str]]) -> list[str]:
        """Of `candidates` (later statements a little less close than :data:`RESTATED`), those the rules read
        as correcting what `eid` sets (memory/across/corrections.py: a key both share, a correction cue in the later
        one's sentence: "our flat is on Harrow Street" … "we moved house, the new address is …", cosine 0.35).
        The closest :data:`KEYED_CANDIDATES` are read, and only when `eid` sets something — a few 0.1 ms rule
        passes, on the texts read from the file. Called with the lock held."""
        if not candidates or self._db is None:
            return []
        from hologram.memory.across.corrections import is_correction, keyed

        keys, _ = keyed(str(self._texts_locked([eid]).get(eid, "")))
        if not keys:
            return []
        nearest = [i for _, i in sorted(candidates, reverse=True)[:KEYED_CANDIDATES]]
        later = self._texts_locked(nearest)
        cued = [i for i in nearest if is_correction(str(later.get(i, "")))]  # a regex; the rules only then
        return [i for i in cued if keys & keyed(str(later[i]))[1]]


def render(hits: Sequence[AcrossHit], budget_tokens: int) -> AcrossNote:
    """The note: a header and one line per hit — best first while they fit `budget_tokens`, then shown in time
    order (the later statement of a fact after the earlier one)."""
    if not hits or budget_tokens <= 0:
        return NONE
    used = estimate_tokens(HEADER) + 4
    kept: list[tuple[AcrossHit, str]] = []
    for h in hits:
        line = f"- ({_when(h.ts_ms)}, session {h.session}) “{_cut(h.text)}”"
        cost = estimate_tokens(line) + 1
        if used + cost > budget_tokens:
            continue
        used += cost
        kept.append((h, line))
    if not kept:
        return NONE
    kept.sort(key=lambda kl: (kl[0].ts_ms, kl[0].session, kl[0].seq))
    lines = [line for _, line in kept]
    for i in _superseded([h.text for h, _ in kept]):  # within the budget: a mark costs a few tokens
        cost = estimate_tokens(SUPERSEDED) + 1
        if used + cost <= budget_tokens:
            used += cost
            lines[i] = f"- {SUPERSEDED}{lines[i][1:]}"
    return AcrossNote([h for h, _ in kept], "\n".join([HEADER, *lines]), used)


def _superseded(texts: Sequence[str]) -> list[int]:
    """Which of `texts` (time order) a later one corrects, where the rules can tell (memory/across/corrections.py: a
    shared key, a correction cue in the later one's sentence)."""
    if len(texts) < 2:
        return []
    from hologram.memory.across.corrections import keyed

    read = [keyed(t) for t in texts]
    return [i for i, (keys, _) in enumerate(read) if keys and any(keys & later for _, later in read[i + 1 :])]


def _wording(text: str) -> int:
    """The words of a statement, case, spacing and punctuation aside, as a number: the same sentence said in
    several sessions ("I'm trying to drink more water.") is shown once, its newest time — else one often
    repeated line and its restatements (the same vector) filled all :data:`MAX_HITS` slots of a note
    (tools/bench/memory_cross.py: 3 of 6 lines one sentence for several English questions)."""
    return hash(" ".join(re.findall(r"\w+", text.casefold())))


def _repeat(picked: dict[str, tuple[float, _Meta]], said: dict[int, str], eid: str, score: float, meta: _Meta) -> bool:
    """Pick `eid` at `score` unless its wording is picked already; then the newer of the two stays, at the
    better score. True when it repeated a picked wording (the pick's count did not grow)."""
    first = said.get(meta.wording)
    if first is None or first == eid:
        said[meta.wording] = eid
        picked[eid] = (max(score, picked[eid][0]) if eid in picked else score, meta)
        return False
    best = max(score, picked[first][0])
    if meta.ts_ms > picked[first][1].ts_ms:
        del picked[first]
        said[meta.wording] = eid
        picked[eid] = (best, meta)
    else:
        picked[first] = (best, picked[first][1])
    return True


def _counts(raw: object) -> TermVector | None:
    """Stored term counts back as a vector (None when the row's JSON does not decode)."""
    try:
        counts = {str(k): int(v) for k, v in json.loads(str(raw)).items()}
    except (ValueError, TypeError, AttributeError):
        return None
    return TermVector(counts=counts, length=sum(counts.values()))


def _json(terms: TermVector) -> str:
    return json.dumps(terms.counts, ensure_ascii=False)


def _entry(eid: str, meta: _Meta, terms: TermVector, dense: DenseVector | None) -> IndexEntry:
    return IndexEntry(eid, meta.session, meta.ts_ms, f"{meta.session}:{meta.seq:012d}", terms, dense)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 600 else text[:599].rstrip() + "…"


def _when(ts_ms: int) -> str:
    if ts_ms <= 0:
        return "time unknown"
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _dense(fp: object, blob: object) -> DenseVector | None:
    if not isinstance(fp, str) or not isinstance(blob, bytes) or not blob or len(blob) % 2:
        return None
    return DenseVector(fp, np.frombuffer(blob, dtype=np.float16).astype(np.float32))
