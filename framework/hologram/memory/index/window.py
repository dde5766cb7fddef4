"""The scoring window: what bounds a request's BM25 pass in a long session (issue 39 item 7).

Why: a session's common words (the soak's "file", "note", "会议") have postings in nearly every passage, so BM25
over them cost each request in proportion to the session's length — the largest of the per-request passes that
grew a late turn's CPU. Above :data:`SCORE_WINDOW` events, the passages before the window enter BM25 only
through the query's words that name few of them (at most :data:`OLD_POSTINGS`): an old event named by a rare
word (a code, a name, a place) still scores as before, while a word the old part says everywhere — which told
those passages apart from nothing — adds nothing there. The window's passages score exactly as without it
(a term's document frequency, hence its idf and specificity, still counts every passage).

:data:`SCORE_WINDOW` is 4,096 events: twice the dense horizon (session_index.DENSE_HORIZON) and ~2.7× LoCoMo's
longest conversation with its answers (< 1,500 events), so every benchmark conversation ranks exactly as before;
~800 of the soak's turns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Events a request's BM25 reads every posting of (the newest); older passages only through rare words.
SCORE_WINDOW = 4096
#: A query word's postings before the window are read when they are at most this many (a rare word there).
OLD_POSTINGS = 256


def old_bounded(
    found: Sequence[tuple[np.ndarray, np.ndarray]], first_recent: int, limit: int = OLD_POSTINGS
) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
    """One term's posting parts (slots ascending within each part, the parts in slot order) with the part
    before passage `first_recent` dropped when it holds more than `limit` postings; and the slots before
    `first_recent` that are kept (none when dropped: what names old passages into a request's view). Reads
    each part's ends only, and one binary search in the part that straddles the boundary — once, for both
    answers (a request asks this of every query word, and each search in a segment's mapped postings faults
    its pages in anew) — never the postings themselves, so a common word's old postings cost nothing."""
    cut = [0] * len(found)  # per part: how many of its postings come before first_recent
    for at, (slots, _tfs) in enumerate(found):
        if slots.size == 0:
            continue
        if int(slots[0]) >= first_recent:
            break  # this part and every later one are inside the window
        # the key in the slots' own dtype: a Python int would make numpy cast the whole (mapped) part to int64
        # first — every page of a common word's postings read, to find one boundary
        cut[at] = (
            slots.size if int(slots[-1]) < first_recent else int(slots.searchsorted(slots.dtype.type(first_recent)))
        )
    if sum(cut) <= limit:
        return list(found), [slots[:k] for (slots, _tfs), k in zip(found, cut, strict=True) if k]
    return [(slots[k:], tfs[k:]) for (slots, tfs), k in zip(found, cut, strict=True) if slots.size > k], []


#: Older events (before the window) a request's fit considers at least: the best-scoring of those that clearly
#: match. More than a 4k-token budget can hold (~120 of the soak's events); a larger budget raises it
#: (:func:`old_candidates`), so the bound follows the request's size, not the session's.
OLD_CANDIDATES = 512
#: The fewest tokens an event costs in a request (its message's overhead and a word): a budget holds at most
#: budget / this many events.
_MIN_EVENT_TOKENS = 8


def old_candidates(extra: np.ndarray, scores: np.ndarray, start: int, budget: int) -> np.ndarray:
    """`extra` (the old layers' events that clearly match, a mask over the session) with those before position
    `start` cut to the best-scoring :data:`OLD_CANDIDATES` (or as many as `budget` tokens could hold, when
    more): in a long session whose words repeat, thousands of old events clear the recall threshold, and the
    fit's passes over the candidates grew with them, while a request sends at most what its budget holds."""
    limit = max(OLD_CANDIDATES, budget // _MIN_EVENT_TOKENS)
    old = np.flatnonzero(extra[:start])
    if old.size <= limit:
        return extra
    drop = old[np.argpartition(-scores[old], limit)[limit:]]
    out: np.ndarray = extra.copy()
    out[drop] = False
    return out
