"""The kernel's L3: the memory graph of one data directory, its cooling job, and recall from it.

:class:`GraphMemory` is what the kernel holds (``SessionMemory.graph``, opened by ``agent/attach.py``):

* **Lazy, off the loop.** ``<data>/graph.kz`` is opened in a worker thread the first time something needs
  it — a cooling run with eligible events, a recall once L3 holds anything, an inspection — never at import
  and never on the event loop. A kernel that never cooled never imports the database module (``import kuzu``
  costs the idle footprint megabytes), and which events L3 holds is answered by ``cold.db``
  (:meth:`held`), not by the graph.
* **Reconcile at start, then cool every ``interval_hours``** (:meth:`start`): the first run reconciles
  (a crash between the graph's commit and L2's delete, ``cooling.reconcile``), and every run moves the
  eligible L2 events (``[memory.cooling]``) with the extractor the settings name: ``rules`` the deterministic
  one, ``llm`` the model on the live provider chain, ``auto`` the model when a provider is configured at the
  time of the run, else the rules.
* **In a process of its own** (issue 39 item 8): the database runs in ``python -m hologram.memory.graph.worker``
  (:class:`~hologram.memory.graph.remote.WorkerGraphStore` is its client), so the kernel never imports the
  database module and a crash in it — a damaged file segfaulted Kùzu at open — ends that process only. The
  crash rules (:mod:`hologram.memory.graph.health`): a crash at open is retried once, a second one stops with
  the `hologram doctor --repair` fix; a crash while working restarts it by the kernel's crash policy.
* **Never takes the kernel down.** A database that another process holds (:class:`GraphLockedError`) is a
  status warning and memory carries on without L3 recall (the events L3 holds still stay out of L1 and L2);
  any other database error is logged with what to do, and the next run tries again; a crash is a status
  problem naming the fix, and the request or cooling run that met it goes on without L3.
* **Recall** (:meth:`recall`, the routes and ranking of :mod:`hologram.memory.graph.recall`), :meth:`search`
  across sessions and :meth:`neighbourhood` with sources, for ``memory_recall``, the CLI and the web page.

The graph store serialises its calls (one connection, one mutex), so a recall that arrives during a large
move waits for that move's commit; moves are hourly and batched, requests are not blocked otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hologram.config.settings import MemorySettings
from hologram.memory.cold.blocks import EventRecord
from hologram.memory.cold.store import ColdStore
from hologram.memory.graph.cooling import CoolingPolicy, DistillReport, Extractor, distill
from hologram.memory.graph.health import GraphHealth
from hologram.memory.graph.recall import (
    EMPTY,
    HOP_SCORE,
    HUB_DEGREE,
    SOURCE_CHARS,
    WORD_BONUS,
    L3Hit,
    L3Recall,
    SourcedTriple,
    cut,
    mentions,
    rank,
    render,
    terms,
    triple_text,
    words,
)
from hologram.memory.graph.remote import GraphWorkerCrashed
from hologram.memory.graph.store import (
    BACKENDS,
    GraphBlock,
    GraphCounts,
    GraphLockedError,
    GraphStore,
    Triple,
    entity_key,
)
from hologram.memory.scenes.scene_hint import SceneHint
from hologram.memory.text.search_match import matched, salient

__all__ = ["GRAPH_DB", "GraphMemory", "L3Hit", "L3Recall", "SourcedTriple"]

log = logging.getLogger("hologram.memory")

GRAPH_DB = "graph.kz"
#: After a failed open (another process holds the graph), the next attempt waits this long.
RETRY_OPEN_S = 60.0
#: Route 1 hits considered per request, best first (they already won the request's ranking, so the budget
#: bounds them; this only keeps an input that matches much of a cooled session from costing a read of all).
MAX_SESSION_HITS = 256
#: Triples read per named entity (1 hop; 2 hops: a quarter), ranked here by what they share with the input —
#: the graph's LIMIT picks arbitrary ones, so it must be wide enough to hold a hub's relevant fact.
_PER_ENTITY = 200


class GraphMemory:
    """L3 of one data directory (module docstring). Use from the kernel's event loop."""

    def __init__(
        self,
        path: Path,
        settings: MemorySettings,
        cold: ColdStore,
        *,
        chain: Callable[[], Any | None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.settings = settings
        self.cold = cold
        self.chain = chain
        self.clock = clock
        self.notify: Callable[[str], None] | None = None
        """Told a warning for the person running the kernel (the kernel's notices), once per new problem."""
        self.problem: str | None = None
        """Why L3 is unavailable (another process holds it, the database failed to open); None when fine."""
        self.reports: list[DistillReport] = []
        self._store: GraphStore | None = None
        self._opening: asyncio.Lock | None = None
        self._names: dict[str, str] = {}
        """Entity key → name, for finding the entities an input names (kept in memory: one lookup per n-gram)."""
        self._fact_events: set[str] = set()
        self._counts: GraphCounts | None = None
        self._task: asyncio.Task[None] | None = None
        self._distilling: asyncio.Lock | None = None
        self._retry_at = 0.0
        self.health = GraphHealth(path)
        """The graph process's state and crash rules (``hologram status``: ``l3_state``)."""

    @classmethod
    def open(
        cls,
        data_dir: Path,
        settings: MemorySettings,
        cold: ColdStore,
        *,
        chain: Callable[[], Any | None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> GraphMemory:
        """The L3 of `data_dir` (``graph.kz``). Nothing is opened yet (module docstring: lazy)."""
        return cls(Path(data_dir) / GRAPH_DB, settings, cold, chain=chain, clock=clock)

    # -- membership and counts --------------------------------------------------------------------------

    def held(self, event_ids: Sequence[str]) -> np.ndarray:
        """Which of `event_ids` L3 holds, as a bool array (from ``cold.db``: no graph needed)."""
        return self.cold.in_l3(event_ids)

    def exists(self) -> bool:
        """Whether there is anything to open (a graph on disk, or events recorded as moved there)."""
        return self._store is not None or self.path.exists() or self.cold.l3_count > 0

    def counts(self) -> GraphCounts | None:
        """Blocks, entities and triples L3 holds (as of the last open or move); None: no graph yet."""
        return self._counts

    def status(self) -> dict[str, Any]:
        counts = self._counts
        return {
            "l3_triples": counts.triples if counts is not None else None,
            "l3_blocks": counts.blocks if counts is not None else None,
            "l3_entities": counts.entities if counts is not None else None,
            "l3_events": self.cold.l3_count,
            "l3_problem": self.problem,
            **self.health.status(),
            "cooling": self.cooling_status(),
            # the database module is loaded in the graph's own process only (item 8: the tests hold this)
            "l3_module_in_kernel": any(m in sys.modules for names in BACKENDS.values() for m in names),
        }

    def cooling_status(self) -> dict[str, Any]:
        """The extractor the settings name and the last cooling run that did anything to L2 or L3 (its time,
        extractor, counts, the model's failures the rules read, by reason): ``hologram status``."""
        last = next((r for r in reversed(self.reports) if r.eligible or r.reconciled), None)
        out: dict[str, Any] = {"extractor": self.settings.cooling.extractor, "runs": len(self.reports), "last": None}
        if last is not None:
            out["last"] = {
                "at": last.at, "extractor": last.extractor, "eligible": last.eligible, "moved": len(last.moved),
                "triples": last.triples, "failed": len(last.failed), "held_back": len(last.held_back),
                "fallbacks": dict(last.fallbacks),
            }  # fmt: skip
        return out

    # -- opening ----------------------------------------------------------------------------------------

    async def store(self) -> GraphStore | None:
        """The open store, opening it (in a worker thread) the first time; None when it cannot be opened
        (:attr:`problem` says why; a later call tries again)."""
        if self._store is not None and getattr(self._store, "alive", True):
            return self._store
        if self._store is not None:  # its process died between calls (killed): a crash like any other
            self._crashed(GraphWorkerCrashed(self.path, getattr(self._store, "returncode", None), "idle"))
        if not self.health.may_start():
            return None  # stopped after repeated crashes, or waiting for the crash policy's delay
        if self.problem is not None and time.monotonic() < self._retry_at:
            return None  # it failed a moment ago: requests do not each try again
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            while self._store is None and self.health.may_start():
                try:
                    store = await asyncio.to_thread(self._open_store)
                except GraphWorkerCrashed as exc:  # the library crashed reading the file: once more, then stop
                    said = self.health.crashed(exc, at_open=True)
                    if self.health.state == "stopped":
                        self._fail(said)
                    else:
                        log.warning("%s", said)
                    continue
                except GraphLockedError:
                    self._retry_at = time.monotonic() + RETRY_OPEN_S
                    self._fail(
                        f"{self.path}: the memory graph (L3) is open in another process (another kernel on this "
                        "data directory, or an offline `hologram memory` command); memory works on without L3 "
                        f"recall and cooling until it is free (next try in {RETRY_OPEN_S:.0f} s)",
                        warning=True,
                    )
                    return None
                except Exception as exc:  # a damaged or unreadable database must not take memory down
                    self._retry_at = time.monotonic() + RETRY_OPEN_S
                    self._fail(
                        f"{self.path}: cannot open the memory graph (L3): {type(exc).__name__}: {exc}; "
                        f"memory goes on without it (next try in {RETRY_OPEN_S:.0f} s); if the file is damaged: "
                        f"{self.health.fix}"
                    )
                    return None
                self._store = store
                self.health.started(getattr(store, "pid", None))
                self.problem = None
        return self._store

    def _open_store(self) -> GraphStore:
        from hologram.memory.graph.remote import WorkerGraphStore  # the database module loads in its process

        store = WorkerGraphStore(self.path, backend=self.settings.graph.backend)
        try:
            self._refresh(store)
        except BaseException:
            store.close()
            raise
        return store

    def _refresh(self, store: GraphStore) -> None:
        """Reload what recall keeps in memory (entity names, events with triples, counts): at open and after
        every move (hourly), never per request."""
        self._names = store.entities()
        self._fact_events = store.fact_events()
        self._counts = store.counts()

    def _crashed(self, exc: GraphWorkerCrashed) -> None:
        """The process died while working: forget it (its client is dead), report, restart by the policy."""
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(Exception):
                store.close()  # reaps the process, closes the pipes (it is dead: nothing to wait for)
        self._fail(self.health.crashed(exc, at_open=False))

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` in a worker thread; a crash of the graph's process on the way is recorded (:meth:`_crashed`)
        and raised as a RuntimeError naming the problem, which the callers already treat as "L3 failed"."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except GraphWorkerCrashed as exc:
            self._crashed(exc)
            raise RuntimeError(self.problem) from exc

    def _fail(self, message: str, *, warning: bool = False) -> None:
        if message != self.problem:
            (log.warning if warning else log.error)("%s", message)
            if self.notify is not None:
                self.notify(message)
        self.problem = message

    # -- cooling ----------------------------------------------------------------------------------------

    def extractor(self) -> Extractor:
        """The extractor ``[memory.cooling] extractor`` names, on the provider chain live at this moment."""
        from hologram.memory.graph.extract import DeterministicExtractor

        choice = self.settings.cooling.extractor
        chain = self.chain()
        if choice == "rules" or (choice == "auto" and chain is None):
            return DeterministicExtractor()
        from hologram.memory.graph.llm_extract import LLMExtractor

        if chain is None:
            return _NoModel()
        providers = getattr(chain, "providers", None) or []
        kind = "deepseek" if providers and getattr(providers[0], "kind", "") == "deepseek" else "openai"
        if choice == "auto":  # the model, and the rules for an event it cannot read (graph/fallback.py)
            from hologram.memory.graph.fallback import FallbackExtractor

            return FallbackExtractor(LLMExtractor(chain, kind=kind))
        return LLMExtractor(chain, kind=kind)

    async def distill(self, *, idle_hours: float | None = None, max_accesses: int | None = None) -> DistillReport:
        """One cooling run now (the background job's, or "run cooling now" from the CLI with other limits).
        Opens the graph only when there is something to move or reconcile."""
        cooling = self.settings.cooling
        policy = CoolingPolicy(
            max_accesses=cooling.max_accesses if max_accesses is None else max_accesses,
            idle_hours=cooling.idle_hours if idle_hours is None else idle_hours,
            batch_events=cooling.batch_events,
        )
        if self._distilling is None:
            self._distilling = asyncio.Lock()
        async with self._distilling:
            now = self.clock()
            if not self.exists():
                eligible = await asyncio.to_thread(
                    self.cold.eligible_for_distillation, now, max_accesses=policy.max_accesses,
                    idle_seconds=policy.idle_hours * 3600,
                )  # fmt: skip
                if not eligible:
                    return DistillReport()  # nothing to move and no graph: the database module stays unloaded
            store = await self.store()
            if store is None:
                raise RuntimeError(self.problem or f"{self.path}: the memory graph is not available")
            try:
                report = await distill(self.cold, store, self.extractor(), policy=policy, now=now)
            except GraphWorkerCrashed as exc:  # what it had not moved stays in L2 (copy, then delete)
                self._crashed(exc)
                raise RuntimeError(self.problem) from exc
            if report.moved or report.reconciled:
                await self._call(self._refresh, store)
            self.reports.append(report)
            if report.moved or report.failed or report.reconciled:
                log.info("cooling: %d events moved to L3 (%d triples), %d reconciled, %d left in L2 after a failed "
                         "extraction", len(report.moved), report.triples, len(report.reconciled),
                         len(report.failed))  # fmt: skip
            return report

    def start(self) -> None:
        """Start the background job: a first run at once (it reconciles), then one every ``interval_hours``.
        With ``[memory.cooling] enabled = false`` only the reconcile runs (nothing else leaves L2)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="hologram-cooling")

    async def _loop(self) -> None:
        cooling = self.settings.cooling
        while True:
            try:
                if cooling.enabled:
                    await self.distill()
                elif self.exists() and (store := await self.store()) is not None:
                    from hologram.memory.graph.cooling import reconcile

                    await self._call(reconcile, self.cold, store)
                    return
                else:
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.error("cooling run failed (%s: %s); nothing it had not moved left L2, next run in %.2f h",
                          type(exc).__name__, exc, cooling.interval_hours)  # fmt: skip
            await asyncio.sleep(cooling.interval_hours * 3600)

    async def aclose(self) -> None:
        """Stop the job and close the database (off the loop)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        store, self._store = self._store, None
        if store is not None:
            await asyncio.to_thread(store.close)
            self.health.closed()

    async def forget_session(self, session: str) -> int:
        """The session was deleted: its events leave L3 too (blocks and the triples read from them), then
        their L3 records in ``cold.db`` — graph first, so a crash between leaves a record of an event the graph
        no longer has (harmless: the log no longer has it either). Returns how many were deleted."""
        ids = await asyncio.to_thread(self.cold.l3_of_session, session)
        if not ids:
            return 0
        store = await self.store()
        if store is None:
            raise RuntimeError(self.problem or f"{self.path}: the memory graph is not available")
        gone = await self._call(store.forget, ids)
        await asyncio.to_thread(self.cold.forget_l3, ids)
        await self._call(self._refresh, store)
        return int(gone)

    # -- recall -----------------------------------------------------------------------------------------

    async def recall(
        self,
        text: str,
        *,
        session: str | None,
        budget_tokens: int,
        hops: int = 1,
        session_hits: Sequence[tuple[str, float]] = (),
        scene: SceneHint | None = None,
        records: Mapping[str, EventRecord] | None = None,
    ) -> L3Recall:
        """What L3 adds to a request for `text` (:mod:`hologram.memory.graph.recall`): route 1 from
        `session_hits` — (event id, score) of this session's L3-held events that the request's own scorer
        found, `records` their records when the caller has them (else their blocks are read from the graph)
        — and route 2 from the
        entities `text` names, `hops` out; ranked (`scene` preferred), rendered within `budget_tokens`."""
        if budget_tokens <= 0:
            return EMPTY
        found = await self.ranked(text, hops=hops, session_hits=session_hits, scene=scene, records=records)
        return render(found, budget_tokens, session=session)

    async def ranked(
        self,
        text: str,
        *,
        hops: int = 1,
        session_hits: Sequence[tuple[str, float]] = (),
        scene: SceneHint | None = None,
        records: Mapping[str, EventRecord] | None = None,
    ) -> list[L3Hit]:
        """Every hit of :meth:`recall`, ranked, before the budget (a request renders them twice: within its
        share first, then into whatever the history left unused)."""
        if not self.exists():
            return []
        store = await self.store()
        if store is None:
            return []
        best = sorted(session_hits, key=lambda h: -h[1])[:MAX_SESSION_HITS]
        hits = await self._call(self._hits, store, text, hops, best, dict(records or {}))
        return rank(hits, scene)

    def _hits(
        self,
        store: GraphStore,
        text: str,
        hops: int,
        session_hits: list[tuple[str, float]],
        records: dict[str, EventRecord],
    ) -> list[L3Hit]:
        hits: list[L3Hit] = []
        if session_hits:
            scores = dict(session_hits)
            unknown = [e for e in scores if e not in records]
            with_facts = [e for e in scores if e in self._fact_events]
            by_event: dict[str, list[GraphBlock]] = {}
            for b in store.blocks_of_events([*unknown, *with_facts]) if unknown or with_facts else []:
                by_event.setdefault(b.event, []).append(b)
            for t in store.triples_of_events(with_facts) if with_facts else []:
                hits.append(_triple_hit(t, scores[t.source_event] * t.confidence, _source_of(t, by_event)))
            for event, score in session_hits:
                record = records.get(event)
                if record is not None and record.blocks:
                    hits.append(L3Hit("block", score, event, record.blocks[0].id, record.session, record.ts_ms,
                                      record.text, "", None))  # fmt: skip
                elif own := by_event.get(event):
                    body = "\n".join(b.text for b in own if b.text.strip())
                    hits.append(L3Hit("block", score, event, own[0].id, own[0].session, own[0].ts_ms, body, "", None))
        hits += self._entity_hits(store, text, hops)
        return hits

    def _entity_hits(self, store: GraphStore, text: str, hops: int) -> list[L3Hit]:
        named = mentions(text, self._names)
        if not named:
            return []
        asked = terms(text) - {t for k in named for t in terms(k)}
        found: dict[str, tuple[Triple, float]] = {}
        for key in named:
            near = store.neighbourhood(key, hops=1, limit=_PER_ENTITY)
            far = store.neighbourhood(key, hops=2, limit=_PER_ENTITY // 4) if hops >= 2 else []
            hub = len(near) > HUB_DEGREE
            for t in [*near, *far]:
                touches = key in (entity_key(t.subject), entity_key(t.value))
                shared = len(terms(f"{t.predicate} {t.value} {t.subject}") & asked)
                if hub and not shared:
                    continue
                score = (HOP_SCORE[1 if touches else 2] + WORD_BONUS * shared) * t.confidence
                if t.id not in found or score > found[t.id][1]:
                    found[t.id] = (t, score)
        if not found:
            return []
        blocks = {b.id: b for b in store.blocks(t.source_block for t, _ in found.values())}
        out = []
        for t, score in found.values():
            block = blocks.get(t.source_block)
            out.append(_triple_hit(t, score, block))
        return out

    async def search(self, text: str, *, limit: int = 20, passages_only: bool = False) -> list[L3Hit]:
        """L3 hits for `text` across every session: triples of the entities it names and blocks containing
        its words, best first (inspection: the CLI and the web page; the block part is a scan).
        `passages_only`: the blocks alone (``memory_recall`` has the entities' triples from `ranked` already)."""
        if not text.strip() or not self.exists():
            return []
        store = await self.store()
        if store is None:
            return []

        tokens = salient(text)  # rare-looking tokens (codes, names): a block holding one verbatim ranks first

        def run() -> list[L3Hit]:
            asked = list(dict.fromkeys([*(t.casefold() for t in tokens), *words(text)]))
            hits = [] if passages_only else self._entity_hits(store, text, 1)
            for block, n in store.find_blocks(asked, limit=limit):
                score = n / max(1, len(asked)) + len(matched(block.text, tokens))
                hits.append(L3Hit("block", score, block.event, block.id, block.session, block.ts_ms, block.text, "",
                                  None))  # fmt: skip
            return rank(hits)[:limit]

        found: list[L3Hit] = await self._call(run)
        return found

    async def neighbourhood(self, entity: str, *, hops: int = 1, limit: int = 50) -> list[SourcedTriple]:
        """Triples around `entity` (1 or 2 hops), each with its source block's text, session and time."""
        if not self.exists():
            return []
        store = await self.store()
        if store is None:
            return []

        def run() -> list[SourcedTriple]:
            triples = store.neighbourhood(entity, hops=hops, limit=limit)
            blocks = {b.id: b for b in store.blocks(t.source_block for t in triples)}
            out = []
            for t in triples:
                b = blocks.get(t.source_block)
                out.append(SourcedTriple(t, cut(b.text, SOURCE_CHARS) if b else "", b.session if b else None,
                                         b.ts_ms if b else (t.valid_at or 0)))  # fmt: skip
            return out

        triples: list[SourcedTriple] = await self._call(run)
        return triples


def _source_of(t: Triple, by_event: Mapping[str, list[GraphBlock]]) -> GraphBlock | None:
    return next((b for b in by_event.get(t.source_event, []) if b.id == t.source_block), None)


def _triple_hit(t: Triple, score: float, block: GraphBlock | None) -> L3Hit:
    return L3Hit(
        "triple", score, t.source_event, t.source_block, block.session if block else None,
        block.ts_ms if block else (t.valid_at or 0), triple_text(t), block.text if block else "", t,
    )  # fmt: skip


class _NoModel:
    """``extractor = "llm"`` with no provider configured: every event stays in L2 until there is one."""

    name = "llm"

    def extract(self, record: Any) -> list[Triple]:
        raise RuntimeError(
            '[memory.cooling] extractor = "llm" but no provider is configured: add one to settings.toml '
            'or set extractor = "auto"'
        )
