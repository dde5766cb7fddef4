"""A request's ranking does the same work in a session twice as long, once the session is past its scoring window
and dense horizon (issue 39 item 7: the soak's late turns must cost what its early ones do).

One real session (SessionStore, ColdStore and index segments on disk) fed as the soak feeds it
(tests/memory/long_session.py), asked the same questions with `preview` (nothing moved) at ~2,600 events and
again, after more turns, at ~5,200 — with the session memory's window at 512 events and its dense horizon at 256,
so a short session is "long" (the product's are 4,096 and 2,048). What is counted, not timed: the BM25 postings
read (`SessionIndex.bm25_rows`) and the passages given a cosine (`SessionIndex.dense_rows`): the same numbers at
both sizes. Without the bounds the same counts double with the session (checked here too, so the test is known to
reach the bounded path). The fit's candidates are not flat at these sizes but capped (window.old_candidates:
~310 → ~420 for the common-words question, under its cap of the window and a budget's worth of old events).

Mutation checks (done): ``old_bounded`` returning every part turns the postings' count red; the dense horizon's
condition never true (``n > horizon`` in ``SessionIndex._cosine``) turns the cosines' count red.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.memory.long_session import FIXED, QUESTION, Long, build, feed

COMMON = "Did the meeting move to Thursday afternoon? Check the file and keep a note."
QUESTIONS = (COMMON, QUESTION, "会议 文件 星期四")
EARLY, LATE = 2_600, 5_200
WINDOW, HORIZON = 512, 256
BUDGET_WINDOW = 6000
#: Growth allowed between the two sizes: the newest events' own share moves a little with where a turn ends.
SLACK = 1.15


@dataclass
class Counts:
    postings: int
    cosines: int


def _counts(long: Long, label: str) -> list[Counts]:
    index = long.mem._state(long.sid).index
    out = []
    for k, text in enumerate(QUESTIONS):
        long.ask(f"{text} ({label} {k})")
        out.append(Counts(index.bm25_rows, index.dense_rows))
    return out


async def _grow(long: Long, events: int) -> None:
    """More of the soak's turns, a committed request every 50 as `build` does, until the index holds `events`."""
    mem, store, i = long.mem, long.mem.store, 1_000_000
    while len(mem._state(long.sid).index) < events:
        feed(store, long.sid, i)
        i += 1
        if i % 50 == 0:
            await mem.prepare(long.sid, "and the file?", window_tokens=long.window_tokens, fixed_tokens=FIXED)
            await mem.index(long.sid)


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Long, list[Counts], list[Counts], list[Counts]]]:
    long = asyncio.run(build(tmp_path_factory.mktemp("flat-request"), EARLY, BUDGET_WINDOW, score_window=WINDOW))
    long.mem.dense_horizon = HORIZON
    try:
        early = _counts(long, "early")
        asyncio.run(_grow(long, LATE))
        late = _counts(long, "late")
        long.mem.score_window = long.mem.dense_horizon = sys.maxsize  # no bounds: every pass over the session
        unbounded = _counts(long, "unbounded")
        long.mem.score_window, long.mem.dense_horizon = WINDOW, HORIZON
        yield long, early, late, unbounded
    finally:
        long.close()


def test_the_session_doubled_past_its_window(sizes: tuple[Long, list[Counts], list[Counts], list[Counts]]) -> None:
    long = sizes[0]
    index = long.mem._state(long.sid).index
    assert len(index) >= LATE and index.segments > 1
    assert LATE <= 2.2 * EARLY and EARLY > 2 * WINDOW  # both sizes past the window, the second about twice


@pytest.mark.parametrize("what", ["postings", "cosines"])
def test_a_late_request_does_the_work_of_an_early_one(
    sizes: tuple[Long, list[Counts], list[Counts], list[Counts]], what: str
) -> None:
    _, early, late, unbounded = sizes
    for e, la in zip(early, late, strict=True):
        first, second = getattr(e, what), getattr(la, what)
        assert 0 < second <= SLACK * first, (what, first, second)
    bounded, whole = (sum(getattr(c, what) for c in counts) for counts in (late, unbounded))
    assert whole > 3 * bounded, (what, bounded, whole)  # without the bounds: the whole session, so they are what
    # keeps it flat
