"""A second hop: the named person's turns that resemble what already matched best (issue 39 item 1).

A list question's members often share nothing with the question, not even its topic: "What outdoor
activities has Andrew done other than hiking?" is answered by "we went fishing at the lake" and "My
girlfriend, Toby and I are going camping" in other sessions; "What kind of hobbies does Evan pursue?" by
"kayaking and watching the sunset last summer". The question's own query (lexical, dense, its topic) finds
one or two of them; the rest lie hundreds of ranks down, some under the recall gate (``AUTO_RECALL_MIN_SCORE``).
They do resemble *each other*: one outdoor outing of Andrew's reads like another. So when the question names
exactly one of the session's speakers (``IndexQuery.speaker``, memory/rank/speakers.py), the
:data:`SOURCES` best-ranked inputs of that speaker that state something (neither the says-nothing nor the asks
bit) become a second dense query: each event's best passage cosine to any of them (the *maximum*, so each
source pulls its own kind of turn — a centroid of the top hits, dense Rocchio, was tried in the second round
and lost), z-scored over the session, and that speaker's inputs get :data:`WEIGHT` times its positive part
on top of their score (the sources themselves none).

Only where the question names a speaker: LoCoMo's questions do, and so does a group's or an imported
conversation's; a chat without speaker labels ranks as before, so the gate keeps its meaning there (a boost
after smoothing that reaches every session — the third round's opener boost — carried old events over the gate
on requests they did not match). Where a speaker is named, the pulled events are that person's and like what
matched the request most.

Cost: :data:`SOURCES` event vectors and one int8 product of the session's passages (within the dense horizon)
with them, beside the request's own (``SessionIndex.cosines_to_events``).

Measured on LoCoMo's stream protocol at 4k (one streamed state per conversation, ``SessionMemory.preview``
per question, USE int8; the dev split 26 / 30 / 41 chose): docs/memory.md, "Seventh round".
"""

from __future__ import annotations

import numpy as np

from hologram.memory.index.session_index import IndexQuery, SessionIndex
from hologram.memory.index.view import RequestView
from hologram.memory.rank.says_nothing import SAYS_NOTHING_BIT
from hologram.memory.rank.score import zscore
from hologram.memory.rank.speakers import ASKS_BIT, MAX_SPEAKERS, SPEAKER_SHIFT

__all__ = ["SOURCES", "WEIGHT", "second_hop"]

SOURCES = 3
"""How many of the named speaker's best-ranked statements the second hop starts from."""
WEIGHT = 0.5
"""The z-scored similarity to them (its positive part) added to the speaker's inputs, in z-score units."""

_INPUT = 1  # SessionIndex.roles: an input


def second_hop(
    index: SessionIndex | RequestView, scores: np.ndarray, query: IndexQuery, *, horizon: int | None
) -> np.ndarray:
    """`scores` with the second hop's lift (module docstring); `scores` itself when the query names no speaker,
    has no vector, or the speaker has no statement with a vector. `index` may be a request's view
    (memory/index/view.py): `scores` are then its events', and so is the z-score's population."""
    n = scores.size
    if not query.speaker or query.dense is None or n == 0 or n != len(index):
        return scores
    kind = index.kinds
    slot = (kind >> SPEAKER_SHIFT) & MAX_SPEAKERS
    theirs = (slot == query.speaker) & (index.roles == _INPUT)
    states = theirs & ((kind & (SAYS_NOTHING_BIT | ASKS_BIT)) == 0)
    pool = np.flatnonzero(states)
    if pool.size == 0:
        return scores
    sources = pool[np.argsort(-scores[pool], kind="stable")[:SOURCES]]
    sims = index.cosines_to_events(sources.tolist(), horizon)
    if sims is None:
        return scores
    have = np.isfinite(sims)
    z = np.zeros(n)
    z[have] = zscore(sims[have])
    lift = WEIGHT * np.maximum(z, 0.0) * theirs
    lift[sources] = 0.0
    out: np.ndarray = scores + lift
    return out
