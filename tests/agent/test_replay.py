"""What the hub keeps for clients that come back, bounded in bytes (`hologram.agent.replay`), and a watcher's queue
(`hologram.agent.watcher`): the rules the e2e tests (tests/httpapi/test_bounds.py) rely on, case by case."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from pathlib import Path

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


def test_a_client_thousands_of_events_behind_waits_in_one_buffer_and_gets_them_all_in_order() -> None:
    """A client 5,000 small events behind (the web page while a long answer streams on a busy host): what waits
    is one buffer, not ~3 small objects an event (issue 41, docs/memory.md "Sixth round"); every event is then
    sent once, in order, byte for byte, through the buffer's compaction, and `flushed` returns. Mutation checks
    (done): the compaction cutting one event short, and the pump sending from the head without advancing it,
    each turn this red."""
    import sys

    async def go() -> None:
        written: list[bytes] = []
        seqs: list[int] = []
        gate = asyncio.Event()
        watcher: Watcher

        async def send(line: bytes) -> None:
            await gate.wait()
            written.append(line)
            seqs.append(watcher.sent_seq)

        watcher = Watcher("k", send, "slow", bound=10_000_000)
        lines = [b'{"seq":%d,"text":"%s"}' % (seq, b"w" * (seq % 7)) for seq in range(1, 5_001)]
        start = sys.getallocatedblocks()
        for seq, line in enumerate(lines, start=1):
            assert watcher.put(Sent(seq, "content.delta", "t", b"%b" % line))  # a copy: the watcher's only reference
        await asyncio.sleep(0)
        waiting = sys.getallocatedblocks() - start
        assert waiting < 500, waiting  # a queue of Sent objects: ~15,000
        assert watcher.queued_bytes == sum(map(len, lines))
        gate.set()
        await watcher.flushed()
        assert written == lines and seqs == list(range(1, 5_001)) and watcher.queued_bytes == 0
        assert watcher.put(Sent(5_001, "content.delta", "t", b"{}"))  # and it goes on after
        await watcher.flushed()
        assert written[-1] == b"{}" and watcher.sent_seq == 5_001
        watcher.close()

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


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0


def test_the_idle_pool_keeps_its_newest_in_memory_and_the_rest_on_disk_read_back_byte_for_byte(tmp_path: Path) -> None:
    """`[delivery] replay_idle_memory_bytes`: an idle pool's replays beyond it (oldest first) have their JSON in the
    spool, not in memory, and read back the same — `kept`, `after`, and whole again once taken. Mutation checks
    (done): `IdlePool.put` not spilling turns the memory assertions red; `take` not unspilling turns the
    file-emptied assertion red."""
    pool = IdlePool(100_000, memory=3_000, directory=tmp_path)
    made: dict[str, list[Sent]] = {}
    for n, name in enumerate(("a", "b", "c")):
        events = [Sent(seq, "content.delta" if seq % 4 else "item.completed", f"turn-{name}{seq // 30}",
                       b'{"n":%d,"x":"%s"}' % (seq, b"y" * (seq % 17))) for seq in range(n * 100 + 1, n * 100 + 91)]  # fmt: skip
        replay = Replay()
        for one in events:
            replay.add(one, 1_000_000)
        made[name] = events
        pool.put(name, replay)
    sizes = {name: sum(s.size for s in events) for name, events in made.items()}
    assert pool.size == sum(sizes.values()) and all(size < 3_000 for size in sizes.values())
    # the newest ("c") in memory, the older two spilled: their JSON is in the file, not in their chunks
    assert pool.in_memory == sizes["c"] <= 3_000
    assert all(chunk.blob == b"" and chunk.spool is pool.spool for name in "ab" for chunk in pool.replays[name].chunks)
    assert pool.spool.live == sizes["a"] + sizes["b"] and os.fstat(pool.spool.fd or -1).st_size == pool.spool.live
    assert not os.listdir(tmp_path)  # unlinked: nothing left behind when the kernel stops
    for name, events in made.items():  # read back byte for byte, spilled or not
        replay = pool.get(name)
        assert replay is not None and list(replay.kept()) == events
        assert list(replay.after(events[40].seq)) == events[41:] and list(replay.after(events[-1].seq)) == []
        assert replay.chunks[0].sent(5) == events[5]
    taken = pool.take("a")  # in use again: its JSON back in memory, the spool no longer keeps it
    assert taken is not None and list(taken.kept()) == made["a"] and not taken.spilled
    assert pool.spool.live == sizes["b"] and pool.in_memory == sizes["c"]
    pool.take("b")
    assert pool.spool.live == 0 and os.fstat(pool.spool.fd or -1).st_size == 0  # emptied with nothing kept
    fds = _fd_count()
    pool.close()
    assert _fd_count() == fds - 1 and pool.size == pool.in_memory == 0


def test_the_spool_stays_within_twice_what_it_keeps_as_old_sessions_go(tmp_path: Path) -> None:
    """Sessions put one after another into a pool bounded at ~3 replays: dropped replays' JSON is reclaimed (the
    spool rewritten), so the file stays within twice what it keeps (or `PACK_BYTES`), and what is kept still
    reads back. Mutation check (done): `_compact` returning at once turns the file-size assertion red."""
    pool = IdlePool(30_000, memory=0, directory=tmp_path)
    last: list[Sent] = []
    for n in range(60):
        last = [Sent(n * 1000 + i, "content.delta", f"t{n}", b"z" * 97 + b"%03d" % i) for i in range(100)]
        replay = Replay()
        for one in last:
            replay.add(one, 1_000_000)
        pool.put(f"s{n}", replay)
        assert pool.in_memory == 0 and pool.size <= 30_000
        assert pool.spool.end <= max(2 * pool.spool.live, PACK_BYTES), (n, pool.spool.end, pool.spool.live)
    assert len(pool.replays) == 3 and pool.spool.live == pool.size
    kept = pool.get("s59")
    assert kept is not None and list(kept.kept()) == last


def test_a_replay_bound_is_a_setting_with_its_default() -> None:
    """The in-memory part of the idle pool is a `[delivery]` bound in bytes (docs/settings.md)."""
    from hologram.config.settings import DeliverySettings

    assert DeliverySettings().replay_idle_memory_bytes == 256 * 1024
    assert DeliverySettings(replay_idle_memory_bytes=0).replay_idle_memory_bytes == 0


def test_an_idle_long_turn_is_one_chunk_read_back_the_same_with_few_objects(tmp_path: Path) -> None:
    """A long turn's replay is packed every 64 KiB as it runs (~90 chunks, each a few small objects made between
    the turn's short-lived ones); idle, it is made one chunk again (`Replay.merge`), its seqs a `range` when they
    follow each other, and reads back byte for byte — `kept`, `after`, `sent`, spilled and taken back, the
    oldest events the turn's bound dropped still dropped. Mutation checks (done): `IdlePool.put` without its
    `merge` turns the one-chunk assertion red; `Packed.merged` not shifting `ends` by the chunks before (``+ base``)
    turns the read-back red; `_seqs` returning a range for seqs with a hole turns the after() assertion red."""
    events = [Sent(seq, "content.delta" if seq % 9 else "item.completed", f"turn{seq // 5_000}",
                   b'{"text":"%d","x":"%s"}' % (seq, b"z" * (seq % 23))) for seq in range(1, 24_001)]  # fmt: skip
    replay = Replay()
    for one in events:
        replay.add(one, 700_000)
    assert len(replay.chunks) > 5 and replay.dropped_to > 0  # packed as it ran; the bound dropped the oldest
    kept = list(replay.kept())
    pool = IdlePool(1_000_000, memory=0, directory=tmp_path)  # spilled at once
    pool.put("s", replay)
    assert len(replay.chunks) == 1 and isinstance(replay.chunks[0].seqs, range) and replay.spilled
    assert list(replay.kept()) == kept and replay.size == sum(s.size for s in kept) == pool.size
    assert list(replay.after(kept[100].seq)) == kept[101:] and replay.gap(kept[0].seq - 2)
    assert replay.chunks[0].sent(7) == kept[7]
    back = pool.take("s")
    assert back is replay and not replay.spilled and list(replay.kept()) == kept
    holes = Replay()  # seqs that skip (events of the session not kept): an array, read back the same
    with_holes = [one for one in events[:3_000] if one.seq % 5]
    for one in with_holes:
        holes.add(one, 1_000_000)
    pool.put("h", holes)
    assert len(holes.chunks) == 1 and not isinstance(holes.chunks[0].seqs, range)
    assert list(holes.after(with_holes[500].seq)) == with_holes[501:] and list(holes.kept()) == with_holes
    pool.close()
