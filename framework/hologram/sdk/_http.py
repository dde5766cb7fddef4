"""A plugin's routes on the web port: an ASGI app, served through the http plugin's ``http.routes`` facility.

The author declares ``plugin.mount("/acme", app)`` with any ASGI 3 application (Starlette, FastAPI, a plain
coroutine, the ``a2a-sdk``'s or the ``mcp`` package's server apps); the SDK mounts it when the plugin starts and
serves it: requests come from the http plugin — already past its token, Host and Origin checks and its body
limit — through an ``accept`` call kept open (the kernel routes facility calls from a consumer to its provider
only, so the consumer pulls), each becomes an ASGI ``http`` scope, and what the app sends goes back as
``respond`` calls (the first with the status and headers; a streamed body, SSE included, chunk by chunk, each
acknowledged). A client that goes away is ``http.disconnect`` on the app's ``receive`` and makes its next
``send`` raise `OSError`, as under any ASGI server. docs/protocol.md, "http.routes", has the wire side.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hologram.rpc import RpcError

if TYPE_CHECKING:
    from hologram.sdk._plugin import Plugin

log = logging.getLogger("hologram.sdk")

ROUTES = "http.routes"
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
"""An ASGI 3 application: ``async def app(scope, receive, send)`` (only ``http`` scopes come)."""

ACCEPT_WAIT_S = 20.0
CALL_TIMEOUT_S = 60.0
CHUNK = 1024 * 1024  # raw bytes per respond call: ~1.4 MB of base64 on the control line
RETRY_S = 1.0


@dataclass(frozen=True, slots=True)
class Mount:
    """What ``plugin.mount`` declared."""

    prefix: str | None
    app: ASGIApp
    well_known: tuple[str, ...] = ()
    optional: bool = False  # http.routes in after_if_present: no web port in the lock is no error


@dataclass(frozen=True, slots=True)
class Mounted:
    """Where the routes are served, as the http plugin answered the mount: ``url`` is the server's own
    address (``http://127.0.0.1:8080``; behind a proxy or off loopback, the ``Host`` of each request says how
    the client reached it)."""

    url: str | None
    prefix: str | None
    well_known: tuple[str, ...]


class RouteServer:
    """Serves one plugin's mount: the ``accept`` loop and an ASGI call per request."""

    def __init__(self, plugin: Plugin[Any], mount: Mount) -> None:
        self.plugin = plugin
        self.mount = mount
        self.exchanges: dict[str, _Exchange] = {}
        self.mounted: Mounted | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def call(self, method: str, **params: Any) -> Any:
        return await self.plugin.runtime.call_facility(ROUTES, method, params, CALL_TIMEOUT_S)

    async def start(self) -> Mounted:
        params: dict[str, Any] = {"well_known": list(self.mount.well_known)}
        if self.mount.prefix is not None:
            params["prefix"] = self.mount.prefix
        answer = await self.call("mount", **params)
        self.mounted = Mounted(answer.get("url"), answer.get("prefix"), tuple(answer.get("well_known") or ()))
        return self.mounted

    async def serve(self) -> None:
        """Take requests until cancelled (the plugin stops). When ``accept`` fails — the http plugin restarted
        and lost the mount, or is restarting — the app is mounted again (every second, until it works)."""
        mounted = True
        while True:
            try:
                if not mounted:
                    await self.start()
                    mounted = True
                    log.info("%s: mounted again on the web port", self.plugin.name)
                batch = await self.call("accept", wait_s=ACCEPT_WAIT_S)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if mounted:
                    log.warning("%s: http.routes accept failed (%s); mounting again", self.plugin.name, exc)
                mounted = False
                await asyncio.sleep(RETRY_S)
                continue
            for gone in batch.get("gone") or []:
                exchange = self.exchanges.get(str(gone))
                if exchange is not None:
                    exchange.client_gone()
            for request in batch.get("requests") or []:
                exchange = _Exchange(self, request)
                self.exchanges[exchange.id] = exchange
                task = asyncio.ensure_future(exchange.run())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.call("unmount"), 2.0)


class _Exchange:
    """One request: the ASGI call of the app, its ``receive`` and ``send``."""

    def __init__(self, server: RouteServer, request: dict[str, Any]) -> None:
        self.server = server
        self.id = str(request.get("id", ""))
        self.request = request
        self.gone = asyncio.Event()
        self.body_taken = False
        self.start: Message | None = None
        self.started = False  # the status went out
        self.ended = False

    def client_gone(self) -> None:
        self.gone.set()

    def scope(self) -> Scope:
        r = self.request
        path = str(r.get("path", "/"))
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": str(r.get("method", "GET")).upper(),
            "scheme": str(r.get("scheme", "http")),
            "path": path,
            "raw_path": str(r.get("raw_path") or path).encode("latin-1", "replace"),
            "root_path": "",
            "query_string": str(r.get("query", "")).encode("latin-1", "replace"),
            "headers": [
                (str(k).encode("latin-1", "replace"), str(v).encode("latin-1", "replace"))
                for k, v in r.get("headers") or []
            ],
            "client": tuple(r.get("client") or ("", 0)),
            "server": tuple(r.get("server") or ("127.0.0.1", 0)),
            "state": {},
        }

    async def receive(self) -> Message:
        if not self.body_taken:
            self.body_taken = True
            body = self.request.get("body") or {}
            data = base64.b64decode(body["base64"]) if isinstance(body, dict) and body.get("base64") else b""
            return {"type": "http.request", "body": data, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.gone.is_set():
            raise OSError(f"the client of {self.request.get('path')} went away")
        kind = message.get("type")
        if kind == "http.response.start":
            self.start = message
            return
        if kind != "http.response.body" or self.ended:
            return
        if self.start is None:
            raise RuntimeError("the app sent a body before http.response.start")
        data = bytes(message.get("body", b""))
        more = bool(message.get("more_body", False))
        pieces = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)] or [b""]
        for n, piece in enumerate(pieces):
            await self._respond(piece, more or n < len(pieces) - 1)
        if not more:
            self.ended = True

    async def _respond(self, piece: bytes, more: bool) -> None:
        params: dict[str, Any] = {"id": self.id, "more": more}
        if piece:
            params["body"] = {"base64": base64.b64encode(piece).decode("ascii")}
        if not self.started:
            assert self.start is not None
            params["status"] = int(self.start.get("status", 200))
            params["headers"] = [
                [bytes(k).decode("latin-1"), bytes(v).decode("latin-1")] for k, v in self.start.get("headers") or []
            ]
            self.started = True
        answer = await self.server.call("respond", **params)
        if isinstance(answer, dict) and answer.get("gone"):
            self.gone.set()
            raise OSError(f"the client of {self.request.get('path')} went away")

    async def run(self) -> None:
        try:
            await self.server.mount.app(self.scope(), self.receive, self.send)
        except OSError:
            pass  # the client went away: nothing to answer
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: the app failed on %s", self.server.plugin.name, self.request.get("path"))
            await self._fail(500, "the request failed inside the plugin; its log has the details")
        else:
            if not self.started:
                log.error(
                    "%s: the app returned without a response to %s", self.server.plugin.name, self.request.get("path")
                )
                await self._fail(500, "the plugin gave no response")
            elif not self.ended:
                with contextlib.suppress(Exception):
                    await self._respond(b"", False)
        finally:
            self.server.exchanges.pop(self.id, None)

    async def _fail(self, status: int, message: str) -> None:
        if self.started or self.gone.is_set():
            with contextlib.suppress(Exception):
                await self._respond(b"", False)
            return
        body = b'{"error": {"code": "internal", "message": "%s"}}' % message.encode()
        self.start = {"status": status, "headers": [(b"content-type", b"application/json")]}
        with contextlib.suppress(OSError, RpcError, asyncio.TimeoutError):
            await self._respond(body, False)


def check_mount(prefix: str | None, well_known: Sequence[str]) -> None:
    """Refuse at declaration what the http plugin would refuse at start, so the author's mistake fails at import."""
    if prefix is None and not well_known:
        raise ValueError("plugin.mount: give a prefix ('/acme') or well_known paths")
    if prefix is not None and (not prefix.startswith("/") or prefix.rstrip("/") == ""):
        raise ValueError(f"plugin.mount: prefix {prefix!r} must be a path such as '/acme'")
    for path in well_known:
        if not path.startswith("/.well-known/"):
            raise ValueError(f"plugin.mount: well_known path {path!r} must start with /.well-known/")
