"""The http plugin's server (`hologram_plugins.http.http11`: h11 and our asyncio glue) and uvicorn (h11 too),
serving the same ASGI app with the same limits, held to the same raw-socket tests — so what the glue holds
that uvicorn holds is compared on every change (issue 34, item 6).

Each test takes the ``server`` fixture twice, once per server; where uvicorn lacks a behaviour (it leaves the
request-line and header-count limits, the body limit, the header timeout and refusing ``Content-Length`` with
``Transfer-Encoding`` to a proxy in front of it), its run is ``xfail(strict=True)`` with the reason, so the
day it holds one the suite says so. The glue must pass all.

Each server runs its own event loop in a thread of this process, on a socket bound to 127.0.0.1:0, so a
test counts the server's open file descriptors and tasks and reads its log records. Nothing sleeps for a
set time except the slowloris client's pacing; every wait is for bytes or EOF, under a deadline that is a
failure bound (several times what a slow machine needs), not an expected duration.

Mutation checks (each done, each test red without its limit, green again once restored) are named in the
docstring of each test.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import select
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from hologram_plugins.http import http11
from tests.kit.wait import wait_until

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

LIMITS = http11.Limits(
    max_body_bytes=64 * 1024,
    header_timeout=1.0,
    keep_alive=1.0,
    body_timeout=1.0,
    min_body_rate=64 * 1024,
    max_connections_per_client=64,
)
BACKLOG = 512
DEADLINE_S = 20.0  # the longest any single wait may take before the test fails
DRIP_S = 0.8 * LIMITS.keep_alive  # /drip's pause between chunks: three of them outlast the keep-alive
SLOWLORIS_S = 8 * LIMITS.header_timeout  # how long the slow client dribbles before it calls the server lax
LOGGERS = ("hologram_plugins.http", "uvicorn.error")
UVICORN_LACKS = "uvicorn has no {}: it leaves that to a proxy in front of it"
BIG = b"".join(b"X-Big%d: %s\r\n" % (i, b"v" * 6000) for i in range(10))  # ~60 KiB of headers


class Waiting:
    """How many ``/wait`` requests the app holds now (they wait for their client to leave, as an SSE stream)."""

    lock = threading.Lock()
    count = 0

    @classmethod
    def add(cls, n: int) -> None:
        with cls.lock:
            cls.count += n


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """``/echo`` answers with the request's body (read chunk by chunk); ``/wait`` answers nothing until its
    client leaves; ``/drip`` streams three chunks `DRIP_S` apart; anything else ``ok PATH``."""
    if scope["type"] != "http":
        return
    body = b""
    if scope["path"] == "/wait":
        Waiting.add(1)
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            Waiting.add(-1)
        return
    if scope["path"] == "/drip":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for i in range(3):
            await asyncio.sleep(DRIP_S)
            await send({"type": "http.response.body", "body": b"drip%d " % i, "more_body": i < 2})
        return
    if scope["path"] == "/echo":
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
    else:
        body = b"ok " + scope["path"].encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def warnings(self) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno >= logging.WARNING]


@dataclass
class Served:
    """A server running in its own thread and loop: where it listens, its log, what it holds open."""

    name: str
    port: int
    loop: asyncio.AbstractEventLoop
    log: Records
    stop: Callable[[], None]
    thread: threading.Thread
    clients: list[socket.socket] = field(default_factory=list)

    def tasks(self) -> int:
        """The server loop's tasks, less the one counting them."""

        async def count() -> int:
            return len(asyncio.all_tasks()) - 1

        return asyncio.run_coroutine_threadsafe(count(), self.loop).result(DEADLINE_S)

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=DEADLINE_S)
        self.clients.append(sock)  # closed at the end of the test: a server that stops waits for its clients
        return sock


def serve_glue(sock: socket.socket, records: Records, limits: http11.Limits) -> Served:
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        server = http11.Server(app, sock, limits=limits, backlog=BACKLOG)
        await server.start()
        stopping = asyncio.Event()
        holder["loop"], holder["stop"] = asyncio.get_running_loop(), stopping.set
        ready.set()
        await stopping.wait()
        await server.stop(1.0)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(DEADLINE_S), "our server did not start"
    loop = holder["loop"]
    return Served(
        "glue", sock.getsockname()[1], loop, records, lambda: loop.call_soon_threadsafe(holder["stop"]), thread
    )


def serve_uvicorn(sock: socket.socket, records: Records, limits: http11.Limits) -> Served:
    uvicorn = pytest.importorskip("uvicorn")
    config = uvicorn.Config(
        app,
        loop="asyncio",
        http="h11",
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_keep_alive=limits.keep_alive,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        backlog=BACKLOG,
    )
    server = uvicorn.Server(config)
    holder: dict[str, Any] = {}

    async def main() -> None:
        holder["loop"] = asyncio.get_running_loop()
        await server.serve(sockets=[sock])

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + DEADLINE_S
    while not server.started:  # uvicorn's own flag; it offers no event to wait on
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True

    return Served("uvicorn", sock.getsockname()[1], holder["loop"], records, stop, thread)


@pytest.fixture(params=["glue", "uvicorn"])
def server(request: pytest.FixtureRequest) -> Iterator[Served]:
    """Our server or uvicorn, serving `app` with `LIMITS` on 127.0.0.1 (uvicorn's runs xfail where a test's
    ``uvicorn_lacks`` marker names what it does not have; a ``limits`` marker changes fields of `LIMITS`)."""
    changed = request.node.get_closest_marker("limits")
    limits = dataclasses.replace(LIMITS, **changed.kwargs) if changed is not None else LIMITS
    lacks = request.node.get_closest_marker("uvicorn_lacks")
    if request.param == "uvicorn" and lacks is not None:
        request.applymarker(pytest.mark.xfail(reason=UVICORN_LACKS.format(lacks.args[0]), strict=True))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(BACKLOG)
    sock.setblocking(False)
    records = Records()
    for name in LOGGERS:
        logging.getLogger(name).addHandler(records)
    served = (serve_glue if request.param == "glue" else serve_uvicorn)(sock, records, limits)
    try:
        yield served
    finally:
        for client in served.clients:
            client.close()
        served.stop()
        served.thread.join(DEADLINE_S)
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(records)
        sock.close()
        assert not served.thread.is_alive(), f"{served.name} did not stop"


# -- the wire -----------------------------------------------------------------------------------------------


def read_response(sock: socket.socket, buffered: bytearray | None = None) -> tuple[int, dict[str, str], bytes]:
    """One response off `sock` (``Content-Length`` framed): status, headers (lower-case names), body.
    `buffered` carries bytes read past it between calls (pipelined responses)."""
    data = buffered if buffered is not None else bytearray()
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed before a whole response head: {bytes(data)!r}"
        data += chunk
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    size = int(headers.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < size:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed inside a response body"
        body += chunk
    data[:] = body[size:]
    return int(lines[0].split()[1]), headers, bytes(body[:size])


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed `sock` (EOF or reset), reading and dropping anything it still sends."""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def exchange(served: Served, raw: bytes) -> tuple[int, dict[str, str], bytes, socket.socket]:
    sock = served.connect()
    sock.sendall(raw)
    status, headers, body = read_response(sock)
    return status, headers, body, sock


def get(path: str = "/", extra: bytes = b"") -> bytes:
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n" + extra + b"\r\n"


# -- limits -------------------------------------------------------------------------------------------------


@pytest.mark.uvicorn_lacks("request-line limit (h11 bounds only the whole head)")
def test_a_request_line_over_the_limit_is_refused_and_closed(server: Served) -> None:
    """A 9 KiB target (the line limit 8 KiB, the head limit 64 KiB) is a 4xx and a close; 8,000 bytes pass.
    Mutation checked: without the request-line check in `Connection._check` the long line is answered 200."""
    status, _, _, sock = exchange(server, get("/" + "a" * 8000))
    assert status == 200
    sock.close()
    status, headers, body, sock = exchange(server, get("/" + "a" * (9 * 1024)))
    assert status in (414, 400) and headers.get("connection") == "close", (status, headers)
    assert closed_by_server(sock)
    if server.name == "glue":
        assert b"at most 8192" in body, body


def test_an_endless_request_line_is_refused_at_the_head_limit(server: Served) -> None:
    """A request line that never ends is refused once the head limit is buffered, not held in memory.
    Mutation checked: h11 given ``max_incomplete_event_size=10**9`` in `Connection` — the server reads on and
    the test fails waiting for an answer."""
    sock = server.connect()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(b"GET /" + b"a" * (LIMITS.max_header_bytes + 4096))
    status, headers, _ = read_response(sock)
    assert status in (414, 400) and headers.get("connection") == "close", (status, headers)
    assert closed_by_server(sock)


@pytest.mark.uvicorn_lacks("header-count limit")
def test_too_many_headers_are_refused(server: Served) -> None:
    """101 headers (limit 100) → 431 or 400 and a close; 100 pass.
    Mutation checked: without the header-count check in `Connection._check` 101 headers are answered 200."""
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(99))  # with Host: 100
    status, _, _, sock = exchange(server, get("/", headers))
    assert status == 200
    sock.close()
    status, answered, _, sock = exchange(server, get("/", headers + b"X-One-More: v\r\n"))
    assert status in (431, 400) and answered.get("connection") == "close", (status, answered)
    assert closed_by_server(sock)


def test_a_header_block_over_the_limit_is_refused_while_it_arrives(server: Served) -> None:
    """A head still arriving once over 64 KiB → 431 or 400 and a close, without waiting for its end; a 60 KiB
    one passes. Mutation checked: h11 given ``max_incomplete_event_size=10**9`` in `Connection` — the server
    reads on and the test fails waiting for an answer."""
    status, _, _, sock = exchange(server, get("/", BIG))
    assert status == 200
    sock.close()
    sock = server.connect()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(get("/", BIG)[:-2] + b"X-Over: " + b"v" * (8 * 1024))  # no end of the head
    status, answered, _ = read_response(sock)
    assert status in (431, 400) and answered.get("connection") == "close", (status, answered)
    assert closed_by_server(sock)


@pytest.mark.uvicorn_lacks("limit on a head that arrives whole (h11 bounds only one still arriving)")
def test_a_header_block_over_the_limit_is_refused_when_it_arrives_whole(server: Served) -> None:
    """A head 100 bytes over 64 KiB in one send → 431 or 400 and a close. The server reads it in two parts
    on loopback (a segment is ~64,000 bytes), neither both incomplete and over the limit, so h11's own bound
    never trips. Mutation checked: without the head-size check in `Connection._check` it is answered 200."""
    head = get("/", BIG)
    pad = LIMITS.max_header_bytes + 100 - len(head)
    status, answered, _, sock = exchange(server, get("/", BIG + b"X-Pad: " + b"v" * (pad - 9) + b"\r\n"))
    assert status in (431, 400) and answered.get("connection") == "close", (status, answered)
    assert closed_by_server(sock)


@pytest.mark.uvicorn_lacks("request body limit")
def test_a_body_over_the_limit_is_a_413_naming_the_limit(server: Served) -> None:
    """A declared body over 64 KiB is a 413 before the app reads it — with ``Expect: 100-continue`` no 100
    comes first — and a chunked one is cut off with a 413 once it runs over; the body names the limit and
    the setting. A body at the limit is echoed whole.
    Mutation checked: without the Content-Length check in `Connection._check` the declared body gets a 100
    Continue; without the count in `handle_events` the chunked one is echoed 200."""
    limit = LIMITS.max_body_bytes
    at_limit = b"x" * limit
    post = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n"
    status, _, body, sock = exchange(server, post % limit + b"\r\n" + at_limit)
    assert status == 200 and body == at_limit
    sock.close()

    status, headers, body, sock = exchange(server, post % (limit + 1) + b"Expect: 100-continue\r\n\r\n")
    assert status == 413 and headers.get("connection") == "close", (status, headers, body)
    assert str(limit).encode() in body and b"max_body_bytes" in body, body
    assert closed_by_server(sock)

    sock = server.connect()
    chunk = b"y" * 16384
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n")
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        for _ in range(limit // len(chunk) + 2):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        sock.sendall(b"0\r\n\r\n")
    status, headers, body = read_response(sock)
    assert status == 413 and str(limit).encode() in body, (status, body)
    assert closed_by_server(sock)


@pytest.mark.uvicorn_lacks("header timeout (its keep-alive timer stops at the first byte)")
def test_a_slowloris_client_is_timed_out_while_others_are_served(server: Served) -> None:
    """A client dribbling a head byte by byte is answered 408 / closed once the header timeout (1 s) has
    passed since its first byte, however steadily it sends; a normal request on another connection is
    answered meanwhile. Mutation checked: with `Connection._head_arrives` not arming the header timeout the
    dribbling connection stays open to the deadline."""
    slow = server.connect()
    slow.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ")
    started = time.monotonic()
    status, _, _, other = exchange(server, get("/meanwhile"))
    assert status == 200
    other.close()
    closed = False
    while not closed and time.monotonic() - started < SLOWLORIS_S:
        readable, _, _ = select.select([slow], [], [], 0.05)  # the client's pace: a byte every 50 ms
        if readable:
            closed = closed_by_server(slow)
            break
        try:
            slow.send(b"a")
        except (BrokenPipeError, ConnectionResetError):
            closed = True
    elapsed = time.monotonic() - started
    slow.close()
    assert closed, f"{server.name} still held the slowloris connection after {elapsed:.1f} s"
    assert elapsed >= LIMITS.header_timeout * 0.9, f"closed after {elapsed:.2f} s, before the header timeout"


BODY = 1024 * 1024  # the slow POST of issue 41: 1 MiB
DRIBBLE = 4096  # the slow client's bytes per step …
DRIBBLE_S = 0.25  # … every this many seconds: 16 KiB/s, a quarter of `LIMITS.min_body_rate`
SLOW_BODY_S = 8 * (LIMITS.body_timeout / (1 - DRIBBLE / DRIBBLE_S / LIMITS.min_body_rate))  # 8× when it is due


@pytest.mark.limits(max_body_bytes=BODY)
@pytest.mark.uvicorn_lacks("minimum body rate (a body may take for ever to arrive)")
def test_a_slow_body_is_cut_off_with_a_408_while_a_fast_one_passes(server: Served) -> None:
    """A 1 MiB POST sent at once is echoed whole; the same body dribbled at 16 KiB/s — a quarter of the 64 KiB/s
    minimum, after its 1 s head start, so due after ~1.3 s — is answered 408 and closed well before it could
    finish (64 s), while another connection is served meanwhile; the log says why. Mutation checked:
    `Connection._body_check` re-arming its timer instead of refusing, or counting a second a byte instead of
    `min_body_rate` — the slow body is read on to the test's bound; closing without the 408 — no answer."""
    post = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % BODY
    body = bytes(range(256)) * (BODY // 256)
    status, _, echoed, sock = exchange(server, post + body)
    assert status == 200 and echoed == body
    sock.close()

    slow = server.connect()
    slow.sendall(post)
    started = time.monotonic()
    status, _, _, other = exchange(server, get("/meanwhile"))
    assert status == 200
    other.close()
    sent, answered = 0, False
    while sent < BODY and time.monotonic() - started < SLOW_BODY_S:
        answered = bool(select.select([slow], [], [], DRIBBLE_S)[0])  # the client's pace
        if answered:
            break
        try:
            slow.sendall(body[sent : sent + DRIBBLE])
        except (BrokenPipeError, ConnectionResetError):
            answered = True
            break
        sent += DRIBBLE
    elapsed = time.monotonic() - started
    assert answered and sent < BODY, f"{server.name} read {sent} bytes of the slow body in {elapsed:.1f} s"
    assert elapsed >= LIMITS.body_timeout * 0.9, f"cut after {elapsed:.2f} s, inside the head start"
    with contextlib.suppress(ConnectionResetError):  # the 408 may be lost to the reset of the unread rest
        status, headers, text = read_response(slow)
        assert status == 408 and headers.get("connection") == "close", (status, headers, text)
        assert b"bytes a second" in text, text
    assert closed_by_server(slow)
    assert any("slower than" in line for line in server.log.warnings()), server.log.warnings()


@pytest.mark.limits(max_connections_per_client=4)
@pytest.mark.uvicorn_lacks("cap on the connections of one client address")
def test_a_client_address_over_its_connection_cap_is_refused_while_others_are_served(server: Served) -> None:
    """Four connections from 127.0.0.1 held open by requests still in flight (``/wait``, as an SSE stream): a
    fifth from that address is answered 429 and closed, naming the setting; one from 127.0.0.2 (another
    client) is served; once one of the four closes, 127.0.0.1 is served again. Mutation checked: `over_cap`
    never set in `connection_made` — the fifth is answered 200; the count not decremented in
    `connection_lost` — the address stays refused after one of its connections closed."""
    held = []
    for _ in range(4):
        sock = server.connect()
        sock.sendall(get("/wait"))
        held.append(sock)
    wait_until(lambda: Waiting.count == 4, timeout=DEADLINE_S, what="the four requests held by the app")
    status, headers, body, over = exchange(server, get("/fifth"))
    assert status == 429 and headers.get("connection") == "close", (status, headers, body)
    assert b"max_connections_per_client" in body, body
    assert closed_by_server(over)

    elsewhere = socket.create_connection(("127.0.0.1", server.port), DEADLINE_S, source_address=("127.0.0.2", 0))
    server.clients.append(elsewhere)
    elsewhere.sendall(get("/elsewhere"))
    assert read_response(elsewhere)[0] == 200

    held.pop().close()
    wait_until(lambda: Waiting.count == 3, timeout=DEADLINE_S, what="the server to see one of them close")
    assert exchange(server, get("/again"))[0] == 200


# -- the protocol -------------------------------------------------------------------------------------------


def test_keep_alive_serves_two_requests_on_one_connection_then_closes_when_idle(server: Served) -> None:
    """Two requests one after the other on one connection, then EOF after the keep-alive timeout (1 s).
    Mutation checked: `Connection._arm` not called in `response_complete` — the idle connection stays open
    (the test fails on the read's timeout)."""
    sock = server.connect()
    for path in ("/one", "/two"):
        sock.sendall(get(path))
        status, headers, body = read_response(sock)
        assert status == 200 and body == b"ok " + path.encode() and headers.get("connection") != "close"
    started = time.monotonic()
    assert closed_by_server(sock), "the idle connection was not closed"
    assert time.monotonic() - started >= LIMITS.keep_alive * 0.9
    sock.close()


@pytest.mark.uvicorn_lacks("idle timeout before a first request (its keep-alive timer starts after a response)")
def test_a_connection_that_never_sends_a_byte_is_closed_after_the_keep_alive(server: Served) -> None:
    """Connected and silent: EOF once the keep-alive timeout (1 s) has passed, not before. Mutation checked:
    `connection_made` not arming the keep-alive — the connection stays open to the read's deadline."""
    sock = server.connect()
    started = time.monotonic()
    assert closed_by_server(sock), "the silent connection was not closed"
    assert time.monotonic() - started >= LIMITS.keep_alive * 0.9
    sock.close()


def test_a_response_longer_than_the_keep_alive_is_not_cut(server: Served) -> None:
    """A response streamed over 2.4 s (three chunks 0.8 s apart, the keep-alive 1 s) arrives whole: the idle
    timer does not run while a response is in flight; then the idle connection is closed. Mutation checked:
    `handle_events` not disarming the keep-alive when a request arrives — the stream is cut after 1 s."""
    sock = server.connect()
    sock.sendall(get("/drip"))
    data = b""
    while not data.endswith(b"0\r\n\r\n"):
        chunk = sock.recv(65536)
        assert chunk, f"the stream was cut: {data!r}"
        data += chunk
    assert data.startswith(b"HTTP/1.1 200") and b"drip0 " in data and b"drip2 " in data, data
    assert closed_by_server(sock)
    sock.close()


def test_pipelined_requests_are_answered_in_order(server: Served) -> None:
    """Three requests in one send, one with a body: three responses, in order, on the same connection.
    Mutation checked: `response_complete` not starting h11's next cycle — the second response never comes."""
    sock = server.connect()
    sock.sendall(get("/first") + b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nsecond" + get("/third"))
    buffered = bytearray()
    answers = [read_response(sock, buffered)[2] for _ in range(3)]
    assert answers == [b"ok /first", b"second", b"ok /third"]
    sock.close()


def test_expect_100_continue_is_answered_before_the_body_is_sent(server: Served) -> None:
    """The client waits for ``100 Continue`` before it sends the body, then gets the response.
    Mutation checked: without the 100 in `Cycle.receive` the test fails waiting for it."""
    sock = server.connect()
    sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    interim = b""
    while b"\r\n\r\n" not in interim:
        chunk = sock.recv(1)
        assert chunk, "closed before 100 Continue"
        interim += chunk
    assert interim.startswith(b"HTTP/1.1 100 "), interim
    sock.sendall(b"hello")
    status, _, body = read_response(sock)
    assert status == 200 and body == b"hello"
    sock.close()


@pytest.mark.parametrize(
    "raw",
    [b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: t\r\nBad Header: v\r\n\r\n", b"GET /\x01 HTTP/1.1\r\n\r\n"],
    ids=["request-line", "header-name", "control-char"],
)
def test_malformed_input_is_a_400_and_one_log_line(server: Served, raw: bytes) -> None:
    """A malformed request line or header → 400, a close, and exactly one warning.
    Mutation checked: `_refuse` not logging — no warning; logging it twice — two."""
    status, headers, _, sock = exchange(server, raw)
    assert status == 400 and headers.get("connection") == "close"
    assert closed_by_server(sock)
    sock.close()
    deadline = time.monotonic() + DEADLINE_S
    while not server.log.warnings() and time.monotonic() < deadline:  # the server thread logs it
        time.sleep(0.01)
    assert len(server.log.warnings()) == 1, server.log.warnings()


@pytest.mark.uvicorn_lacks("rate limit on its log of malformed requests, nor a quote of them")
def test_a_flood_of_malformed_requests_is_logged_once_with_an_escaped_excerpt(server: Served) -> None:
    """Twenty malformed requests from one address within a minute: one warning, which quotes at most 200
    bytes of the first, escaped (no raw CR/LF/ESC in the log). Mutation checked: without the per-address
    check in `Server.refused` twenty warnings; with the sample not cut at `SAMPLE` bytes (in
    `data_received` and in `Server.refused`) the marker beyond 200 bytes shows in the log."""
    raw = b"\x1b[31mEVIL" + b"z" * 300 + b"BEYOND200 / HTTP/1.1\r\n\r\n"
    for _ in range(20):
        status, _, _, sock = exchange(server, raw)
        assert status == 400
        sock.close()
    status, _, _, sock = exchange(server, get("/after"))  # the server is alive and answers normally
    assert status == 200
    sock.close()
    warnings = server.log.warnings()
    assert len(warnings) == 1, warnings
    line = warnings[0]
    assert "127.0.0.1" in line and "\\x1b[31mEVIL" in line and "BEYOND200" not in line, line
    assert "\x1b" not in line and "\r" not in line and "\n" not in line and len(line) < 800, line


@pytest.mark.uvicorn_lacks("refusal of Content-Length with Transfer-Encoding (h11 frames by the chunks)")
def test_content_length_with_transfer_encoding_is_a_400_and_a_close(server: Served) -> None:
    """Both framings in one request (request smuggling's lever) → 400 and a close, never a second request
    read from what one of them calls the body. Mutation checked: without the check in `Connection._check`
    h11 reads the chunks and answers 200."""
    raw = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get(
        "/smuggled"
    )
    status, headers, _, sock = exchange(server, raw)
    assert status == 400 and headers.get("connection") == "close", (status, headers)
    assert closed_by_server(sock)


# -- resources ----------------------------------------------------------------------------------------------


def test_the_listen_backlog_is_what_the_server_asks_for(server: Served) -> None:
    """The listening socket's accept queue is 512 (``ss`` shows it as Send-Q), not asyncio's default 100.
    Mutation checked: without ``backlog=`` in `Server.start` ss shows 100."""
    if shutil.which("ss") is None:
        pytest.skip("needs ss (iproute2) to read the listen backlog")
    shown = subprocess.run(
        ["ss", "-ltnH", f"sport = :{server.port}"], capture_output=True, text=True, check=True, timeout=DEADLINE_S
    ).stdout.split()
    assert shown[0] == "LISTEN" and int(shown[2]) == min(BACKLOG, somaxconn()), shown


def somaxconn() -> int:
    with open("/proc/sys/net/core/somaxconn", encoding="ascii") as f:
        return int(f.read())


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_thousands_of_connect_close_cycles_leave_nothing_behind(server: Served) -> None:
    """2,000 connections opened and closed — a quarter each with a whole request, half a head, half a body
    (the app waiting in ``receive``) and nothing — leave the server with the file descriptors and tasks it
    had, in bounded time. Mutation checked: `connection_lost` not waking the cycle (no ``cycle.message.set()``)
    — the apps waiting for the rest of their body stay as tasks; `eof_received` returning True with
    `Connection.close` not closing the transport — the fds do not come back."""
    for _ in range(10):  # warm up: the first connections allocate what stays (the loop's selector, caches)
        _, _, _, sock = exchange(server, get("/warm"))
        sock.close()
    fds, tasks = open_fds(), server.tasks()
    started = time.monotonic()
    for i in range(2000):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE_S)
        if i % 4 == 0:
            sock.sendall(get("/cycle"))
            assert read_response(sock)[0] == 200
        elif i % 4 == 1:
            sock.sendall(b"GET /half HTTP/1.1\r\nHo")
        elif i % 4 == 2:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nhalf")
        sock.close()
    elapsed = time.monotonic() - started
    deadline = time.monotonic() + DEADLINE_S
    while (open_fds() > fds or server.tasks() > tasks) and time.monotonic() < deadline:  # closes in flight
        time.sleep(0.02)
    assert open_fds() <= fds and server.tasks() <= tasks, (
        f"fds {fds} -> {open_fds()}, tasks {tasks} -> {server.tasks()}"
    )
    assert elapsed < 60, f"2,000 cycles took {elapsed:.1f} s"
    print(f"{server.name}: 2,000 connect/close cycles in {elapsed:.2f} s")
