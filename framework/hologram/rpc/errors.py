"""Error codes and exception types of the plugin protocol and the control socket.

One module so that the kernel, the SDK, clients and plugins written against the documentation agree on the
numbers; every code Hologram itself sends is a member of `ErrorCode` (docs/protocol.md section 2 is the same
table). JSON-RPC reserves -32768..-32000; within that, -32099..-32000 is "implementation-defined server
errors", which is where Hologram's own protocol-level codes live. Codes from 1 up are application errors:
on the control socket the kernel's own (`UNKNOWN_NAME`, the turn API's `SESSION_FAILED` …), on a plugin's
channel the plugin's — a plugin's codes travel only between it and its callers, so the two sets cannot be confused.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ErrorCode(IntEnum):
    # Standard JSON-RPC 2.0 codes.
    PARSE_ERROR = -32700  # the line is not valid JSON
    INVALID_REQUEST = -32600  # valid JSON, not a valid request
    METHOD_NOT_FOUND = -32601  # no such method (or facility method, stage hook, tool) at the receiver
    INVALID_PARAMS = -32602  # the params do not fit the method
    INTERNAL_ERROR = -32603  # the handler crashed; the message carries the exception

    # Hologram protocol codes, range -32099..-32000. Unassigned codes in this range are reserved.
    APPLICATION_ERROR = -32000  # a handler failed on purpose (tool error, hook denied …); message says why
    VERSION_MISMATCH = -32001  # initialize: protocol versions are incompatible
    NOT_READY = -32002  # the facility/tool/stage is unknown or its provider is not ready
    SHUTTING_DOWN = -32003  # the peer is stopping and accepts no new work
    BAD_REF = -32004  # an arena reference is out of bounds, unknown or already freed
    MESSAGE_TOO_LARGE = -32005  # a control line exceeded the peer's line limit
    TIMEOUT = -32006  # the callee gave up waiting on something it depends on
    REQUEST_CANCELLED = -32007  # the sender cancelled the request ($/cancel) and the handler stopped
    CONFIG_INVALID = -32008  # initialize: the plugin's configuration does not fit its model; data.errors says where
    START_REFUSED = -32009  # initialize: the plugin cannot start until a person acts (a port in use); message says how

    # The kernel's application errors on the control socket (1 and up).
    UNKNOWN_NAME = 1  # a control request named something that does not exist (a plugin); message says what
    SESSION_FAILED = 2  # the turn API: a session could not be read or written (damaged storage: the file, the fix)
    NO_SUCH_SESSION = 3  # the turn API: the request names a session that does not exist
    SESSION_BUSY = 4  # the turn API: the session has a turn running (delete it after the turn ends or is cancelled)
    NOT_ALLOWED = 5  # the turn API: the caller may not answer that approval (it does not watch with approvals)


# The members by name, for `from hologram.rpc import NOT_READY` (what the code base and plugins import).
PARSE_ERROR = ErrorCode.PARSE_ERROR
INVALID_REQUEST = ErrorCode.INVALID_REQUEST
METHOD_NOT_FOUND = ErrorCode.METHOD_NOT_FOUND
INVALID_PARAMS = ErrorCode.INVALID_PARAMS
INTERNAL_ERROR = ErrorCode.INTERNAL_ERROR
APPLICATION_ERROR = ErrorCode.APPLICATION_ERROR
VERSION_MISMATCH = ErrorCode.VERSION_MISMATCH
NOT_READY = ErrorCode.NOT_READY
SHUTTING_DOWN = ErrorCode.SHUTTING_DOWN
BAD_REF = ErrorCode.BAD_REF
MESSAGE_TOO_LARGE = ErrorCode.MESSAGE_TOO_LARGE
TIMEOUT = ErrorCode.TIMEOUT
REQUEST_CANCELLED = ErrorCode.REQUEST_CANCELLED
CONFIG_INVALID = ErrorCode.CONFIG_INVALID
START_REFUSED = ErrorCode.START_REFUSED
UNKNOWN_NAME = ErrorCode.UNKNOWN_NAME
SESSION_FAILED = ErrorCode.SESSION_FAILED
NO_SUCH_SESSION = ErrorCode.NO_SUCH_SESSION
SESSION_BUSY = ErrorCode.SESSION_BUSY
NOT_ALLOWED = ErrorCode.NOT_ALLOWED

HOLOGRAM_CODE_MIN = -32099
HOLOGRAM_CODE_MAX = -32000


class RpcError(Exception):
    """An error that travels over the wire as a JSON-RPC error object.

    Raise it from a handler to answer with exactly this code/message/data; `Connection.request` raises it
    when the peer answers with an error.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code)  # an `ErrorCode` travels as its number; compare with either
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r}, data={self.data!r})"

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


class ConnectionClosed(ConnectionError):
    """The connection ended (EOF, broken pipe or `close()`); pending and new requests fail with this."""


class RequestTimeout(TimeoutError):
    """`Connection.request(..., timeout=…)` got no answer in time; the peer was sent `$/cancel`.

    `answer` is the result the peer sent in reply to the cancel within the request's `grace` (a tool's
    "stopped: … killed …" text), else None; any later answer is dropped.
    """

    answer: Any = None


class ArenaError(Exception):
    """A misuse of an arena: bad reference, double free, writing to a read-only mapping."""


class BadRef(ArenaError):
    """A reference that does not point inside the arena (or at a live allocation, for the owner)."""


class ArenaFull(ArenaError):
    """No free region is large enough. Callers fall back to inline (base64) data on the control line."""

    def __init__(self, needed: int, free: int, largest: int) -> None:
        super().__init__(f"arena full: need {needed} bytes, {free} free in total, largest free region {largest} bytes")
        self.needed = needed
        self.free = free
        self.largest = largest


class RingError(Exception):
    """The event ring was misused (record larger than the ring allows, bad layout when attaching)."""
