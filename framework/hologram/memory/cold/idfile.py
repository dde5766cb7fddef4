"""L2's membership set on disk: the sorted 64-bit id hashes in an unlinked file, mapped only while asked.

Why (issue 39 item 7, branch ``soak8``): :class:`~hologram.memory.index.idhash.HashSet` keeps every id L2 holds
in anonymous memory, 8 bytes an event of the whole data directory — the one part of the kernel's memory that
grew with L2 itself over the 10,000-turn soak (~0.4 MB at its end, every session's events). Here the large
sorted array lives in a file and is mapped for one lookup, then unmapped: between requests the kernel holds
only the changes since the last rewrite (at most :data:`~hologram.memory.index.idhash.MERGE_AT` hashes, added
or removed), a bounded few tens of KB whatever L2's size. A mapped file's pages are the page cache's, not the
process's anonymous memory, and they leave its PSS when unmapped.

The file is a cache of ``cold_events``'s ids, never the record: it is rebuilt from the table at every open, so
it is created already unlinked (no name to collide with another store on the same directory, nothing left
behind by a crash) and reached through its descriptor. A rewrite streams the old file and the changes into a
new one chunk by chunk, so it costs :data:`CHUNK` hashes of transient memory, not the whole set.

Same contract as ``HashSet`` (``contains``, ``add``, ``discard``, ``len``), which tests check side by side.
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hologram.memory.index.idhash import MERGE_AT, id_hashes, in_sorted

__all__ = ["CHUNK", "MappedHashSet"]

CHUNK = 1 << 16
"""Hashes a rewrite reads and writes at a time (512 KiB): its transient memory, whatever the set's size."""

_EMPTY = np.zeros(0, dtype=np.uint64)


class MappedHashSet:
    """A set of event ids as sorted unique 64-bit hashes: the bulk in a mapped file, the recent changes in memory.

    Invariants: `_added` and `_file` are disjoint; `_gone` is a subset of `_file`; both in-memory arrays sorted
    and unique. A member is in `_added`, or in `_file` and not in `_gone`."""

    __slots__ = ("_added", "_dir", "_fd", "_gone", "_merge_at", "_size")

    def __init__(self, directory: str | Path, ids: Iterable[str] = (), merge_at: int = MERGE_AT) -> None:
        self._dir = Path(directory)
        self._merge_at = merge_at
        self._fd = -1
        self._size = 0
        self._added = _EMPTY
        self._gone = _EMPTY
        self._replace(_chunks(np.unique(id_hashes(ids))))

    # -- the set's contract ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._size - int(self._gone.size) + int(self._added.size)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __contains__(self, event_id: object) -> bool:
        if not isinstance(event_id, str):
            return False
        return bool(self.contains(id_hashes([event_id]))[0])

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """Which of `hashes` are members (a bool array): one lookup in the mapped file and in each change."""
        out = self._in_file(hashes)
        if self._gone.size:
            out &= ~in_sorted(self._gone, hashes)
        if self._added.size:
            out |= in_sorted(self._added, hashes)
        return out

    def add(self, ids: Iterable[str]) -> None:
        new = np.unique(id_hashes(ids))
        if not new.size:
            return
        if self._gone.size:  # removed since the last rewrite and back again: in the file still
            back = in_sorted(self._gone, new)
            if back.any():
                self._gone = _without(self._gone, new[back])
                new = new[~back]
        new = new[~self.contains(new)]
        if new.size:
            self._added = _inserted(self._added, new)
        self._maybe_rewrite()

    def discard(self, ids: Iterable[str]) -> None:
        gone = np.unique(id_hashes(ids))
        if not gone.size:
            return
        if self._added.size:
            self._added = _without(self._added, gone)
        in_file = gone[self._in_file(gone)]
        in_file = in_file[~in_sorted(self._gone, in_file)]
        if in_file.size:
            self._gone = _inserted(self._gone, in_file)
        self._maybe_rewrite()

    def held_bytes(self) -> int:
        """Bytes this set keeps in the process's memory (the changes since the last rewrite): what the bound is."""
        return int(self._added.nbytes + self._gone.nbytes)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()

    # -- the file ------------------------------------------------------------------------------------------

    def _in_file(self, hashes: np.ndarray) -> np.ndarray:
        if self._size == 0 or hashes.size == 0:
            return np.zeros(hashes.shape, dtype=bool)
        on_disk = np.frombuffer(self._mapped(), dtype=np.uint64, count=self._size)
        return in_sorted(on_disk, hashes)  # a new array: the mapping goes with `on_disk`

    def _mapped(self) -> mmap.mmap:
        """The file, mapped for one read. Unmapped when the last array viewing it goes, never closed by hand:
        closing it while something still holds a view — a frame kept by a traceback or a profiler that
        sampled the reading function — raised ``BufferError: cannot close exported pointers exist`` and
        failed the turn (seen under tools/bench/soak_diag.py --profile)."""
        return mmap.mmap(self._fd, self._size * 8, access=mmap.ACCESS_READ)

    def _maybe_rewrite(self) -> None:
        if self._added.size + self._gone.size >= self._merge_at:
            self._replace(self._merged())

    def _merged(self) -> Iterable[np.ndarray]:
        """The file's hashes without `_gone`, with `_added`, in order, a chunk at a time."""
        added, gone = self._added, self._gone
        taken = 0
        for start in range(0, self._size, CHUNK):
            count = min(CHUNK, self._size - start)
            part = np.frombuffer(self._mapped(), dtype=np.uint64, count=count, offset=start * 8).copy()
            if gone.size:
                part = part[~in_sorted(gone, part)]
            last = start + count == self._size
            upto = added.size if last else int(np.searchsorted(added, part[-1])) if part.size else taken
            upto = max(upto, taken)
            if upto > taken:
                part = np.union1d(part, added[taken:upto])
                taken = upto
            yield part
        if taken < added.size:  # an empty file: the changes are the whole set
            yield added[taken:]

    def _replace(self, parts: Iterable[np.ndarray]) -> None:
        """Write `parts` (sorted, in order) to a new unlinked file and make it the set's; the changes are cleared."""
        fd, name = tempfile.mkstemp(prefix=".l2-ids-", dir=self._dir)
        try:
            os.unlink(name)
            size = 0
            with os.fdopen(os.dup(fd), "wb") as out:
                for part in parts:
                    out.write(part.astype("<u8", copy=False).tobytes())
                    size += int(part.size)
        except BaseException:
            os.close(fd)
            raise
        self.close()
        self._fd, self._size = fd, size
        self._added, self._gone = _EMPTY, _EMPTY


def _chunks(hashes: np.ndarray) -> Iterable[np.ndarray]:
    for start in range(0, hashes.size, CHUNK):
        yield hashes[start : start + CHUNK]


def _inserted(sorted_hashes: np.ndarray, new: np.ndarray) -> np.ndarray:
    """`sorted_hashes` with the (sorted, unique, absent) `new`: one O(n) insert, no sort (np.union1d sorted the
    whole array again: ten times the CPU for a request's few ids)."""
    if not sorted_hashes.size:
        return new
    out: np.ndarray = np.insert(sorted_hashes, np.searchsorted(sorted_hashes, new), new)
    return out


def _without(sorted_hashes: np.ndarray, gone: np.ndarray) -> np.ndarray:
    keep: np.ndarray = sorted_hashes[~in_sorted(gone, sorted_hashes)]
    return keep
