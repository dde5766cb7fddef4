"""Arena allocator invariants, misuse errors, and sharing the memfd with a real child process."""

from __future__ import annotations

import hashlib
import itertools
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.rpc import Arena, ArenaError, ArenaFull, BadRef, FreeListAllocator, from_blob, to_blob
from tests.kit.loop import run

from .helpers import spawn_child


def check_invariants(a: FreeListAllocator) -> None:
    blocks = sorted([(o, n, "live") for o, n in a.live.items()] + [(o, n, "free") for o, n in a.free_blocks])
    pos = 0
    for offset, length, _kind in blocks:
        assert offset == pos, "blocks must tile the arena: no gap, no overlap"
        assert offset % a.align == 0 and length > 0
        pos += length
    assert pos == a.size
    assert a.used + a.free_bytes == a.size
    frees = a.free_blocks
    for (o1, n1), (o2, _) in itertools.pairwise(frees):
        assert o1 + n1 < o2, "adjacent free blocks must have been coalesced"


@settings(max_examples=200)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(1, 5000), st.integers(0, 10**6)), max_size=120))
def test_allocator_invariants_hold_under_any_sequence(ops: list[tuple[bool, int, int]]) -> None:
    a = FreeListAllocator(64 * 1024)
    live: list[int] = []
    for do_alloc, size, pick in ops:
        if do_alloc or not live:
            try:
                live.append(a.alloc(size))
            except ArenaFull as full:
                assert full.largest < -(-size // 64) * 64
        else:
            a.free(live.pop(pick % len(live)))
        check_invariants(a)
    for offset in live:
        a.free(offset)
    assert a.free_blocks == [(0, a.size)]  # everything coalesced back into one block


def test_many_cycles_leave_no_leak() -> None:
    a = FreeListAllocator(1024 * 1024)
    rng = random.Random(7)
    live: list[int] = []
    for _ in range(20_000):
        if live and (rng.random() < 0.5 or len(live) > 200):
            a.free(live.pop(rng.randrange(len(live))))
        else:
            live.append(a.alloc(rng.randint(1, 8192)))
    for offset in live:
        a.free(offset)
    assert a.used == 0 and a.free_blocks == [(0, a.size)]


def test_fragmentation_then_recovery() -> None:
    a = FreeListAllocator(64 * 1024)
    offsets = [a.alloc(1024) for _ in range(64)]
    with pytest.raises(ArenaFull):
        a.alloc(1)
    for offset in offsets[::2]:
        a.free(offset)
    assert a.free_bytes == 32 * 1024
    with pytest.raises(ArenaFull) as full:
        a.alloc(2048)  # half the arena is free, but in 1 KiB holes
    assert (full.value.free, full.value.largest) == (32 * 1024, 1024)
    assert "largest free region 1024" in str(full.value)
    for offset in offsets[1::2]:
        a.free(offset)
    assert a.alloc(64 * 1024) == 0


def test_misuse_is_reported() -> None:
    with Arena.create(64 * 1024, "k") as arena:
        ref = arena.write(b"abc")
        with pytest.raises(BadRef):
            arena.free({"arena": "other", "offset": ref["offset"], "length": 3})
        arena.free(ref)
        with pytest.raises(BadRef):
            arena.free(ref)  # double free
        with pytest.raises(BadRef):
            arena.read({"arena": "k", "offset": 64 * 1024 - 2, "length": 3})
        assert arena.write(b"") == {"arena": "k", "offset": 0, "length": 0}
        with pytest.raises(ArenaFull):
            arena.write(b"x" * (64 * 1024 + 1))
        reader = Arena.attach(arena.spec())
        with pytest.raises(ArenaError):
            reader.alloc(10)
        view = reader.read(arena.write(b"hello"))
        assert view.readonly and bytes(view) == b"hello"
        del view
        reader.close()


def test_blob_falls_back_to_inline_when_the_arena_is_full() -> None:
    with Arena.create(4096, "k") as arena:
        small = to_blob(b"s" * 100, arena)
        big = to_blob(b"b" * 10_000, arena)
        assert "ref" in small and "base64" in big
        assert from_blob(small, {"k": arena}) == b"s" * 100
        assert from_blob(big, {"k": arena}) == b"b" * 10_000
        with pytest.raises(BadRef):
            from_blob({"ref": {"arena": "nope", "offset": 0, "length": 1}}, {"k": arena})


@pytest.mark.slow
def test_arena_is_shared_with_a_child_in_both_directions() -> None:
    async def main() -> None:
        k2p = Arena.create(16 * 1024 * 1024, "k2p")
        p2k = Arena.create(16 * 1024 * 1024, "p2k", allocate=False)  # the child allocates in this one
        try:
            async with spawn_child(pass_fds=[k2p.fd, p2k.fd]) as child:
                assert await child.conn.request("attach", {"arenas": [k2p.spec()], "out": p2k.spec()})
                payload = os.urandom(3 * 1024 * 1024 + 17)
                ref = k2p.write(payload)
                digest = await child.conn.request("arena/digest", ref)
                assert digest == {"length": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
                k2p.free(ref)  # the answer was the acknowledgement
                assert k2p.allocator.used == 0

                out = await child.conn.request("arena/produce", {"size": 5_000_000, "byte": 7})
                assert out["arena"] == "p2k" and out["length"] == 5_000_000
                assert p2k.read_bytes(out) == bytes([7]) * 5_000_000
                with pytest.raises(ArenaError):
                    p2k.free(out)  # not ours to free: the kernel side has no allocator for p2k
                assert await child.conn.request("arena/free", out) == 0
        finally:
            k2p.close()
            p2k.close()

    run(main())
