"""First-fit free-list allocator over an abstract byte range, with coalescing.

Pure bookkeeping (no memory is touched), so its invariants — no overlap, frees coalesce, used + free is
always the whole range — can be property-tested on their own. Only the owning process of an arena runs an
allocator; the other side only ever sees (offset, length) references.
"""

from __future__ import annotations

import bisect

from .errors import ArenaError, ArenaFull

ALIGN = 64  # cache-line alignment: neighbouring payloads never share a line, and numpy views stay aligned


def align_up(n: int, align: int = ALIGN) -> int:
    return (n + align - 1) // align * align


class FreeListAllocator:
    """Hands out aligned blocks of `[0, size)`.

    Free blocks live in two sorted parallel lists (offsets, lengths); `free` merges a block with both
    neighbours, so the free list never holds two adjacent blocks and a fully freed arena is one block again.
    First fit keeps low offsets busy and the tail free, which is what makes large allocations succeed after
    churn of small ones.
    """

    def __init__(self, size: int, align: int = ALIGN) -> None:
        if size <= 0 or size % align:
            raise ValueError(f"size must be a positive multiple of {align}, got {size}")
        self.size = size
        self.align = align
        self._free_off: list[int] = [0]
        self._free_len: list[int] = [size]
        self._live: dict[int, int] = {}  # offset -> allocated (aligned) length

    @property
    def used(self) -> int:
        return sum(self._live.values())

    @property
    def free_bytes(self) -> int:
        return sum(self._free_len)

    @property
    def largest_free(self) -> int:
        return max(self._free_len, default=0)

    @property
    def live(self) -> dict[int, int]:
        """A copy of offset → block length of every live allocation."""
        return dict(self._live)

    @property
    def free_blocks(self) -> list[tuple[int, int]]:
        return list(zip(self._free_off, self._free_len, strict=True))

    def alloc(self, n: int) -> int:
        """Reserve at least `n` bytes (n ≥ 1) and return the offset. Raises ArenaFull."""
        if n <= 0:
            raise ValueError(f"allocation size must be positive, got {n}")
        need = align_up(n, self.align)
        for i, length in enumerate(self._free_len):
            if length >= need:
                offset = self._free_off[i]
                if length == need:
                    del self._free_off[i]
                    del self._free_len[i]
                else:
                    self._free_off[i] = offset + need
                    self._free_len[i] = length - need
                self._live[offset] = need
                return offset
        raise ArenaFull(n, self.free_bytes, self.largest_free)

    def block_length(self, offset: int) -> int | None:
        """Length of the live block starting at `offset`, or None."""
        return self._live.get(offset)

    def free(self, offset: int) -> None:
        """Release the block at `offset`. Unknown offsets and double frees raise ArenaError."""
        length = self._live.pop(offset, None)
        if length is None:
            raise ArenaError(f"free of offset {offset}: not a live allocation (double free?)")
        i = bisect.bisect_left(self._free_off, offset)
        merge_prev = i > 0 and self._free_off[i - 1] + self._free_len[i - 1] == offset
        merge_next = i < len(self._free_off) and offset + length == self._free_off[i]
        if merge_prev and merge_next:
            self._free_len[i - 1] += length + self._free_len[i]
            del self._free_off[i]
            del self._free_len[i]
        elif merge_prev:
            self._free_len[i - 1] += length
        elif merge_next:
            self._free_off[i] = offset
            self._free_len[i] += length
        else:
            self._free_off.insert(i, offset)
            self._free_len.insert(i, length)
