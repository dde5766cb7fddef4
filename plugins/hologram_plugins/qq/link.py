"""The connection to NapCat: OneBot v11 over one WebSocket, either way round, with the ``websockets`` library.

- **Reverse** (``listen``): this plugin serves ``ws://HOST:PORT/onebot/v11/ws`` and NapCat's "WebSocket client"
  connects (and reconnects, every ``reconnectInterval``). The handshake is refused — 401, before any event —
  without the access token (``Authorization: Bearer …`` or ``?access_token=``), compared in constant time. A new
  connection replaces the one before (NapCat came back).
- **Forward** (``connect``): this plugin dials NapCat's "WebSocket server", with the token, and dials again after
  a drop with a growing pause (1 s, 2 s, 4 s … ``reconnect_max_s``). NapCat refuses a wrong token after the
  handshake (a ``retcode`` 1403 answer, then close): said in the status, and tried again at the longest pause.

Events (``post_type``) go to ``on_event`` in order; a line that is not a JSON object is logged (the first few, then
counted) and the connection stays up. Actions are sent with an ``echo`` and matched to their answer; an answer
with ``retcode`` ≠ 0 raises `ActionFailed`. An action asked while NapCat is away waits for it to be back (at most
``wait_s``): an answer written after a drop is delivered once the connection is back. One that was sent and whose
answer was lost with the connection is not sent again — it may have arrived, and a message twice is worse than a
failure in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.client import connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.http11 import Request, Response

log = logging.getLogger("hologram_plugins.qq")
OnEvent = Callable[[dict[str, Any]], Awaitable[None]]
LOGGED_GARBAGE = 5  # malformed lines logged in full per connection; the rest are counted
TOKEN_REFUSED = 1403  # NapCat's answer to a wrong token (then it closes)


class ActionFailed(Exception):
    def __init__(self, action: str, retcode: int, message: str) -> None:
        super().__init__(f"{action} failed: retcode {retcode}: {message}")
        self.action, self.retcode, self.message = action, retcode, message


class LinkDown(Exception):
    """NapCat was not connected in time, or the connection went away with the action's answer."""


class Link:
    """One NapCat connection at a time; `State` of it for the status line."""

    def __init__(
        self,
        *,
        token: str,
        on_event: OnEvent,
        on_change: Callable[[], None],
        listen: str | None = None,
        path: str = "/onebot/v11/ws",
        url: str | None = None,
        reconnect_max_s: float = 30.0,
    ) -> None:
        self.token = token
        self.on_event = on_event
        self.on_change = on_change
        self.listen, self.path, self.url = listen, path, url
        self.reconnect_max_s = reconnect_max_s
        self.connection: Any = None  # the open WebSocket (client or server side)
        self.connected = asyncio.Event()
        self.self_id: int | None = None
        self.last_event: float | None = None
        self.reconnects = 0
        self.problem = ""  # why it is not connected (forward mode: the last failure)
        self.peer = ""
        self._echo = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._server: Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._connections = 0

    # -- life --------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.listen is not None:
            host, _, port = self.listen.rpartition(":")
            self._server = await serve(
                self._serve, host.strip("[]"), int(port), process_request=self._check, ping_interval=20
            )
        else:
            self._task = asyncio.get_running_loop().create_task(self._dial_forever())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        if self.connection is not None:
            with contextlib.suppress(Exception):
                await self.connection.close()

    def describe(self) -> str:
        mode = f"reverse ws on {self.listen}{self.path}" if self.listen else f"forward ws to {self.url}"
        if self.connected.is_set():
            state = "connected"
        else:
            state = "disconnected" + (f" ({self.problem})" if self.problem else "")
        parts = [f"{state}; {mode}"]
        parts.append(f"bot {self.self_id}" if self.self_id is not None else "bot unknown")
        if self.last_event is not None:
            parts.append("last event " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.last_event)))
        parts.append(f"reconnects {self.reconnects}")
        return "; ".join(parts)

    # -- reverse -----------------------------------------------------------------------------------------

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        """Refuse the handshake of a wrong path or token, before anything else happens."""
        split = urlsplit(request.path)
        if split.path.rstrip("/") != self.path.rstrip("/"):
            return connection.respond(HTTPStatus.NOT_FOUND, f"OneBot v11 is at {self.path}\n")
        given = parse_qs(split.query).get("access_token", [""])[0]
        header = request.headers.get("Authorization", "")
        if header.lower().startswith("bearer "):
            given = header[7:].strip()
        elif header.lower().startswith("token "):  # OneBot v11's older spelling
            given = header[6:].strip()
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            log.warning("qq: refused a connection from %s: %s access token", _peer(connection),
                        "wrong" if given else "no")  # fmt: skip
            return connection.respond(HTTPStatus.UNAUTHORIZED, "wrong or missing access token\n")
        return None

    async def _serve(self, connection: ServerConnection) -> None:
        previous = self.connection
        if previous is not None and previous is not connection:
            with contextlib.suppress(Exception):
                await previous.close(1000, "replaced by a new connection")
        self_id = connection.request.headers.get("X-Self-ID") if connection.request is not None else None
        if self_id and self_id.isdigit():
            self.self_id = int(self_id)
        await self._run(connection, _peer(connection))

    # -- forward -----------------------------------------------------------------------------------------

    async def _dial_forever(self) -> None:
        assert self.url is not None
        pause = 1.0
        headers = Headers({"Authorization": f"Bearer {self.token}"})
        while True:
            refused = False
            try:
                async with connect(self.url, additional_headers=headers, ping_interval=20, open_timeout=10) as ws:
                    pause = 1.0
                    refused = await self._run(ws, self.url)
            except asyncio.CancelledError:
                raise
            except InvalidStatus as exc:
                self.problem = f"NapCat answered HTTP {exc.response.status_code}"
            except (OSError, ConnectionClosed, TimeoutError) as exc:
                self.problem = f"{type(exc).__name__}: {exc}"[:200]
            except Exception as exc:  # a handshake the library refuses (not a WebSocket server)
                self.problem = f"{type(exc).__name__}: {exc}"[:200]
            if refused:
                pause = self.reconnect_max_s
            self.on_change()
            await asyncio.sleep(pause)
            pause = min(pause * 2, self.reconnect_max_s)
            self.reconnects += 1

    # -- one connection ----------------------------------------------------------------------------------

    async def _run(self, connection: Any, peer: str) -> bool:
        """Read the connection until it closes; True when NapCat refused our token."""
        self.connection = connection
        self.peer = peer
        self._connections += 1
        if self._connections > 1 and self.listen is not None:
            self.reconnects += 1
        self.problem = ""
        self.connected.set()
        self.on_change()
        log.info("qq: NapCat connected (%s)", peer)
        garbage = 0
        refused = False
        try:
            async for raw in connection:
                message = _parse(raw)
                if message is None:
                    garbage += 1
                    if garbage <= LOGGED_GARBAGE:
                        log.warning("qq: ignored a line from NapCat that is not a JSON object: %.200r", raw)
                    continue
                if "post_type" in message:
                    self._saw(message)
                    await self.on_event(message)
                elif message.get("retcode") == TOKEN_REFUSED and not message.get("echo"):
                    refused = True
                    self.problem = "NapCat refused the access token (retcode 1403): set the same token on both sides"
                    log.warning("qq: %s", self.problem)
                else:
                    self._answered(message)
        except ConnectionClosed:
            pass
        finally:
            if self.connection is connection:
                self.connection = None
                self.connected.clear()
                for future in self._waiting.values():
                    if not future.done():
                        future.set_exception(LinkDown("the connection to NapCat closed before it answered"))
                self._waiting.clear()
                if not self.problem:
                    self.problem = "the connection closed"
                self.on_change()
            if garbage > LOGGED_GARBAGE:
                log.warning("qq: %d lines from NapCat were not JSON objects", garbage)
            log.info("qq: NapCat disconnected (%s)", peer)
        return refused

    def _saw(self, event: dict[str, Any]) -> None:
        self.last_event = time.time()
        self_id = event.get("self_id")
        if isinstance(self_id, int) and self_id != self.self_id:
            self.self_id = self_id
            self.on_change()
        elif event.get("post_type") == "meta_event":
            self.on_change()

    def _answered(self, message: dict[str, Any]) -> None:
        future = self._waiting.pop(str(message.get("echo", "")), None)
        if future is not None and not future.done():
            future.set_result(message)

    # -- actions -----------------------------------------------------------------------------------------

    async def call(self, action: str, params: dict[str, Any], *, timeout: float, wait_s: float) -> Any:
        """Send an action and return its ``data``; `ActionFailed` on a ``retcode``, `LinkDown` when NapCat is
        away longer than ``wait_s`` or the connection closes before the answer."""
        deadline = asyncio.get_running_loop().time() + wait_s
        while True:
            try:
                await asyncio.wait_for(self.connected.wait(), max(0.0, deadline - asyncio.get_running_loop().time()))
            except TimeoutError:
                raise LinkDown(f"NapCat was not connected within {wait_s:g} s") from None
            connection = self.connection
            if connection is None:
                continue
            echo = f"h{next(self._echo)}"
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._waiting[echo] = future
            try:
                await connection.send(json.dumps({"action": action, "params": params, "echo": echo}))
            except ConnectionClosed:  # not sent: safe to send again once NapCat is back
                self._waiting.pop(echo, None)
                await asyncio.sleep(0)
                continue
            try:
                answer = await asyncio.wait_for(future, timeout)
            except TimeoutError:
                self._waiting.pop(echo, None)
                raise LinkDown(f"{action}: NapCat did not answer within {timeout:g} s") from None
            break
        retcode = answer.get("retcode", 0)
        if answer.get("status") == "failed" or (isinstance(retcode, int) and retcode != 0):
            why = str(answer.get("wording") or answer.get("message") or answer.get("msg") or "")
            raise ActionFailed(action, int(retcode) if isinstance(retcode, int) else -1, why)
        return answer.get("data")


def _parse(raw: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _peer(connection: Any) -> str:
    address = getattr(connection, "remote_address", None)
    return f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else "?"
