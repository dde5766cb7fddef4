"""A OneBot v11 stand-in that behaves as NapCat documents (the one stand-in the QQ tests may use: the QQ network
cannot be reached from here), speaking real WebSocket, both ways:

- as NapCat's **WebSocket client** (reverse): it dials the plugin's ``ws://HOST:PORT/onebot/v11/ws`` with
  ``Authorization: Bearer TOKEN``, ``X-Self-ID``, ``x-client-role: Universal`` and ``User-Agent: OneBot/11``, sends
  the ``lifecycle``/``connect`` meta event, heartbeats every ``heartbeat_s``, and dials again after a drop every
  ``reconnect_s`` (NapCat's ``reconnectInterval``); a refused handshake is recorded (``refusals``: the status);
- as NapCat's **WebSocket server** (forward): it accepts a connection, checks the token (header or
  ``?access_token=``) and, wrong, answers ``{"status": "failed", "retcode": 1403, …}`` and closes (as NapCat does,
  after the handshake); right, it sends ``lifecycle``/``connect`` and heartbeats.

Actions (``send_group_msg``, ``send_private_msg``, ``get_login_info``) are answered ``{"status": "ok", "retcode": 0,
"data": {"message_id": N}, "message": "", "wording": "", "echo": …}`` and recorded; an unknown action is
``retcode`` 1404; ``fail_next(action, retcode)`` makes the next one fail. ``kill()`` drops every connection
without a close frame (the process died), and ``dial``/``serve`` start it again.

It runs on an event loop of its own, in a thread: the tests drive a `hologram up` subprocess synchronously.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.client import connect
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.kit.wait import wait_until


class FakeNapCat:
    def __init__(self, *, self_id: int = 10000, token: str = "secret", heartbeat_s: float = 0.5) -> None:
        self.self_id = self_id
        self.token = token
        self.heartbeat_s = heartbeat_s
        self.actions: list[dict[str, Any]] = []
        self.refusals: list[int] = []  # reverse: HTTP statuses of refused handshakes
        self.connections = 0  # connections that got through (both modes)
        self._ids = itertools.count(900_001)
        self._fail: dict[str, int] = {}
        self._open: set[Any] = set()
        self._server: Server | None = None
        self._dialer: asyncio.Task[None] | None = None
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fake-napcat", daemon=True)
        self._thread.start()

    # -- driving it from the test's thread ---------------------------------------------------------------

    def _run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.kill()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    def connected(self) -> bool:
        return bool(self._open)

    def wait_connected(self, timeout: float = 60) -> None:
        wait_until(self.connected, timeout=timeout, what="the plugin and the stand-in connected")

    def post(self, event: dict[str, Any]) -> None:
        self.post_raw(json.dumps(event))

    def post_raw(self, text: str) -> None:
        async def send() -> None:
            for connection in list(self._open):
                await connection.send(text)

        self._run(send())

    def fail_next(self, action: str, retcode: int) -> None:
        self._fail[action] = retcode

    def sent(self, action: str | None = None) -> list[dict[str, Any]]:
        return [a for a in list(self.actions) if action is None or a["action"] == action]

    def wait_sent(
        self,
        select: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        what: str,
        count: int = 1,
        timeout: float = 60,
    ) -> list[dict[str, Any]]:
        """Until ``select(the actions received)`` holds ``count`` actions; returns them (all it holds then)."""
        found: list[dict[str, Any]] = wait_until(
            lambda: select(self.sent()), accept=lambda got: len(got) >= count, timeout=timeout, what=what
        )
        return found

    # -- reverse: NapCat's WebSocket client --------------------------------------------------------------

    def dial(self, url: str, *, token: str | None = None, reconnect_s: float = 0.2) -> None:
        headers = {"X-Self-ID": str(self.self_id), "x-client-role": "Universal", "User-Agent": "OneBot/11"}
        given = self.token if token is None else token
        if given:
            headers["Authorization"] = f"Bearer {given}"

        async def begin() -> None:
            self._dialer = asyncio.get_running_loop().create_task(self._dial_forever(url, headers, reconnect_s))

        self._run(begin())

    async def _dial_forever(self, url: str, headers: dict[str, str], reconnect_s: float) -> None:
        while True:
            try:
                async with connect(url, additional_headers=headers, open_timeout=5) as ws:
                    await self._session(ws)
            except InvalidStatus as exc:
                self.refusals.append(exc.response.status_code)
            except (OSError, ConnectionClosed, TimeoutError):
                pass
            await asyncio.sleep(reconnect_s)

    # -- forward: NapCat's WebSocket server --------------------------------------------------------------

    def serve(self, port: int = 0) -> int:
        async def begin() -> int:
            self._server = await serve(self._accept, "127.0.0.1", port)
            return int(next(iter(self._server.sockets)).getsockname()[1])

        found: int = self._run(begin())
        return found

    async def _accept(self, connection: ServerConnection) -> None:
        request = connection.request
        assert request is not None
        split = urlsplit(request.path)
        given = parse_qs(split.query).get("access_token", [""])[0]
        header = request.headers.get("Authorization", "")
        if not given and header.startswith("Bearer "):
            given = header[len("Bearer ") :]
        if self.token and given != self.token:  # NapCat answers, then closes
            await connection.send(json.dumps(response(None, "failed", 1403, "token验证失败")))
            await connection.close()
            return
        await self._session(connection)

    # -- one connection ----------------------------------------------------------------------------------

    async def _session(self, connection: Any) -> None:
        self._open.add(connection)
        self.connections += 1
        beat = asyncio.get_running_loop().create_task(self._heartbeats(connection))
        try:
            await connection.send(json.dumps(meta("lifecycle", self.self_id, sub_type="connect")))
            async for raw in connection:
                await self._act(connection, json.loads(raw))
        except ConnectionClosed:
            pass
        finally:
            beat.cancel()
            self._open.discard(connection)

    async def _heartbeats(self, connection: Any) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.heartbeat_s)
                event = meta("heartbeat", self.self_id, status={"online": True, "good": True})
                await connection.send(json.dumps({**event, "interval": int(self.heartbeat_s * 1000)}))

    async def _act(self, connection: Any, request: dict[str, Any]) -> None:
        action, params, echo = request.get("action"), request.get("params") or {}, request.get("echo")
        record = {"action": action, "params": params, "echo": echo, "at": time.monotonic()}
        failing = self._fail.pop(str(action), None)
        if failing is not None:
            answer = response(None, "failed", failing, "发送失败")
        elif action in ("send_group_msg", "send_private_msg", "send_msg"):
            record["message_id"] = next(self._ids)  # the id QQ gave the bot's message (a reply quotes it)
            answer = response({"message_id": record["message_id"]}, "ok", 0)
        elif action == "get_login_info":
            answer = response({"user_id": self.self_id, "nickname": "bot"}, "ok", 0)
        else:
            answer = response(None, "failed", 1404, f"不支持的API {action}")
        await connection.send(json.dumps({**answer, "echo": echo}))
        self.actions.append(record)  # after the answer is on its way: a test that reacts to it comes after it

    def kill(self) -> None:
        """Every connection dropped without a close frame, the server and the dialer stopped."""

        async def stop() -> None:
            if self._dialer is not None:
                self._dialer.cancel()
                with contextlib.suppress(BaseException):
                    await self._dialer
                self._dialer = None
            for connection in list(self._open):
                connection.transport.abort()
            self._open.clear()
            if self._server is not None:
                self._server.close(close_connections=False)
                await self._server.wait_closed()
                self._server = None

        self._run(stop())


def response(data: Any, status: str, retcode: int, message: str = "") -> dict[str, Any]:
    return {"status": status, "retcode": retcode, "data": data, "message": message, "wording": message, "echo": None}


def meta(kind: str, self_id: int, **fields: Any) -> dict[str, Any]:
    return {"time": int(time.time()), "self_id": self_id, "post_type": "meta_event", "meta_event_type": kind, **fields}


def group_message(
    group_id: int,
    user_id: int,
    message: list[dict[str, Any]] | str,
    *,
    message_id: int,
    name: str = "",
    self_id: int = 10000,
) -> dict[str, Any]:
    """A group ``message`` event as NapCat posts it (array or CQ-string ``message``)."""
    fmt = "string" if isinstance(message, str) else "array"
    return {
        "self_id": self_id,
        "user_id": user_id,
        "time": int(time.time()),
        "message_id": message_id,
        "message_seq": message_id,
        "real_id": message_id,
        "message_type": "group",
        "sender": {"user_id": user_id, "nickname": name or f"user{user_id}", "card": "", "role": "member"},
        "raw_message": message if isinstance(message, str) else "",
        "font": 14,
        "sub_type": "normal",
        "message": message,
        "message_format": fmt,
        "post_type": "message",
        "group_id": group_id,
    }


def private_message(
    user_id: int, text: str, *, message_id: int, name: str = "", self_id: int = 10000
) -> dict[str, Any]:
    return {
        "self_id": self_id,
        "user_id": user_id,
        "time": int(time.time()),
        "message_id": message_id,
        "message_type": "private",
        "sender": {"user_id": user_id, "nickname": name or f"user{user_id}", "card": ""},
        "raw_message": text,
        "font": 14,
        "sub_type": "friend",
        "message": [{"type": "text", "data": {"text": text}}],
        "message_format": "array",
        "post_type": "message",
    }


def at(qq: int | str) -> dict[str, Any]:
    return {"type": "at", "data": {"qq": str(qq)}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": value}}
