"""Sessions served in turn keep the sealed events their requests read back (issue 39 item 7): the soak's four
sessions round-robin each send ~100 recalled sealed events a request, and a cache of 256 for all of them made
every turn read its recalled events back from ``sessions.db`` (session_memory._OLD_EVENTS).

Four real sessions in one session memory (SessionStore, ColdStore and index segments on disk), each fed the soak's
turns (tests/memory/long_session.py) past a few sealed segments, asked in turn with `preview` (nothing moved);
what is counted is the rows `SessionStore.events_at` reads, not time.

Mutation check (done): ``_OLD_EVENTS`` back at 256 turns the test red (the second round reads its rows again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore
from hologram.sessions.event import Event
from tests.memory.long_session import FIXED, HashEmbedder, feed

SESSIONS = 4
EVENTS = 1_200
WINDOW_TOKENS = 5000
ASK = "Did the meeting move to Thursday afternoon? Check the file and keep a note."


class _Counting(SessionStore):
    """The store, counting the rows read back by seq (what the memory's read-back cache saves)."""

    rows = 0

    def events_at(self, session: str, seqs: Iterable[int]) -> list[Event]:
        asked = list(seqs)
        type(self).rows += len(asked)
        return super().events_at(session, asked)


async def _fill(mem: SessionMemory, store: SessionStore, sids: list[str]) -> None:
    i = 0
    while min(len(mem._state(s).index) for s in sids) < EVENTS:
        for sid in sids:
            feed(store, sid, i)
        i += 1
        if i % 50 == 0:
            for sid in sids:
                await mem.prepare(sid, "and the file?", window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED)
                await mem.index(sid)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SessionMemory, list[str]]]:
    root: Path = tmp_path_factory.mktemp("read-back")
    store = _Counting(root / "sessions.db")
    mem = SessionMemory(store, ColdStore(root / "cold.db"), HashEmbedder(), index_dir=root / "index")
    mem.release_idle_s = None
    sids = [store.create_session("cli", f"s{k}") for k in range(SESSIONS)]
    asyncio.run(_fill(mem, store, sids))
    yield mem, sids
    mem.cold.close()
    store.close()


def _round(mem: SessionMemory, sids: list[str], label: str) -> tuple[int, int]:
    """Each session asked once, in turn: (rows read back, sealed events the requests sent)."""
    before, sent = _Counting.rows, 0
    for sid in sids:
        prepared = asyncio.run(mem.preview(sid, f"{ASK} ({label})", window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED))
        sealed = mem._state(sid).index.sealed
        sent += sum(
            1 for seq in prepared.seqs if (p := mem._state(sid).index.position_of_seq(seq)) is not None and p < sealed
        )
    return _Counting.rows - before, sent


def test_sessions_in_turn_do_not_read_their_sent_events_back_every_turn(
    served: tuple[SessionMemory, list[str]],
) -> None:
    mem, sids = served
    assert all(mem._state(s).index.segments > 1 for s in sids)
    first, sent = _round(mem, sids, "x")
    assert sent > 256  # the four requests send more sealed events than the old cache held
    assert first > 0  # the first round reads back what the log no longer holds
    again, _ = _round(mem, sids, "x")  # each session's same request again, after the three others'
    assert again == 0, (first, again)
