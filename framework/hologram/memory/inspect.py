"""``kernel.memory`` administration: per-layer counts and a search across every session (the web UI's Memory
tab, ``admin/stats`` and ``admin/search`` on the control socket).

Why a corpus index of its own: a request ranks one session (`SessionMemory.prepare`), but this search asks
"where did I say that?" across all of them. Scores of separate per-session rankings are z-scores within each
session, so they do not compare; one `SessionIndex` over every session's events does, and it is the product's
own retrieval — the same records (`record_of`), the same BM25 + dense fusion and turn smoothing
(`SessionIndex.scores`, told where each session's turns end: another session's turn is no neighbour), the
same query building (`build_query`), the passage vectors the background indexer already stored in
``vectors.db`` (a passage without one scores by BM25 alone, as in a request). Nothing here
goes through `SessionMemory`'s per-session cache, so browsing memory never evicts a live chat's index.

The records are kept per session and only events appended since the last call are read and tokenised; the
corpus index is rebuilt only when some session changed. An event's layer is L2 when the cold store holds it,
else L1. L3 (triples, scenes) lands with its own issue: its counts are None until then.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hologram.memory.blocks import EventRecord
from hologram.memory.embed import embed_async
from hologram.memory.query import build_query
from hologram.memory.session_index import SessionIndex
from hologram.memory.session_records import record_of, token_cost
from hologram.rpc import INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hologram.memory.session_memory import SessionMemory
    from hologram.sessions import Event

FACILITY = "kernel.memory"
TEXT_LIMIT = 500
MAX_LIMIT = 200
_BUILD_IN_THREAD = 64


def _records_of(events: list[Event]) -> list[EventRecord | None]:
    return [record_of(e) for e in events]


def _build(
    signature: tuple[tuple[str, int], ...], sessions: list[tuple[str, list[tuple[Event, EventRecord]]]]
) -> _Corpus:
    """One index over every session's events, sessions one after another (each starts with its first turn)."""
    index = SessionIndex()
    where: list[tuple[str, Event, EventRecord]] = []
    numbers: list[int] = []
    for number, (sid, events) in enumerate(sessions):
        for event, record in events:
            group = None if record.group is None else f"{sid}\x00{record.group}"  # units never span sessions
            index.add(
                event.seq, record.id, event.kind, record.text, token_cost(record),
                group=group, ts=event.ts, terms=record.terms,
            )  # fmt: skip
            where.append((sid, event, record))
            numbers.append(number)
    return _Corpus(signature, index, where, np.array(numbers, dtype=np.int64))


@dataclass
class _SessionRecords:
    last_seq: int = 0
    count: int = 0  # the session's events as `list_sessions` counted them when last read
    events: list[tuple[Event, EventRecord]] = field(default_factory=list)


@dataclass
class _Corpus:
    signature: tuple[tuple[str, int], ...]
    index: SessionIndex
    where: list[tuple[str, Event, EventRecord]]  # index position -> (session, event, record)
    segment: np.ndarray  # index position -> the session's number: turns of two sessions are no neighbours


class MemoryInspector:
    """Counts and cross-session search over one kernel's `SessionMemory` (module docstring)."""

    def __init__(self, memory: SessionMemory) -> None:
        self.memory = memory
        self._sessions: dict[str, _SessionRecords] = {}
        self._corpus: _Corpus | None = None
        self._lock = asyncio.Lock()

    async def _read(self) -> list[str]:
        """Bring every session's records up to date; the session ids, oldest first (a stable corpus order)."""
        store = self.memory.store
        listed = sorted(store.list_sessions(), key=lambda s: (s["created"], s["id"]))
        ids = [str(s["id"]) for s in listed]
        for gone in set(self._sessions) - set(ids):
            del self._sessions[gone]
        fresh: list[tuple[_SessionRecords, list[Event]]] = []
        for sid, listing in zip(ids, listed, strict=True):
            known = self._sessions.setdefault(sid, _SessionRecords())
            count = int(listing.get("events") or 0)
            if count == known.count:  # one query for all sessions; only those that grew are read
                continue
            known.count = count
            new = store.events(sid, after=known.last_seq)
            if new:
                fresh.append((known, new))
                known.last_seq = new[-1].seq
        everything = [e for _, new in fresh for e in new]
        if len(everything) >= _BUILD_IN_THREAD:  # tokenising thousands of events must not stall the loop
            records = await asyncio.to_thread(_records_of, everything)
        else:
            records = _records_of(everything)
        at = 0
        for known, new in fresh:
            part = records[at : at + len(new)]
            at += len(new)
            known.events.extend((e, r) for e, r in zip(new, part, strict=True) if r is not None)
        return ids

    async def _corpus_now(self) -> _Corpus:
        ids = await self._read()
        signature = tuple((sid, self._sessions[sid].last_seq) for sid in ids)
        corpus = self._corpus
        if corpus is not None and corpus.signature == signature:
            await self._attach_vectors(corpus.index)  # those the background indexer stored since
            return corpus
        sessions = [(sid, list(self._sessions[sid].events)) for sid in ids]
        corpus = await asyncio.to_thread(_build, signature, sessions)  # ~0.1 ms an event: off the loop
        await self._attach_vectors(corpus.index)
        self._corpus = corpus
        return corpus

    async def _attach_vectors(self, index: SessionIndex) -> None:
        """The passage vectors the background indexer stored (``vectors.db``) for the model loaded now, for
        the passages that have none yet (the model may have loaded, or the indexer caught up, since)."""
        memory = self.memory
        embedder, cache = memory.embedder, memory.vectors
        if embedder is None or cache is None or index.passages == 0:
            return
        fingerprint = embedder.fingerprint
        same_model = index.fingerprint in (None, fingerprint)
        missing = [p for p in range(index.passages) if not same_model or index.passage_vector(p) is None]
        if not missing:
            return
        keys = {p: index.passage_key(p) for p in missing}
        stored = await asyncio.to_thread(cache.get, fingerprint, list(keys.values()))
        rows = [p for p in missing if keys[p] in stored]
        if rows:
            index.set_vectors(fingerprint, rows, np.stack([stored[keys[p]] for p in rows]))

    async def stats(self) -> dict[str, Any]:
        async with self._lock:
            ids = await self._read()
        cold = self.memory.cold
        l2 = sum(1 for sid in ids for _, record in self._sessions[sid].events if record.id in cold)
        l1 = sum(len(self._sessions[sid].events) for sid in ids) - l2
        return {"sessions": len(ids), "l1": l1, "l2": l2, "l3_triples": None, "scenes": None}

    async def search(self, text: Any = None, limit: Any = 20) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            raise RpcError(INVALID_PARAMS, "text: give the words to search for")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise RpcError(INVALID_PARAMS, f"limit: a whole number from 1 to {MAX_LIMIT}")
        async with self._lock:
            corpus = await self._corpus_now()
        index = corpus.index
        if len(index) == 0:
            return {"hits": []}
        embedder = self.memory.embedder
        vector = fingerprint = None
        if embedder is not None:
            vector, fingerprint = (await embed_async(embedder, [text]))[0], embedder.fingerprint
        query = build_query(index, text, now=time.time(), vector=vector, fingerprint=fingerprint)
        scores = index.scores(query, segment=corpus.segment)
        order = np.flatnonzero(scores > 0)  # above the corpus mean: an event that matches, not the least bad
        order = order[np.lexsort((-order, -scores[order]))][:limit]
        cold = self.memory.cold
        hits = []
        for i in order.tolist():
            sid, event, record = corpus.where[i]
            hits.append(
                {
                    "layer": "l2" if record.id in cold else "l1",
                    "session": sid,
                    "event_id": record.id,
                    "kind": event.kind,
                    "text": record.text[:TEXT_LIMIT],
                    "score": round(float(scores[i]), 4),
                }
            )
        return {"hits": hits}
