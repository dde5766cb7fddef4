"""A small Chrome DevTools Protocol client over one websocket (the `websockets` package the kernel already uses).

Why not Playwright: its Python package is ~40 MB of driver (a Node.js runtime) to reach a protocol that is
JSON over a websocket; the handful of commands the browser tools need (navigate, evaluate, input, capture)
fit in this file. Commands are matched to answers by id; events are kept for waiters (`wait_event`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

MAX_MESSAGE = 64 * 1024 * 1024  # a full-page PNG screenshot arrives as one base64 message


class CDPError(RuntimeError):
    """A command Chromium answered with an error, or a connection that went away."""


class CDPConnection:
    """One DevTools websocket (the browser's or a page's)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._next = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: list[tuple[str, Callable[[dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]] = []
        self.listeners: dict[str, Callable[[dict[str, Any]], None]] = {}  # event method → callback (no await)
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, url: str) -> CDPConnection:
        try:
            ws = await websockets.connect(url, max_size=MAX_MESSAGE, ping_interval=None, open_timeout=10)
        except (OSError, websockets.WebSocketException, asyncio.TimeoutError) as exc:
            raise CDPError(f"cannot reach the browser's DevTools at {url}: {exc}") from None
        return cls(ws)

    @property
    def closed(self) -> bool:
        return self._reader.done()

    async def send(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 30.0) -> dict[str, Any]:
        if self.closed:
            raise CDPError("the browser connection is closed")
        self._next += 1
        ident = self._next
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            await self.ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
            answer = await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            raise CDPError(f"{method}: no answer from the browser within {timeout_s:g} s") from None
        except websockets.ConnectionClosed:
            raise CDPError("the browser connection closed") from None
        finally:
            self._pending.pop(ident, None)
        if "error" in answer:
            raise CDPError(f"{method}: {answer['error'].get('message', answer['error'])}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def expect(
        self, method: str, match: Callable[[dict[str, Any]], bool] = lambda _: True
    ) -> asyncio.Future[dict[str, Any]]:
        """A future for the next event `method` whose params satisfy `match` (register before acting)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiters.append((method, match, future))
        return future

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                if "id" in message:
                    future = self._pending.get(int(message["id"]))
                    if future is not None and not future.done():
                        future.set_result(message)
                    continue
                method, params = message.get("method", ""), message.get("params", {})
                listener = self.listeners.get(method)
                if listener is not None:
                    listener(params)
                for waiter in list(self._waiters):
                    name, match, future = waiter
                    if future.done():
                        self._waiters.remove(waiter)
                    elif name == method and match(params):
                        future.set_result(params)
                        self._waiters.remove(waiter)
        except (websockets.ConnectionClosed, ValueError, OSError):
            pass
        finally:
            gone = CDPError("the browser connection closed")
            for future in [*self._pending.values(), *(w[2] for w in self._waiters)]:
                if not future.done():
                    future.set_exception(gone)
            for future in (w[2] for w in self._waiters):  # retrieved, so an unawaited one logs nothing
                with contextlib.suppress(BaseException):
                    future.exception()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(BaseException):
            await self._reader
