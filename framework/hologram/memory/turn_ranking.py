"""A turn's ranking kept for its later requests: scored once a turn, fitted once a request.

Why: every LLM request of a turn ranks against the same query — the turn's input (agent/turn.py passes it to
each `SessionMemory.prepare`) — so a tool loop's second and later requests scored the same session for the same
words again, with only the loop's own new events (the call, its results) added at the end. Scoring — the request
view, BM25 and the dense products over it, the second hop, L3's entity recall, other sessions' search, the
query's own vector — is most of the kernel's own time on a turn's path, and in a long session it grows with the
scoring window (issue 39 item 7: the soak's late turns spent their extra main-thread time there).

So the first request of a turn that commits keeps what it scored (:class:`TurnRanking`): the events it ranked,
their scores, and the notes' shares of the budget. A later request of the same turn extends that view with
the events appended since — the turn's newest, which the fit pins anyway — and fits again: the same fit, the
same moves to L2, the same note, over the same scores. What changed in between is read afresh: which layer holds
each event (a ``coldcontext_query`` recall, a distillation), what is protected. A new input is a new turn (ranked);
an overflow recovery ranks; a recall that brings back an event the view lacks ranks. The ranking is let go when
the turn ends, so nothing of it is held between turns.

A side effect users see: when the appended events still fit, a later request sends the same older events in the
same place as the first, so the first request's prompt is a prefix of the next one's — what the providers'
prompt caches bill at a fraction (DeepSeek's context cache, OpenAI's cached input).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hologram.memory.index.view import RequestView

if TYPE_CHECKING:
    from hologram.memory.index.session_index import SessionIndex

__all__ = ["TurnRanking"]


@dataclass(frozen=True, slots=True)
class TurnRanking:
    """What a turn's first ranked request scored, and under which conditions a later request may fit it again."""

    input_seq: int
    """The seq of the turn's input (a new input is a new turn)."""
    text: str
    """The query it was scored against."""
    budget: int
    """The request's whole history budget (before the L3 and other sessions' shares)."""
    scene: object
    """The scene hint it was ranked with (L3 recall prefers its memory)."""
    events: int
    """Events in the session's index when it was scored: those after it are the turn's own, appended."""
    positions: np.ndarray
    """Session positions of the ranked view's events, ascending."""
    old: int
    """How many of them came before the scoring window (`RequestView.old`)."""
    whole: bool
    """The view was the whole session (within the scoring window)."""
    scores: np.ndarray
    """The ranking's scores over the view's events."""
    shares: Any
    """What the request computed before it ranked and the fit then uses: L3's entity hits and their reserved
    share, other sessions' hits and their note, the history's budget after both (opaque here)."""

    def holds(self, *, input_seq: int, text: str, budget: int, scene: object, events: int) -> bool:
        """Whether a request may fit this ranking again: the same turn input, query, budget and scene, and an
        index that only grew since."""
        return (
            input_seq == self.input_seq
            and text == self.text
            and budget == self.budget
            and scene == self.scene
            and events >= self.events
        )

    def extended(self, index: SessionIndex, window: int | None) -> tuple[RequestView, np.ndarray]:
        """The view and scores with the events appended since (positions ``events..len(index)``), scored above
        every ranked event: the turn's newest, the fit's pinned recent part."""
        n = len(index)
        added = n - self.events
        top = float(self.scores.max()) + 1.0 if self.scores.size else 1.0
        scores = np.concatenate([self.scores, np.full(added, top)]) if added else self.scores
        if self.whole:
            view = RequestView.whole(index, window=window)
        else:
            positions = np.concatenate([self.positions, np.arange(self.events, n, dtype=np.int64)])
            view = RequestView(index, positions, old=self.old, is_whole=False)
        return view, scores
