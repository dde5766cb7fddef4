"""Line framing and message validation for JSON-RPC 2.0 over byte streams.

Kept apart from the connection so the rules (what is a request, what is a response, what is garbage) can
be read, tested and re-implemented in another language without the asyncio machinery around them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hologram.base import _fastjson as _json

from .errors import INVALID_REQUEST, PARSE_ERROR, RpcError

DEFAULT_MAX_LINE = 16 * 1024 * 1024
EXCERPT_CHARS = 200

RequestId = int | str | None


def encode(message: dict[str, Any]) -> bytes:
    """One message → one line: compact UTF-8 JSON (`hologram.base._fastjson`: orjson), which escapes every newline."""
    return _json.dumps_bytes(message) + b"\n"


def excerpt(line: bytes | bytearray, limit: int = EXCERPT_CHARS) -> str:
    """A printable head of a bad line for logs: never the whole 16 MiB, never a decode error."""
    head = bytes(line[:limit]).decode("utf-8", errors="replace")
    return head + ("…" if len(line) > limit else "")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    params: Any
    id: RequestId
    is_notification: bool


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    result: Any
    error: RpcError | None


@dataclass(frozen=True, slots=True)
class Malformed:
    """A line that is not a valid message. `reply` is the error to send back (with `id`), or None."""

    reason: str
    reply: RpcError | None
    id: RequestId = None


Message = Request | Response | Malformed


def _valid_id(value: Any) -> bool:
    # bool is an int subclass in Python but not a JSON-RPC id.
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_line(line: bytes | bytearray) -> Message | None:
    """Classify one line. Returns None for blank lines (ignored), never raises."""
    if not line.strip():
        return None
    try:
        obj = _json.loads(line)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return Malformed(f"not JSON: {exc}", RpcError(PARSE_ERROR, "Parse error"))
    return classify(obj)


def classify(obj: Any) -> Message:
    """Decide whether a decoded JSON value is a request, a notification, a response, or garbage."""
    if isinstance(obj, list):
        return Malformed(
            "batch requests are not supported", RpcError(INVALID_REQUEST, "Invalid Request: batches unsupported")
        )
    if not isinstance(obj, dict):
        return Malformed(
            f"not an object: {type(obj).__name__}", RpcError(INVALID_REQUEST, "Invalid Request: not an object")
        )
    has_id = "id" in obj
    msg_id = obj.get("id")
    reply_id = msg_id if _valid_id(msg_id) else None
    if obj.get("jsonrpc") != "2.0":
        reason = f"jsonrpc must be '2.0', got {obj.get('jsonrpc')!r}"
        # Never answer something that looks like a response: that could ping-pong between two peers.
        reply = None if "method" not in obj else RpcError(INVALID_REQUEST, f"Invalid Request: {reason}")
        return Malformed(reason, reply, reply_id)
    if "method" in obj:
        return _classify_request(obj, has_id, msg_id, reply_id)
    if "result" in obj or "error" in obj:
        return _classify_response(obj, has_id, msg_id)
    return Malformed(
        "neither a request nor a response",
        RpcError(INVALID_REQUEST, "Invalid Request: no method, result or error"),
        reply_id,
    )


def _classify_request(obj: dict[str, Any], has_id: bool, msg_id: Any, reply_id: RequestId) -> Message:
    method = obj["method"]
    if not isinstance(method, str):
        return Malformed("method is not a string", RpcError(INVALID_REQUEST, "Invalid Request: method"), reply_id)
    if has_id and not _valid_id(msg_id):
        return Malformed(f"bad id {msg_id!r}", RpcError(INVALID_REQUEST, "Invalid Request: id"), None)
    params = obj.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        return Malformed(
            "params must be an object or an array",
            RpcError(INVALID_REQUEST, "Invalid Request: params must be an object or an array"),
            reply_id,
        )
    return Request(method, params, msg_id if has_id else None, is_notification=not has_id)


def _classify_response(obj: dict[str, Any], has_id: bool, msg_id: Any) -> Message:
    if not has_id or not _valid_id(msg_id):
        return Malformed(f"response with bad id {msg_id!r}", None)
    if ("result" in obj) == ("error" in obj):
        return Malformed("response must have exactly one of result/error", None, msg_id)
    if "result" in obj:
        return Response(msg_id, obj["result"], None)
    err = obj["error"]
    if not (
        isinstance(err, dict)
        and isinstance(err.get("code"), int)
        and not isinstance(err.get("code"), bool)
        and isinstance(err.get("message"), str)
    ):
        return Malformed("error object needs an integer code and a string message", None, msg_id)
    return Response(msg_id, None, RpcError(err["code"], err["message"], err.get("data")))


class LineSplitter:
    """Turns arbitrary chunks into complete lines, with a hard cap on line length.

    A line longer than `max_line` is reported once through `on_oversized(head)` and discarded up to its
    terminating newline, so one huge (or unterminated) message costs bounded memory and does not desync
    the stream: the next line is read normally.
    """

    def __init__(self, max_line: int, on_oversized: Callable[[bytes], None]) -> None:
        self.max_line = max_line
        self._on_oversized = on_oversized
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already known to contain no newline
        self._discarding = False

    def feed(self, chunk: bytes) -> list[bytearray]:
        lines: list[bytearray] = []
        if self._discarding:
            nl = chunk.find(b"\n")
            if nl < 0:
                return lines
            self._discarding = False
            chunk = chunk[nl + 1 :]
        buf = self._buf
        buf += chunk
        pos = 0
        while (nl := buf.find(b"\n", max(pos, self._scanned))) >= 0:
            if nl - pos > self.max_line:
                self._on_oversized(bytes(buf[pos : pos + EXCERPT_CHARS]))
            else:
                lines.append(buf[pos:nl])
            pos = nl + 1
            self._scanned = 0
        if pos:
            del buf[:pos]
        self._scanned = len(buf)
        if len(buf) > self.max_line:
            self._on_oversized(bytes(buf[:EXCERPT_CHARS]))
            buf.clear()
            self._scanned = 0
            self._discarding = True
        return lines

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held in memory (bounded by `max_line`)."""
        return len(self._buf)
