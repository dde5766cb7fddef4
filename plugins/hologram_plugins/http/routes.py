"""Routes of other plugins on the web port: the ``http.routes`` facility (docs/protocol.md, "http.routes").

A plugin (A2A, MCP over HTTP, a third party's) mounts a path prefix — and, for protocols that name one, exact
paths under ``/.well-known/`` — and serves what arrives there. Every request passes the same checks as the
page's (`access.AccessControl`: Host, token, Origin) and the server's limits (`http11.Limits`: head, body size,
slow clients) *before* it is forwarded; the mounting plugin never sees the token (``authorization`` and
``cookie`` are not forwarded) and cannot set a cookie on this origin.

Forwarding uses nothing but the plugin protocol's facility calls, which the kernel routes from a consumer to
its provider — so the consumer pulls: its SDK keeps an ``accept`` call open (a long poll) that returns the
requests that came for its mounts and the ids of those whose client went away; it answers each with
``respond`` calls: the status and headers with the first body chunk, then chunks (an SSE stream is many small
ones), the last one ``more: false``. An answer to ``respond`` is the acknowledgement, so a plugin that writes
faster than the client reads waits. Bodies travel as the protocol's blob, ``{"base64": …}``: plugins share no
arena with each other (section 3), and a body is at most ``max_body_bytes`` (8 MiB: one control line).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from hologram_plugins.http.asgi import Request, Response, StreamingResponse
from hologram_plugins.http.responses import BadRequest, error, read_body

log = logging.getLogger("hologram_plugins.http")

WELL_KNOWN = "/.well-known/"
RESERVED = ("/api", "/v1", "/static")  # the page's own routes; "/" itself is the page
ACCEPT_WAIT_S = 20.0  # how long an `accept` call waits for a request before it answers with none
ACCEPT_WAIT_MAX_S = 50.0  # FacilityClient's default timeout is 60 s: answer well before the caller gives up
CHUNK_MAX = 4 * 1024 * 1024  # a body chunk in one respond call (raw bytes; base64 makes it a third larger)
QUEUE_MAX = 64  # chunks a response may be ahead of its client before `respond` waits
NOT_POLLING_S = 2 * ACCEPT_WAIT_MAX_S  # an owner that has not polled for this long is not serving
# Neither the access token nor another client's cookies reach a plugin; hop-by-hop headers are the server's.
DROPPED_REQUEST_HEADERS = frozenset({"authorization", "cookie", "connection", "keep-alive", "te", "upgrade"})
DROPPED_RESPONSE_HEADERS = frozenset(
    {"set-cookie", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade"}
)


class RouteError(ValueError):
    """A ``mount`` the facility refuses; the message names the field, the value and the fix."""


def check_prefix(prefix: Any) -> str:
    if not isinstance(prefix, str) or not prefix.startswith("/") or len(prefix) > 100:
        raise RouteError(
            f"prefix: must be a path such as '/a2a' (starting with /, at most 100 characters), not {prefix!r}"
        )
    prefix = prefix.rstrip("/")
    segments = prefix.split("/")[1:]
    if not prefix or any(not s or s in (".", "..") or not s.isprintable() or " " in s for s in segments):
        raise RouteError(
            f"prefix: {prefix or '/'!r} is not a plain path of one or more segments ('/a2a', '/acme/hooks')"
        )
    if prefix.startswith(WELL_KNOWN.rstrip("/")):
        raise RouteError(f"prefix: {prefix!r}: paths under {WELL_KNOWN} are mounted one by one with well_known")
    for reserved in RESERVED:
        if prefix == reserved or prefix.startswith(reserved + "/"):
            raise RouteError(f"prefix: {prefix!r} belongs to the web UI ({', '.join(RESERVED)}); choose another")
    return str(prefix)


def check_well_known(path: Any) -> str:
    if not isinstance(path, str) or not path.startswith(WELL_KNOWN) or len(path) > 200:
        raise RouteError(f"well_known: {path!r} is not a path under {WELL_KNOWN} (e.g. /.well-known/agent-card.json)")
    name = path[len(WELL_KNOWN) :]
    if not name or ".." in name.split("/") or any(c.isspace() for c in name) or not name.isprintable():
        raise RouteError(f"well_known: {path!r} is not a plain path under {WELL_KNOWN}")
    return path


@dataclass(eq=False)
class Exchange:
    """One forwarded request and what its mounting plugin answered so far."""

    id: str
    owner: str
    request: dict[str, Any]
    start: asyncio.Future[dict[str, Any]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    chunks: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue(QUEUE_MAX))
    gone: bool = False  # the client went away (or the response is over): `respond` says so
    done: bool = False


@dataclass(eq=False)
class Owner:
    """A plugin that mounted routes: its paths, the requests it has not taken yet, the ids gone meanwhile."""

    name: str
    prefixes: tuple[str, ...]
    well_known: frozenset[str]
    pending: deque[Exchange] = field(default_factory=deque)
    gone: list[str] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    exchanges: dict[str, Exchange] = field(default_factory=dict)
    polling: int = 0
    last_poll: float = field(default_factory=time.monotonic)

    def serving(self) -> bool:
        return self.polling > 0 or time.monotonic() - self.last_poll < NOT_POLLING_S


class Mounts:
    """The mounted routes, by owner; `forward` hands a request to its owner and streams back its answer."""

    def __init__(self, *, max_body_bytes: int, timeout_s: float) -> None:
        self.owners: dict[str, Owner] = {}
        self.max_body_bytes = max_body_bytes
        self.timeout_s = timeout_s  # how long a plugin may take to start its answer
        self._ids = itertools.count(1)

    # -- the facility's methods ----------------------------------------------------------------------

    def mount(self, caller: str, prefix: Any = None, well_known: Any = None) -> dict[str, Any]:
        prefixes = () if prefix is None else (check_prefix(prefix),)
        known = frozenset(check_well_known(p) for p in (well_known or []))
        if not prefixes and not known:
            raise RouteError("mount: give a prefix ('/a2a') or well_known paths, or both")
        for other in self.owners.values():
            if other.name == caller:
                continue
            taken = [p for p in prefixes if any(_overlap(p, q) for q in other.prefixes)]
            taken += sorted(known & other.well_known)
            if taken:
                raise RouteError(f"mount: {taken[0]} is already mounted by the plugin {other.name}")
        old = self.owners.get(caller)
        if old is not None:  # the plugin started again: what its last run left open is over
            self._drop(old, 502, f"the plugin {caller} restarted while answering")
        self.owners[caller] = Owner(caller, prefixes, known)
        log.info("http: %s mounted %s", caller, ", ".join([*prefixes, *sorted(known)]))
        return {"prefix": prefixes[0] if prefixes else None, "well_known": sorted(known)}

    def unmount(self, caller: str) -> dict[str, Any]:
        owner = self.owners.pop(caller, None)
        if owner is not None:
            self._drop(owner, 503, f"the plugin {caller} stopped serving its routes")
        return {"unmounted": owner is not None}

    async def accept(self, caller: str, wait_s: Any = None) -> dict[str, Any]:
        """The requests for ``caller``'s routes not taken yet, and the ids whose client went away; waits up
        to ``wait_s`` (default 20 s, at most 50) for one, then answers with none."""
        owner = self.owners.get(caller)
        if owner is None:
            raise RouteError(f"accept: {caller} has mounted nothing; call mount first")
        wait = ACCEPT_WAIT_S if wait_s is None else max(0.0, min(float(wait_s), ACCEPT_WAIT_MAX_S))
        owner.polling += 1
        try:
            if not owner.pending and not owner.gone:
                owner.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(owner.wake.wait(), wait)
        finally:
            owner.polling -= 1
            owner.last_poll = time.monotonic()
        requests = []
        while owner.pending:
            exchange = owner.pending.popleft()
            if not exchange.gone:
                requests.append({"id": exchange.id, **exchange.request})
        gone, owner.gone = owner.gone, []
        return {"requests": requests, "gone": gone}

    async def respond(
        self,
        caller: str,
        id: str = "",
        status: int | None = None,
        headers: Any = None,
        body: Any = None,
        more: bool = False,
    ) -> dict[str, Any]:
        """Part of the answer to request ``id``: the first call carries ``status`` and ``headers``; ``body`` is
        a blob (``{"base64": …}``) of at most 4 MiB; ``more: false`` ends it. ``{"gone": true}``: nobody reads
        it any more (the client went away), stop writing."""
        owner = self.owners.get(caller)
        exchange = owner.exchanges.get(str(id)) if owner is not None else None
        if exchange is None or exchange.gone:
            return {"gone": True}
        data = _blob_bytes(body)
        if len(data) > CHUNK_MAX:
            raise RouteError(f"respond: body: {len(data)} bytes in one chunk; send at most {CHUNK_MAX} per call")
        if not exchange.start.done():
            if not isinstance(status, int) or not 100 <= status <= 599:
                raise RouteError(f"respond: status: the first call of an answer needs an HTTP status, not {status!r}")
            exchange.start.set_result({"status": status, "headers": _headers(headers), "first": data, "more": more})
        elif data:
            await exchange.chunks.put(data)
        if not more:
            exchange.done = True
            if exchange.start.done() and exchange.start.result()["more"]:
                await exchange.chunks.put(None)
            self._forget(exchange)
        return {"gone": exchange.gone and not exchange.done}

    # -- serving a request ---------------------------------------------------------------------------

    def find(self, path: str) -> Owner | None:
        for owner in self.owners.values():
            if path in owner.well_known or any(path == p or path.startswith(p + "/") for p in owner.prefixes):
                return owner
        return None

    async def forward(self, request: Request, owner: Owner) -> Response | StreamingResponse:
        if not owner.serving():
            return error(
                503, "upstream", f"the plugin {owner.name} is not serving its routes now (stopped or restarting)"
            )
        try:
            body = await read_body(request, self.max_body_bytes)
        except BadRequest as exc:
            return error(exc.status, exc.code, exc.message)
        exchange = Exchange(f"r{next(self._ids)}", owner.name, _request_of(request, body))
        owner.exchanges[exchange.id] = exchange
        owner.pending.append(exchange)
        owner.wake.set()
        started = await self._started(request, exchange)
        if started is None:
            return Response(status_code=499)  # the client is gone; nobody reads this
        if isinstance(started, Response):
            return started
        if not started["more"]:
            return Response(started["first"], started["status"], headers=started["headers"])
        return StreamingResponse(self._body(exchange, started["first"]), started["status"], headers=started["headers"])

    async def _started(self, request: Request, exchange: Exchange) -> dict[str, Any] | Response | None:
        """The answer's start; None when the client went away first; a 504 when the plugin took too long."""
        gone = asyncio.ensure_future(_disconnect(request))
        try:
            waits: set[asyncio.Future[Any]] = {exchange.start, gone}
            await asyncio.wait(waits, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
        if exchange.start.done() and not exchange.start.cancelled():
            return exchange.start.result()
        self._gone(exchange)
        if gone.done() and not gone.cancelled():
            return None
        if exchange.start.cancelled():  # dropped: the owner restarted or unmounted
            return error(exchange.request.get("_status", 502), "upstream", exchange.request.get("_why", "dropped"))
        return error(504, "upstream", f"the plugin {exchange.owner} did not answer within {self.timeout_s:g} s")

    async def _body(self, exchange: Exchange, first: bytes) -> AsyncIterator[bytes]:
        try:
            if first:
                yield first
            while True:
                chunk = await exchange.chunks.get()
                if chunk is None:
                    return
                yield chunk
        finally:
            if not exchange.done:
                self._gone(exchange)

    # -- bookkeeping ---------------------------------------------------------------------------------

    def _gone(self, exchange: Exchange) -> None:
        """The client went away (or the answer cannot be sent): tell the owner, once, and free the queue."""
        if exchange.gone:
            return
        exchange.gone = True
        owner = self.owners.get(exchange.owner)
        if owner is not None and owner.exchanges.pop(exchange.id, None) is not None and not exchange.done:
            owner.gone.append(exchange.id)
            owner.wake.set()
        while not exchange.chunks.empty():  # a `respond` blocked on a full queue goes on and learns it is gone
            exchange.chunks.get_nowait()

    def _forget(self, exchange: Exchange) -> None:
        owner = self.owners.get(exchange.owner)
        if owner is not None:
            owner.exchanges.pop(exchange.id, None)

    def _drop(self, owner: Owner, status: int, why: str) -> None:
        for exchange in list(owner.exchanges.values()):
            exchange.request["_status"], exchange.request["_why"] = status, why
            if not exchange.start.done():
                exchange.start.cancel()
            else:
                with contextlib.suppress(asyncio.QueueFull):
                    exchange.chunks.put_nowait(None)
            exchange.gone = True
        owner.exchanges.clear()
        owner.pending.clear()
        owner.wake.set()


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def _request_of(request: Request, body: bytes) -> dict[str, Any]:
    scope = request.scope
    headers = [
        [name.decode("latin-1").lower(), value.decode("latin-1")]
        for name, value in scope.get("headers") or []
        if name.decode("latin-1").lower() not in DROPPED_REQUEST_HEADERS
    ]
    client = scope.get("client") or ("", 0)
    server = scope.get("server") or ("127.0.0.1", 0)
    return {
        "method": request.method,
        "path": request.path,
        "raw_path": (scope.get("raw_path") or request.path.encode("utf-8")).decode("latin-1"),
        "query": scope.get("query_string", b"").decode("latin-1"),
        "headers": headers,
        "body": {"base64": base64.b64encode(body).decode("ascii")},
        "scheme": scope.get("scheme", "http"),
        "client": [str(client[0]), int(client[1] or 0)],
        "server": [str(server[0]), int(server[1] or 0)],
    }


def _blob_bytes(body: Any) -> bytes:
    if body is None or body == "":
        return b""
    if isinstance(body, dict) and isinstance(body.get("base64"), str):
        try:
            return base64.b64decode(body["base64"], validate=True)
        except ValueError:
            raise RouteError("respond: body: base64 that does not decode") from None
    raise RouteError('respond: body: must be a blob {"base64": "…"} (plugins share no arena), or left out')


def _headers(headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    if isinstance(headers, dict):
        headers = list(headers.items())
    if not isinstance(headers, list):
        raise RouteError("respond: headers: must be a list of [name, value] pairs")
    out: dict[str, str] = {}
    for pair in headers:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise RouteError(f"respond: headers: {pair!r} is not a [name, value] pair of strings")
        name, value = pair[0].lower(), pair[1]
        if "\n" in name + value or "\r" in name + value:
            raise RouteError(f"respond: headers: {name!r} holds a line break")
        if name not in DROPPED_RESPONSE_HEADERS:
            out[name] = value
    out.setdefault("x-content-type-options", "nosniff")
    return out


async def _disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
