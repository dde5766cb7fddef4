"""Shared-memory arena: bulk payloads travel as (offset, length) references instead of bytes on the line.

An arena is a memfd of fixed size mapped by two processes. Exactly one of them allocates in it (the
*owner*, running a `FreeListAllocator`); the other only reads. The kernel therefore gives each plugin two
arenas: one it writes (kernel → plugin) and one the plugin writes (plugin → kernel). No cross-process lock
exists or is needed.

Ownership rule: whoever allocated a region frees it, and only after the receiver is done with it — the
answer to the request that carried the ref is that acknowledgement; a ref sent in an answer or notification
is released when the receiver says so (`arena/release`). The reader's memoryviews must not outlive that.
"""

from __future__ import annotations

import base64
import contextlib
import mmap
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from .allocator import ALIGN, FreeListAllocator, align_up
from .errors import ArenaError, ArenaFull, BadRef

DEFAULT_ARENA_SIZE = 64 * 1024 * 1024


class Ref(TypedDict):
    """A reference carried in control messages: `{"arena": id, "offset": o, "length": n}`."""

    arena: str
    offset: int
    length: int


class ArenaSpec(TypedDict):
    """How the peer finds an arena: the inherited fd number and the mapping size (initialize params)."""

    id: str
    fd: int
    size: int


def parse_ref(obj: Any) -> Ref:
    """Validate an untrusted JSON value as a Ref (types only; bounds are checked by the arena)."""
    if not isinstance(obj, dict):
        raise BadRef(f"arena ref must be an object, got {type(obj).__name__}")
    arena, offset, length = obj.get("arena"), obj.get("offset"), obj.get("length")
    if not isinstance(arena, str):
        raise BadRef("arena ref needs a string 'arena'")
    for key, value in (("offset", offset), ("length", length)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise BadRef(f"arena ref needs a non-negative integer {key!r}, got {value!r}")
    assert isinstance(offset, int) and isinstance(length, int)
    return Ref(arena=arena, offset=offset, length=length)


@dataclass(frozen=True)
class Region:
    """A freshly allocated region; fill `view` in place (zero copy), then send `ref`."""

    ref: Ref
    view: memoryview


class Arena:
    """One mapping of a shared-memory arena. Create it with `create` (kernel) or `attach` (peer)."""

    def __init__(self, arena_id: str, fd: int, size: int, *, writable: bool, allocate: bool, owns_fd: bool):
        if allocate and not writable:
            raise ValueError("an allocating arena must be mapped writable")
        self.id = arena_id
        self.fd = fd
        self.size = size
        self.writable = writable
        self._owns_fd = owns_fd
        # ACCESS_READ makes the exported buffer read-only too: a stray write raises instead of segfaulting.
        self._mmap = mmap.mmap(fd, size, access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ)
        self._view: memoryview | None = memoryview(self._mmap)
        self._alloc = FreeListAllocator(size) if allocate else None

    @classmethod
    def create(cls, size: int = DEFAULT_ARENA_SIZE, arena_id: str = "arena", *, allocate: bool = True) -> Arena:
        """A new memfd of `size` bytes (rounded up to the alignment). The fd is close-on-exec: hand it to
        a child with `subprocess`/`asyncio.create_subprocess_exec(pass_fds=[arena.fd])`."""
        size = align_up(max(size, ALIGN))
        fd = os.memfd_create(f"hologram-arena-{arena_id}", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            return cls(arena_id, fd, size, writable=True, allocate=allocate, owns_fd=True)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def attach(cls, spec: ArenaSpec, *, allocate: bool = False) -> Arena:
        """Map an inherited arena. `allocate=True` makes this process its owner (writable, allocator)."""
        actual = os.fstat(spec["fd"]).st_size
        if actual < spec["size"]:
            raise ArenaError(f"arena {spec['id']}: fd {spec['fd']} is {actual} bytes, expected {spec['size']}")
        return cls(spec["id"], spec["fd"], spec["size"], writable=allocate, allocate=allocate, owns_fd=False)

    def spec(self) -> ArenaSpec:
        return ArenaSpec(id=self.id, fd=self.fd, size=self.size)

    # -- owner side ------------------------------------------------------------------------------------

    @property
    def allocator(self) -> FreeListAllocator:
        if self._alloc is None:
            raise ArenaError(f"arena {self.id}: this side does not allocate (attach with allocate=True)")
        return self._alloc

    def alloc(self, n: int) -> Region:
        """Reserve `n` bytes; raises ArenaFull when no free block fits (fall back to inline data)."""
        view = self._base()
        if n == 0:
            return Region(Ref(arena=self.id, offset=0, length=0), view[0:0])
        offset = self.allocator.alloc(n)
        return Region(Ref(arena=self.id, offset=offset, length=n), view[offset : offset + n])

    def write(self, data: bytes | bytearray | memoryview) -> Ref:
        """Allocate and copy `data` in; returns the ref to send."""
        src = memoryview(data).cast("B")
        region = self.alloc(src.nbytes)
        region.view[:] = src
        return region.ref

    def free(self, ref: Ref) -> None:
        """Release a region this side allocated. Double frees and foreign refs raise BadRef."""
        if ref["length"] == 0:
            return
        self._check_arena(ref)
        block = self.allocator.block_length(ref["offset"])
        if block is None or ref["length"] > block:
            raise BadRef(f"arena {self.id}: {ref} is not a live allocation")
        self.allocator.free(ref["offset"])

    # -- both sides ------------------------------------------------------------------------------------

    def read(self, ref: Ref) -> memoryview:
        """Zero-copy read-only view of a region. Release it (or drop it) before the owner frees the region."""
        self._check_arena(ref)
        offset, length = ref["offset"], ref["length"]
        if offset + length > self.size:
            raise BadRef(f"arena {self.id}: {ref} ends past the arena size {self.size}")
        return self._base()[offset : offset + length].toreadonly()

    def read_bytes(self, ref: Ref) -> bytes:
        """A private copy of a region: safe to keep after the owner frees it."""
        return bytes(self.read(ref))

    def close(self) -> None:
        """Unmap (if no views are still exported) and close the fd if this side created it."""
        if self._view is not None:
            self._view.release()
            self._view = None
        with contextlib.suppress(BufferError):  # a caller still holds a view; unmapped when it goes
            self._mmap.close()
        if self._owns_fd:
            self._owns_fd = False
            os.close(self.fd)

    def __enter__(self) -> Arena:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _base(self) -> memoryview:
        if self._view is None:
            raise ArenaError(f"arena {self.id} is closed")
        return self._view

    def _check_arena(self, ref: Ref) -> None:
        if ref["arena"] != self.id:
            raise BadRef(f"ref for arena {ref['arena']!r} used with arena {self.id!r}")


# -- blobs: bytes that go through the arena when they can, inline when they must ---------------------------


def to_blob(data: bytes | bytearray | memoryview, arena: Arena | None) -> dict[str, Any]:
    """`{"ref": Ref}` when the arena has room, else `{"base64": "..."}` (the fallback for a full arena)."""
    if arena is not None:
        try:
            return {"ref": arena.write(data)}
        except ArenaFull:
            pass
    return {"base64": base64.b64encode(data).decode("ascii")}


def from_blob(blob: Any, arenas: Mapping[str, Arena]) -> bytes:
    """Decode a blob from either form. Refs are copied out, so the sender may free after the answer."""
    if isinstance(blob, dict) and "ref" in blob:
        ref = parse_ref(blob["ref"])
        arena = arenas.get(ref["arena"])
        if arena is None:
            raise BadRef(f"unknown arena {ref['arena']!r}")
        return arena.read_bytes(ref)
    if isinstance(blob, dict) and isinstance(blob.get("base64"), str):
        return base64.b64decode(blob["base64"], validate=True)
    raise BadRef("blob must be {'ref': …} or {'base64': …}")
