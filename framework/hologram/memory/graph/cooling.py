"""Cooling: L2 events nobody used for a while are distilled into L3 (issue 15, item 2; DESIGN.md "Memory").

**Who cools.** An L2 event with at most ``max_accesses`` accesses (default 2) and no access — nor arrival in
L2 — for ``idle_hours`` (default 72): ``ColdStore.eligible_for_distillation``. A tool call and its results move
together or not at all: if any event of a call group is not eligible, none of the group moves this round
(L2 recall brings groups back whole; half a group left in L2 would come back as a result without its call).

**How a move stays lossless.** Per batch: peek the events (time order), extract triples from each (blocks
read input → reasoning → response → results), ``GraphStore.move`` the blocks and triples in one transaction,
and only then ``ColdStore.remove`` them from L2 — copy, then delete, as every move between holders (the
same L2 transaction records them as held by L3, which is how a request knows, without opening the graph,
that they are neither L1 nor L2: ``hologram.memory.cold.store``). An
extraction that fails (the model timed out, returned nothing valid) leaves that event in L2 to be retried by a
later run; a move that fails leaves the whole batch. A crash between the move's commit and L2's delete leaves
the events held twice: :func:`reconcile` (run first by every :func:`distill`, and by the kernel at start)
drops L2's copy of what L3 holds. tests/memory/test_cooling.py kills a distilling process at both points.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hologram.memory.cold.blocks import EventRecord
from hologram.memory.cold.store import DISTILL_IDLE_SECONDS, DISTILL_MAX_ACCESSES, ColdStore
from hologram.memory.graph.store import GraphBlock, GraphStore, Triple

__all__ = ["CoolingJob", "CoolingPolicy", "DistillReport", "Extractor", "distill", "fallback_summary", "reconcile"]

log = logging.getLogger("hologram.memory")


class Extractor(Protocol):
    """Reads triples out of one event; sync (rules) or async (a model). Raising leaves the event in L2."""

    name: str

    def extract(self, record: EventRecord) -> list[Triple] | Awaitable[list[Triple]]: ...


@dataclass(frozen=True, slots=True)
class CoolingPolicy:
    """``[memory.cooling]``: who cools and in what batches."""

    max_accesses: int = DISTILL_MAX_ACCESSES
    idle_hours: float = DISTILL_IDLE_SECONDS / 3600
    batch_events: int = 2000
    """Events per move (one L3 transaction). Large on purpose: a COPY's commit costs about the same whatever
    the batch (~1-2 s at 100k triples, docs/memory.md "L3"), so few large moves beat many small ones."""

    def __post_init__(self) -> None:
        for name, value, low in (("max_accesses", self.max_accesses, 0), ("idle_hours", self.idle_hours, 0),
                                 ("batch_events", self.batch_events, 1)):  # fmt: skip
            if value < low:
                raise ValueError(f"[memory.cooling] {name} = {value}: must be >= {low}")


@dataclass(slots=True)
class DistillReport:
    eligible: int = 0
    moved: list[str] = field(default_factory=list)
    triples: int = 0
    reconciled: list[str] = field(default_factory=list)
    """Events L2 still held although L3 had them (a crash between commit and delete), dropped from L2."""
    held_back: list[str] = field(default_factory=list)
    """Eligible events kept in L2 because a member of their call group is not eligible."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(event id, why): extraction failed, the event stays in L2 and is retried by a later run."""
    extractor: str = ""
    """The extractor's name (``deterministic``, ``llm``, ``auto``: the model with the rules as fallback)."""
    fallbacks: dict[str, int] = field(default_factory=dict)
    """Reason → events the rules read because the model failed that way (``extractor = "auto"``)."""
    at: float = 0.0
    """When the run started (UTC seconds)."""


def reconcile(cold: ColdStore, graph: GraphStore) -> list[str]:
    """Drop L2's copy of every event L3 holds (module docstring); returns them."""
    return cold.remove(graph.events_held(cold.ids()), into_l3=True)


def graph_blocks(record: EventRecord) -> list[GraphBlock]:
    """An L2 event's blocks as L3 holds them: same ids, text and meta."""
    return [
        GraphBlock(
            b.id, record.id, i, b.kind, b.text, json.dumps(dict(b.meta), ensure_ascii=False, default=str),
            record.session, record.ts_ms,
        )
        for i, b in enumerate(record.blocks)
    ]  # fmt: skip


async def distill(
    cold: ColdStore,
    graph: GraphStore,
    extractor: Extractor,
    *,
    policy: CoolingPolicy | None = None,
    now: float | None = None,
) -> DistillReport:
    """One cooling run (module docstring). Store calls run in worker threads, off the event loop."""
    policy = policy or CoolingPolicy()
    at = time.time() if now is None else now
    report = DistillReport(extractor=extractor.name, at=at)
    report.reconciled = await asyncio.to_thread(reconcile, cold, graph)
    ids = await asyncio.to_thread(
        cold.eligible_for_distillation, at, max_accesses=policy.max_accesses, idle_seconds=policy.idle_hours * 3600
    )
    report.eligible = len(ids)
    ids = await asyncio.to_thread(_whole_groups, cold, ids, report)
    for start in range(0, len(ids), policy.batch_events):
        chunk = ids[start : start + policy.batch_events]
        records = await asyncio.to_thread(cold.peek, chunk)
        blocks: list[GraphBlock] = []
        triples: list[Triple] = []
        for record in records:
            try:
                found = await _extract(extractor, record)
            except Exception as exc:  # one event's failure must not cost the batch
                report.failed.append((record.id, f"{type(exc).__name__}: {exc}"))
                log.warning("distillation of %s by the %s extractor failed (%s); it stays in L2", record.id,
                            extractor.name, exc)  # fmt: skip
                continue
            blocks += graph_blocks(record)
            triples += found
        if not blocks:
            continue
        moved = await asyncio.to_thread(graph.move, blocks, triples, now=at)
        done = [*moved.moved, *moved.already_held]
        await asyncio.to_thread(functools.partial(cold.remove, done, into_l3=True, now=at))
        report.moved += done
        report.triples += moved.triples
    fallbacks = getattr(extractor, "fallbacks", None)
    if fallbacks:
        report.fallbacks = dict(fallbacks)
        log.warning("cooling: the model could not read %d event(s), read by the rules instead (%s)",
                    sum(fallbacks.values()), fallback_summary(report.fallbacks))  # fmt: skip
    return report


def fallback_summary(fallbacks: dict[str, int]) -> str:
    """``{"the answer is not JSON": 17, …}`` → "17: the answer is not JSON; 2: …", most first."""
    return "; ".join(f"{n}: {why}" for why, n in sorted(fallbacks.items(), key=lambda kv: (-kv[1], kv[0])))


def _whole_groups(cold: ColdStore, ids: Sequence[str], report: DistillReport) -> list[str]:
    """`ids` without any event whose call group has a member that is not among them (module docstring)."""
    eligible = set(ids)
    keep: list[str] = []
    for eid in ids:
        mates = cold.group_mates([eid])
        if all(m in eligible for m in mates):
            keep.append(eid)
        else:
            report.held_back.append(eid)
    return keep


async def _extract(extractor: Extractor, record: EventRecord) -> list[Triple]:
    if inspect.iscoroutinefunction(extractor.extract):
        result = extractor.extract(record)
        assert inspect.isawaitable(result)
        return list(await result)
    found = await asyncio.to_thread(extractor.extract, record)
    if inspect.isawaitable(found):
        return list(await found)
    return list(found)


class CoolingJob:
    """The background job: :func:`distill` every `interval_s` seconds until stopped.

    Why a job and not a hook on every request: eligibility changes on the scale of hours (72 h idle), and a
    run costs one L3 transaction per batch — a periodic task keeps that off the request path. A run that
    fails (L3 unwritable, a bug) is logged and the next one retries: what it did not move stays in L2.
    ``sleep`` and ``clock`` are injectable so a test drives the job by events, not by waiting.
    """

    def __init__(
        self,
        cold: ColdStore,
        graph: GraphStore,
        extractor: Extractor,
        *,
        policy: CoolingPolicy | None = None,
        interval_s: float = 3600.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.cold, self.graph, self.extractor = cold, graph, extractor
        self.policy = policy or CoolingPolicy()
        self.interval_s, self.clock, self.sleep = interval_s, clock, sleep
        self.reports: list[DistillReport] = []
        self.errors: list[BaseException] = []
        self._task: asyncio.Task[None] | None = None

    async def run_once(self) -> DistillReport:
        report = await distill(self.cold, self.graph, self.extractor, policy=self.policy, now=self.clock())
        self.reports.append(report)
        if report.moved or report.failed:
            log.info("cooling: %d events moved to L3 (%d triples), %d left in L2 after a failed extraction",
                     len(report.moved), report.triples, len(report.failed))  # fmt: skip
        return report

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.errors.append(exc)
                log.error("cooling run failed (%s: %s); nothing it had not moved left L2, next run in %.0f s",
                          type(exc).__name__, exc, self.interval_s)  # fmt: skip
            await self.sleep(self.interval_s)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="hologram-cooling")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
