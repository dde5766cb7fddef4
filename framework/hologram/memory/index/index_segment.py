"""One immutable segment file of a session index: packed arrays, memory-mapped while a request reads them.

Why a file of its own and not ``.npy`` files: a sealed part of the index is some twenty arrays, and a request
opens every segment of its session — one ``open`` + one ``mmap`` per segment, not twenty. Why memory-mapped and
not read: the pages a request touches count in the kernel's PSS only while mapped, and the mapping is dropped
with the last array that views it (:class:`Segment` is request-scoped), so a session's history costs disk,
not memory (issue 22).

Layout: ``MAGIC``, the header's length (u64 little-endian), the header (JSON: version, ``meta``, each array's
dtype / shape / offset, the CRC-32 and size of the data), zero padding to 64 bytes, then the arrays, each
starting at a multiple of 64. Written to a temporary name and renamed: a reader sees a whole file or none, and
a process killed while writing (kill -9) leaves a ``.tmp`` that the next open deletes — the files already
renamed are untouched (tests/memory/test_index_window.py kills a real process mid-write). No fsync: a killed
process's written pages are the OS's and reach the disk; only a power loss can leave a renamed file short or
zeroed, and then its size or CRC-32 check fails at the next open and the session's index is rebuilt from the
session log (SQLite, ``synchronous=FULL``) — a segment is derived data, so the price of that rare case is time,
and the price of an fsync per seal would be paid by every turn on the event loop.
A file that fails any check raises :class:`SegmentError`; segments are derived data (rebuilt from the session
log by the caller), so damage costs time, never history.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = ["FORMAT_VERSION", "Layout", "Segment", "SegmentError", "read_segment", "write_segment"]

MAGIC = b"HGIDXSEG\n"
FORMAT_VERSION = 1
_ALIGN = 64


class SegmentError(ValueError):
    """A segment file that cannot be used (missing, truncated, damaged, another format version)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """An open segment: its meta (event/passage ranges, seqs, turns, fingerprint) and its arrays, which view
    the file's mapping (unmapped when the last of them is dropped)."""

    path: Path
    meta: Mapping[str, Any]
    arrays: Mapping[str, np.ndarray]
    layout: Layout

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


@dataclass(frozen=True, slots=True)
class Layout:
    """A parsed header: where the data starts, how long it is, each array's dtype, shape and offset. Kept by
    the index between requests, so a request maps a segment without parsing its header again."""

    base: int
    size: int
    meta: Mapping[str, Any]
    arrays: Mapping[str, tuple[str, tuple[int, ...], int]]


class _Views(Mapping[str, np.ndarray]):
    """A segment's arrays as views of its mapping, each made when first asked (a request reads a few)."""

    __slots__ = ("_layout", "_made", "_mapped")

    def __init__(self, mapped: mmap.mmap, layout: Layout) -> None:
        self._mapped, self._layout = mapped, layout
        self._made: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        made = self._made
        view = made.get(name)
        if view is None:
            dtype, shape, offset = self._layout.arrays[name]
            count = math.prod(shape)
            if count == 0:
                view = np.zeros(shape, dtype=np.dtype(dtype))
            else:
                view = np.frombuffer(
                    self._mapped, dtype=np.dtype(dtype), count=count, offset=self._layout.base + offset
                ).reshape(shape)
            made[name] = view
        return view

    def __iter__(self) -> Iterator[str]:
        return iter(self._layout.arrays)

    def __len__(self) -> int:
        return len(self._layout.arrays)


def _pad(n: int) -> int:
    return (-n) % _ALIGN


def write_segment(path: Path, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Layout:
    """Write `arrays` and `meta` to `path` atomically (temporary file, fsync-free rename: derived data);
    returns its layout."""
    entries: dict[str, list[Any]] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, value in arrays.items():
        a = np.ascontiguousarray(value)
        raw = a.tobytes()
        entries[name] = [a.dtype.str, list(a.shape), offset]
        chunks += [raw, b"\0" * _pad(len(raw))]
        offset += len(raw) + _pad(len(raw))
    data = b"".join(chunks)
    header = json.dumps(
        {"version": FORMAT_VERSION, "meta": dict(meta), "arrays": entries, "crc": zlib.crc32(data), "size": len(data)}
    ).encode()
    head = MAGIC + struct.pack("<Q", len(header)) + header
    head += b"\0" * _pad(len(head))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        _write(f, head, data)
    os.replace(tmp, path)
    layout = {name: (str(d), tuple(int(x) for x in sh), int(o)) for name, (d, sh, o) in entries.items()}
    return Layout(len(head), len(data), json.loads(json.dumps(dict(meta))), layout)


def _write(f: BinaryIO, head: bytes, data: bytes) -> None:
    """The bytes of a segment into its temporary file (a seam: tests/memory/test_index_window.py kills a real
    process in the middle of it)."""
    f.write(head)
    f.write(data)


def read_segment(path: Path, *, verify: bool = False, layout: Layout | None = None) -> Segment:
    """Map `path` and view its arrays. `verify`: also check the data's CRC (reads every page: done when a
    session's segments are first opened, not on every request). `layout`: the header as parsed before
    (only the file's size is checked again)."""
    try:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise SegmentError(f"{path.name}: cannot map ({exc})") from None
    try:
        if layout is None:
            layout = _layout(path, mapped, verify=verify)
        elif layout.base + layout.size != len(mapped):
            raise SegmentError(f"{path.name}: changed size since it was opened")
        return Segment(path, layout.meta, _Views(mapped, layout), layout)
    except SegmentError:
        raise
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        raise SegmentError(f"{path.name}: unreadable ({type(exc).__name__}: {exc})") from None


def _layout(path: Path, mapped: mmap.mmap, *, verify: bool) -> Layout:
    """The header of a mapped segment, checked (and with `verify`, its data's CRC)."""
    if mapped[: len(MAGIC)] != MAGIC:
        raise SegmentError(f"{path.name}: not an index segment")
    (length,) = struct.unpack_from("<Q", mapped, len(MAGIC))
    start = len(MAGIC) + 8
    if start + length > len(mapped):
        raise SegmentError(f"{path.name}: truncated header")
    header = json.loads(bytes(mapped[start : start + length]))
    if header.get("version") != FORMAT_VERSION:
        raise SegmentError(f"{path.name}: format version {header.get('version')}, not {FORMAT_VERSION}")
    base = start + length + _pad(start + length)
    if base + int(header["size"]) != len(mapped):
        raise SegmentError(f"{path.name}: {len(mapped)} bytes, the header says {base + int(header['size'])}")
    if verify:
        view = memoryview(mapped)[base:]
        try:
            crc = zlib.crc32(view)
        finally:
            view.release()
        if crc != header["crc"]:
            raise SegmentError(f"{path.name}: data checksum mismatch")
    entries = {name: (str(d), tuple(int(x) for x in sh), int(o)) for name, (d, sh, o) in header["arrays"].items()}
    return Layout(base, int(header["size"]), header["meta"], entries)
