"""The plugin's HTTP/1.1 layer (`hologram_plugins.http.http11`, h11 underneath, which replaced uvicorn) over real
loopback sockets, on what the app's own tests (test_asgi.py, test_http_basics.py …) do not reach: a body larger
than the read buffer, ``Expect: 100-continue``, pipelined requests, a malformed request, the keep-alive timeout,
and stopping with a response in flight. Raw sockets where a client library would hide the wire.

Each waits for an event (bytes, EOF) under `tests.kit.loop.run`'s deadline; nothing sleeps for a time.
Mutation checks (done): without `Connection.resume_reading` in `Cycle.receive` the 1 MB body test hangs to its
deadline; without the 100 Continue in `receive` the expect test times out waiting for it; with
`Connection.response_complete` not starting h11's next cycle the pipelining test gets one response.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from hologram_plugins.http.asgi import Response, StreamingResponse
from hologram_plugins.http.config import HttpConfig
from hologram_plugins.http.server import HttpServer
from tests.kit.loop import run

Scope = dict[str, Any]


async def echo(scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
    """Answers with the body's length and sha256 (reading it chunk by chunk), or streams for /stream."""
    if scope["path"] == "/stream":

        async def forever() -> AsyncIterator[bytes]:
            while True:
                yield b"data: tick\n\n"
                await asyncio.sleep(0.05)

        await StreamingResponse(forever(), media_type="text/event-stream")(scope, receive, send)
        return
    digest, size, more = hashlib.sha256(), 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        digest.update(message.get("body", b""))
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    await Response(f"{size} {digest.hexdigest()}".encode(), media_type="text/plain")(scope, receive, send)


async def serving(tmp_path: Path, check: Callable[[str, int, HttpServer], Awaitable[None]]) -> None:
    server = HttpServer(echo, HttpConfig.from_config({"port": 0}), tmp_path)
    await server.start()
    try:
        await check("127.0.0.1", server.port, server)
    finally:
        await server.stop()


async def response(reader: asyncio.StreamReader) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """One response with a Content-Length body: (status line, headers, body)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:] if line)
    body = await reader.readexactly(int(headers.get(b"content-length", b"0")))
    return lines[0], headers, body


def test_a_body_larger_than_the_read_buffer_arrives_whole(tmp_path: Path) -> None:
    body = bytes(range(256)) * 4096  # 1 MiB: reading pauses at 64 KiB until the app takes what came

    async def check(host: str, port: int, server: HttpServer) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        status, headers, answer = await response(reader)
        writer.close()
        assert status == b"HTTP/1.1 200 OK" and b"date" in headers
        assert answer == f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()

    run(serving(tmp_path, check))


def test_expect_100_continue_is_answered_before_the_body_is_sent(tmp_path: Path) -> None:
    async def check(host: str, port: int, server: HttpServer) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        interim = await reader.readuntil(b"\r\n\r\n")
        assert interim.startswith(b"HTTP/1.1 100 "), interim
        writer.write(b"hello")
        status, _, answer = await response(reader)
        writer.close()
        assert status == b"HTTP/1.1 200 OK" and answer.startswith(b"5 ")

    run(serving(tmp_path, check))


def test_pipelined_requests_are_answered_in_order_on_one_connection(tmp_path: Path) -> None:
    async def check(host: str, port: int, server: HttpServer) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        requests = [
            b"POST /%d HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (i, i, b"a" * i) for i in (1, 2, 3)
        ]
        writer.write(b"".join(requests))  # one write: h11 pauses after the first until its response is out
        bodies = [(await response(reader))[2] for _ in requests]
        writer.close()
        assert [b.split()[0] for b in bodies] == [b"1", b"2", b"3"]

    run(serving(tmp_path, check))


def test_a_malformed_request_gets_a_400_and_the_connection_is_closed(tmp_path: Path) -> None:
    async def check(host: str, port: int, server: HttpServer) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        answer = await reader.read()  # to EOF: the server closes
        writer.close()
        assert answer.startswith(b"HTTP/1.1 400 "), answer

    run(serving(tmp_path, check))


def test_an_idle_keep_alive_connection_is_closed_after_the_timeout(tmp_path: Path) -> None:
    async def check(host: str, port: int, server: HttpServer) -> None:
        server.server.limits = dataclasses.replace(server.server.limits, keep_alive=0.2)
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, _ = await response(reader)
        assert status == b"HTTP/1.1 200 OK" and headers.get(b"connection") != b"close"
        assert await reader.read() == b""  # EOF once the connection has been idle for keep_alive
        writer.close()
        assert not server.server.connections

    run(serving(tmp_path, check))


def test_stopping_ends_a_stream_in_flight_and_closes_idle_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hologram_plugins.http.server as server_module

    monkeypatch.setattr(server_module, "GRACE_S", 0.3)

    async def main() -> None:
        server = HttpServer(echo, HttpConfig.from_config({"port": 0}), tmp_path)
        await server.start()
        idle_r, idle_w = await asyncio.open_connection("127.0.0.1", server.port)
        stream_r, stream_w = await asyncio.open_connection("127.0.0.1", server.port)
        stream_w.write(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        await stream_r.readuntil(b"data: tick\n\n")  # the stream runs
        await server.stop()
        assert await idle_r.read() == b""  # closed at once
        rest = await stream_r.read()  # closed after the grace: the stream was cancelled
        assert not rest.endswith(b"0\r\n\r\n"), "a cancelled stream must not look complete"
        assert not server.server.tasks and not server.server.connections
        for writer in (idle_w, stream_w):
            writer.close()

    run(main())


def test_the_configured_body_limit_is_the_servers(tmp_path: Path) -> None:
    """``[plugins.http] max_body_bytes`` reaches the server: one byte over it is a 413 naming the setting, the
    limit itself is read whole. Mutation checked: `HttpServer` building `Server` without `Limits(...)` — the
    default 8 MiB lets the body through (200)."""

    async def main() -> None:
        server = HttpServer(echo, HttpConfig.from_config({"port": 0, "max_body_bytes": 1000}), tmp_path)
        await server.start()
        try:
            for size, expected in ((1000, b"HTTP/1.1 200"), (1001, b"HTTP/1.1 413")):
                reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
                writer.write(b"POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size + b"b" * size)
                status, _, body = await response(reader)
                writer.close()
                assert status.startswith(expected), (size, status, body)
            assert b"at most 1000" in body and b"max_body_bytes" in body, body
        finally:
            await server.stop()

    run(main())


def test_the_server_settings_reach_the_server(tmp_path: Path) -> None:
    """``[plugins.http]``'s timeouts, body rate and connection cap, validated by the plugin's config model,
    are the server's `Limits` (what tests/httpapi/test_server_conformance.py holds the server to). Mutation
    checked: `HttpServer` leaving ``max_connections_per_client`` out of its `Limits` — the default 256."""
    from hologram_plugins.http.config import HttpSettings
    from hologram_plugins.http.http11 import Limits

    values = {"port": 0, "header_timeout_s": 3.5, "min_body_rate": 99, "body_timeout_s": 7.0, "keep_alive_s": 2.5,
              "max_connections_per_client": 3}  # fmt: skip
    server = HttpServer(echo, HttpConfig.from_config(HttpSettings(**values).model_dump()), tmp_path)
    try:
        assert server.server.limits == Limits(
            header_timeout=3.5, min_body_rate=99, body_timeout=7.0, keep_alive=2.5, max_connections_per_client=3
        )
    finally:
        server.sock.close()
