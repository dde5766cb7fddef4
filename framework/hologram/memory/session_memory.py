"""The bridge between the session log and the memory tiers: what of a session the model sees (L1), what
moved to cold context (L2), and the ``coldcontext_query`` kernel tool that brings it back.

The session database keeps every event forever: it is the durable log. The tiers are *derived* from it:

* **L2** = the session's events held by the :class:`~hologram.memory.cold.ColdStore` (keyed by the stable
  event id of :func:`~hologram.memory.blocks.build_event`, origin ``"<session>:<seq>"``);
* **L1** = the session's events minus those in L2, in log order.

A move to L2 is one durable ``ColdStore.put`` (nothing to delete on the L1 side, so a crash cannot lose or
duplicate anything); a recall is ``ColdStore.remove`` after the *peek* confirmed the events, and the event is
back in L1 at its original position because the log is in time order. The re-insert step of a recall is
therefore a check that the session log still holds exactly these events; if it fails, nothing is removed.

Each session event becomes one memory event: ``input`` (the user's text), ``response`` (reasoning, content,
tool calls: reasoning counts toward tokens and vectors), ``tool_result``. A response with tool calls and its
results share a group (``call:<response seq>``) and move together, so a history built from L1 never holds a
result without its call nor a call without its results. Other kinds (``output``...) produce no message and
never move.

Scoring uses a per-session incremental IDF and, once the embedder has loaded in its background thread, dense
vectors computed off the event loop by :meth:`SessionMemory.index` (scheduled after every prepare); until an
event's vector is ready it is scored by BM25 alone, so nothing on a turn's path waits for the model.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram.llm import Message
from hologram.memory.blocks import EventRecord
from hologram.memory.cold import ColdStore
from hologram.memory.embed import Embedder, embed_async, load_embedder
from hologram.memory.overflow import OverflowGuard, history_budget, overflow_note
from hologram.memory.prune import DEFAULT_PINNED, prune
from hologram.memory.recall import (
    COLDCONTEXT_QUERY_DESCRIPTION,
    COLDCONTEXT_QUERY_NAME,
    COLDCONTEXT_QUERY_PARAMETERS,
    Reinsert,
    make_handler,
    make_query,
)
from hologram.memory.score import HybridScorer
from hologram.memory.session_records import (
    MESSAGE_OVERHEAD,
    Prepared,
    prune_note,
    record_of,
    scoring_view,
    token_cost,
)
from hologram.memory.tfidf import TermVector, TfidfIndex
from hologram.memory.tokenize import warm_up
from hologram.memory.vectors import DenseVector
from hologram.sessions import Event, SessionStore, messages_from_events

if TYPE_CHECKING:
    from hologram.agent.tools import KernelTool

__all__ = ["COLD_DB", "MESSAGE_OVERHEAD", "Prepared", "SessionMemory", "prune_note", "record_of"]

log = logging.getLogger("hologram.memory")

COLD_DB = "cold.db"
#: Records to build before it is worth a worker thread (tokenising ~1,000 events costs tens of ms).
_BUILD_IN_THREAD = 64
_INDEX_BATCH = 64
#: A recovery cuts L1 to at most this share of what it held, so a provider's context error always makes
#: progress even when our estimate said the history already fit.
_RECOVERY_SHRINK = 0.75


@dataclass
class _Session:
    """Per-session cache: the events read, records by log seq, the incremental IDF, recall protection."""

    events: tuple[Event, ...] = ()
    """The session's log as read so far: events are only appended, so `SessionMemory._events` reads just
    the new ones (as `HistoryCache` does). A tuple, replaced when it grows: a caller's snapshot stays whole
    across its awaits."""
    records: dict[int, EventRecord | None] = field(default_factory=dict)
    idf: TfidfIndex = field(default_factory=TfidfIndex)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    protected: set[str] = field(default_factory=set)
    """Recalled event ids kept unscored until the next user input (else the next prune, against the same
    input that pruned them, would send them straight back)."""
    protected_since: int = -1
    """The seq of the last input when `protected` was set."""
    index_task: asyncio.Task[int] | None = None


class SessionMemory:
    """L1/L2 of every session of one data directory (module docstring). Use from the kernel's event loop."""

    def __init__(
        self,
        store: SessionStore,
        cold: ColdStore,
        embedder: Embedder | None = None,
        *,
        pinned_recent: int = DEFAULT_PINNED,
    ) -> None:
        self.store = store
        self.cold = cold
        self.embedder = embedder
        """None until (unless) a model is loaded: scoring is then BM25 only."""
        self.pinned_recent = pinned_recent
        self.embedder_ready = threading.Event()
        if embedder is not None:
            self.embedder_ready.set()
        self._sessions: dict[str, _Session] = {}

    @classmethod
    def open(cls, data_dir: Path, store: SessionStore, *, load_model: bool = True) -> SessionMemory:
        """Open ``data_dir/cold.db``, start the Chinese segmenter's warm-up and (unless `load_model` is False)
        load the embedder in a background thread: until it is ready, scoring is TF-IDF only, never a wait."""
        memory = cls(store, ColdStore(Path(data_dir) / COLD_DB))
        warm_up()
        if load_model:
            threading.Thread(target=memory._load_embedder, name="hologram-embedder", daemon=True).start()
        else:
            memory.embedder_ready.set()
        return memory

    def _load_embedder(self) -> None:
        try:
            embedder = load_embedder()
            loader = getattr(embedder, "load", None)
            if callable(loader):
                loader()
            self.embedder = embedder
        except Exception:  # a broken model must not take memory down: TF-IDF still works
            log.exception("loading the embedding model failed; memory scores by TF-IDF only")
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

    def forget(self, sid: str) -> None:
        """Drop a session's in-memory cache (it is rebuilt from the log on next use)."""
        state = self._sessions.pop(sid, None)
        if state is not None and state.index_task is not None:
            state.index_task.cancel()

    # -- L1 -------------------------------------------------------------------------------------------

    def _state(self, sid: str) -> _Session:
        state = self._sessions.get(sid)
        if state is None:
            state = self._sessions[sid] = _Session()
        return state

    def _cache(self, state: _Session, built: Mapping[int, EventRecord | None]) -> None:
        for seq, record in built.items():
            state.records[seq] = record
            if record is not None:
                state.idf.add(record.terms if record.terms is not None else TermVector.from_text(record.text))

    def _events(self, sid: str) -> tuple[Event, ...]:
        """The session's events, in log order; only those appended since the last call are read from the
        store (reading and decoding the whole log was O(session) three times per LLM request)."""
        state = self._state(sid)
        new = self.store.events(sid, after=state.events[-1].seq if state.events else 0)
        if new:
            state.events = (*state.events, *new)
        return state.events

    def _records_now(self, sid: str, events: Sequence[Event]) -> list[EventRecord | None]:
        """Records of `events`, building the missing ones on this thread."""
        state = self._state(sid)
        missing = [e for e in events if e.seq not in state.records]
        if missing:
            self._cache(state, {e.seq: record_of(e) for e in missing})
        return [state.records[e.seq] for e in events]

    async def _records(self, sid: str, events: Sequence[Event]) -> list[EventRecord | None]:
        """Like :meth:`_records_now`, but many missing records (a long session after a restart) are built in
        a worker thread: tokenising them must not stall the loop."""
        state = self._state(sid)
        missing = [e for e in events if e.seq not in state.records]
        if len(missing) >= _BUILD_IN_THREAD:
            built = await asyncio.to_thread(lambda: {e.seq: record_of(e) for e in missing})
            self._cache(state, {s: r for s, r in built.items() if s not in state.records})
        return self._records_now(sid, events)

    def l1_events(self, sid: str) -> list[Event]:
        """The session's events not held in cold context, in log (time) order."""
        events = self._events(sid)
        records = self._records_now(sid, events)
        return [e for e, r in zip(events, records, strict=True) if r is None or r.id not in self.cold]

    def cold_ids(self, sid: str) -> list[str]:
        """Event ids of this session held in L2 (from the cache; log order)."""
        events = self._events(sid)
        records = self._records_now(sid, events)
        return [r.id for r in records if r is not None and r.id in self.cold]

    # -- prepare / recover ----------------------------------------------------------------------------

    async def prepare(self, sid: str, query: str, *, window_tokens: int, fixed_tokens: int) -> Prepared:
        """The history for the next LLM request: L1 scored against `query` and pruned to
        ``history_budget(window_tokens, fixed_tokens)`` (80 % of the window minus what every request carries:
        system prompt, tool schemas, notes). Pruned events move to L2 (whole call groups) before they leave
        the history. Call it before every LLM request; it is a cheap no-op while L1 fits."""
        budget = history_budget(window_tokens, fixed_tokens)
        return await self._prepare(sid, query, budget, overflow=False)

    async def recover(
        self,
        sid: str,
        query: str,
        *,
        window_tokens: int,
        fixed_tokens: int,
        guard: OverflowGuard,
        provider_error: bool = False,
    ) -> Prepared:
        """The overflow path: the prompt was over 1.25 x the window (``guard.needs_recovery``) or the provider
        said it was too long (`provider_error`). Counts one recovery on `guard` — the third in a turn raises
        :class:`~hologram.memory.overflow.ContextOverflowError` — and prunes to a tighter budget: the guard's
        fill (0.8, then 0.6) and at most 75 % of the current L1, so a retry always sends less."""
        if provider_error:
            fill = guard.on_context_error()
        else:
            fill = guard.begin_recovery(f"the prompt exceeded {guard.threshold} x the window")
        budget = history_budget(window_tokens, fixed_tokens, fill=fill)
        return await self._prepare(sid, query, budget, overflow=True)

    async def _prepare(self, sid: str, query: str, budget: int, *, overflow: bool) -> Prepared:
        state = self._state(sid)
        async with state.lock:
            events = self._events(sid)
            records = await self._records(sid, events)
            l1 = [(e, r) for e, r in zip(events, records, strict=True) if r is None or r.id not in self.cold]
            last_input = max((e.seq for e in events if e.kind == "input"), default=-1)
            if state.protected and last_input != state.protected_since:
                state.protected.clear()
            scored: list[tuple[Event, EventRecord]] = []
            protected_tokens = 0  # recalled events: kept, never scored
            cost: dict[int, int] = {}  # seq -> token_cost, estimated once per request
            for e, r in l1:
                if r is None:
                    continue
                cost[e.seq] = token_cost(r)
                if r.id in state.protected:
                    protected_tokens += cost[e.seq]
                else:
                    scored.append((e, r))
            total = sum(cost.values())
            if overflow:
                budget = min(budget, int(total * _RECOVERY_SHRINK))
            moved: list[EventRecord] = []
            moved_seqs: list[int] = []
            over = False
            if total > budget:
                left = max(0, budget - protected_tokens)
                views = [scoring_view(e, r, cost[e.seq]) for e, r in scored]
                result = prune(
                    views,
                    await asyncio.to_thread(make_query, query, self.embedder),
                    left,
                    pinned_recent=self.pinned_recent,
                    scorer=HybridScorer(state.idf),
                )
                by_id = {r.id: (e.seq, r) for e, r in scored}
                moved_seqs = [by_id[v.id][0] for v in result.pruned]
                moved = [by_id[v.id][1] for v in result.pruned]
                over = result.over_budget
                if moved:
                    # durable before the history forgets them (L1 is derived from L2 membership)
                    await asyncio.to_thread(self.cold.put, moved)
            gone = {r.id for r in moved}
            kept = [e for e, r in l1 if r is None or r.id not in gone]
            kept_tokens = sum(cost[e.seq] for e, r in l1 if r is not None and r.id not in gone)
            text = (overflow_note(moved) if overflow else prune_note(moved)) if moved else ""
            self.schedule_index(sid)
            return Prepared(
                messages=messages_from_events(kept),
                note=Message.system(text) if text else None,
                pruned=[r.id for r in moved],
                pruned_seqs=moved_seqs,
                kept_tokens=kept_tokens,
                budget_tokens=budget,
                over_budget=over,
                seqs=[e.seq for e in kept],
            )

    # -- vectors --------------------------------------------------------------------------------------

    def schedule_index(self, sid: str) -> None:
        """Start :meth:`index` for `sid` in the background unless it is running or there is no model yet."""
        state = self._state(sid)
        if self.embedder is None or (state.index_task is not None and not state.index_task.done()):
            return
        try:
            state.index_task = asyncio.get_running_loop().create_task(self.index(sid))
        except RuntimeError:  # no loop: nothing to schedule on
            return

    async def index(self, sid: str) -> int:
        """Compute dense vectors for the session's L1 events that lack one, batched, in a worker thread;
        returns how many were added. TF-IDF vectors are made when an event is first seen."""
        embedder = self.embedder
        if embedder is None:
            return 0
        state = self._state(sid)
        events = self._events(sid)
        records = await self._records(sid, events)
        todo = [
            (e.seq, r)
            for e, r in zip(events, records, strict=True)
            if r is not None and r.dense is None and r.text.strip() and r.id not in self.cold
        ]
        done = 0
        for i in range(0, len(todo), _INDEX_BATCH):
            batch = todo[i : i + _INDEX_BATCH]
            vectors = await embed_async(embedder, [r.text for _, r in batch])
            for (seq, record), vec in zip(batch, vectors, strict=True):
                if state.records.get(seq) is record:  # not replaced meanwhile
                    state.records[seq] = record.with_vectors(DenseVector(embedder.fingerprint, vec))
                    done += 1
        return done

    # -- the kernel tool ------------------------------------------------------------------------------

    def reinsert_for(self, sid: str | None) -> Reinsert:
        """The re-insert step of a recall into `sid`: checks that the session log holds exactly these events
        (they are then in L1 as soon as L2 lets go) and protects them from the next prune of this turn.
        Raises — so that nothing is removed from L2 — for another session's event or one the log lacks."""

        def reinsert(records: Sequence[EventRecord], /) -> None:
            if sid is None:
                raise ValueError("no session: cannot re-insert into L1")
            events = {e.seq: e for e in self._events(sid)}
            state = self._state(sid)
            for record in records:
                seq = _seq_of(record, sid)
                event = events.get(seq) if seq is not None else None
                if event is None:
                    raise LookupError(f"event {record.id} is not in the log of session {sid}")
                have = self._records_now(sid, [event])[0]
                if have is None or have.id != record.id:
                    raise LookupError(f"event {record.id} does not match the log of session {sid} at #{seq}")
            last_input = max((e.seq for e in events.values() if e.kind == "input"), default=-1)
            if state.protected_since != last_input:
                state.protected.clear()
            state.protected_since = last_input
            state.protected.update(r.id for r in records)

        return reinsert

    def tool_handler(self) -> Callable[[dict[str, Any], Any], Awaitable[Mapping[str, Any]]]:
        """``async handler(arguments, invocation)`` for ``coldcontext_query``: searches only the calling
        session's L2 (``invocation.session_id``) with the embedder as loaded at call time."""

        async def handler(arguments: dict[str, Any], invocation: Any) -> Mapping[str, Any]:
            if getattr(invocation, "session_id", None) is None:
                return {"content": "error: coldcontext_query needs a session", "is_error": True}
            inner = make_handler(self.cold, self.reinsert_for, embedder=self.embedder)
            return await inner(arguments, invocation)

        return handler

    def kernel_tool(self) -> KernelTool:
        """The ``coldcontext_query`` tool for ``ToolRegistry.add_kernel_tool``."""
        from hologram.agent.tools import KernelTool  # here: agent imports memory, not the reverse

        return KernelTool(
            COLDCONTEXT_QUERY_NAME,
            COLDCONTEXT_QUERY_DESCRIPTION,
            self.tool_handler(),
            parameters=COLDCONTEXT_QUERY_PARAMETERS,
        )


def _seq_of(record: EventRecord, sid: str) -> int | None:
    origin = record.origin or ""
    head, _, seq = origin.rpartition(":")
    if head != sid or record.session != sid or not seq.isdigit():
        return None
    return int(seq)
