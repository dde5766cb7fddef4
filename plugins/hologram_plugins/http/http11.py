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

What uvicorn leaves to a proxy in front of it, held here because the plugin faces clients directly (`Limits`,
each a constructor parameter with uvicorn's or nginx's default): a request line over 8 KiB is a 414, a header
block over 64 KiB or with over 100 headers a 431, a body over ``[plugins.http] max_body_bytes`` a 413 before
the app reads it (no ``100 Continue`` for it), a request head not complete 10 s after its first byte
(slowloris) a 408 and a close, a body that falls behind ``min_body_rate`` after a ``body_timeout`` head start a
408 and a close (the clock stops while the app is not reading), a request on a connection beyond
``max_connections_per_client`` of its address a 429 and a close, an idle connection — also one that never
sends a request, which uvicorn keeps — closed after the keep-alive, ``Content-Length`` together with
``Transfer-Encoding`` a 400 and a close (RFC 9112 6.1: h11 would frame by the chunks, a proxy before it by the
length). The limits are ``[plugins.http]`` settings (config.py). A refused or malformed request
is logged once per client address a minute, with at most 200 bytes of it, escaped. The listen backlog is
passed to asyncio, which would otherwise set its own 100 on the socket again.

Kept rather than going back to uvicorn: tests/httpapi/test_server_conformance.py runs the same raw-socket tests
against this server and against uvicorn (h11) serving the same app, so each of these behaviours is compared on
every change; this server passes all of them, uvicorn all but the limits it does not have (marked xfail there
with the reason). Importing uvicorn's ``Config``/``Server`` path costs the plugin ~40 modules more
(docs/performance.md, "The HTTP server: h11 and this glue, not uvicorn").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote

import h11

from hologram.base._heap import idle_trim

log = logging.getLogger("hologram_plugins.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

HIGH_WATER = 64 * 1024  # request body bytes buffered for the app before reading pauses
BACKLOG = 512  # connections the kernel queues before the loop accepts them (asyncio's default: 100)
SAMPLE = 200  # bytes of a refused request quoted in its log line
WARN_EVERY_S = 60.0  # one log line per client address in this time; the rest are counted into the next one
WARNED_HOSTS = 1024  # addresses remembered for that; beyond, the oldest are forgotten (bounded memory)
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(now: float) -> bytes:
    """RFC 9110's IMF-fixdate (``Date`` header), in English whatever the locale."""
    t = time.gmtime(now)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon - 1]} {t.tm_year} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    ).encode("ascii")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may make the server hold. The defaults: nginx's request line and header block (8 KiB,
    64 KiB), Apache's header count (100), uvicorn's keep-alive (5 s), a header timeout between nginx's 60 s and
    what a browser on loopback needs (well under 1 s); the body limit is the largest any route accepts (the
    OpenAI-compatible API's 8 MiB), so the server refuses only what every route would. A body must come at
    1 KiB/s on average after a 10 s head start (Apache's ``RequestReadTimeout body=10,MinRate=…`` shape: a
    slow link is fine, a body dribbled to hold the connection is not); the clock stops while the app is not
    reading (the server paused, not the client) and, with ``Expect: 100-continue``, until the 100 went out.
    Connections per client address: a cap well above a browser's six per host and the CLI's few, since on
    loopback every local client shares 127.0.0.1."""

    max_request_line: int = 8 * 1024  # bytes of "METHOD TARGET HTTP/1.1"; over: 414
    max_header_bytes: int = 64 * 1024  # bytes of the whole request head; over: 431 (414 if still on its first line)
    max_headers: int = 100  # header fields; over: 431
    max_body_bytes: int = 8 * 1024 * 1024  # request body; over: 413, before the app reads it
    header_timeout: float = 10.0  # seconds from a head's first byte to its end; over: 408 and close
    keep_alive: float = 5.0  # seconds an idle connection stays open between requests
    min_body_rate: int = 1024  # bytes a second a body must average while the server reads it …
    body_timeout: float = 10.0  # … after this head start; behind that: 408 and close (Apache's mod_reqtimeout)
    max_connections_per_client: int = 256  # open connections of one client address; over: 429 and close


class Server:
    """Serves `app` on an already listening socket until `stop`."""

    def __init__(
        self,
        app: ASGIApp,
        sock: Any,
        ssl_context: Any = None,
        limits: Limits | None = None,
        backlog: int = BACKLOG,
    ) -> None:
        self.app = app
        self.sock = sock
        self.ssl_context = ssl_context
        self.limits = limits or Limits()
        self.backlog = backlog
        self.connections: set[Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.started = False
        self._server: asyncio.AbstractServer | None = None
        self._warned: dict[str, list[float]] = {}  # client host -> [when logged, refusals not logged since]
        self.per_host: dict[str, int] = {}  # client host -> its open connections

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: Connection(self), sock=self.sock, ssl=self.ssl_context, backlog=self.backlog
        )
        self.started = True

    def refused(self, client: tuple[str, int] | None, status: int, reason: str, sample: bytes) -> None:
        """Log a refused request, once per client address a minute: a broken or hostile client sending
        thousands must not fill the log, and the line quotes a bounded, escaped piece of what it sent."""
        host = client[0] if client else "unknown"
        now = time.monotonic()
        seen = self._warned.get(host)
        if seen is not None and now - seen[0] < WARN_EVERY_S:
            seen[1] += 1
            return
        if len(self._warned) >= WARNED_HOSTS:
            for old in [h for h, (when, _) in self._warned.items() if now - when >= WARN_EVERY_S] or list(self._warned)[
                : WARNED_HOSTS // 2
            ]:
                del self._warned[old]
        more = f" ({seen[1]} more from it not logged)" if seen is not None and seen[1] else ""
        self._warned[host] = [now, 0]
        log.warning(
            "http: refused a request from %s with %d: %s; it began %r%s",
            host,
            status,
            _printable(reason),
            bytes(sample[:SAMPLE]),
            more,
        )

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
        self.limits = server.limits
        self.loop = asyncio.get_running_loop()
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        self.transport: asyncio.Transport | None = None
        self.cycle: Cycle | None = None
        self.timer: asyncio.TimerHandle | None = None  # the keep-alive or the header timeout, whichever runs
        self.head_started = False  # a request head is arriving: the header timeout runs, not the keep-alive
        self.sample = bytearray()  # the current head's first bytes, quoted in the log if it is refused
        self.writable = asyncio.Event()
        self.writable.set()
        self.reading_paused = False
        self.over_cap = False  # opened while its address had `max_connections_per_client` open
        self.body_timer: asyncio.TimerHandle | None = None  # the body's rate clock, while a body is read
        self.body_since = 0.0  # when the clock (re)started
        self.body_bytes = 0  # body bytes received since then
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
        host = self.remote[0] if self.remote else ""
        open_ = self.server.per_host.get(host, 0)
        self.server.per_host[host] = open_ + 1
        self.over_cap = open_ >= self.limits.max_connections_per_client  # its request is answered 429
        self._arm(self.limits.keep_alive)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        host = self.remote[0] if self.remote else ""
        left = self.server.per_host.get(host, 1) - 1
        if left > 0:
            self.server.per_host[host] = left
        else:
            self.server.per_host.pop(host, None)
        self._disarm()
        self.stop_body_clock()
        if self.conn.our_state is not h11.ERROR:
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
        if self.cycle is not None:
            if not self.cycle.complete:
                self.cycle.disconnected = True
            self.cycle.message.set()
        self.writable.set()  # a send waiting for the drain wakes up and finds the client gone

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:  # no request in flight: this is (part of) the next head
            self._head_arrives()
            if len(self.sample) < SAMPLE:
                self.sample += data[: SAMPLE - len(self.sample)]
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
                if exc.error_status_hint == 431 and b"\n" not in self.conn.trailing_data[0]:
                    line = f"the request line is over {self.limits.max_header_bytes} bytes"
                    self._refuse(414, f"{line}; at most {self.limits.max_request_line} are accepted")
                elif exc.error_status_hint == 431:
                    size = f"the request head is over {self.limits.max_header_bytes} bytes"
                    self._refuse(431, f"{size}; at most {self.limits.max_header_bytes} are accepted")
                else:  # h11 quotes the offending line after a colon: the log gets the sample instead
                    self._refuse(400, "invalid HTTP: " + str(exc).split(": bytearray(", 1)[0])
                return
            if event is h11.NEED_DATA:
                return
            if event is h11.PAUSED:  # a pipelined request: read it once this response is done
                self.pause_reading()
                return
            if isinstance(event, h11.Request):
                self._disarm()
                self.head_started = False
                problem = self._check(event)
                if problem is not None:
                    self._refuse(*problem)
                    return
                self._start_cycle(event)
                if self.conn.their_state is h11.SEND_BODY and not self.cycle_waiting_for_100():
                    self.start_body_clock()
            elif isinstance(event, h11.Data):
                if self.conn.our_state is h11.DONE or self.cycle is None:
                    continue  # the response is out: the rest of the body is read and dropped
                self.cycle.received += len(event.data)
                self.body_bytes += len(event.data)
                if self.body_timer is None and not self.reading_paused:  # sent without waiting for the 100
                    self.start_body_clock()
                if self.cycle.received > self.limits.max_body_bytes:
                    self._body_too_large(self.cycle)
                    return
                self.cycle.body += event.data
                if len(self.cycle.body) > HIGH_WATER:
                    self.pause_reading()
                self.cycle.message.set()
            elif isinstance(event, h11.EndOfMessage):
                self.stop_body_clock()
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

    def _check(self, request: h11.Request) -> tuple[int, str] | None:
        """Why `request` is refused before the app sees it (status, message), or None."""
        limits = self.limits
        line = len(request.method) + len(request.target) + len(b"HTTP/1.1") + 2
        if line > limits.max_request_line:
            return 414, f"the request line is {line} bytes; at most {limits.max_request_line} are accepted"
        head = line + sum(len(name) + len(value) + 4 for name, value in request.headers) + 2
        if head > limits.max_header_bytes:  # h11 bounds a head that arrives in parts, this one that came whole
            return 431, f"the request head is {head} bytes; at most {limits.max_header_bytes} are accepted"
        if len(request.headers) > limits.max_headers:
            return 431, f"the request has {len(request.headers)} headers; at most {limits.max_headers} are accepted"
        if self.over_cap:
            cap = limits.max_connections_per_client
            return 429, (
                f"this client address has over {cap} connections open to the server; close some "
                "([plugins.http] max_connections_per_client in settings.toml)"
            )
        names = {name for name, _ in request.headers}  # h11 gives them lower-case
        if b"content-length" in names and b"transfer-encoding" in names:
            return 400, "the request has both Content-Length and Transfer-Encoding; send one of them"
        for name, value in request.headers:
            if name == b"content-length" and int(value) > limits.max_body_bytes:  # h11 checked it is digits
                return 413, (
                    f"the request body is {int(value)} bytes; at most {limits.max_body_bytes} are accepted "
                    "([plugins.http] max_body_bytes in settings.toml)"
                )
        return None

    def _body_too_large(self, cycle: Cycle) -> None:
        """A chunked body ran over the limit while the app read it: the app gets ``http.disconnect`` (its
        sends are dropped) and the client a 413 if no response had started, else the connection closes."""
        cycle.disconnected = True
        cycle.message.set()
        if cycle.started:
            self.close()
            return
        cycle.started = cycle.complete = True
        limit = self.limits.max_body_bytes
        self._refuse(413, f"the request body is over {limit} bytes; at most {limit} are accepted "
                          "([plugins.http] max_body_bytes in settings.toml)")  # fmt: skip

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
        self._arm(self.limits.keep_alive)
        self.resume_reading()
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
            pipelined = self.conn.trailing_data[0]  # the next head, if the client sent it already
            self.sample = bytearray(pipelined[:SAMPLE])
            if pipelined:
                self._head_arrives()
            self.handle_events()

    def _refuse(self, status: int, message: str) -> None:
        """Answer `status` with `message` (the API's JSON error shape), log it (rate-limited) and close."""
        assert self.transport is not None
        self.server.refused(self.remote, status, message, bytes(self.sample))
        body = json.dumps({"error": {"code": _CODES.get(status, "bad_request"), "message": message}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        with contextlib.suppress(h11.LocalProtocolError):
            response = h11.Response(status_code=status, headers=headers, reason=_reason(status))
            self.transport.write(self.conn.send(response) or b"")
            self.transport.write(self.conn.send(h11.Data(data=body)) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        self.transport.close()

    def _head_timed_out(self) -> None:
        """A head not complete within the header timeout (a slowloris client holds the connection open by
        dribbling it): 408, written by hand since h11 sends no response before a request, and close."""
        self.timer = None
        if self.transport is None or self.transport.is_closing():
            return
        self.server.refused(self.remote, 408, "the request head was not complete in time", bytes(self.sample))
        message = f"the request head did not arrive within {self.limits.header_timeout:g} s"
        body = json.dumps({"error": {"code": "timeout", "message": message}}).encode()
        self.transport.write(
            b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (len(body), body)
        )
        self.close()

    # -- flow control and closing ----------------------------------------------------------------------

    def pause_reading(self) -> None:
        if self.transport is not None and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()
            self.stop_body_clock()  # the app is not reading: the client is not the slow one

    def resume_reading(self) -> None:
        if self.transport is not None and self.reading_paused:
            self.reading_paused = False
            self.transport.resume_reading()
            if self.conn.their_state is h11.SEND_BODY and not self.cycle_waiting_for_100():
                self.start_body_clock()

    def cycle_waiting_for_100(self) -> bool:
        """The client waits for ``100 Continue`` (sent when the app first reads): its body cannot be late yet."""
        return self.cycle is not None and self.cycle.waiting_for_100

    # -- the body's rate ----------------------------------------------------------------------------------

    def start_body_clock(self) -> None:
        """(Re)start the body's clock: from now, `min_body_rate` a second after a `body_timeout` head start."""
        self.stop_body_clock()
        self.body_since, self.body_bytes = self.loop.time(), 0
        self.body_timer = self.loop.call_at(self.body_since + self.limits.body_timeout, self._body_check)

    def stop_body_clock(self) -> None:
        if self.body_timer is not None:
            self.body_timer.cancel()
            self.body_timer = None

    def _body_check(self) -> None:
        """Due: the body is behind its rate now (408, or a close once a response started), or it earned more
        time with what it sent (checked again then; one timer a body, not one per chunk)."""
        self.body_timer = None
        limits = self.limits
        due = self.body_since + limits.body_timeout + self.body_bytes / max(1, limits.min_body_rate)
        if self.loop.time() < due:
            self.body_timer = self.loop.call_at(due, self._body_check)
            return
        if self.transport is None or self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or cycle.started or cycle.complete:
            self.close()
            return
        cycle.disconnected = True  # the app's receive() answers http.disconnect, its sends are dropped
        cycle.started = cycle.complete = True
        cycle.message.set()
        self._refuse(408, f"the request body came slower than {limits.min_body_rate} bytes a second (after a "
                          f"{limits.body_timeout:g} s head start)")  # fmt: skip

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

    def _head_arrives(self) -> None:
        """The first bytes of a head: the keep-alive stops, the header timeout starts (once per head, so
        dribbling bytes does not extend it)."""
        if not self.head_started:
            self.head_started = True
            self._disarm()
            self.timer = self.loop.call_later(self.limits.header_timeout, self._head_timed_out)

    def _arm(self, delay: float) -> None:
        self._disarm()
        self.head_started = False
        self.timer = self.loop.call_later(delay, self.close)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Cycle:
    """One request and its response: the app's ``receive`` and ``send``."""

    def __init__(self, scope: Scope, connection: Connection) -> None:
        self.scope = scope
        self.connection = connection
        self.conn = connection.conn
        self.body = bytearray()
        self.received = 0  # body bytes so far, held to `Limits.max_body_bytes`
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
            self.connection.start_body_clock()  # now the client sends its body: its rate counts
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


_CODES = {408: "timeout", 413: "too_large", 414: "too_large", 429: "too_many_connections", 431: "too_large"}


def _printable(text: str) -> str:
    """`text` for one log line: at most `SAMPLE` characters, control characters escaped."""
    text = text[:SAMPLE]
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


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
