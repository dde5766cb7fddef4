"""The bridge between the session log and the memory tiers: what of a session the model sees, what is held
in cold context (L2), and the ``coldcontext_query`` kernel tool.

The session database keeps every event forever: it is the durable log. The tiers are *derived* from it:

* **L2** = the session's events held by the :class:`~hologram.memory.cold.store.ColdStore` (keyed by the stable
  event id of :func:`~hologram.memory.cold.blocks.build_event`, origin ``"<session>:<seq>"``);
* **L3** = the session's events cooled into the memory graph (recorded in ``cold.db`` by the move:
  :mod:`hologram.memory.graph.service`) — neither L1 nor L2: never in a history again, never put back in L2;
* **L1** = the session's events minus those in L2 and L3, in log order.

**One ranking over L1 ∪ L2** (issue 11): before every LLM request, the session's events are scored against the
turn's query by one scorer (:mod:`hologram.memory.index.session_index`, queries from
:mod:`hologram.memory.rank.query`) and the best are fitted to the one history budget (pinned recent events, whole
call groups, time order). Scored once a turn, fitted once a request: a tool loop's later requests fit the scores of
the turn's first, extended by the events the loop appended (:mod:`hologram.memory.turn_ranking`). Then:

* an L1 event that lost moves to L2 — one durable ``ColdStore.put`` (nothing to delete on the L1 side, so a
  crash cannot lose or duplicate anything);
* an L2 event that won is sent at its time position, with its call group, and stays held by L2; it counts
  one access (``ColdStore.touch``) once per session — its last access time every turn —, so cooling sees
  that it is still used without a count that would keep it out of L3 forever. L2 events compete
  only when they clearly match (fused score at least one standard deviation above the session's mean,
  :data:`~hologram.memory.cold.recall.AUTO_RECALL_MIN_SCORE`): spare budget is not filled with old events that
  merely rank above other irrelevant ones — that would count them as used, and nothing would ever cool;
* an L3 event that clearly matches competes the same way and, when it wins, is sent in the note — its
  triples with their source, or its text — and the entities the input names bring their triples from
  every session within ``[memory.graph] recall_share`` of the budget (:mod:`hologram.memory.graph.recall`);
* the model is told in one line what came back and what moved.

So what was pruned long ago comes back when a later input needs it, with no tool call by the model.
``coldcontext_query`` stays for explicit searches (by text, time range, tool): it uses the same index and
*moves* what it finds back to L1 (protected from pruning until the next input).

Each session event becomes one memory event: ``input`` (the user's text), ``response`` (reasoning, content,
tool calls: reasoning counts toward tokens and vectors), ``tool_result``. A response with tool calls and its
results share a group (``call:<response seq>``) and move together. Other kinds (``output``...) produce no
message and never move.

Dense vectors are computed off the event loop by :meth:`SessionMemory.index` (scheduled after every prepare),
once the embedder has loaded in its background thread; until a passage has its vector it is scored by BM25
alone, so nothing on a turn's path waits for the model — except the query's own embedding, one short text.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import re
import shutil
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from hologram.base import _heap
from hologram.llm import Message
from hologram.memory.across.aliases import expansion
from hologram.memory.across.corrections import Corrections
from hologram.memory.across.dated import dated, markup_tokens
from hologram.memory.across.store import ACROSS_DB, OWNER, AcrossHit, AcrossStore, Said, person_of
from hologram.memory.across.store import SHARE as ACROSS_SHARE
from hologram.memory.across.store import render as render_across
from hologram.memory.cold.blocks import EventRecord
from hologram.memory.cold.overflow import NOTE_ITEMS, OverflowGuard, history_budget
from hologram.memory.cold.recall import (
    AUTO_RECALL_MIN_SCORE,
    COLDCONTEXT_QUERY_DESCRIPTION,
    COLDCONTEXT_QUERY_NAME,
    COLDCONTEXT_QUERY_PARAMETERS,
    RecallError,
    RecallResult,
    Reinsert,
    recall,
)
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.embedder import Embedder, embed_async, load_embedder, load_or_next, preference
from hologram.memory.embed.vector_cache import VECTORS_DB, VectorCache
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.graph.recall import EMPTY as L3_NONE
from hologram.memory.graph.recall import (
    MEMORY_RECALL_BUDGET,
    MEMORY_RECALL_DESCRIPTION,
    MEMORY_RECALL_NAME,
    MEMORY_RECALL_PARAMETERS,
    L3Hit,
    L3Recall,
    rank,
    render,
)
from hologram.memory.index.idhash import HashSet
from hologram.memory.index.index_segment import SegmentError
from hologram.memory.index.session_index import (
    DENSE_HORIZON,
    SEAL_EVENTS,
    WINDOW_BYTES,
    IndexQuery,
    SessionIndex,
)
from hologram.memory.index.view import RequestView
from hologram.memory.index.window import SCORE_WINDOW, old_candidates
from hologram.memory.joined import SEPARATOR_TOKENS, join_older
from hologram.memory.layers import IN_L2, IN_L3, Layers, count_of, positions_of
from hologram.memory.rank.fit import fit_messages
from hologram.memory.rank.prune import DEFAULT_PINNED
from hologram.memory.rank.query import build_query
from hologram.memory.rank.reformulate import blend, topic_of
from hologram.memory.rank.second_hop import second_hop
from hologram.memory.session_records import (
    MESSAGE_OVERHEAD,
    Prepared,
    memory_note,
    record_of,
    token_cost,
)
from hologram.memory.text.bounds import MAX_EMBEDDED_PASSAGES, MAX_INDEX_CHARS, not_indexed
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokenizer import warm_up
from hologram.memory.text.utterance import speaks_of_self
from hologram.memory.turn_ranking import TurnRanking
from hologram.sessions import Event, SessionLog, SessionStore
from hologram.sessions.log import LOG_CACHE_BYTES
from hologram.tools.kernel_tool import KernelTool

if TYPE_CHECKING:
    from hologram.memory.graph.service import GraphMemory
    from hologram.memory.scenes.scene_hint import SceneHint
    from hologram.memory.scenes.store import SceneStore

__all__ = ["COLD_DB", "MESSAGE_OVERHEAD", "Prepared", "SessionMemory", "record_of"]

log = logging.getLogger("hologram.memory")
_T = TypeVar("_T")

COLD_DB = "cold.db"
#: Where the sessions' index segments live, one directory per session (derived data: rebuilt from the log).
INDEX_DIR = "index"
_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
#: Records to build before it is worth a worker thread (tokenising ~1,000 events costs tens of ms).
_BUILD_IN_THREAD = 64
_INDEX_BATCH = 64
#: A recovery cuts L1 to at most this share of what it held, so a provider's context error always makes
#: progress even when our estimate said the history already fit.
_RECOVERY_SHRINK = 0.75
#: Sessions whose index stays in memory (least recently used beyond this are forgotten and rebuilt on use).
MAX_SESSIONS = 32
#: Seconds a session may stay idle (its last turn ended, none started since) before what memory holds of it is
#: released (``[memory] release_idle_s``): its index's tail, its tail's events and records, and the log's decoded
#: events. They were allocated all through the turn, between its ~24k short-lived objects, and kept they pin
#: the allocator's arenas the turn otherwise freed: after 28 long turns (tools/bench/http_turns.py --long) the
#: idle kernel held +47 MB of PSS, ~10 MB of it Python objects that were live (issue 41). Released, the session's
#: next turn reads its tail back (sealed segments from disk, the tail re-tokenised, vectors from vectors.db).
RELEASE_IDLE_S = 2.0
#: A session whose turn made at least this many LLM requests is released as that turn ends, not
#: `RELEASE_IDLE_S` later: a long tool loop (the long-turn bench's turn makes 41 requests; a chat's turn one to
#: three). What such a turn leaves held (its decoded events, its index tail, ~15k objects) was otherwise alive
#: through the next session's first seconds. Measured (issue 41, docs/memory.md "ovl41"; http_turns.py --long on
#: a shared host): the kernel's idle level unchanged, its peak anonymous memory 116.6 MB on average with the
#: timer and 108.3 MB released at the end, the ranges overlapping. A short turn's session keeps its timer, so
#: chats taking turns (the soak's four sessions) are not read back at every turn. The price: a long turn's
#: session continued within `RELEASE_IDLE_S` reads its tail back (~30-300 ms on its next turn's first request).
RELEASE_AT_END_REQUESTS = 8
#: Query vectors remembered by text: a turn's input is embedded once for its first request and reused for the
#: turn's later requests and when the input event itself is indexed.
_QUERY_VECTORS = 64
#: Records of sealed events kept after they were read back (recalled events tend to be recalled again).
_OLD_RECORDS = 256
#: Sealed events kept after they were read back (a request's history reaches back past the tail), all sessions
#: together. 1,024, not 256: a soak request sends ~100 recalled sealed events, so four sessions in turn evicted
#: each other's and every turn read its recalled events back from ``sessions.db`` (issue 39 item 7; flat10 in
#: docs/memory.md: rows read back a turn 87 → 52 at 874 events a session and 138 → 7 at 4,124; the memory step's
#: CPU a turn at 7,874 events 14.11 → 13.16 ms). An event is held as its row's bytes (~0.2-0.6 KB): ~0.3 MB more
#: at most, a level reached in the first turns that recall sealed events.
_OLD_EVENTS = 1024
#: A recalled event whose access this session wrote less than this long ago (seconds) is not written again: the
#: same L2 events win a session's turns one after another, and each turn's ``ColdStore.touch`` rewrote their rows —
#: pages spread over all of ``cold.db``, so a commit's cost grew with L2 (issue 39 item 7: the soak's worker
#: threads' ``touch`` 154 -> 271 samples between turns 1,000 and 9,000). What reads the time is cooling's idle
#: test (``DISTILL_IDLE_SECONDS``, 72 h): a time at most this much older changes nothing there.
TOUCH_AGAIN_S = 600.0
#: Recalled events per session whose last written access time is remembered (the most recent): about two turns'
#: recalled events of the soak (~117 bytes an entry; 1,024 filled to ~0.5 MB over the soak's four sessions, a
#: level reached only after thousands of turns — tracemalloc in an in-process run of its feed).
_TOUCHED_KEPT = 256
#: Statements of other sessions without a vector that a request embeds itself before it searches them (more are
#: left to the background indexing: a backfill of thousands must not stall a request).
ACROSS_EMBED_NOW = 16
#: Passages of other sessions that ``memory_recall`` adds when their words match (a scan of L3's blocks).
MEMORY_RECALL_SEARCH = 10


def _say_if_bounded(event: Event, text: str, passages: int) -> None:
    """One log line for an event memory indexes only in part (bounds.py), when it is added to its session's
    index: once per event (a kernel indexes an event once; after a restart only the unsealed tail again)."""
    cut = not_indexed(text)
    if not cut and passages <= MAX_EMBEDDED_PASSAGES:
        return
    where = f"event {event.seq} ({event.kind}) of session {event.session}"
    if cut:
        log.info("%s is %d characters: the first %d are searchable, the other %d are stored but not "
                 "indexed (%d passages, %d with a vector)", where, len(text), MAX_INDEX_CHARS, cut, passages,
                 min(passages, MAX_EMBEDDED_PASSAGES))  # fmt: skip
    else:
        log.info("%s has %d passages: the first %d get a vector, the rest are searched by their words "
                 "only", where, passages, MAX_EMBEDDED_PASSAGES)  # fmt: skip


@dataclass
class _Session:
    """Per-session state: the index (sealed segments on disk + an in-memory tail), the tail's events and
    records, recall bookkeeping. Nothing here grows with the session beyond the tail (issue 22), except
    :attr:`layers`: one byte an event, for at most :data:`MAX_SESSIONS` sessions."""

    index: SessionIndex = field(default_factory=SessionIndex)
    tail: list[Event] = field(default_factory=list)
    """The events behind the index's tail positions (``index.sealed`` on), in log order."""
    seen: int = 0
    """The highest seq read from the log (records or not)."""
    last_input: int = -1
    """The seq of the last indexed input (-1: none yet)."""
    inputs: list[int] = field(default_factory=list)
    """Index positions of the last two inputs (kept as they are indexed: a request must not scan the log)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    protected: set[str] = field(default_factory=set)
    """Event ids an explicit ``coldcontext_query`` brought back: kept unscored until the next user input (else
    the next prune, against the same input that pruned them, would send them straight back)."""
    protected_since: int = -1
    """The seq of the last input when `protected` was set."""
    touched_since: int = -1
    """The seq of the input whose turn last counted accesses (an access is counted once per turn)."""
    touched: set[str] = field(default_factory=set)
    touched_at: OrderedDict[str, float] = field(default_factory=OrderedDict)
    """When this session last wrote each recently recalled event's access (:data:`TOUCH_AGAIN_S`; bounded)."""
    index_task: asyncio.Task[int] | None = None
    layers: Layers = field(default_factory=Layers)
    """Which layer holds each indexed event, as the last request found it (one byte an event)."""
    corrections: Corrections = field(default_factory=Corrections)
    """Which of the session's statements a later one corrects (memory/across/corrections.py): found as inputs are
    indexed, read by a request's ranking."""
    turn_ranking: TurnRanking | None = None
    """What the running turn's latest ranked request scored, for its later requests (memory/turn_ranking.py)."""


class SessionMemory:
    """L1/L2 of every session of one data directory (module docstring). Use from the kernel's event loop."""

    def __init__(
        self,
        store: SessionStore,
        cold: ColdStore,
        embedder: Embedder | None = None,
        *,
        pinned_recent: int = DEFAULT_PINNED,
        vectors: VectorCache | None = None,
        max_sessions: int = MAX_SESSIONS,
        log: SessionLog | None = None,
        index_dir: Path | None = None,
        seal_events: int = SEAL_EVENTS,
        window_bytes: int = WINDOW_BYTES,
        release_idle_s: float | None = RELEASE_IDLE_S,
        log_cache_bytes: int = LOG_CACHE_BYTES,
    ) -> None:
        self.store = store
        self.log = log if log is not None else SessionLog(store, log_cache_bytes)
        """The session log as read so far, shared with the request builder (`Agent` takes it from here)."""
        self.release_idle_s = release_idle_s
        """Seconds after a turn's end before an idle session's state is released (None: kept, up to the bounds)."""
        self.released = 0
        """Idle sessions released (what tests wait for)."""
        self._running: dict[str, int] = {}
        """Turns running per session (`turn_started`, `turn_ended`): a session with one is never released."""
        self._ended: dict[str, int] = {}
        """Turns ended per session with a release still planned: only the latest one's release may run."""
        self.release_at_end_requests = RELEASE_AT_END_REQUESTS
        """A turn that made at least this many requests has its session released as it ends (`turn_ended`)."""
        self._turn_requests: dict[str, int] = {}
        """Requests (`prepare`) made so far by each session's running turns."""
        self.cold = cold
        self.vectors = vectors
        """Passage vectors on disk (None: recomputed after every start)."""
        self.embedder = embedder
        """None until (unless) a model is loaded: scoring is then BM25 only."""
        self.pinned_recent = pinned_recent
        self.embedder_ready = threading.Event()
        if embedder is not None:
            self.embedder_ready.set()
        self.max_sessions = max_sessions
        self.index_dir = index_dir
        """Where each session's index segments live (``<data>/index/<session>``; None: all in memory)."""
        self.dense_horizon = DENSE_HORIZON
        """A request's dense product covers the newest this many events of a session and, before them, the
        passages that best match its words (session_index.DENSE_HORIZON)."""
        self.score_window = SCORE_WINDOW
        """A request's BM25 reads every posting of the newest this many events; older passages only through the
        query's rare words (memory/index/window.py)."""
        self.seal_events = seal_events
        self.window_bytes = window_bytes
        """What one session's in-memory index tail may weigh before it is sealed to disk (``[memory]
        index_window_bytes``; session_index.WINDOW_BYTES)."""
        self.graph: GraphMemory | None = None
        """L3 (set by the kernel's wiring, agent/attach.py): recall from the memory graph joins every request's
        note. None: no L3 recall (events L3 already holds still stay out of L1 and L2: ``cold.db`` says which)."""
        self.across: AcrossStore | None = None
        """Every session's inputs, for the requests of the same person's other sessions (memory/across/store.py;
        `open` sets it, ``[memory.across] recall = false`` unsets it; None: no memory across sessions but L3's)."""
        self.scenes: SceneStore | None = None
        """The scene store (``scenes.db``; attach.py opens it): the turn asks it which scene it is in."""
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._last_used: str | None = None
        self._query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._old_records: OrderedDict[tuple[str, int], EventRecord] = OrderedDict()
        self._old_events: OrderedDict[tuple[str, int], Event] = OrderedDict()
        """Sealed events read back recently (bounded): the history a request sends reaches back past the tail,
        and the same events are sent again by the next request."""
        """Records of sealed events read back recently (by session and position; bounded): an L2 event
        that keeps winning is not re-tokenised on every request."""

    @classmethod
    def open(
        cls,
        data_dir: Path,
        store: SessionStore,
        *,
        load_model: bool = True,
        embedder_loader: Callable[[], Embedder | None] | None = None,
        embedder: str | None = None,
        release_idle_s: float | None = RELEASE_IDLE_S,
        log_cache_bytes: int = LOG_CACHE_BYTES,
        window_bytes: int = WINDOW_BYTES,
    ) -> SessionMemory:
        """Open ``data_dir/cold.db`` and ``vectors.db``, start the Chinese segmenter's warm-up and (unless
        `load_model` is False) load the embedder in a background thread: until it is ready, scoring is BM25
        only, never a wait. `embedder_loader`: where the model comes from when someone else loads it
        (`hologram up` starts the loads before the kernel: hologram/kernel/preload.py); it may block. Else
        `embedder` names the build to try first (``[memory] embedder``; None: the factory's order)."""
        memory = cls(
            store, ColdStore(Path(data_dir) / COLD_DB), vectors=VectorCache(Path(data_dir) / VECTORS_DB),
            index_dir=Path(data_dir) / INDEX_DIR, release_idle_s=release_idle_s, log_cache_bytes=log_cache_bytes,
            window_bytes=window_bytes,
        )  # fmt: skip
        memory.across = AcrossStore(Path(data_dir) / ACROSS_DB)
        # what earlier sessions said, once per across.db (an upgraded data directory, a damaged file set aside)
        target = functools.partial(_backfill_across, memory.across, Path(store.path))
        threading.Thread(target=target, name="hologram-across-backfill", daemon=True).start()
        warm_up()
        if load_model:
            loader = embedder_loader or functools.partial(_load_and_build, embedder)
            target = functools.partial(memory._load_embedder, loader)
            threading.Thread(target=target, name="hologram-embedder", daemon=True).start()
        else:
            memory.embedder_ready.set()
        return memory

    def _load_embedder(self, loader: Callable[[], Embedder | None]) -> None:
        try:
            self.embedder = loader()
        except Exception:  # a broken model must not take memory down: BM25 still works
            log.exception("loading the embedding model failed; memory scores by BM25 only")
        finally:
            self.embedder_ready.set()

    async def aclose(self) -> None:
        """Stop background indexing and close the cold store (the session store is the caller's)."""
        loop = asyncio.get_running_loop()
        tasks = [
            t
            for s in self._sessions.values()
            if (t := s.index_task) is not None and not t.done() and t.get_loop() is loop
        ]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.cold.close()
        if self.vectors is not None:
            self.vectors.close()
        if self.across is not None:
            self.across.close()

    def status(self) -> dict[str, Any]:
        """The ``memory`` section of ``hologram status``: what L2 holds and what is indexed in memory."""
        embedder = self.embedder
        graph = self.graph
        l3 = graph.status() if graph is not None else {"l3_triples": None, "l3_blocks": None}
        return {
            "l2_events": len(self.cold),
            "across_inputs": len(self.across) if self.across is not None else None,
            **l3,
            "sessions_indexed": len(self._sessions),
            "events_indexed": sum(len(s.index) for s in self._sessions.values()),
            # idle sessions released since start ([memory] release_idle_s), and the decoded log held now
            "sessions_released": self.released,
            "log_bytes": self.log.size,
            # sessions whose passages are being embedded now (0: every vector there is to compute is stored)
            "indexing": sum(1 for s in self._sessions.values() if s.index_task is not None and not s.index_task.done()),
            "embedder": embedder.model_id if embedder is not None else None,
            "embedder_ready": self.embedder_ready.is_set(),
            # texts the model has embedded in this process: the guards' proof that it ran (tests/guard)
            "texts_embedded": getattr(embedder, "texts_embedded", None),
        }

    async def delete(self, sid: str) -> int:
        """The session was deleted: drop its state and its L2 and L3 events (off the loop, like every write)."""
        self.forget(sid)
        if self.index_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self.index_dir / _dir_name(sid), True)
        removed = len(await asyncio.to_thread(self.cold.remove_session, sid))
        if self.across is not None:
            await asyncio.to_thread(self.across.remove_session, sid)
        graph = self.graph
        if graph is not None:
            try:
                removed += await graph.forget_session(sid)
            except Exception as exc:  # the session is gone from the log; L3 keeps its facts until a retry
                log.error("deleting session %s from the memory graph (L3) failed (%s: %s); its facts stay "
                          "there", sid, type(exc).__name__, exc)  # fmt: skip
        return removed

    def forget(self, sid: str) -> None:
        """Drop a session's in-memory state (it is rebuilt from the log on next use)."""
        self.log.forget(sid)
        for cache in (self._old_records, self._old_events):
            for key in [k for k in cache if k[0] == sid]:
                del cache[key]
        state = self._sessions.pop(sid, None)
        if state is not None and state.index_task is not None:
            state.index_task.cancel()

    # -- the log and the index ---------------------------------------------------------------------------

    def _state(self, sid: str) -> _Session:
        state = self._sessions.get(sid)
        if state is None:
            directory = self.index_dir / _dir_name(sid) if self.index_dir is not None else None
            index = SessionIndex(directory, seal_events=self.seal_events, window_bytes=self.window_bytes)
            state = self._sessions[sid] = _Session(
                index=index, seen=index.last_sealed_seq, corrections=Corrections(directory)
            )
            self._evict()
        else:
            self._sessions.move_to_end(sid)
        if self._last_used not in (None, sid) and (previous := self._sessions.get(self._last_used)) is not None:
            previous.index.forget_between_requests()  # kept for the session in use only (~50 bytes a sealed event)
        self._last_used = sid
        return state

    def turn_started(self, sid: str) -> None:
        """A turn of the session began: nothing of it is released until it ends (`turn_ended`)."""
        if not self._running.get(sid):
            self._turn_requests[sid] = 0
        self._running[sid] = self._running.get(sid, 0) + 1

    def turn_ended(self, sid: str) -> None:
        """A turn of the session ended: release what is held of it (`forget`) once it has stayed idle for
        `release_idle_s` (:data:`RELEASE_IDLE_S`); a turn that starts or ends in between makes it wait again.
        A long turn (at least `release_at_end_requests` requests: :data:`RELEASE_AT_END_REQUESTS`) has it
        released now, before another session's turn allocates among what it holds."""
        running = self._running.pop(sid, 0) - 1
        if running > 0:
            self._running[sid] = running
        elif (ended_state := self._sessions.get(sid)) is not None:
            ended_state.turn_ranking = None  # nothing of a turn's ranking is held between turns
        requests = self._turn_requests.pop(sid, 0) if running <= 0 else 0
        if self.release_idle_s is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        ended = self._ended[sid] = self._ended.get(sid, 0) + 1
        delay = 0.0 if requests >= self.release_at_end_requests else self.release_idle_s
        loop.call_later(delay, self._release_if_idle, sid, ended)

    def _release_if_idle(self, sid: str, ended: int) -> None:
        if self._ended.get(sid) != ended or self._running.get(sid):
            return  # a later turn ended (its own release is planned) or one is running
        state = self._sessions.get(sid)
        if state is not None and state.index_task is not None and not state.index_task.done():
            state.index_task.add_done_callback(lambda _: self._release_if_idle(sid, ended))  # its vectors first
            return
        if state is not None and state.lock.locked():  # a search or a read of it (not a turn): after that
            again = max(self.release_idle_s or 0.0, 0.1)  # not a busy loop with release_idle_s = 0
            asyncio.get_running_loop().call_later(again, self._release_if_idle, sid, ended)
            return
        del self._ended[sid]
        self.forget(sid)
        self.released += 1
        _heap.idle_trim.activity()  # the freed arenas and pages go back to the OS once the kernel stays idle

    def _evict(self) -> None:
        """Forget the least recently used sessions beyond `max_sessions` (their index is rebuilt from the log
        on next use, vectors from ``vectors.db``): a kernel that serves many chats must not grow with every
        chat it ever saw. A session in the middle of a request is never evicted."""
        for sid in list(self._sessions)[: max(0, len(self._sessions) - self.max_sessions)]:
            if not self._sessions[sid].lock.locked():
                self.forget(sid)

    def _new_events(self, sid: str, state: _Session) -> list[Event]:
        """The session's events after `state.seen`, in log order (the log reads only what was appended; a
        session new to it is read from :meth:`SessionIndex.log_start_seq`, so the scene store still sees
        the previous turn)."""
        if not self.log.held(sid):
            self.log.after(sid, state.index.log_start_seq())
        return self.log.after(sid, state.seen)

    def recent_events(self, sid: str) -> tuple[Event, ...]:
        """The session's recent events as the log holds them for memory: the last sealed chunk and the tail
        (the scene store's previous turn, the events to index), never the whole session. `SessionLog.events`
        of a session not held reads it from its first event: after each idle release ([memory]
        release_idle_s) the turn's scene step did, decoding the whole session every turn and holding it until
        the next seal — O(session) CPU and memory a turn (issue 39 item 7)."""
        if not self.log.held(sid):
            self.log.after(sid, self._state(sid).index.log_start_seq())
        return self.log.events(sid)

    def _add_to_index(self, state: _Session, events: Sequence[Event], built: Mapping[int, EventRecord | None]) -> None:
        """Add the records of `events` (read after `state.seen`, log order) to the index's tail."""
        for event in events:
            if event.seq <= state.seen:
                continue
            state.seen = event.seq
            record = built.get(event.seq)
            if record is None:
                continue
            tools = [str(name) for b in record.blocks if (name := b.meta.get("name"))]
            first = state.index.passages
            position = state.index.add(
                event.seq, record.id, event.kind, record.text, token_cost(record),
                group=record.group, ts=event.ts, terms=record.terms, tools=tools,
            )  # fmt: skip
            _say_if_bounded(event, record.text, state.index.passages - first)
            state.tail.append(event)  # its record is not kept: rebuilt when asked (`_tail_record`)
            if event.kind == "input":
                state.last_input = event.seq
                state.inputs = [*state.inputs[-1:], position]
                data = event.data  # decoded on each access (hologram/sessions/event.py): once
                said, partner = data.get("text"), data.get("partner")
                if isinstance(said, str):
                    state.corrections.observe(event.seq, said, str(partner) if partner else None)

    def _seal(self, sid: str, state: _Session) -> None:
        """Seal the index's tail into a segment when it is full (and, with a model, every passage has its
        vector); the sealed events' records and log copies are dropped from memory."""
        vectors = self.embedder is not None or not self.embedder_ready.is_set()
        sealed = state.index.seal(vectors=vectors)
        if not sealed:
            return
        state.tail = state.tail[sealed:]
        self.log.trim(sid, state.index.last_segment_first_seq)

    async def _compact(self, state: _Session) -> None:
        """Merge the session's small segments (tiered) in a worker thread."""
        index = state.index
        while group := index.merge_plan():
            if not await asyncio.to_thread(index.merge, group):  # failures are logged there: derived data
                break

    def _sync_now(self, sid: str) -> _Session:
        """Read new events and index them on this thread."""
        state = self._state(sid)
        new = self._new_events(sid, state)
        self._add_to_index(state, new, {e.seq: record_of(e) for e in new if e.seq > state.seen})
        self._seal(sid, state)
        return state

    async def _sync(self, sid: str) -> _Session:
        """Like :meth:`_sync_now`, but many new events (a long session after a restart) are tokenised in a
        worker thread: that must not stall the loop."""
        state = self._state(sid)
        new = [e for e in self._new_events(sid, state) if e.seq > state.seen]
        if len(new) >= _BUILD_IN_THREAD:
            built = await asyncio.to_thread(lambda: {e.seq: record_of(e) for e in new})
        else:
            built = {e.seq: record_of(e) for e in new}
        self._add_to_index(state, new, built)
        self._seal(sid, state)  # a long rebuild stays in the tail until its vectors are back (one segment)
        if self.across is not None and (said := _said(new, built)):
            await asyncio.to_thread(self.across.add, said)
        return state

    def _events_at(self, sid: str, state: _Session, positions: Sequence[int]) -> list[Event]:
        """The events at index `positions` (ascending): the tail's from memory, older ones read back by seq."""
        base = state.index.sealed
        cache = self._old_events
        old = [p for p in positions if p < base and (sid, p) not in cache]
        if old:
            seqs = state.index.seqs_of(np.asarray(old, dtype=np.int64)).tolist()
            by_seq = self.log.held_at(sid, seqs)  # the last sealed chunk's: still decoded in the log
            if len(by_seq) < len(seqs):
                by_seq.update((e.seq, e) for e in self.store.events_at(sid, [s for s in seqs if s not in by_seq]))
            for p, seq in zip(old, seqs, strict=True):
                event = by_seq.get(seq)
                if event is None:
                    raise LookupError(f"session {sid}: the log lacks event #{seq}, which its index holds")
                cache[(sid, p)] = event
        return _pick(cache, sid, positions, base, lambda i: state.tail[i], _OLD_EVENTS)

    def _records_at(self, sid: str, state: _Session, positions: Sequence[int]) -> list[EventRecord]:
        """The records of index `positions` (an event enters the index only with a record)."""
        cache = self._old_records
        base = state.index.sealed
        missing = [p for p in positions if p < base and (sid, p) not in cache]
        if missing:
            for p, event in zip(missing, self._events_at(sid, state, missing), strict=True):
                record = record_of(event, lexical=False)  # cold.put makes the terms of what moves
                assert record is not None
                cache[(sid, p)] = record
        return _pick(cache, sid, positions, base, lambda i: _tail_record(state.tail[i]), _OLD_RECORDS)

    def _in_cold(self, sid: str, state: _Session) -> np.ndarray:
        return self._layers(sid, state)[0]

    def _in_l3(self, sid: str, state: _Session) -> np.ndarray:
        """Which of the session's indexed events L3 holds: neither L1 nor L2 (recorded in ``cold.db`` by the
        move, so a kernel that never cooled, or whose graph is not open, answers without the graph)."""
        return self._layers(sid, state)[1]

    def _layers(self, sid: str, state: _Session) -> tuple[np.ndarray, np.ndarray]:
        """(held by L2, held by L3) for every indexed event of the session, in index order: asked of the cold
        store for the events it changed or added since the session's last request (hologram/memory/layers.py)."""
        return state.layers.of(self.cold, sid, len(state.index), state.index.hashes_from)

    def l1_events(self, sid: str) -> list[Event]:
        """The session's events held neither in cold context (L2) nor in the memory graph (L3), in log order
        (diagnostics: reads the whole log)."""
        self._sync_now(sid)
        events = self.store.events(sid)
        records = [record_of(e) for e in events]
        ids = [r.id if r is not None else "" for r in records]
        out_of_l1 = self.cold.holds(ids) | self.cold.in_l3(ids)
        return [e for e, r, gone in zip(events, records, out_of_l1, strict=True) if r is None or not gone]

    def l3_ids(self, sid: str) -> list[str]:
        """Event ids of this session held in L3 (log order)."""
        state = self._sync_now(sid)
        with state.index.reading():
            return [state.index.id_at(i) for i in np.flatnonzero(self._in_l3(sid, state)).tolist()]

    def cold_ids(self, sid: str) -> list[str]:
        """Event ids of this session held in L2 (log order)."""
        state = self._sync_now(sid)
        with state.index.reading():
            return [state.index.id_at(i) for i in np.flatnonzero(self._in_cold(sid, state)).tolist()]

    # -- prepare / preview / recover ---------------------------------------------------------------------

    async def prepare(
        self, sid: str, query: str, *, window_tokens: int, fixed_tokens: int, scene: SceneHint | None = None
    ) -> Prepared:
        """The history for the next LLM request: one ranking of the session's L1 and L2 events against
        `query`, fitted to ``history_budget(window_tokens, fixed_tokens)`` (80 % of the window minus what every
        request carries: system prompt, tool schemas, notes). L1 events that lose move to L2 (whole call
        groups) before they leave the history; L2 events that win are sent and counted as an access. Call it
        before every LLM request; while L1 fits and L2 is empty it is a cheap no-op. With :attr:`graph` set, what
        L3 recalls for `query` (`scene` preferred) joins the note, within ``[memory.graph] recall_share`` of
        the budget."""
        budget = history_budget(window_tokens, fixed_tokens)
        if sid in self._turn_requests:
            self._turn_requests[sid] += 1  # a long tool loop is released as it ends (turn_ended)
        return await self._prepare(sid, query, budget, overflow=False, commit=True, now=None, scene=scene)

    async def preview(
        self,
        sid: str,
        query: str,
        *,
        window_tokens: int,
        fixed_tokens: int,
        now: float | None = None,
        scene: SceneHint | None = None,
    ) -> Prepared:
        """What :meth:`prepare` would send if `query` were the next input (at time `now`), with nothing stored,
        moved or counted — for diagnostics and for the benchmark, which asks every question against the state
        the conversation left."""
        budget = history_budget(window_tokens, fixed_tokens)
        return await self._prepare(sid, query, budget, overflow=False, commit=False, now=now, scene=scene)

    async def recover(
        self,
        sid: str,
        query: str,
        *,
        window_tokens: int,
        fixed_tokens: int,
        guard: OverflowGuard,
        provider_error: bool = False,
        scene: SceneHint | None = None,
    ) -> Prepared:
        """The overflow path: the prompt was over 1.25 x the window (``guard.needs_recovery``) or the provider
        said it was too long (`provider_error`). Counts one recovery on `guard` — the third in a turn raises
        :class:`~hologram.memory.cold.overflow.PromptTooLargeError` — and ranks to a tighter budget: the guard's
        fill (0.8, then 0.6) and at most 75 % of the current L1, so a retry always sends less."""
        if provider_error:
            fill = guard.on_context_error()
        else:
            fill = guard.begin_recovery(f"the prompt exceeded {guard.threshold} x the window")
        budget = history_budget(window_tokens, fixed_tokens, fill=fill)
        return await self._prepare(sid, query, budget, overflow=True, commit=True, now=None, scene=scene)

    async def _prepare(
        self,
        sid: str,
        text: str,
        budget: int,
        *,
        overflow: bool,
        commit: bool,
        now: float | None,
        scene: SceneHint | None = None,
    ) -> Prepared:
        for attempt in (1, 2):
            state = self._state(sid)
            async with state.lock:
                state = await self._sync(sid)
                try:
                    with state.index.reading():  # the segments stay mapped for this request only
                        return await self._prepare_locked(sid, state, text, budget, overflow=overflow,
                                                          commit=commit, now=now, scene=scene)  # fmt: skip
                except SegmentError as exc:  # a segment vanished or broke under us: rebuild, once
                    if attempt == 2:
                        raise
                    log.warning("session %s: its index cannot be read (%s); rebuilding it", sid, exc)
                    self.forget(sid)
        raise AssertionError("unreachable")

    async def _prepare_locked(
        self,
        sid: str,
        state: _Session,
        text: str,
        budget: int,
        *,
        overflow: bool,
        commit: bool,
        now: float | None,
        scene: SceneHint | None,
    ) -> Prepared:
        index = state.index
        n = len(index)
        # the layer of each event, read at the events of the request's view (memory/index/view.py): no mask,
        # score or count here has one element per event of the session
        where = state.layers.where(self.cold, sid, n, index.hashes_from)
        held_l2, any_l3 = count_of(where, IN_L2), count_of(where, IN_L3) > 0
        # within the window the view is the session; past it, until the request ranks, its L1 events (about what
        # the last request kept: the rest moved)
        l1 = None if n <= self.score_window else positions_of(where, None)
        view = RequestView.whole(index) if l1 is None else RequestView.at(index, l1)
        in_cold, in_l3, in_l1 = _layers_at(where, view)
        l1_total = int(view.cost.astype(np.int64)[in_l1].sum()) if n else 0
        if overflow:
            budget = min(budget, int(l1_total * _RECOVERY_SHRINK))
        last_input = state.last_input
        if state.protected and last_input != state.protected_since:
            state.protected.clear()
        over = False
        scores: np.ndarray | None = None
        current = last_input if commit else None
        graph = self.graph
        l3_on = graph is not None and graph.settings.graph.recall and bool(text.strip()) and graph.exists()
        # a later request of the turn fits what its first request scored (memory/turn_ranking.py)
        ranking = state.turn_ranking if commit and not overflow else None
        if ranking is not None and not ranking.holds(input_seq=last_input, text=text, budget=budget, scene=scene,
                                                     events=n):  # fmt: skip
            ranking = None
        state.turn_ranking = None
        whole_budget = budget
        by_name: list[L3Hit] = []
        reserved = L3_NONE
        if ranking is not None:
            by_name, reserved, across_hits, across, budget = ranking.shares
        else:
            if l3_on:
                assert graph is not None
                # route 2 (entities the input names) gets its share of the budget first
                by_name = await self._l3_ranked(graph, sid, state, text, None, None,
                                                hops=graph.settings.graph.hops, scene=scene)  # fmt: skip
                reserved = render(by_name, int(budget * graph.settings.graph.recall_share), session=sid)
                budget = max(0, budget - reserved.tokens)
            # other sessions of the same person (memory/across/store.py): their share of the budget first, like L3's
            across_hits = await self._across_hits(sid, state, text)
            across = render_across(across_hits, int(budget * ACROSS_SHARE))
            budget = max(0, budget - across.tokens)
        shares = (by_name, reserved, across_hits, across, budget)
        # (a graph that cannot be read now could not send what won: then L3 does not compete)
        compete_l3 = l3_on and any_l3 and graph is not None and graph.problem is None
        recent_from = 0  # the view position where the recent window (one message per event) begins
        if not held_l2 and not compete_l3 and l1_total + _markup_tokens(view, in_l1, state) <= budget:
            keep = in_l1  # nothing ranked, nothing joined: the history as it is
        else:
            forced_at = index.positions_of_hashes(HashSet(state.protected)) if state.protected else None
            scored = ranking.extended(index, self.score_window) if ranking is not None else None
            if scored is not None and forced_at is not None and not np.isin(forced_at, scored[0].positions).all():
                scored = None  # a recall brought back an event the ranked view lacks: rank again
            if scored is not None:
                view, scores = scored
            else:
                query = await self._query(sid, state, text, now=now, current_input=current)
                # the events this request can send: the window's, and the older ones its words name or it must keep
                old_kept = l1 if forced_at is None or l1 is None else np.union1d(l1, forced_at)
                view = index.request_view(query, window=self.score_window, horizon=self.dense_horizon,
                                          keep=old_kept)  # fmt: skip
                scores = index.scores(query, dense_horizon=self.dense_horizon, window=self.score_window, view=view)
                # the named person's turns like the best matches, for list questions (memory/rank/second_hop.py)
                scores = second_hop(view, scores, query, horizon=self.dense_horizon)
                scores = state.corrections.lift(scores, view.position_of_seq)  # a correction above what it corrects
            in_cold, in_l3, in_l1 = _layers_at(where, view)
            forced = None if forced_at is None else np.isin(view.positions, forced_at)
            # L2 (and L3, route 1) compete only with what clearly matches: filling the budget with whatever
            # old events rank above other irrelevant ones would count them as used, and nothing would
            # ever cool. An L3 event that wins is sent in the note, never in the history.
            strong = scores >= AUTO_RECALL_MIN_SCORE
            extra = (in_cold | in_l3) & strong if compete_l3 else in_cold & strong
            if n > self.score_window:  # the old part's candidates: the best that a budget could hold
                extra = old_candidates(extra, scores, view.old, budget)
            candidates = view.whole_units(in_l1 | extra)
            if not compete_l3:  # L3 holds whole call groups, so this splits none
                candidates &= ~in_l3
            roles = _joinable_roles(view)
            fitted = fit_messages(
                view, scores, candidates, budget, pinned_recent=self.pinned_recent, forced=forced,
                roles=roles, overhead=MESSAGE_OVERHEAD, separator=SEPARATOR_TOKENS,
            )  # fmt: skip
            # the dates and marks the history's reading puts in front of the chosen inputs are sent too: the
            # budget pays them (known once the inputs are chosen, so a second fill with them set aside)
            markup = _markup_tokens(view, fitted.keep & ~in_l3, state)
            if markup and not fitted.over:
                fitted = fit_messages(
                    view, scores, candidates, max(0, budget - markup), pinned_recent=self.pinned_recent,
                    forced=forced, roles=roles, overhead=MESSAGE_OVERHEAD, separator=SEPARATOR_TOKENS,
                )  # fmt: skip
            keep, over, recent_from = fitted.keep, fitted.over, fitted.recent_from
        from_l3 = keep & in_l3
        keep = keep & ~in_l3
        cost = view.cost.astype(np.int64)
        losers_at, winners_at = np.flatnonzero(~keep & in_l1), np.flatnonzero(keep & in_cold)  # view positions
        losers, winners = view.session(losers_at).tolist(), view.session(winners_at).tolist()
        moved = self._records_with_vectors(sid, state, losers)
        # the recalled events' ids and tokens come from the index; only the quoted ones are rebuilt as records
        # (a long session recalls tens of events a request, and rebuilding each cost ~50 us)
        recalled = index.ids_at(winners)
        quoted = self._records_at(sid, state, winners[:NOTE_ITEMS])
        recalled_tokens = int(cost[winners_at].sum()) - MESSAGE_OVERHEAD * len(winners)
        writes: asyncio.Future[None] | None = None
        if commit:
            before = state.layers.stamp(self.cold, sid)
            fresh = self._first_accesses(state, recalled, last_input)
            if moved or fresh:  # durable (fsynced) in a worker thread while the history is built here
                writes = asyncio.get_running_loop().run_in_executor(None, self._write_moves, moved, fresh)
        try:
            kept_at = np.flatnonzero(keep)
            kept = view.session(kept_at).tolist()
            events = self._events_at(sid, state, kept)
        finally:
            if writes is not None:  # before the request is sent: moved events are L2's first (L1 is derived)
                await writes
        if commit:
            if moved:
                state.layers.moved_to_l2(self.cold, sid, losers, before)
            self.schedule_index(sid)
        # the events ranking picked from before the recent window in fewer messages (memory/joined.py); the
        # date in front when the inputs span days; a statement a later one corrects marked so
        recent_seq = (
            index.seq_at(int(view.positions[recent_from]))
            if recent_from < len(view)
            else 1 + (events[-1].seq if events else 0)
        )
        history, joined = join_older(
            dated(events, state.corrections.superseded_seqs([e.seq for e in events])), recent_seq,
            [_ROLE_NAMES[r] for r in JOIN_ROLES],
        )  # fmt: skip
        kept_tokens = (
            int(cost[kept_at].sum())
            - (MESSAGE_OVERHEAD - SEPARATOR_TOKENS) * joined
            + _markup_tokens(view, keep, state)
            if kept
            else 0
        )
        l3 = reserved
        if l3_on and (from_l3.any() or (len(reserved.hits) < len(by_name) and kept_tokens < budget)):
            assert graph is not None
            # the L3 events that won the ranking (their triples, or their text), and what the history left
            # unused for the names' hits that clearly match — as L2's compete for the whole budget
            own = (
                await self._l3_ranked(graph, sid, state, "", scores, from_l3, hops=1, scene=scene, view=view)
                if from_l3.any()
                else []
            )
            chosen = {id(h) for h in reserved.hits}
            pool = rank([*own, *(h for h in by_name if id(h) in chosen or h.score >= AUTO_RECALL_MIN_SCORE)])
            wider = render(pool, reserved.tokens + budget - kept_tokens, session=sid)
            if len(wider.hits) >= len(reserved.hits):
                l3 = wider
        if len(across.hits) < len(across_hits):  # what the history and L3 left unused
            room = across.tokens + budget - kept_tokens - max(0, l3.tokens - reserved.tokens)
            more = render_across(across_hits, room)
            if len(more.hits) > len(across.hits):
                across = more
        note = memory_note(
            moved, quoted, overflow=overflow, recalled_count=len(winners), recalled_tokens=recalled_tokens
        )
        text_note = "\n".join(p for p in (note, l3.note, across.note) if p)
        if commit and not overflow and scores is not None:  # for the turn's later requests
            state.turn_ranking = TurnRanking(
                input_seq=last_input, text=text, budget=whole_budget, scene=scene, events=n, positions=view.positions,
                old=view.old, whole=view.is_whole, scores=scores, shares=shares,
            )  # fmt: skip
        return Prepared(
            messages=history,
            note=Message.system(text_note) if text_note else None,
            pruned=[r.id for r in moved],
            pruned_seqs=index.seqs_of(view.session(losers_at)).tolist(),
            kept_tokens=kept_tokens,
            budget_tokens=budget,
            over_budget=over,
            seqs=[e.seq for e in events],
            recalled=recalled,
            recalled_seqs=index.seqs_of(view.session(winners_at)).tolist(),
            held=held_l2 + (len(losers) if commit else 0),
            l3_events=l3.events,
            across=[h.id for h in across.hits],
        )

    def _person(self, sid: str, state: _Session) -> str:
        """Who speaks in this request: the speaker of the session's latest input (memory/across/store.py)."""
        if not state.inputs:
            return OWNER
        record = self._records_at(sid, state, [state.inputs[-1]])[0]
        return person_of(record.channel, record.partner)

    def _speaker(self, sid: str, state: _Session) -> str:
        """The L3 entity the request's speaker is stored as: the partner the channel named, else "user" (the
        extractor's default speaker, `hologram.memory.graph.extract`)."""
        if not state.inputs:
            return "user"
        record = self._records_at(sid, state, [state.inputs[-1]])[0]
        return record.partner or "user"

    def _same_person(self, sid: str, state: _Session, hits: list[L3Hit]) -> list[L3Hit]:
        """L3 hits of other sessions only from sessions of this request's person alone, and none into a session
        several people speak in — the privacy rule of memory across sessions (memory/across/store.py), which knows who
        spoke where. Without that store (``[memory.across] recall = false``) L3 recalls as before."""
        store = self.across
        if store is None or all(h.session in (None, sid) for h in hits):
            return hits
        person = self._person(sid, state)
        group = len(store.persons(sid) | {person}) > 1

        def allowed(h: L3Hit) -> bool:
            if h.session is None or h.session == sid:
                return True
            speakers = store.persons(h.session)
            return not group and bool(speakers) and speakers <= {person}

        return [h for h in hits if allowed(h)]

    async def _across_hits(self, sid: str, state: _Session, text: str) -> list[AcrossHit]:
        """The inputs of the same person's other sessions that clearly match `text` (memory/across/store.py): none
        for a session several people speak in, and none without another session of this person."""
        store = self.across
        if store is None or not text.strip():
            return []
        if not store.loaded:
            await asyncio.to_thread(store.load)
        person = self._person(sid, state)
        if len(store.persons(sid) | {person}) > 1 or not store.has_other(sid, person):
            return []
        embedder = self.embedder
        vector = None
        if embedder is not None:
            vector = DenseVector(embedder.fingerprint, await self._embed_query(embedder, text))
            if 0 < store.unembedded() <= ACROSS_EMBED_NOW:  # a few statements the background has not reached
                await self._index_across(embedder)  # (told just before a restart): scored by BM25 alone, a
        try:  # paraphrase would not reach them
            extra = expansion(text, store.names(person))  # "Elena" is "my wife" (memory/across/aliases.py)
            also = TermVector.from_text(extra) if extra else None
            return store.search(TermVector.from_text(text), vector, person=person, session=sid, also=also)
        except Exception as exc:  # derived data: a failure costs the request this note, never the request
            log.error("recall across sessions failed (%s: %s); this request goes without it",
                      type(exc).__name__, exc)  # fmt: skip
            return []

    async def _l3_ranked(
        self,
        graph: GraphMemory,
        sid: str,
        state: _Session,
        text: str,
        scores: np.ndarray | None,
        mask: np.ndarray | None,
        *,
        hops: int,
        scene: SceneHint | None,
        view: RequestView | None = None,
    ) -> list[L3Hit]:
        """L3 hits, ranked: the session's events at `mask` with their `scores` (route 1: their triples or
        their text) and the graph's triples of the entities `text` names (route 2). A failure costs the request
        its L3 note, never the request. `view`: `scores` and `mask` are over its events."""
        hits: list[tuple[str, float]] = []
        records: dict[str, EventRecord] = {}
        if scores is not None and mask is not None:
            at = np.flatnonzero(mask)
            positions = (at if view is None else view.session(at)).tolist()
            for i, record in zip(at.tolist(), self._records_at(sid, state, positions), strict=True):
                hits.append((record.id, float(scores[i])))
                records[record.id] = record
        if text.strip() and speaks_of_self(text):
            # "my X" names the speaker: the rules store such facts under them (`user | 车牌号 | …`, or the
            # partner), a key no question says — so the entity route never fired (issue 39). A hub's facts come
            # only when they share a word with the input, so "my plate" brings the plate, not all of them.
            text = f"{text}\n{self._speaker(sid, state)}"
        if text.strip() and self.across is not None:  # the other names of a person it names (memory/across/aliases.py)
            extra = expansion(text, self.across.names(self._person(sid, state)))
            text = f"{text}\n{extra}" if extra else text
        try:
            ranked = await graph.ranked(text, hops=hops, session_hits=hits, scene=scene, records=records)
            return self._same_person(sid, state, ranked)
        except Exception as exc:
            log.error("recall from the memory graph (L3) failed (%s: %s); this request goes without it",
                      type(exc).__name__, exc)  # fmt: skip
            return []

    def _records_with_vectors(self, sid: str, state: _Session, positions: Sequence[int]) -> list[EventRecord]:
        """The records of index `positions`, with their vectors (for the cold store's global search)."""
        out = []
        records = self._records_at(sid, state, positions)
        for record, vector in zip(records, state.index.event_vectors(positions), strict=True):
            if vector is not None and record.dense is None and state.index.fingerprint is not None:
                record = replace(record, dense=DenseVector(state.index.fingerprint, vector))
            out.append(record)
        return out

    @staticmethod
    def _first_accesses(state: _Session, ids: Sequence[str], turn_input: int, now: float | None = None) -> list[str]:
        """Which of the recalled `ids` count an access: one per event per turn (a turn may make several
        requests), and not again within :data:`TOUCH_AGAIN_S` of the last one written; they are marked counted."""
        if state.touched_since != turn_input:
            state.touched_since, state.touched = turn_input, set()
        fresh = [i for i in ids if i not in state.touched]
        state.touched.update(fresh)
        at = time.monotonic() if now is None else now
        seen = state.touched_at
        out = []
        for i in fresh:
            last = seen.get(i)
            if last is not None and at - last < TOUCH_AGAIN_S:
                continue
            seen[i] = at
            seen.move_to_end(i)
            out.append(i)
        while len(seen) > _TOUCHED_KEPT:
            seen.popitem(last=False)
        return out

    def _write_moves(self, moved: Sequence[EventRecord], accessed: Sequence[str]) -> None:
        """A request's writes to the cold store, in a worker thread (each durable: an fsync): the L1 events that
        lost move to L2, then the recalled events count their access. Run while the loop builds the history
        (reading the session log): the two overlap instead of adding up on the turn's path."""
        if moved:
            self.cold.put(moved)
        if accessed:
            self.cold.touch(accessed, once=True)  # counted once per session, its time every turn

    async def _query(
        self, sid: str, state: _Session, text: str, *, now: float | None, current_input: int | None
    ) -> IndexQuery:
        """The query for `text` (see :mod:`hologram.memory.rank.query`). `current_input`: the seq of the input event
        this request answers (its turn is then not "the previous turn"); None for a preview."""
        index = state.index
        inputs = state.inputs
        if current_input is not None and inputs and index.seq_at(inputs[-1]) == current_input:
            inputs = inputs[:-1]
        previous: list[int] = []
        if inputs:
            turns = index.gather("turn", np.arange(inputs[-1], len(index)))  # the last turns, not the column
            previous = (np.flatnonzero(turns == turns[0]) + inputs[-1]).tolist()
        previous_text = "\n".join(r.text for r in self._records_at(sid, state, previous))
        if now is None:
            now = index.ts_at(-1) if len(index) else time.time()
        vector, fingerprint = None, None
        embedder = self.embedder
        if embedder is not None and text.strip():
            fingerprint = embedder.fingerprint
            vector = await self._embed_query(embedder, text)
            # an English question's topic without its question words, a second query (memory/rank/reformulate.py).
            # Embedded apart from the question, not in one batch: the int8 graph quantizes its activations per
            # batch (DynamicQuantizeLinear), so a batch mate moves a vector (up to 0.0069 here) and the query
            # would no longer be the question's own vector.
            topic = topic_of(text, index.speakers)
            if topic is not None:
                vector = blend(vector, await self._embed_query(embedder, topic))
        return build_query(
            index, text, now=now, vector=vector, fingerprint=fingerprint, previous=previous,
            previous_text=previous_text,
        )  # fmt: skip

    async def _embed_query(self, embedder: Embedder, text: str) -> np.ndarray:
        key = (embedder.fingerprint, text)
        vector = self._query_vectors.get(key)
        if vector is None:
            vector = (await embed_async(embedder, [text]))[0]
            self._query_vectors[key] = vector
            while len(self._query_vectors) > _QUERY_VECTORS:
                self._query_vectors.popitem(last=False)
        return vector

    # -- vectors ------------------------------------------------------------------------------------------

    def schedule_index(self, sid: str) -> None:
        """Start :meth:`index` for `sid` in the background unless it is running; without a model, only the
        merging of its segments, when one is due (else a session scored by BM25 alone would gain a segment
        every 256 events, and every request would open them all)."""
        state = self._state(sid)
        if state.index_task is not None and not state.index_task.done():
            return
        if self.embedder is None and not state.index.merge_plan():
            return
        work = self.index(sid) if self.embedder is not None else self._merge_only(state)
        try:
            state.index_task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:  # no loop: nothing to schedule on
            work.close()
            return

    async def _merge_only(self, state: _Session) -> int:
        await self._compact(state)
        return 0

    async def index(self, sid: str) -> int:
        """Give every passage of the session its dense vector: from the vector cache (``vectors.db``) when it
        was computed before, else computed in a worker thread, batched, and stored there. Returns how many
        were computed (not read back). Term vectors are made when an event is first seen."""
        embedder = self.embedder
        if embedder is None:
            return 0
        state = await self._sync(sid)
        index = state.index
        done = 0
        fp = embedder.fingerprint
        computed: dict[str, np.ndarray] = {}  # the last batch's text -> vector: the newest inputs, for across.db
        while todo := index.pending(_INDEX_BATCH):
            keys = {p: index.passage_key(p) for p, _ in todo}
            stored = await asyncio.to_thread(self.vectors.get, fp, list(keys.values())) if self.vectors else {}
            known = [
                (p, stored.get(keys[p]) if keys[p] in stored else self._query_vectors.get((fp, t))) for p, t in todo
            ]
            cached = [(p, v) for p, v in known if v is not None]
            fresh = [(p, t) for (p, t), (_, v) in zip(todo, known, strict=True) if v is None]
            if cached:
                index.set_vectors(fp, [p for p, _ in cached], np.stack([v for _, v in cached]))
            if fresh:
                vectors = await embed_async(embedder, [t for _, t in fresh])
                index.set_vectors(fp, [p for p, _ in fresh], vectors)
                done += len(fresh)
                computed = {t: v for (_, t), v in zip(fresh, vectors, strict=True)}  # one batch at most held
            new = [(keys[p], v) for p, v in cached if keys[p] not in stored]
            if fresh:
                new += [(keys[p], v) for (p, _), v in zip(fresh, vectors, strict=True)]
            if self.vectors is not None and new:
                await asyncio.to_thread(self.vectors.put, fp, new)
        self._seal(sid, state)
        await self._compact(state)
        await self._index_across(embedder, computed)
        return done

    async def _index_across(self, embedder: Embedder, computed: Mapping[str, np.ndarray] | None = None) -> int:
        """Give the inputs stored for other sessions (memory/across/store.py) their vectors: a turn's input was
        embedded as its own query, so most come from the query cache; `computed` (text -> vector) holds what
        :meth:`index` has just embedded as the session's passages — an input no query embedded (a new session's
        first turn while across.db holds nothing to recall: no search, so no query vector) is among them, and
        embedding it again cost the first turn after "ready" a second run of the model (issue 39 item 9)."""
        across = self.across
        if across is None:
            return 0
        fp = embedder.fingerprint
        done = 0
        computed = computed or {}
        while todo := await asyncio.to_thread(across.pending, fp):
            known = [computed.get(t, self._query_vectors.get((fp, t))) for _, t in todo]
            fresh = [t for (_, t), v in zip(todo, known, strict=True) if v is None]
            vectors = iter(await embed_async(embedder, fresh)) if fresh else iter(())
            items = [(i, v if v is not None else next(vectors)) for (i, _), v in zip(todo, known, strict=True)]
            await asyncio.to_thread(across.set_vectors, fp, items)
            done += len(fresh)
        return done

    # -- explicit search: the kernel tool ---------------------------------------------------------------------

    async def search(
        self,
        sid: str,
        text: str,
        limit: int = 5,
        *,
        since: float | None = None,
        until: float | None = None,
        tool: str | None = None,
    ) -> list[tuple[str, float]]:
        """The best `limit` events of `sid`'s L2 for `text` (by the same ranking as requests), optionally
        only those at or after `since` / before `until` (epoch seconds) or in a call group of `tool`; best
        first, as (event id, score). Read-only."""
        state = await self._sync(sid)
        with state.index.reading():
            return await self._search(sid, state, text, limit, since=since, until=until, tool=tool)

    async def _search(
        self,
        sid: str,
        state: _Session,
        text: str,
        limit: int,
        *,
        since: float | None,
        until: float | None,
        tool: str | None,
    ) -> list[tuple[str, float]]:
        index = state.index
        if len(index) == 0:
            return []
        mask = self._in_cold(sid, state)
        ts = index.ts.copy()
        if since is not None:
            mask &= ts >= since
        if until is not None:
            mask &= ts < until
        if tool is not None:
            mask &= self._tool_mask(state, tool)
        if not mask.any():
            return []
        if text.strip():
            scores = index.scores(await self._query(sid, state, text, now=time.time(), current_input=None))
        else:  # no text: the newest first
            scores = ts.copy()
        best = np.flatnonzero(mask)
        best = best[np.lexsort((-best, -scores[best]))][:limit]
        return [(index.id_at(i), float(scores[i])) for i in best.tolist()]

    def _tool_mask(self, state: _Session, tool: str) -> np.ndarray:
        """The events of the call groups in which `tool` appears (a call, its results)."""
        index = state.index
        mask = np.zeros(len(index), dtype=bool)
        mask[index.with_tool(tool)] = True
        return index.whole_units(mask)

    def reinsert_for(self, sid: str | None) -> Reinsert:
        """The re-insert step of a recall into `sid`: checks that the session log holds exactly these events
        (they are then in L1 as soon as L2 lets go) and protects them from the next prune of this turn.
        Raises — so that nothing is removed from L2 — for another session's event or one the log lacks."""

        def reinsert(records: Sequence[EventRecord], /) -> None:
            if sid is None:
                raise ValueError("no session: cannot re-insert into L1")
            state = self._sync_now(sid)
            with state.index.reading():
                for record in records:
                    seq = _seq_of(record, sid)
                    at = state.index.position_of_seq(seq) if seq is not None else None
                    if at is None or state.index.id_at(at) != record.id:
                        raise LookupError(f"event {record.id} does not match the log of session {sid} at #{seq}")
            last_input = state.last_input
            if state.protected_since != last_input:
                state.protected.clear()
            state.protected_since = last_input
            state.protected.update(r.id for r in records)

        return reinsert

    def tool_handler(self) -> Callable[[dict[str, Any], Any], Awaitable[Mapping[str, Any]]]:
        """``async handler(arguments, invocation)`` for ``coldcontext_query``: searches only the calling
        session's L2 (``invocation.session_id``) and moves what it finds back to L1."""

        async def handler(arguments: dict[str, Any], invocation: Any) -> Mapping[str, Any]:
            sid = getattr(invocation, "session_id", None)
            if sid is None:
                return {"content": "error: coldcontext_query needs a session", "is_error": True}
            text = str(arguments.get("query", "") or "").strip()
            since, until = _epoch(arguments.get("since")), _epoch(arguments.get("until"))
            tool = arguments.get("tool") or None
            for key in ("since", "until"):
                if arguments.get(key) not in (None, "") and _epoch(arguments.get(key)) is None:
                    return {
                        "content": f"error: '{key}' must be an ISO date/time such as 2026-05-01T14:00 "
                        f"or epoch seconds, got {arguments.get(key)!r}",
                        "is_error": True,
                    }
            if not text and since is None and until is None and tool is None:
                return {"content": "error: give 'query', or 'since'/'until', or 'tool'", "is_error": True}
            try:
                limit = max(1, min(20, int(arguments.get("limit", 5) or 5)))
            except (TypeError, ValueError):
                return {"content": f"error: 'limit' must be an integer 1-20, got {arguments.get('limit')!r}",
                        "is_error": True}  # fmt: skip
            try:
                hits = await self.search(sid, text, limit, since=since, until=until, tool=tool)
            except (OSError, sqlite3.Error) as exc:
                return {
                    "content": f"error: cannot read the session log; cold context unchanged: {exc}",
                    "is_error": True,
                }
            try:
                recalled, missing = recall(self.cold, [h for h, _ in hits], self.reinsert_for(sid))
            except RecallError as exc:
                return {"content": f"error: {exc}", "is_error": True}
            return {"content": RecallResult(recalled, missing).tool_text(), "is_error": False}

        return handler

    async def recall_l3(
        self, sid: str | None, text: str, *, budget_tokens: int, hops: int = 1, scene: SceneHint | None = None
    ) -> L3Recall:
        """L3 recall for `text` outside a request (the ``memory_recall`` tool): both routes, route 1 over
        `sid`'s L3-held events when there is a session. Read-only."""
        graph = self.graph
        if graph is None or not text.strip() or not graph.exists():
            return L3_NONE
        if sid is None:
            ranked = await graph.ranked(text, hops=hops, scene=scene)
        else:
            state = await self._sync(sid)
            with state.index.reading():
                in_l3 = self._in_l3(sid, state)
                scores = None
                if in_l3.any():
                    query = await self._query(sid, state, text, now=time.time(), current_input=None)
                    scores = state.index.scores(query)
                strong = in_l3 & (scores >= AUTO_RECALL_MIN_SCORE) if scores is not None else None
                ranked = await self._l3_ranked(graph, sid, state, text, scores, strong, hops=hops, scene=scene)
        # The model asked: passages of *other* sessions that contain its words come too, after what the routes
        # found (a request's automatic recall reaches other sessions only through named entities; this scan of
        # L3's blocks is affordable for an explicit call, not for every request).
        seen = {h.event for h in ranked}
        passages = await graph.search(text, limit=MEMORY_RECALL_SEARCH, passages_only=True)
        found = [h for h in passages if h.event not in seen]
        if sid is not None:  # the same privacy rule as a request's (memory/across/store.py): the same person's only
            found = self._same_person(sid, self._state(sid), found)
        return render([*ranked, *found], budget_tokens, session=sid, focus=text)

    def recall_tool(self) -> KernelTool:
        """The ``memory_recall`` tool (model-callable): the rendered L3 recall for a query, 1 or 2 hops."""

        async def handler(arguments: dict[str, Any], invocation: Any) -> Mapping[str, Any]:
            text = str(arguments.get("query", "") or "").strip()
            if not text:
                return {"content": "error: give 'query' (names or topics to look up)", "is_error": True}
            hops = arguments.get("hops", 1)
            if hops not in (1, 2, None):
                return {"content": f"error: 'hops' must be 1 or 2, got {hops!r}", "is_error": True}
            if self.graph is None:
                return {"content": "long-term memory (L3) is not enabled in this kernel", "is_error": False}
            found = await self.recall_l3(getattr(invocation, "session_id", None), text,
                                         budget_tokens=MEMORY_RECALL_BUDGET, hops=int(hops or 1))  # fmt: skip
            if not found.hits:
                problem = f" ({self.graph.problem})" if self.graph.problem else ""
                return {"content": f"nothing in long-term memory matches {text!r}{problem}", "is_error": False}
            return {"content": found.note, "is_error": False}

        return KernelTool(
            MEMORY_RECALL_NAME, MEMORY_RECALL_DESCRIPTION, handler, parameters=MEMORY_RECALL_PARAMETERS,
            offered=lambda _session: self.graph is not None and self.cold.l3_count > 0,
        )  # fmt: skip

    def kernel_tool(self) -> KernelTool:
        """The ``coldcontext_query`` tool for ``ToolRegistry.add_kernel_tool``."""
        return KernelTool(
            COLDCONTEXT_QUERY_NAME,
            COLDCONTEXT_QUERY_DESCRIPTION,
            self.tool_handler(),
            parameters=COLDCONTEXT_QUERY_PARAMETERS,
            offered=self.cold.session_holds,
        )


#: Which roles' older messages a request joins (memory/joined.py): 1 inputs, 2 plain responses. Inputs
#: only: the index cannot tell `fit_messages` which responses carry reasoning (those are never joined, so
#: the budget would count too few messages), and joining responses too found nothing more on LoCoMo's dev
#: split (0.949 at 4k either way: a request keeps few of its "Noted." answers).
JOIN_ROLES: tuple[int, ...] = (1,)
_ROLE_NAMES = {1: "user", 2: "assistant"}


def _layers_at(where: np.ndarray, view: RequestView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(held by L2, held by L3, in L1) at the view's events, from the session's layer bytes (:class:`Layers`)."""
    at = where if view.is_whole else where[view.positions]
    in_cold, in_l3 = at == IN_L2, at == IN_L3
    return in_cold, in_l3, ~in_cold & ~in_l3


def _markup_tokens(index: SessionIndex | RequestView, keep: np.ndarray, state: _Session) -> int:
    """What memory/across/dated.py adds to the inputs `keep` marks (:func:`markup_tokens`), read from the index:
    their times and which of them a later statement supersedes (no event read)."""
    at = np.flatnonzero(keep & (index.roles == 1))
    if at.size == 0:
        return 0
    superseded = state.corrections.superseded_seqs(index.seqs_of(at).tolist()) if state.corrections.superseded else ()
    return markup_tokens(index.ts_of(at), len(superseded))


def _joinable_roles(index: SessionIndex | RequestView) -> np.ndarray:
    """The index's roles (`SessionIndex.roles`) with those :data:`JOIN_ROLES` leaves out set to 0."""
    roles = index.roles
    out: np.ndarray = np.where(np.isin(roles, JOIN_ROLES), roles, 0).astype(np.uint8)
    return out


def _dir_name(sid: str) -> str:
    """A session's index directory name: its id when that is a safe file name, else a hash of it."""
    if _SAFE_NAME.fullmatch(sid) and not sid.startswith("."):
        return sid
    return "h-" + hashlib.sha256(sid.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _load_and_build(first: str | None = None) -> Embedder | None:
    """The embedder (build `first` tried first), its model loaded (the background thread's work when no one
    else loads it)."""
    prefer = preference(first)
    return load_or_next(load_embedder(prefer), prefer)


def _epoch(value: object) -> float | None:
    """Epoch seconds from a number or an ISO 8601 string (naive = local time); None when absent or bad."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    from datetime import datetime

    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _seq_of(record: EventRecord, sid: str) -> int | None:
    origin = record.origin or ""
    head, _, seq = origin.rpartition(":")
    if head != sid or record.session != sid or not seq.isdigit():
        return None
    return int(seq)


def _backfill_across(store: AcrossStore, sessions_db: Path) -> None:
    from hologram.memory.across.across_backfill import backfill

    try:
        backfill(store, sessions_db)
    except Exception:  # derived data: memory works on with what the store has
        log.exception("memory across sessions: filling it from the session log failed")


def _said(events: Sequence[Event], built: Mapping[int, EventRecord | None]) -> list[Said]:
    """The inputs among `events` as the store across sessions takes them (memory/across/store.py)."""
    out = []
    for event in events:
        record = built.get(event.seq)
        if event.kind != "input" or record is None or not record.text.strip():
            continue
        ts_ms = int(event.ts * 1000) if event.ts and event.ts > 0 else 0
        person = person_of(record.channel, record.partner)
        out.append(Said(record.id, event.session, event.seq, ts_ms, person, record.text))
    return out


def _tail_record(event: Event) -> EventRecord:
    """The record of an event of the index's tail, rebuilt from the event (without its terms, as an older
    event's: the index holds the tail's terms, and the cold store makes them for what moves). Not kept from
    indexing to the idle release: ~8 small objects an event (the record, its blocks, their ids and meta, the
    seq as a key), made one by one through a long turn and alive at its peak, set how many pymalloc arenas the
    turn took and kept (issue 41, docs/memory.md "Eighth round"); a request rebuilds a few (~20 µs each: the
    ids' hashes), and each event that moves to cold context once."""
    record = record_of(event, lexical=False)
    assert record is not None  # an event enters the index only with a record
    return record


def _pick(
    cache: OrderedDict[tuple[str, int], _T],
    sid: str,
    positions: Sequence[int],
    base: int,
    from_tail: Callable[[int], _T],
    limit: int,
) -> list[_T]:
    """Items at index `positions`: the tail's (position - `base`) from `from_tail`, sealed ones from the
    read-back `cache` (marked recently used), which is then trimmed to its `limit`."""
    out: list[_T] = []
    for p in positions:
        if p >= base:
            out.append(from_tail(p - base))
            continue
        out.append(cache[(sid, p)])
        cache.move_to_end((sid, p))
    while len(cache) > limit:
        cache.popitem(last=False)
    return out
