"""The scoring view of an event that :func:`~hologram.memory.rank.prune.prune` and the scorers take.

A view, not a second model of the conversation: it is made from a record
(:meth:`~hologram.memory.cold.blocks.EventRecord.to_memory_event`) or, in the benchmarks, from a dataset's turn.
The agent's path ranks with :mod:`hologram.memory.index.session_index` (the same method on arrays; ``prune`` is its
reference, tests/memory/test_fit_properties.py). It keeps only what scoring and budgeting use:

* ``text`` — everything the model will read back, reasoning included (issue 5 §6: reasoning is part of the
  event, counts toward its tokens and toward its vectors), flattened by :func:`event_text`;
* ``tokens`` — what keeping it costs in the prompt;
* ``group`` — a tool call and its results share a group and are kept or pruned together (the provider APIs
  reject a result without its call, and a call without its result is useless).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hologram.memory.embed.vectors import DenseVector
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokens import estimate_tokens

__all__ = ["MemoryEvent", "Query", "event_text", "make_event"]


@dataclass(frozen=True, slots=True, eq=False)
class MemoryEvent:
    """One prunable unit of history (see module docstring)."""

    id: str
    timestamp: float
    text: str
    tokens: int
    group: str | None = None
    dense: DenseVector | None = None
    terms: TermVector | None = None

    @property
    def group_key(self) -> str:
        """Events with the same key move together; an event without a group is its own group."""
        return self.group if self.group is not None else f"\x00{self.id}"


@dataclass(frozen=True, slots=True, eq=False)
class Query:
    """What history is scored against: the current input, with vectors made the same way as events'."""

    text: str
    terms: TermVector
    dense: DenseVector | None = None


def event_text(
    *,
    input: str = "",
    reasoning: str = "",
    response: str = "",
    tool_calls: Iterable[str] = (),
    tool_results: Iterable[str] = (),
    media_text: Iterable[str] = (),
) -> str:
    """Flatten an event's parts into the text used for its vectors and token estimate, in reading order."""
    parts = [input, reasoning, response, *tool_calls, *tool_results, *media_text]
    return "\n".join(p for p in parts if p)


def make_event(
    id: str,
    timestamp: float,
    text: str,
    *,
    group: str | None = None,
    dense: DenseVector | None = None,
    tokens: int | None = None,
) -> MemoryEvent:
    """Build an event with its lexical vector and token estimate (the dense vector comes from the embedder)."""
    return MemoryEvent(
        id=id,
        timestamp=timestamp,
        text=text,
        tokens=estimate_tokens(text) if tokens is None else tokens,
        group=group,
        dense=dense,
        terms=TermVector.from_text(text),
    )
