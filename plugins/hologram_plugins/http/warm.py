"""The plugin's own first requests, sent to itself before it says ready (issue 39 item 9).

Why: the first request this process serves ran ~1 ms of CPU more than any later one, measured in its own
process (``GET /v1/models``: ~200 minor page faults and 1.5-1.7 ms the first time, 2-6 faults and 0.6-0.9 ms
after). The process is a fork of the zygote; the server's request path — h11, `http11`, `access`, `asgi`, the
JSON responses — is code and objects it shares with the zygote until it first runs them, and running them writes
into their pages (reference counts, the bytecode's warm-up counters): one copy-on-write fault per page, once. The
first ``POST /v1/chat/completions`` after "ready" paid that on its way, with ~70 faults more for the turn's
parameters (`StartParams`' first validation) and the event router.

So `warm` takes them before `on_start` returns, i.e. before the plugin is ready: one loopback connection to its
own port with the token, ``GET /v1/models`` and a ``POST /v1/chat/completions`` that is refused with a 400 before
reaching the kernel (no turn, no session); then a `StartParams` check of the fields a ``/v1`` turn sends, and a
listener registered and removed on the router (no kernel call). The pages it copies are the ones the first
request would copy anyway, so the footprint after a turn is the same; before any request the plugin holds them
~1 MB sooner (docs/performance.md). It never fails the start: with TLS (the loopback client would need the
certificate) it is skipped, and anything that goes wrong is logged at debug level and left to the first request.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from hologram_plugins.http.channel import Channel

log = logging.getLogger("hologram_plugins.http")

TIMEOUT_S = 2.0  # a loaded machine; past it the first request does the rest, as before
_BAD_BODY = b'{"model":"hologram","messages":[]}'  # refused (400) by the body check: no turn starts
_SESSION = "\x00warm"  # a session id no client can send (not printable): the router's listener only


def _loopback(sock: socket.socket) -> tuple[str, int]:
    """Where to reach the listening `sock` from this host: its own address, or loopback for a wildcard bind."""
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return host, port


def _requests(port: int, token: str) -> bytes:
    head = f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
    return (
        f"GET /v1/models HTTP/1.1\r\n{head}\r\n"
        f"POST /v1/chat/completions HTTP/1.1\r\n{head}Content-Type: application/json\r\n"
        f"Content-Length: {len(_BAD_BODY)}\r\nConnection: close\r\n\r\n"
    ).encode() + _BAD_BODY


async def _roundtrip(sock: socket.socket, token: str) -> bytes:
    host, port = _loopback(sock)
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(_requests(port, token))
        return await reader.read()  # both answers: the server closes after the second (Connection: close)
    finally:
        writer.close()


def _params(channel: Channel) -> None:
    """The turn's parameters checked once (`StartParams`, as `Channel.start` does) and a listener registered and
    removed on the router, without a kernel call."""
    from hologram.api.params import StartParams

    fields: dict[str, Any] = {
        "text": "hello",
        "session": "warm",
        "client": "openai",
        "approvals": False,
        "principal": "v1",
        "watch": True,
        "on_disconnect": "cancel",
    }
    StartParams.parse("turn/start", fields).model_dump(exclude_none=True)
    channel.router.unlisten(channel.listen(_SESSION))


async def warm(sock: socket.socket, token: str, channel: Channel, *, tls: bool) -> bool:
    """Send the first requests to ourselves (module docstring); True when both were answered as expected."""
    try:
        _params(channel)
        if tls:
            return False
        answer = await asyncio.wait_for(_roundtrip(sock, token), TIMEOUT_S)
    except Exception as exc:  # the first real request does it instead
        log.debug("http: warming the request path failed: %r", exc)
        return False
    ok = answer.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 400" in answer
    if not ok:
        log.debug("http: warming the request path got %r", answer[:200])
    return ok
