"""Hologram plugin protocol transport: JSON-RPC over stdio, shared-memory arena, event ring.

Wire format: docs/protocol.md. This package is transport only; the method set (initialize, tool/invoke …)
lives in the kernel and the SDK.
"""

from __future__ import annotations

from .allocator import FreeListAllocator
from .arena import DEFAULT_ARENA_SIZE, Arena, ArenaSpec, Ref, Region, from_blob, parse_ref, to_blob
from .connection import ByteReader, ByteWriter, Connection, Handler, MalformedCallback
from .errors import (
    APPLICATION_ERROR,
    BAD_REF,
    HOLOGRAM_CODE_MAX,
    HOLOGRAM_CODE_MIN,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MESSAGE_TOO_LARGE,
    METHOD_NOT_FOUND,
    NOT_READY,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SHUTTING_DOWN,
    TIMEOUT,
    TURN_FAILED,
    UNKNOWN_NAME,
    VERSION_MISMATCH,
    ArenaError,
    ArenaFull,
    BadRef,
    ConnectionClosed,
    ErrorCode,
    RequestTimeout,
    RingError,
    RpcError,
)
from .framing import DEFAULT_MAX_LINE
from .ring import (
    DEFAULT_RING_SIZE,
    AsyncRingReader,
    Event,
    ReadResult,
    RingReader,
    RingSpec,
    RingWriter,
    new_eventfd,
)
from .streams import open_pipe_streams, open_stdio, spawn

__all__ = [
    "APPLICATION_ERROR",
    "BAD_REF",
    "DEFAULT_ARENA_SIZE",
    "DEFAULT_MAX_LINE",
    "DEFAULT_RING_SIZE",
    "HOLOGRAM_CODE_MAX",
    "HOLOGRAM_CODE_MIN",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MESSAGE_TOO_LARGE",
    "METHOD_NOT_FOUND",
    "NOT_READY",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "SHUTTING_DOWN",
    "TIMEOUT",
    "TURN_FAILED",
    "UNKNOWN_NAME",
    "VERSION_MISMATCH",
    "Arena",
    "ArenaError",
    "ArenaFull",
    "ArenaSpec",
    "AsyncRingReader",
    "BadRef",
    "ByteReader",
    "ByteWriter",
    "Connection",
    "ConnectionClosed",
    "ErrorCode",
    "Event",
    "FreeListAllocator",
    "Handler",
    "MalformedCallback",
    "ReadResult",
    "Ref",
    "Region",
    "RequestTimeout",
    "RingError",
    "RingReader",
    "RingSpec",
    "RingWriter",
    "RpcError",
    "from_blob",
    "new_eventfd",
    "open_pipe_streams",
    "open_stdio",
    "parse_ref",
    "spawn",
    "to_blob",
]
