"""The browser's only way out: a loopback HTTP proxy that applies the web plugin's network policy.

Why a proxy and not a check in `browser_open`. A page the model opened can link, redirect, post a form, open a
tab, load an image or call `fetch()` towards `http://169.254.169.254/` or the kernel's own web UI on
127.0.0.1. Chromium is started with `--proxy-server` pointing here and `--proxy-bypass-list=<-loopback>`
(without it Chromium would reach loopback directly), so every http(s) and ws(s) request of every tab
comes through `_serve`, which checks the host with the same `NetPolicy` as web_fetch (deny-list, private
addresses, `allow_private`) and connects to the very address it checked (no DNS rebinding between check
and connect). A refused request gets a 403 page naming the rule, which the model reads.

Plain http is forwarded one request per connection (`Connection: close`), https and websockets go through
CONNECT as an opaque tunnel: the proxy never sees their content.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from hologram_plugins.web.guard import FetchError, NetPolicy

log = logging.getLogger("hologram_plugins.browser")
MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 15.0


@dataclass
class GuardProxy:
    """The proxy server; `refused` keeps the latest refusals so a tool result can name them."""

    policy: NetPolicy
    server: asyncio.Server | None = None
    port: int = 0
    refused: list[str] = field(default_factory=list)

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD)
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2.0)
            self.server = None

    def take_refused(self) -> list[str]:
        refused, self.refused = self.refused, []
        return refused

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        try:
            await self._forward(head, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, OSError) as exc:
            log.debug("proxy connection ended: %s", exc)
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _forward(self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first, _, rest = head.partition(b"\r\n")
        try:
            method, target, version = first.decode("latin-1").split(" ", 2)
        except ValueError:
            await _answer(writer, 400, "bad request line")
            return
        if method == "CONNECT":
            url = f"https://{target}/"
        elif target.startswith("http://"):
            url = target
        else:
            await _answer(writer, 400, f"not a proxy request: {target}")
            return
        try:
            checked = self.policy.check_url(url)
            addresses = await self.policy.resolve(checked)
        except FetchError as exc:
            message = str(exc).replace("the web plugin's config", "the browser plugin's config")
            if not message.startswith("cannot resolve"):  # a name that does not resolve is not a refusal (and
                self.refused.append(message)  # offline, Chromium's own preconnects to its search engine fail so)
            await _answer(writer, 403, message)
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(addresses[0], checked.port), CONNECT_TIMEOUT_S
            )
        except (OSError, asyncio.TimeoutError) as exc:
            await _answer(writer, 502, f"cannot connect to {checked.host}:{checked.port}: {exc}")
            return
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                up_writer.write(_origin_request(method, target, version, rest))
                await up_writer.drain()
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            with contextlib.suppress(Exception):
                up_writer.close()


def _origin_request(method: str, target: str, version: str, rest: bytes) -> bytes:
    """`GET http://h/p HTTP/1.1` + headers → `GET /p HTTP/1.1` with `Connection: close` (one request each)."""
    after_scheme = target.split("://", 1)[1]
    path = "/" + after_scheme.split("/", 1)[1] if "/" in after_scheme else "/"
    lines = [
        line
        for line in rest.split(b"\r\n")
        if line and not line.lower().startswith((b"connection:", b"proxy-connection:", b"keep-alive:"))
    ]
    return b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *lines, b"Connection: close", b"", b""])


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    body = f"<!doctype html><title>Refused by Hologram</title><p>{_escape(message)}</p>".encode()
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
