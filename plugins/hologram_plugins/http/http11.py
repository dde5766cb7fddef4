"""HTTP/1.1 for the plugin's ASGI app: h11 reads and writes the protocol, this module carries its events between
an asyncio transport and the app's ``receive``/``send``.

Why not uvicorn: the plugin used one path of it — its h11 protocol behind ``Config`` and ``Server`` — and that
path imports ~40 modules (uvicorn's config, middlewares, logging setup and types, and with them logging.config,
logging.handlers, socketserver, pickle, configparser, the email package, calendar), ~1.3 MB of Python objects
that an idle http plugin held, plus the pages of the zygote those imports copy (docs/performance.md, "What a
forked plugin's memory is"). The protocol itself stays h11's — parsing, framing, keep-alive and pipelining
state, ``Expect: 100-continue`` — so what is written here is the glue uvicorn's ``h11_impl`` is, without what
the plugin never turned on (websockets, lifespan, access log, proxy headers, root path, concurrency limits).

Behaviour kept from uvicorn, which the routes and tests rely on: ``receive()`` answers ``http.disconnect`` once
the client is gone or the response is complete (how a streamed response learns its client left); a send after
a disconnect is dropped; HEAD responses carry headers only; an exception before the response started is a
plain 500, after it the connection is closed; reading pauses while 64 KiB of body wait for the app and writing
awaits the transport's drain; an idle keep-alive connection is closed after 5 s; stopping lets responses in
flight finish for a grace period, then cancels them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote

import h11

from hologram._heap import idle_trim

log = logging.getLogger("hologram_plugins.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

KEEP_ALIVE_S = 5.0  # uvicorn's default
HIGH_WATER = 64 * 1024  # request body bytes buffered for the app before reading pauses
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(now: float) -> bytes:
    """RFC 9110's IMF-fixdate (``Date`` header), in English whatever the locale."""
    t = time.gmtime(now)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    ).encode("ascii")


class Server:
    """Serves `app` on an already listening socket until `stop`."""

    def __init__(self, app: ASGIApp, sock: Any, ssl_context: Any = None) -> None:
        self.app = app
        self.sock = sock
        self.ssl_context = ssl_context
        self.connections: set[Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.started = False
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: Connection(self), sock=self.sock, ssl=self.ssl_context)
        self.started = True

    async def stop(self, grace: float) -> None:
        """Accept nothing more; close idle connections; give responses in flight `grace` seconds, then cancel."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.shutdown()
        if self.tasks:
            _, pending = await asyncio.wait(set(self.tasks), timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=grace)
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()


class Connection(asyncio.Protocol):
    """One client connection: h11's state, the request/response cycle in flight, flow control both ways."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.conn = h11.Connection(h11.SERVER)
        self.transport: asyncio.Transport | None = None
        self.cycle: Cycle | None = None
        self.keep_alive: asyncio.TimerHandle | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.reading_paused = False
        self.local: tuple[str, int] | None = None
        self.remote: tuple[str, int] | None = None
        self.scheme = "http"

    # -- asyncio.Protocol ------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        self.server.connections.add(self)
        self.local = _address(transport.get_extra_info("sockname"))
        self.remote = _address(transport.get_extra_info("peername"))
        self.scheme = "https" if transport.get_extra_info("sslcontext") is not None else "http"
        self._arm_keep_alive()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self._disarm_keep_alive()
        if self.conn.our_state is not h11.ERROR:
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
        if self.cycle is not None:
            if not self.cycle.complete:
                self.cycle.disconnected = True
            self.cycle.message.set()
        self.writable.set()  # a send waiting for the drain wakes up and finds the client gone

    def data_received(self, data: bytes) -> None:
        self._disarm_keep_alive()
        self.conn.receive_data(data)
        self.handle_events()

    def eof_received(self) -> bool | None:
        return None  # close: a half-closed HTTP/1.1 client gets no more answers (as uvicorn)

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    # -- protocol events -------------------------------------------------------------------------------

    def handle_events(self) -> None:
        assert self.transport is not None
        while True:
            try:
                event = self.conn.next_event()
            except h11.RemoteProtocolError as exc:
                self._send_400(str(exc))
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:  # a pipelined request: read it once this response is done
                self.pause_reading()
                return
            if isinstance(event, h11.Request):
                self._disarm_keep_alive()
                self._start_cycle(event)
            elif isinstance(event, h11.Data):
                if self.conn.our_state is h11.DONE or self.cycle is None:
                    continue  # the response is out: the rest of the body is read and dropped
                self.cycle.body += event.data
                if len(self.cycle.body) > HIGH_WATER:
                    self.pause_reading()
                self.cycle.message.set()
            elif isinstance(event, h11.EndOfMessage):
                if self.conn.our_state is h11.DONE:
                    self.resume_reading()
                    self.conn.start_next_cycle()
                    continue
                if self.cycle is not None:
                    self.cycle.more_body = False
                    self.cycle.message.set()
                if self.conn.their_state is h11.MUST_CLOSE:
                    return
            else:  # ConnectionClosed: the client said it sends nothing more
                return

    def _start_cycle(self, request: h11.Request) -> None:
        assert self.transport is not None
        raw_path, _, query = request.target.partition(b"?")
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": request.http_version.decode("ascii"),
            "server": self.local,
            "client": self.remote,
            "scheme": self.scheme,
            "method": request.method.decode("ascii"),
            "root_path": "",
            "path": unquote(raw_path.decode("ascii")),
            "raw_path": raw_path,
            "query_string": query,
            "headers": [(name.lower(), value) for name, value in request.headers],
            "state": {},
        }
        self.cycle = Cycle(scope, self)
        task = self.loop.create_task(self.cycle.run(self.server.app))
        self.server.tasks.add(task)
        task.add_done_callback(self.server.tasks.discard)

    def response_complete(self) -> None:
        """The cycle's response is out: wait for the next request (or the keep-alive timeout)."""
        idle_trim.activity()  # what the request freed goes back to the OS once the plugin is idle
        assert self.transport is not None
        if self.transport.is_closing():
            return
        self._arm_keep_alive()
        self.resume_reading()
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
            self.handle_events()

    def _send_400(self, detail: str) -> None:
        assert self.transport is not None
        log.warning("http: invalid HTTP request: %s", detail)
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
        with contextlib.suppress(h11.LocalProtocolError):
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers)) or b"")
            self.transport.write(self.conn.send(h11.Data(data=b"Invalid HTTP request received.")) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        self.transport.close()

    # -- flow control and closing ----------------------------------------------------------------------

    def pause_reading(self) -> None:
        if self.transport is not None and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()

    def shutdown(self) -> None:
        """The server stops: close now if idle, else once the response in flight is out."""
        if self.cycle is None or self.cycle.complete:
            self.close()
        else:
            self.cycle.keep_alive = False

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()

    def _arm_keep_alive(self) -> None:
        self._disarm_keep_alive()
        self.keep_alive = self.loop.call_later(KEEP_ALIVE_S, self.close)

    def _disarm_keep_alive(self) -> None:
        if self.keep_alive is not None:
            self.keep_alive.cancel()
            self.keep_alive = None


class Cycle:
    """One request and its response: the app's ``receive`` and ``send``."""

    def __init__(self, scope: Scope, connection: Connection) -> None:
        self.scope = scope
        self.connection = connection
        self.conn = connection.conn
        self.body = bytearray()
        self.more_body = True
        self.message = asyncio.Event()  # body arrived, body complete, client gone or response complete
        self.disconnected = False
        self.keep_alive = True
        self.started = False
        self.complete = False
        self.head = scope["method"] == "HEAD"
        self.waiting_for_100 = self.conn.they_are_waiting_for_100_continue

    async def run(self, app: ASGIApp) -> None:
        try:
            await app(self.scope, self.receive, self.send)
        except Exception:
            log.exception("http: the app failed on %s %s", self.scope["method"], self.scope["path"])
            if not self.started:
                await self._send_500()
            else:
                self._close()
        else:
            if not self.started and not self.disconnected:
                log.error("http: the app returned without a response to %s", self.scope["path"])
                await self._send_500()
            elif not self.complete and not self.disconnected:
                self._close()

    async def receive(self) -> Message:
        transport = self.connection.transport
        assert transport is not None
        if self.waiting_for_100 and not transport.is_closing():
            transport.write(self.conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
            self.waiting_for_100 = False
        if not self.disconnected and not self.complete:
            self.connection.resume_reading()
            await self.message.wait()
            self.message.clear()
        if self.disconnected or self.complete:
            return {"type": "http.disconnect"}
        message = {"type": "http.request", "body": bytes(self.body), "more_body": self.more_body}
        self.body = bytearray()
        return message

    async def send(self, message: Message) -> None:
        if not self.connection.writable.is_set() and not self.disconnected:
            await self.connection.writable.wait()
        if self.disconnected:
            return
        transport = self.connection.transport
        assert transport is not None
        kind = message["type"]
        if not self.started:
            if kind != "http.response.start":
                raise RuntimeError(f"expected the ASGI message 'http.response.start', not {kind!r}")
            self.started = True
            self.waiting_for_100 = False
            status = int(message["status"])
            headers = [(b"date", http_date(time.time())), *message.get("headers", [])]
            if not self.keep_alive and not any(name.lower() == b"connection" for name, _ in headers):
                headers.append((b"connection", b"close"))  # the server is stopping: tell the client
            response = h11.Response(status_code=status, headers=headers, reason=_reason(status))
            transport.write(self.conn.send(response) or b"")
        elif not self.complete:
            if kind != "http.response.body":
                raise RuntimeError(f"expected the ASGI message 'http.response.body', not {kind!r}")
            body = b"" if self.head else bytes(message.get("body", b""))
            if body:
                transport.write(self.conn.send(h11.Data(data=body)) or b"")
            if not message.get("more_body", False):
                self.complete = True
                self.message.set()
                transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        else:
            raise RuntimeError(f"the ASGI message {kind!r} came after the response was complete")
        if self.complete:
            if self.conn.our_state is h11.MUST_CLOSE or not self.keep_alive:
                self._close()
            else:
                self.connection.response_complete()

    async def _send_500(self) -> None:
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
        await self.send({"type": "http.response.start", "status": 500, "headers": headers})
        await self.send({"type": "http.response.body", "body": b"Internal Server Error"})

    def _close(self) -> None:
        self.keep_alive = False
        self.connection.close()


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


def _address(value: Any) -> tuple[str, int] | None:
    """(host, port) of a socket address; None for other families."""
    if isinstance(value, (tuple, list)) and len(value) >= 2:
        return str(value[0]), int(value[1])
    return None
