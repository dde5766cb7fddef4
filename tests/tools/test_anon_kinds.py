"""tools/bench/http_long.py `classify_anon`: the kernel's anonymous memory by kind, as the long-turn run and the
soak report it (pymalloc's arenas, glibc's main heap, its thread heaps, thread stacks, other maps).

The kernel merges neighbouring anonymous maps, so pymalloc's 1 MiB arenas share one mapping with each other and
with an odd-sized glibc block; sorting whole mappings by size moved the arenas to "other" while the odd block was
there and back when it went (the soak's +2-3 MB "jump" at turn ~4,700 with "other" falling the same). The
synthetic cases pin that a region's arenas count the same with and without an odd neighbour; the real ones read a
fresh interpreter's maps: small objects made by pymalloc land in the arenas' kind, and with PYTHONMALLOC=malloc
they do not (and that interpreter says its allocator is malloc, read in it, not from the setting)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.http_long import MIB, anon_mappings, classify_anon

ARENAS = 0x7F0000100000  # not 64 MiB-aligned: not a glibc thread heap


def vma(lo: int, hi: int, anon_kb: int, perms: str = "rw-p", name: str = "") -> str:
    return f"{lo:x}-{hi:x} {perms} 00000000 00:00 0 {name}\nRss: {anon_kb} kB\nAnonymous: {anon_kb} kB\n"


def test_an_odd_neighbour_merged_into_the_arenas_does_not_move_them_to_another_kind() -> None:
    odd = 300 * 1024  # a glibc block of 300 KiB (>= the 128 KiB mmap threshold), written whole
    merged = classify_anon(vma(ARENAS, ARENAS + 5 * MIB + odd, 2048 + 300))  # 5 arenas, 2 MiB touched, + the block
    alone = classify_anon(vma(ARENAS, ARENAS + 5 * MIB, 2048))  # the block unmapped: the arenas alone
    assert merged["arena_1m"] == alone["arena_1m"] == 2048
    assert merged["other_anon"] == 300 and alone["other_anon"] == 0
    assert merged["arena_1m_mapped"] == alone["arena_1m_mapped"] == 5 * 1024
    assert merged["anon_total"] == 2348


def test_thread_stacks_and_thread_heaps_are_not_arenas() -> None:
    guard, stack = 0x7F0000000000 + 12 * MIB, 0x7F0000000000 + 12 * MIB + 4096
    heap = 0x7F0004000000  # 64 MiB-aligned: a glibc thread heap, its reserve ---p above it
    text = (
        vma(guard, stack, 0, "---p")
        + vma(stack, stack + 8 * MIB, 24)  # an 8 MiB thread stack, 24 kB touched
        + vma(heap, heap + 3 * MIB, 1500)
        + vma(heap + 3 * MIB, heap + 64 * MIB, 0, "---p")
        + vma(0x555500000000, 0x555500000000 + 9 * MIB, 7000, name="[heap]")
    )
    kinds = classify_anon(text)
    assert kinds["thread_stack"] == 24 and kinds["thread_arena"] == 1500 and kinds["heap"] == 7000
    assert kinds["arena_1m"] == 0 and kinds["arena_1m_mapped"] == 0
    # a 2 MiB map that the kernel put on a 64 MiB boundary (huge-page alignment), no reserve above: not a heap
    lone = classify_anon(vma(0x7F0008000000, 0x7F0008000000 + 2 * MIB, 2048))
    assert lone["thread_arena"] == 0 and lone["arena_1m"] == 2048


MAKE = """
import json, sys
from hologram.base._heap import allocator
print(json.dumps({"allocator": allocator()}), flush=True)
sys.stdin.readline()
kept = [(i, str(i)) for i in range(400_000)]  # ~40 MB of small objects (tuples, ints, strs)
print("made", flush=True)
sys.stdin.readline()
"""


def _grown(env_malloc: bool) -> tuple[str, dict[str, int], dict[str, int]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    if env_malloc:
        env["PYTHONMALLOC"] = "malloc"
    child = subprocess.Popen(
        [sys.executable, "-c", MAKE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        said = json.loads(child.stdout.readline())
        before = anon_mappings(child.pid)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "made"
        after = anon_mappings(child.pid)
    finally:
        child.kill()
        child.wait()
    return said["allocator"], before, after


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/PID/smaps")
def test_small_objects_land_in_the_arenas_kind_under_pymalloc_and_not_under_malloc() -> None:
    name, before, after = _grown(env_malloc=False)
    assert name == "pymalloc"
    assert after["arena_1m"] - before["arena_1m"] > 25 * 1024  # kB: most of the ~40 MB
    name, before, after = _grown(env_malloc=True)
    assert name == "malloc"  # read in the child: sys.getallocatedblocks() is 0 without pymalloc
    assert after["arena_1m"] - before["arena_1m"] < 4 * 1024
    assert after["heap"] + after["other_anon"] - before["heap"] - before["other_anon"] > 25 * 1024
