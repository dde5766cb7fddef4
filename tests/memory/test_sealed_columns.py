"""The sealed segments' columns are concatenated once and kept between the requests of the session in use
(`SessionIndex._sealed_columns`, issue 39 item 7): a turn's later requests concatenate only the tail onto them.
The columns a request reads are the same values as a fresh concatenation's, a seal or a merge (a new segment
list) makes them again, and another session's request drops them (one session's are kept at a time).

Mutation checks (done): keying the kept columns without the segment list (``kept[0] != key`` never true) turns
``test_sealed_columns_are_kept_between_requests_and_follow_the_segments`` red (a seal's new segment is missing
from the columns), and so does never dropping them for the session not in use; ``_Columns.column`` that
concatenates every segment again (the kept part ignored) turns it red too (the same arrays are not reused); the
roles' tail computed from the start of the session (``start = 0``) doubles their length and turns it red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from hologram.memory.index.session_index import _TAIL_COLUMNS
from hologram.memory.rank.speakers import KIND_MASK
from hologram.memory.session_memory import SessionMemory

from .test_sealed_index import _memory, _settle, _turns
from .test_session_memory import window_for


def _fresh_column(mem: SessionMemory, sid: str, name: str) -> np.ndarray:
    """The column concatenated from the segments' maps and the tail, without any kept part."""
    index = mem._sessions[sid].index
    attr, dtype = _TAIL_COLUMNS[name]
    tail = getattr(index, attr)
    with index.reading():
        parts = [seg[name] for seg in index._opened()]
        return np.concatenate([*parts, np.array(tail, dtype=dtype)[: len(tail)]])


def test_sealed_columns_are_kept_between_requests_and_follow_the_segments(tmp_path: Path) -> None:
    mem = _memory(tmp_path, "m", sealed=True)
    for sid in ("s1", "s2"):
        mem.store.create_session("cli", sid)

    async def preview(sid: str, text: str) -> None:
        await mem.preview(sid, text, window_tokens=window_for(260), fixed_tokens=0)

    async def run() -> None:
        await _turns([mem], "s1", 0, 10)
        await _turns([mem], "s2", 0, 3)
        await _settle(mem, "s1")
        index = mem._sessions["s1"].index
        assert index.segments >= 2, "the test's premise: sealed segments"
        await preview("s1", "glacier hiking in Iceland")
        kept = index._sealed_columns
        assert kept is not None and {"cost", "unit_of", "first_passage"} <= set(kept[1])
        cost = kept[1]["cost"]
        assert not cost.flags.writeable and cost.flags.owndata  # a copy, not a view of a map closed after
        await preview("s1", "the jazz concert tickets")  # a turn's later request: the same arrays reused
        assert index._sealed_columns is kept and kept[1]["cost"] is cost
        for name in ("cost", "unit_of", "first_passage", "turn", "kind"):
            with index.reading():
                got = index._cols().column(name).copy()
            assert np.array_equal(got, _fresh_column(mem, "s1", name)), name
        with index.reading():  # the roles: the sealed part's kept too, the same values as over the whole session
            roles = index.roles.copy()
        assert "roles" in kept[1]
        kind = _fresh_column(mem, "s1", "kind") & np.uint8(KIND_MASK)
        expected = np.where(kind == 1, 1, 0).astype(np.uint8)
        expected[(kind == 2) & (_fresh_column(mem, "s1", "grouped") == 0)] = 2
        assert np.array_equal(roles, expected) and set(roles.tolist()) == {0, 1, 2}
        # more turns seal new segments: the kept columns are made again, over the new list
        before = index.segments, kept[0]
        await _turns([mem], "s1", 10, 12)
        await _settle(mem, "s1")
        await preview("s1", "glacier hiking in Iceland")
        now = index._sealed_columns
        assert now is not None and now[0] != before[1] and index.segments >= 1
        for name in ("cost", "unit_of", "first_passage"):
            with index.reading():
                got = index._cols().column(name).copy()
            assert np.array_equal(got, _fresh_column(mem, "s1", name)), name
        # another session's request drops them: one session's are kept at a time
        await preview("s2", "anything")
        assert index._sealed_columns is None

    asyncio.run(run())
    asyncio.run(mem.aclose())


def test_one_events_seq_and_time_are_read_without_building_their_columns(tmp_path: Path) -> None:
    """`seq_at`, `ts_at` (what a request's query asks: its input's seq, the newest event's time), `seqs_of` and
    `ts_of` (the sent inputs' seqs and times, for their markup) give the
    columns' values at every position — in the sealed segments, in the tail, counted from the end — and leave
    the whole-session `seq`/`ts` columns unbuilt: building them was a copy of the session per request in the
    soak's round robin. Mutation check (done): `value_at` reading the tail at a wrong offset (the
    segments counted twice) turns the equality red."""
    mem = _memory(tmp_path, "m", sealed=True)
    mem.store.create_session("cli", "s1")

    async def run() -> None:
        await _turns([mem], "s1", 0, 10)
        await _settle(mem, "s1")
        await _turns([mem], "s1", 10, 1)  # a turn after the seal: events in the tail

    asyncio.run(run())
    index = mem._sessions["s1"].index
    assert index.segments >= 2 and len(index) > index._base_event, "the premise: segments and a tail"
    seqs, ts = _fresh_column(mem, "s1", "seq"), _fresh_column(mem, "s1", "ts")
    with index.reading():
        got_seqs = [index.seq_at(i) for i in range(len(index))]
        got_ts = [index.ts_at(i) for i in range(len(index))]
        assert (index.seq_at(-1), index.ts_at(-1)) == (int(seqs[-1]), float(ts[-1]))
        at = np.array([0, 3, index._base_event - 1, index._base_event, len(index) - 1, 5], dtype=np.int64)
        assert index.seqs_of(at).tolist() == seqs[at].tolist() and index.ts_of(at).tolist() == ts[at].tolist()
        made = index._cols()._made
        assert "seq" not in made and "ts" not in made, "a whole column was built"
    assert got_seqs == seqs.tolist() and got_ts == ts.tolist()
