"""``kernel.memory`` administration: per-layer counts, a search across every session and every layer, an
entity's neighbourhood in the L3 graph, distillation on demand and the scenes (the web UI's Memory tab,
``hologram memory``, ``admin/stats|search|graph|distill|scenes`` on the control socket; docs/protocol.md).

Why a corpus index of its own: a request ranks one session (`SessionMemory.prepare`), but this search asks
"where did I say that?" across all of them. Scores of separate per-session rankings are z-scores within each
session, so they do not compare; one `SessionIndex` over every session's events does, and it is the product's
own retrieval — the same records (`record_of`), the same BM25 + dense fusion and turn smoothing
(`SessionIndex.scores`, told where each session's turns end: another session's turn is no neighbour), the
same query building (`build_query`), the passage vectors the background indexer already stored in
``vectors.db`` (a passage without one scores by BM25 alone, as in a request). Nothing here
goes through `SessionMemory`'s per-session cache, so browsing memory never evicts a live chat's index.

The records are kept per session and only events appended since the last call are read and tokenised; the
corpus index is rebuilt only when some session changed. An event's layer is L3 when the graph holds it (its
blocks moved there: `GraphMemory.held`), else L2 when the cold store holds it, else L1 — spelled ``L1``,
``L2``, ``L3`` on every hit.

**Why a hit matched** (issue 39 item 6, ``search_match.py``): hits holding the query's rare-looking tokens
verbatim (codes like ``AZURE-17``, numbers with letters, names) come first — events that hold one but that
the ranking left out are found by a scan of the corpus's texts —, and every hit carries the passage around
its match with the matched spans (``passage``, ``marks``) and the tokens it holds (``matched``).

L3 and scenes are optional parts of `SessionMemory` (``memory.graph``, ``memory.scenes``): where one is None
(no graph opened, scenes off) its counts are 0 and its lists empty, never an error — the page and the CLI
show an empty graph, not a failure. The same class serves the running kernel and ``hologram memory``
offline (cli/memory_cmd.py opens the stores itself when no kernel runs), so the two never disagree.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hologram.memory.cold.blocks import EventRecord
from hologram.memory.embed.embedder import embed_async
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query
from hologram.memory.session_records import record_of, token_cost
from hologram.memory.text.bounds import MAX_INDEX_CHARS, not_indexed
from hologram.memory.text.search_match import matched, passage, query_words, salient
from hologram.rpc import APPLICATION_ERROR, INVALID_PARAMS, RpcError

if TYPE_CHECKING:
    from hologram.memory.graph.service import GraphMemory, L3Hit, SourcedTriple
    from hologram.memory.scenes.store import Scene, SceneStore
    from hologram.memory.session_memory import SessionMemory
    from hologram.sessions import Event

FACILITY = "kernel.memory"
TEXT_LIMIT = 500
MAX_LIMIT = 200
MAX_ENTITY = 200
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

    def _graph(self) -> GraphMemory | None:
        """`memory.graph`, or None when the kernel has no L3."""
        return self.memory.graph

    def _scenes(self) -> SceneStore | None:
        """`memory.scenes`, or None when scenes are off."""
        return self.memory.scenes

    def _held_by_graph(self, event_ids: list[str]) -> np.ndarray:
        graph = self._graph()
        if graph is None or not event_ids:
            return np.zeros(len(event_ids), dtype=bool)
        return np.asarray(graph.held(event_ids), dtype=bool)  # from cold.db: the graph stays closed

    async def stats(self) -> dict[str, Any]:
        async with self._lock:
            ids = await self._read()
        cold = self.memory.cold
        events = [record.id for sid in ids for _, record in self._sessions[sid].events]
        held = self._held_by_graph(events)
        l3_events = int(held.sum())
        l2 = sum(
            1 for event_id, in_graph in zip(events, held.tolist(), strict=True) if not in_graph and event_id in cold
        )
        counts = None
        graph = self._graph()
        if graph is not None:
            counts = graph.counts()  # as of the last open or move; None: not opened yet
            if counts is None and graph.exists() and await graph.store() is not None:
                counts = graph.counts()  # an inspection opens a graph that exists (never creates one)
        scenes = self._scenes()
        return {
            "sessions": len(ids),
            "l1": len(events) - l2 - l3_events,
            "l2": l2,
            "l3_events": l3_events,
            "l3_triples": int(counts.triples) if counts is not None else 0,
            "l3_blocks": int(counts.blocks) if counts is not None else 0,
            "l3_entities": int(counts.entities) if counts is not None else 0,
            "scenes": int(scenes.count()) if scenes is not None else 0,
            "l3_problem": graph.problem if graph is not None else None,
        }

    async def search(self, text: Any = None, limit: Any = 20) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            raise RpcError(INVALID_PARAMS, "text: give the words to search for")
        _check_int("limit", limit, 1, MAX_LIMIT)
        tokens, words = salient(text), query_words(text)
        events = await self._search_events(text, limit, tokens, words)
        graph = self._graph()
        l3: list[dict[str, Any]] = []
        if graph is not None:
            found = await graph.search(text, limit=limit)
            seen = {h["event_id"] for h in events}
            l3 = [_l3_hit(h, tokens, words) for h in found if h.kind == "triple" or h.event not in seen]
        hits = _interleave(events, l3, len(events) + len(l3))
        hits.sort(key=lambda h: -len(h["matched"]))  # stable: verbatim matches of rare tokens first (docstring)
        return {"hits": hits[:limit]}

    async def _search_events(
        self, text: str, limit: int, tokens: list[str] | None = None, words: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The session events that match, best first: the corpus index over every session's log."""
        async with self._lock:
            corpus = await self._corpus_now()
        index = corpus.index
        if len(index) == 0:
            return []
        embedder = self.memory.embedder
        vector = fingerprint = None
        if embedder is not None:
            vector, fingerprint = (await embed_async(embedder, [text]))[0], embedder.fingerprint
        query = build_query(index, text, now=time.time(), vector=vector, fingerprint=fingerprint)
        scores = index.scores(query, segment=corpus.segment)
        order = np.flatnonzero(scores > 0)  # above the corpus mean: an event that matches, not the least bad
        order = order[np.lexsort((-order, -scores[order]))][:limit]
        tokens = salient(text) if tokens is None else tokens
        words = query_words(text) if words is None else words
        if tokens:  # the events holding a rare token verbatim, wherever the ranking put them (a scan)
            found = await asyncio.to_thread(_holding, corpus, tokens)
            extra = [i for i in found if i not in set(order.tolist())]
            extra.sort(key=lambda i: (-len(matched(corpus.where[i][2].text, tokens)), -scores[i], -i))
            order = np.concatenate([order, np.asarray(extra[:limit], dtype=np.int64)])
        cold = self.memory.cold
        chosen = [corpus.where[i] for i in order.tolist()]
        held = self._held_by_graph([record.id for _, _, record in chosen]).tolist()
        hits = []
        for i, (sid, event, record), in_graph in zip(order.tolist(), chosen, held, strict=True):
            shown = passage(record.text, tokens, words)
            hit = {
                "layer": "L3" if in_graph else "L2" if record.id in cold else "L1",
                "session": sid,
                "event_id": record.id,
                "kind": event.kind,
                "ts_ms": int(event.ts * 1000),
                "text": record.text[:TEXT_LIMIT],
                "passage": shown.text,
                "marks": [list(m) for m in shown.marks],
                "matched": matched(record.text, tokens),
                "score": round(float(scores[i]), 4),
            }
            if not_indexed(record.text):  # only its start is searchable (bounds.py): say so on the hit
                hit.update(chars=len(record.text), indexed_chars=MAX_INDEX_CHARS)
            hits.append(hit)
        return hits

    async def graph(self, entity: Any = None, hops: Any = 1, limit: Any = 50) -> dict[str, Any]:
        """An entity's neighbourhood in L3: the triples touching it (and, with 2 hops, its neighbours), each
        with the block it was read from — what `hologram memory graph` and the page's entity box show."""
        if not isinstance(entity, str) or not entity.strip():
            raise RpcError(INVALID_PARAMS, "entity: give an entity's name (a subject or value of a triple)")
        if len(entity) > MAX_ENTITY:
            raise RpcError(INVALID_PARAMS, f"entity: at most {MAX_ENTITY} characters")
        _check_int("hops", hops, 1, 2)
        _check_int("limit", limit, 1, MAX_LIMIT)
        entity = entity.strip()
        graph = self._graph()
        sourced = [] if graph is None else await graph.neighbourhood(entity, hops=hops, limit=limit)
        if graph is not None and graph.problem:  # an empty table would say "nothing known", which is not so
            raise RpcError(APPLICATION_ERROR, f"the memory graph (L3) is unavailable: {graph.problem}")
        return {"entity": entity, "triples": [_sourced_triple(s) for s in sourced]}

    async def distill(self, idle_hours: Any = None, max_accesses: Any = None) -> dict[str, Any]:
        """One cooling run now (``[memory.cooling]``'s thresholds unless given): L2 events idle and rarely
        recalled move into L3. Without a graph nothing is eligible (zeros, not an error)."""
        if idle_hours is not None and (
            isinstance(idle_hours, bool) or not isinstance(idle_hours, int | float) or not idle_hours >= 0
        ):
            raise RpcError(INVALID_PARAMS, "idle_hours: a number of hours >= 0 (0: every event in L2 is idle)")
        if max_accesses is not None:
            _check_int("max_accesses", max_accesses, 0, 1_000_000)
        graph = self._graph()
        if graph is None:
            return {"eligible": 0, "moved": 0, "triples": 0, "held_back": 0, "failed": 0, "reconciled": 0,
                    "failures": [], "extractor": "", "fallbacks": {}}  # fmt: skip
        try:
            report = await graph.distill(idle_hours=idle_hours, max_accesses=max_accesses)
        except RuntimeError as exc:  # the graph could not be opened (GraphMemory.problem): nothing moved
            raise RpcError(APPLICATION_ERROR, f"distillation did not run: {exc}") from None
        return {
            "eligible": int(report.eligible),
            "moved": len(report.moved),
            "triples": int(report.triples),
            "held_back": len(report.held_back),
            "failed": len(report.failed),
            "reconciled": len(report.reconciled),
            "failures": [{"event": event, "why": why} for event, why in report.failed],
            "extractor": report.extractor,
            "fallbacks": dict(report.fallbacks),
        }

    async def scenes(self) -> dict[str, Any]:
        """The scenes memory has learnt (or declared), strongest first."""
        store = self._scenes()
        if store is None:
            return {"scenes": []}
        return {"scenes": [_scene(s) for s in store.list()]}  # strongest first


def _check_int(name: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RpcError(INVALID_PARAMS, f"{name}: a whole number from {low} to {high}, not {value!r:.40}")


def _holding(corpus: _Corpus, tokens: list[str]) -> list[int]:
    """Positions of the corpus's events whose text holds one of `tokens` verbatim (case-folded)."""
    keys = [t.casefold() for t in tokens]
    return [
        i
        for i, (_, _, record) in enumerate(corpus.where)
        if any(k in record.text.casefold() for k in keys) and matched(record.text, tokens)
    ]


def _l3_hit(hit: L3Hit, tokens: list[str] | None = None, words: list[str] | None = None) -> dict[str, Any]:
    """An `L3Hit` as ``search`` answers it (docs/protocol.md): a triple's passage is of its source text."""
    tokens, words = tokens or [], words or []
    full = hit.source_text if hit.kind == "triple" and hit.source_text else hit.text
    shown = passage(full, tokens, words)
    return {
        "passage": shown.text,
        "marks": [list(m) for m in shown.marks],
        "matched": matched(f"{hit.text}\n{hit.source_text}", tokens),
        "layer": "L3",
        "kind": hit.kind,
        "session": hit.session,
        "event": hit.event,
        "event_id": hit.event,
        "ts_ms": int(hit.ts_ms),
        "text": str(hit.text)[:TEXT_LIMIT],
        "source_text": str(hit.source_text)[:TEXT_LIMIT],
        "score": round(float(hit.score), 4),
    }


def _interleave(events: list[dict[str, Any]], graph: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Event hits and L3 hits alternately, each list in its own order: their scores come from two rankings
    (the corpus index, the graph's) that do not compare, so neither list may crowd the other out."""
    out: list[dict[str, Any]] = []
    for pair in itertools.zip_longest(events, graph):
        out.extend(h for h in pair if h is not None)
    return out[:limit]


def _sourced_triple(sourced: SourcedTriple) -> dict[str, Any]:
    """A `SourcedTriple` as ``graph`` answers it (docs/protocol.md)."""
    t = sourced.triple
    return {
        "subject": t.subject,
        "predicate": t.predicate,
        "value": t.value,
        "confidence": round(float(t.confidence), 4),
        "valid_at": t.valid_at,
        "invalid_at": t.invalid_at,
        "source": {
            "event": t.source_event,
            "block": t.source_block,
            "session": sourced.session,
            "ts_ms": int(sourced.ts_ms),
            "text": str(sourced.source_text)[:TEXT_LIMIT],
        },
    }


def _scene(scene: Scene) -> dict[str, Any]:
    """A `Scene` as ``scenes`` answers it (docs/protocol.md; its own JSON form, memory/scenes/store.py)."""
    return dict(scene.to_json())
