"""The L3 store's interface: what distillation writes and recall reads, independent of the graph database.

**What L3 holds.** *Blocks* moved out of L2 (same block IDs, same text: a block has exactly one holder, so
once a move commits here, L2 deletes its copy) and *triples* ``(subject, predicate, value)`` between entity
nodes, each with its confidence, the event and block it was read from, ``valid_at`` / ``invalid_at`` and
when it was created. Entities are merged conservatively: two names are one entity only when
:func:`entity_key` (case-folded, whitespace collapsed, NFKC) makes them equal.

**One move, one transaction.** :meth:`GraphStore.move` writes a batch of events' blocks and the triples
read from them atomically. A block already here marks its event as moved (its triples committed with it),
so a batch retried after a crash skips it: nothing is written twice, and nothing is lost because L2 deletes
only after the move committed (copy, then delete — ``hologram.memory.cold.blocks``).

**Only the kernel opens it.** An embedded graph database allows one writing process; the store takes an
exclusive lock file beside the database so a second process fails at once with :class:`GraphLockedError`
(naming the fix: go through the running kernel) instead of an opaque backend error.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from hologram.base.errors import HologramError, Problem

__all__ = [
    "BACKENDS",
    "GraphBlock",
    "GraphCounts",
    "GraphLockedError",
    "GraphStore",
    "MoveReport",
    "Triple",
    "entity_key",
    "open_graph_store",
    "triple_id",
]

#: backend name → the Python modules that provide it, tried in order (LadybugDB renamed its module once).
BACKENDS: dict[str, tuple[str, ...]] = {"kuzu": ("kuzu",), "ladybug": ("real_ladybug", "ladybug")}


class GraphLockedError(HologramError):
    """Another process has the L3 database open (only the kernel may)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            Problem(
                "the memory graph (L3) is open in another process",
                file=str(path),
                hint="run the command against the running kernel, or stop `hologram up` (Ctrl-C in its terminal) first",
            )
        )


@dataclass(frozen=True, slots=True)
class GraphBlock:
    """A block held by L3: the L2 block it was, plus where it came from (its event, that event's time)."""

    id: str
    event: str
    ordinal: int
    kind: str
    text: str
    meta: str = "{}"
    """JSON, as L2 stored it (kept as text: L3 never interprets it)."""
    session: str | None = None
    ts_ms: int = 0


@dataclass(frozen=True, slots=True)
class Triple:
    """A fact read from a block. ``value`` occurs in the source block's text (both extractors gate on it)."""

    subject: str
    predicate: str
    value: str
    source_event: str
    source_block: str
    confidence: float = 1.0
    valid_at: int | None = None
    """UTC ms from which the fact holds (the source event's time when the text says nothing else)."""
    invalid_at: int | None = None
    created: float = 0.0
    id: str = field(default="")

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", triple_id(self.source_block, self.subject, self.predicate, self.value))


@dataclass(frozen=True, slots=True)
class MoveReport:
    """What one :meth:`GraphStore.move` did: events written, events found already moved, triples written."""

    moved: tuple[str, ...]
    already_held: tuple[str, ...]
    triples: int


@dataclass(frozen=True, slots=True)
class GraphCounts:
    blocks: int
    entities: int
    triples: int


def entity_key(name: str) -> str:
    """The merge key of an entity name: NFKC, case-folded, inner whitespace collapsed. Conservative on
    purpose ("Caroline" = "caroline " but "Caroline" ≠ "Carol"): a wrong merge joins two people's facts."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def triple_id(source_block: str, subject: str, predicate: str, value: str) -> str:
    """Stable: the same fact read again from the same block gets the same id (retries cannot duplicate)."""
    h = hashlib.sha256()
    for part in (source_block, entity_key(subject), predicate, entity_key(value)):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return "tri_" + h.hexdigest()[:32]


@runtime_checkable
class GraphStore(Protocol):
    """The L3 store (module docstring). Write methods are durable on return."""

    def move(self, blocks: Sequence[GraphBlock], triples: Sequence[Triple], *, now: float) -> MoveReport:
        """Store `blocks` (grouped by event) and the `triples` read from them in one transaction. An event
        any of whose blocks L3 already holds is skipped whole, with its triples (it was moved before)."""
        ...

    def held(self, block_ids: Iterable[str]) -> set[str]:
        """Which of `block_ids` L3 holds."""
        ...

    def events_held(self, event_ids: Iterable[str]) -> set[str]:
        """Which of `event_ids` L3 holds (their blocks moved here): what a restart reconciles L2 against."""
        ...

    def blocks(self, block_ids: Iterable[str]) -> list[GraphBlock]:
        """The blocks L3 holds among `block_ids`, by event time then ordinal."""
        ...

    def neighbourhood(self, entity: str, *, hops: int = 1, limit: int = 50) -> list[Triple]:
        """Triples touching `entity` (1 hop) or one of its neighbours (2 hops), at most `limit`."""
        ...

    def triples_of_events(self, event_ids: Iterable[str]) -> list[Triple]:
        """Every triple read from the given events (inspection and tests; a scan, not a hot path)."""
        ...

    def forget(self, event_ids: Iterable[str]) -> int:
        """Delete the given events' blocks and the triples read from them (their session was deleted), in one
        transaction; returns how many of the events L3 held. Entities stay (a name without facts)."""
        ...

    def entities(self) -> dict[str, str]:
        """Every entity: its key (:func:`entity_key`) → the first spelling seen (recall keeps this in memory
        to find the entities an input names)."""
        ...

    def fact_events(self) -> set[str]:
        """The events at least one triple was read from (most events yield none: recall skips the query)."""
        ...

    def blocks_of_events(self, event_ids: Iterable[str]) -> list[GraphBlock]:
        """The blocks of the given events L3 holds, by event time then ordinal."""
        ...

    def find_blocks(self, words: Sequence[str], *, limit: int = 50) -> list[tuple[GraphBlock, int]]:
        """Blocks whose text contains any of `words` (case-folded substring; a scan — inspection, not the
        request path), with how many of the words each contains, most first."""
        ...

    def counts(self) -> GraphCounts: ...

    def close(self) -> None: ...

    def __enter__(self) -> GraphStore: ...

    def __exit__(self, *exc: object) -> None: ...


def open_graph_store(path: str | Path, *, backend: str = "kuzu", threads: int = 1) -> GraphStore:
    """Open (creating if needed) the L3 database at `path` with the named backend (:data:`BACKENDS`) and
    `threads` database worker threads (``KuzuGraphStore`` says why one is the default)."""
    from hologram.memory.graph.kuzu_store import KuzuGraphStore

    return KuzuGraphStore(Path(path), backend=backend, threads=threads)
