"""What the hub keeps for clients that come back, bounded in bytes (`hologram.agent.replay`), and a watcher's queue
(`hologram.agent.watcher`): the rules the e2e tests (tests/httpapi/test_bounds.py) rely on, case by case."""

from __future__ import annotations

import asyncio
from collections import deque

from hologram.agent.replay import IdlePool, Replay, Sent
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
    assert [s.seq for s in tail.events] == [5, 6, 7, 8, 9] and pool.size == 500 and list(pool.replays) == ["tail"]


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
