"""A symmetric JSON-RPC 2.0 connection over a pair of byte streams (one JSON object per line).

The same class runs on both sides: the kernel wraps a child's stdout/stdin, a plugin wraps its own
stdin/stdout. Both sides may send requests at any time and many may be in flight in each direction; they
are matched by id. The read loop (`serve`) is the only reader and never raises because of what the peer
sent: garbage is counted, reported and answered where JSON-RPC says so, and reading goes on. A plugin
printing junk must cost the kernel a log line, not a crash.
"""

from __future__ import annotations

import asyncio
import collections
import collections.abc
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Protocol

from hologram.base import _fastjson as _json
from hologram.base.protocol import CANCEL

from .errors import (
    INTERNAL_ERROR,
    MESSAGE_TOO_LARGE,
    METHOD_NOT_FOUND,
    REQUEST_CANCELLED,
    ConnectionClosed,
    RequestTimeout,
    RpcError,
)
from .framing import (
    DEFAULT_MAX_LINE,
    LineSplitter,
    Malformed,
    Request,
    RequestId,
    Response,
    encode,
    excerpt,
    parse_line,
)

log = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any]]
MalformedCallback = Callable[[str, str], None]

READ_CHUNK = 256 * 1024
_NOTIFY_HEADS: dict[str, bytes] = {}  # method → the start of its notification line (`Connection.notify_encoded`)
_FORGET_ABANDONED = 1024  # ids of timed-out/cancelled requests remembered, so late answers are not "garbage"


def _structured(params: Any) -> Any:
    """JSON-RPC params are by-name (object) or by-position (array); a bare value is a caller bug."""
    if not isinstance(params, (dict, list, tuple)):
        raise TypeError(f"params must be a dict or a list, not {type(params).__name__}")
    return params


class ByteReader(Protocol):
    """What `serve` needs from the input side; `asyncio.StreamReader` fits."""

    async def read(self, n: int = -1) -> bytes: ...


class ByteWriter(Protocol):
    """What the connection needs from the output side; `asyncio.StreamWriter` fits."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    def is_closing(self) -> bool: ...


class Connection:
    """One JSON-RPC peer. Register handlers, run `serve()` as a task, then `request`/`notify`.

    Handlers are `async def handler(params) -> result`; `params` is the JSON value as sent (dict, list or
    None). Each incoming request runs in its own task, so a handler may itself call back into the peer.

    Cancellation crosses the wire (`$/cancel`, docs/protocol.md): a `request` whose caller is cancelled or
    whose timeout fires tells the peer, and the peer cancels that request's handler task. Work nobody waits
    for — a shell command after Ctrl-C — is stopped instead of finishing unseen.
    """

    def __init__(
        self,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        name: str,
        max_line: int = DEFAULT_MAX_LINE,
        on_malformed: MalformedCallback | None = None,
    ) -> None:
        self.name = name
        self.max_line = max_line
        self.malformed_count = 0
        self.peer_error_count = 0  # error responses with id null: the peer says *we* sent garbage
        self._reader = reader
        self._writer = writer
        self._on_malformed = on_malformed
        self._handlers: dict[str, Handler] = {}
        self._pending: dict[RequestId, asyncio.Future[Any]] = {}
        self._abandoned: collections.deque[RequestId] = collections.deque(maxlen=_FORGET_ABANDONED)
        self._ids = itertools.count(1)
        # Running handler tasks → the id of the request each serves (None: a notification or an error
        # answer); `$/cancel` looks the id up here. One dict instead of a set plus an id index: cancels are
        # rare, so a scan of the tasks in flight is cheaper than keeping a second map for every request.
        self._tasks: dict[asyncio.Task[None], RequestId] = {}
        self._closed = False
        self._handlers[CANCEL] = self._on_cancel

    # -- public API -------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending_count(self) -> int:
        """Outgoing requests still waiting for an answer."""
        return len(self._pending)

    def register(self, method: str, handler: Handler) -> None:
        """Route incoming `method` (request or notification) to `handler`. Re-registering replaces."""
        self._handlers[method] = handler

    async def request(
        self, method: str, params: Any = None, timeout: float | None = None, *, grace: float = 0.0
    ) -> Any:
        """Send a request and wait for its result. Raises RpcError, RequestTimeout or ConnectionClosed.

        If the caller is cancelled or `timeout` passes first, the peer is sent `$/cancel` for this id, so
        it can stop the work. After a timeout, up to `grace` more seconds are spent waiting for the peer's
        final answer to the cancel (a tool saying what it stopped); it is raised with the timeout, as
        `RequestTimeout.answer`. A cancelled caller does not wait: cancellation must stay prompt.
        """
        if self._closed:
            raise ConnectionClosed(f"{self.name}: connection closed")
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = _structured(params)
        line = self._encode_checked(message)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[msg_id] = future
        timer: asyncio.TimerHandle | None = None
        try:
            await self._send(line)
            if timeout is not None:  # a timer instead of `wait_for`: no waiter future, no cancel to undo
                timer = loop.call_later(timeout, self._expire, msg_id, future)
            return await future
        except _Expired as expired:
            error = RequestTimeout(f"{self.name}: {method} got no answer within {timeout} s")
            error.answer = await self._final_answer(expired.final, grace)
            raise error from None
        except asyncio.CancelledError:
            if self._pending.get(msg_id) is future:  # neither answered nor timed out
                self._cancel_remote(msg_id)
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._pending.pop(msg_id, None)

    def _expire(self, msg_id: RequestId, future: asyncio.Future[Any]) -> None:
        """The timeout of request `msg_id`: `$/cancel` now, and from now on its answer resolves a new
        future (the final answer `request` may wait a grace for) — no answer can slip between the two."""
        if future.done():
            return
        final: asyncio.Future[Any] = future.get_loop().create_future()
        self._pending[msg_id] = final
        self._cancel_remote(msg_id)
        future.set_exception(_Expired(final))

    async def _final_answer(self, final: asyncio.Future[Any], grace: float) -> Any:
        """The peer's answer to our `$/cancel` within `grace` s, or None (none, or an error answer)."""
        if grace <= 0 or self._closed:
            return None
        try:
            return await asyncio.wait_for(final, grace)
        except (asyncio.TimeoutError, RpcError, ConnectionClosed):
            return None

    def _cancel_remote(self, msg_id: RequestId) -> None:
        """Tell the peer we stopped waiting for `msg_id`. Synchronous (no drain): it runs while cancelled."""
        self._abandoned.append(msg_id)
        if self._closed or self._writer.is_closing():
            return
        try:
            self._writer.write(encode({"jsonrpc": "2.0", "method": CANCEL, "params": {"id": msg_id}}))
        except (ConnectionError, RuntimeError, OSError) as exc:
            log.debug("%s: could not send %s for %r: %s", self.name, CANCEL, msg_id, exc)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (no answer). Awaits only for write backpressure."""
        if self._closed:
            raise ConnectionClosed(f"{self.name}: connection closed")
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = _structured(params)
        await self._send(self._encode_checked(message))

    async def notify_encoded(self, method: str, params: bytes) -> None:
        """`notify` with params that are JSON already (an object's bytes): the kernel encodes a turn event once for
        all the clients it goes to."""
        if self._closed:
            raise ConnectionClosed(f"{self.name}: connection closed")
        head = _NOTIFY_HEADS.get(method)
        if head is None:
            head = _NOTIFY_HEADS[method] = b'{"jsonrpc":"2.0","method":' + _json.dumps_bytes(method) + b',"params":'
        await self._send(self._fits(b"".join((head, params, b"}\n"))))

    async def serve(self) -> None:
        """Read and dispatch until EOF. Never raises for bad input; on EOF pending requests fail."""
        splitter = LineSplitter(self.max_line, self._oversized)
        try:
            while True:
                try:
                    chunk = await self._reader.read(READ_CHUNK)
                except (ConnectionError, OSError) as exc:
                    log.debug("%s: read failed: %s", self.name, exc)
                    break
                if not chunk:
                    break
                for line in splitter.feed(chunk):
                    self._dispatch(line)
        finally:
            self._fail_pending(ConnectionClosed(f"{self.name}: peer closed the connection"))

    def close(self) -> None:
        """Stop: fail pending requests, cancel running handlers, close the writer. Idempotent.

        Reaching EOF already marks the connection closed (nothing can be sent any more), but the handlers
        of the peer's last requests may still be running: they are cancelled here all the same, so work
        for a peer that went away does not go on.
        """
        if not self._closed:
            self._fail_pending(ConnectionClosed(f"{self.name}: connection closed"))
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            self._writer.close()

    # -- internals --------------------------------------------------------------------------------------

    def _encode_checked(self, message: dict[str, Any]) -> bytes:
        return self._fits(encode(message))

    def _fits(self, line: bytes) -> bytes:
        if len(line) > self.max_line:
            raise RpcError(
                MESSAGE_TOO_LARGE,
                f"message of {len(line)} bytes exceeds the {self.max_line}-byte line limit; "
                "send bulk data through the arena",
            )
        return line

    async def _send(self, line: bytes) -> None:
        if self._writer.is_closing():
            raise ConnectionClosed(f"{self.name}: connection closed")
        try:
            self._writer.write(line)  # one write per message: lines never interleave
            await self._writer.drain()
        except (ConnectionError, RuntimeError, OSError) as exc:
            raise ConnectionClosed(f"{self.name}: write failed: {exc}") from exc

    def _fail_pending(self, exc: ConnectionClosed) -> None:
        self._closed = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(exc)

    def _report(self, line: bytes | bytearray, reason: str) -> None:
        self.malformed_count += 1
        text = excerpt(line)
        log.warning("%s: malformed input (%s): %s", self.name, reason, text)
        if self._on_malformed is not None:
            try:
                self._on_malformed(text, reason)
            except Exception:  # a broken callback must not stop the read loop
                log.exception("%s: on_malformed callback failed", self.name)

    def _oversized(self, head: bytes) -> None:
        reason = f"line exceeds {self.max_line} bytes"
        self._report(head, reason)
        self._spawn(self._reply_error(None, RpcError(MESSAGE_TOO_LARGE, reason, {"limit": self.max_line})))

    def _dispatch(self, line: bytearray) -> None:
        message = parse_line(line)
        if message is None:
            return
        if isinstance(message, Response):
            self._on_response(line, message)
        elif isinstance(message, Request):
            self._on_request(message)
        else:
            self._on_bad(line, message)

    def _on_bad(self, line: bytearray, message: Malformed) -> None:
        self._report(line, message.reason)
        if message.reply is not None:
            self._spawn(self._reply_error(message.id, message.reply))

    def _on_response(self, line: bytearray, response: Response) -> None:
        future = self._pending.pop(response.id, None)
        if future is None:
            if response.id is None and response.error is not None:
                self.peer_error_count += 1
                log.warning("%s: peer reported an error with our output: %s", self.name, response.error)
            elif response.id not in self._abandoned:
                self._report(line, f"response to unknown id {response.id!r}")
            return
        if future.done():  # cancelled by the caller meanwhile
            return
        if response.error is not None:
            future.set_exception(response.error)
        else:
            future.set_result(response.result)

    def _on_request(self, request: Request) -> None:
        handler = self._handlers.get(request.method)
        if handler is None:
            if not request.is_notification:
                error = RpcError(METHOD_NOT_FOUND, f"Method not found: {request.method}")
                self._spawn(self._reply_error(request.id, error))
            else:
                log.debug("%s: no handler for notification %s", self.name, request.method)
            return
        self._start_eagerly(self._run_handler(handler, request), None if request.is_notification else request.id)

    async def _on_cancel(self, params: Any) -> None:
        """`$/cancel {"id": X}`: the peer stopped waiting for its request X; cancel the handler serving it.

        A request already answered (or finished eagerly) has no task any more, and an unknown id is
        ignored: the cancel and the answer may cross on the wire."""
        target = params.get("id") if isinstance(params, dict) else None
        if target is None:
            return
        for task, served in list(self._tasks.items()):
            if served == target and type(served) is type(target) and not task.done():
                task.cancel()

    def _start_eagerly(self, coro: Coroutine[Any, Any, None], request_id: RequestId = None) -> None:
        """Run a handler's first step now; only a handler that actually waits gets a task.

        Most requests (an echo, a lookup, a facility's getter) finish without awaiting anything; creating a
        task for them costs an event-loop iteration per request, a measurable part of a ~150 µs round trip.
        This is what `asyncio.eager_task_factory` does on Python ≥ 3.12, done here for 3.10 and 3.11.
        """
        try:
            pending = coro.send(None)
        except StopIteration:
            return
        self._spawn(_Resumed(coro, pending), request_id)

    def _spawn(self, coro: Awaitable[None], request_id: RequestId = None) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks[task] = request_id
        task.add_done_callback(self._forget_task)

    def _forget_task(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)

    async def _run_handler(self, handler: Handler, request: Request) -> None:
        try:
            result = await handler(request.params)
        except RpcError as exc:
            error = exc
        except asyncio.CancelledError:
            if request.is_notification or self._closed:
                raise
            error = RpcError(REQUEST_CANCELLED, "request cancelled")
        except Exception as exc:
            log.exception("%s: handler for %s failed", self.name, request.method)
            error = RpcError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        else:
            if request.is_notification:
                return
            try:
                line = self._encode_checked({"jsonrpc": "2.0", "id": request.id, "result": result})
            except RpcError as exc:
                error = exc
            except (TypeError, ValueError) as exc:
                error = RpcError(INTERNAL_ERROR, f"result is not JSON-serialisable: {exc}")
            else:
                await self._send_quietly(line)
                return
        if request.is_notification:
            log.warning("%s: notification handler %s failed: %s", self.name, request.method, error)
            return
        await self._reply_error(request.id, error)

    async def _reply_error(self, msg_id: RequestId, error: RpcError) -> None:
        try:
            line = self._encode_checked({"jsonrpc": "2.0", "id": msg_id, "error": error.to_json()})
        except (RpcError, TypeError, ValueError):
            line = encode({"jsonrpc": "2.0", "id": msg_id, "error": {"code": error.code, "message": error.message}})
        await self._send_quietly(line)

    async def _send_quietly(self, line: bytes) -> None:
        """Answers to a peer that went away are dropped: there is nobody left to tell."""
        try:
            await self._send(line)
        except ConnectionClosed as exc:
            log.debug("%s: dropping answer: %s", self.name, exc)


class _Expired(Exception):
    """Set on a request's future by its timer; carries the future its final answer will resolve."""

    def __init__(self, final: asyncio.Future[Any]) -> None:
        super().__init__("request timed out")
        self.final = final


class _Resumed(collections.abc.Coroutine[Any, Any, None]):
    """Continue, inside a Task, a coroutine whose first step already ran (see `_start_eagerly`).

    It is the Task's coroutine itself, not a coroutine awaiting it: the Task's first `send(None)` gets the
    future the first step is waiting on, later sends and throws go straight down, so the coroutine cannot
    tell the difference. In particular a cancel that comes before the Task's first step — `$/cancel` read
    in the same chunk as its request — is thrown into the handler; an `async def` wrapper that awaited
    the handler would have been cancelled before it started, leaving the handler suspended, unanswered.
    """

    def __init__(self, coro: Coroutine[Any, Any, None], pending: Any) -> None:
        self._coro = coro
        self._pending: Any = pending
        self._first = True

    def send(self, value: Any) -> Any:
        if self._first:
            self._first = False
            pending, self._pending = self._pending, None
            return pending
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._first = False
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, Any, None]:
        """Not used by the Task (it drives send/throw); here because a Coroutine is also awaitable."""
        value = self.send(None)
        while True:
            try:
                sent = yield value
            except BaseException as exc:
                try:
                    value = self.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    value = self.send(sent)
                except StopIteration:
                    return
