"""What the hub keeps for clients that come back, bounded in bytes (`hologram.agent.replay`), and a watcher's queue
(`hologram.agent.watcher`): the rules the e2e tests (tests/httpapi/test_bounds.py) rely on, case by case."""

from __future__ import annotations

import asyncio
from collections import deque

from hologram.agent.replay import PACK_BYTES, IdlePool, Replay, Sent
from hologram.agent.watcher import Watcher


def sent(seq: int, size: int = 100, kind: str = "content.delta") -> Sent:
    return Sent(seq, kind, "t", b"x" * size)


def test_a_replay_keeps_its_newest_events_within_its_bound_and_says_what_it_dropped() -> None:
    replay = Replay()
    for seq in range(1, 11):
        replay.add(sent(seq), 350)
    assert [s.seq for s in replay.events] == [8, 9, 10] and replay.size == 300
    assert replay.gap(6) and replay.gap(7) is False  # 7 was dropped: a client that has 7 misses nothing
    replay.add(sent(11, 1000, "turn.ended"), 350)  # larger than the bound: it stays (the turn's end is replayable)
    assert [s.seq for s in replay.events] == [11]
    replay.restart()  # a new turn: the last one's events go, and a client inside it has a gap
    assert not replay.events and replay.size == 0 and replay.gap(10)
    assert [s.seq for s in Replay(events=deque([sent(1), sent(2)])).after(1)] == [2]


def test_the_idle_pool_is_bounded_all_together_oldest_sessions_first() -> None:
    """Mutation check (done): `IdlePool.put` without its eviction loop turns this red."""
    pool = IdlePool(500)
    for name in ("a", "b", "c"):
        replay = Replay()
        for seq in range(1, 3):
            replay.add(sent(seq), 10_000)
        pool.put(name, replay)
    assert list(pool.replays) == ["b", "c"] and pool.size == 400
    taken = pool.take("b")
    assert taken is not None and pool.size == 200 and pool.get("b") is None
    big = Replay()
    big.add(sent(1, 600), 10_000)  # one event larger than the whole pool: not kept
    pool.put("big", big)
    assert pool.get("big") is None and pool.size == 200
    tail = Replay()
    for seq in range(1, 10):
        tail.add(sent(seq), 10_000)
    pool.put("tail", tail)  # trimmed to the pool's bound, its newest events kept
    assert [s.seq for s in tail.kept()] == [5, 6, 7, 8, 9] and pool.size == 500 and list(pool.replays) == ["tail"]


def test_a_watcher_too_far_behind_is_dropped_beyond_a_replay_it_asked_for() -> None:
    """Mutation check (done): `Watcher.put` without its bound turns this red."""

    async def go() -> None:
        written: list[bytes] = []
        gate = asyncio.Event()
        dropped: list[Watcher] = []

        async def send(line: bytes) -> None:
            await gate.wait()  # a client that does not read
            written.append(line)

        watcher = Watcher("k", send, "slow", bound=300, on_drop=dropped.append)
        for seq in range(1, 6):  # a replay of 500 bytes: queued whatever the bound
            assert watcher.put(sent(seq), replay=True)
        assert watcher.put(sent(6)) and watcher.put(sent(7)) and watcher.put(sent(8))  # 300 more beyond it
        assert not watcher.put(sent(9))  # one more: too far behind
        assert dropped == [watcher] and watcher.closed and watcher.queued_bytes == 0
        gate.set()
        await asyncio.sleep(0)
        assert not watcher.put(sent(10))
        alone = Watcher("k2", send, "big", bound=10)
        assert alone.put(sent(1, 50))  # larger than the bound with nothing waiting: it goes
        await alone.flushed()
        assert written[-1] == b"x" * 50 and alone.sent_seq == 1 and alone.queued_bytes == 0

    asyncio.run(go())


def test_an_idle_replay_is_packed_and_reads_back_the_same_events() -> None:
    """An idle session's events are packed (one bytes object, arrays of seqs and ends): `after`, `kept`, the
    pool's byte bound and a later trim see exactly the events that went in. Mutation checks (done): `Packed.sent`
    slicing the wrong range (``ends[i] - 1`` on) turns this red; `trim` forgetting to subtract a packed
    event's size turns the bound assertions red."""
    events = [Sent(seq, "content.delta" if seq % 3 else "item.completed", f"turn{seq // 7}", b"{" + b"x" * seq + b"}")
              for seq in range(1, 41)]  # fmt: skip
    replay = Replay()
    for one in events:
        replay.add(one, 1_000_000)
    pool = IdlePool(600)
    pool.put("s", replay)  # trimmed to the pool's bound, then packed
    assert replay.chunks and not replay.events
    kept = list(replay.kept())
    assert sum(s.size for s in kept) == replay.size == pool.size <= 600
    assert kept == events[-len(kept) :] and len(replay) == len(kept)  # the newest, byte for byte
    assert replay.gap(events[-len(kept) - 2].seq) and not replay.gap(kept[0].seq - 1)
    assert list(replay.after(35)) == events[35:]
    assert list(replay.after(0)) == kept
    back = pool.take("s")  # the session is in use again: new events join the packed ones
    assert back is replay and pool.size == 0
    more = Sent(41, "turn.ended", "turn5", b'{"end":1}')
    replay.add(more, 300)  # trims packed events first, oldest first
    assert list(replay.kept()) == [*events[-len(list(replay.kept())) + 1 :], more]
    assert replay.size == sum(s.size for s in replay.kept()) <= 300
    replay.restart()
    assert len(replay) == 0 and replay.size == 0 and replay.gap(40)


def test_a_running_turns_replay_is_packed_as_it_grows_and_trimmed_by_bytes() -> None:
    """A long turn's events are packed every `PACK_BYTES` (not kept as ~24k objects to its end), its bound still
    counted in bytes of JSON and every kept event read back byte for byte. Mutation checks (done): `add` without
    its `pack` call turns this red (the objects pile up); `Packed.drop_oldest` not advancing `first` turns it red."""
    events = [Sent(seq, "content.delta", "t", b'{"text":"%d"}' % seq + b" " * (seq % 50)) for seq in range(1, 20_001)]
    bound = 200_000
    replay = Replay()
    for one in events:
        replay.add(one, bound)
        assert replay.live < PACK_BYTES and len(replay.events) < 2_000  # the newest few as objects, no more
    kept = list(replay.kept())
    assert len(replay.chunks) >= 3 and len(kept) == len(replay)
    assert kept == events[-len(kept) :]
    assert replay.size == sum(s.size for s in kept) and bound - 64 < replay.size <= bound  # one dropped event less
    assert replay.dropped_to == kept[0].seq - 1 and not replay.gap(kept[0].seq - 1) and replay.gap(kept[0].seq - 2)
    middle = kept[len(kept) // 2].seq
    assert list(replay.after(middle)) == events[middle:]
    assert list(replay.after(events[-1].seq)) == []
