"""The plugin's ASGI layer: routes, requests, responses and the static files, served by `http11`.

Why not Starlette: the plugin used a sliver of it (path routes, a request's headers/query/body, plain and
streamed responses, a directory of files), and importing it cost an idle plugin ~2.6 MB of PSS — Starlette,
anyio, typing_extensions, the email package, http.client, mimetypes — in a process whose every other part is
~8 MB (tools/bench/footprint.py --turns, docs/performance.md). What it did that the routes rely on is kept
here: ``{name}`` path parameters (one segment), HEAD wherever GET is allowed, 404 for an unknown path and 405
for a known path with another method (both through the app's error handler, so they are JSON), a 500 from the
crash handler for an exception before the response started, and a streamed response that ends (its iterator
closed) when the client disconnects — the server reports that only on ``receive``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: What the static directory serves, by suffix; anything else is sent as bytes.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}


class HTTPError(Exception):
    """No route for the request (404) or not with its method (405); the app's error handler answers it."""

    def __init__(self, status_code: int, detail: str = "") -> None:
        super().__init__(detail or str(status_code))
        self.status_code = status_code
        self.detail = detail


class Request:
    """One HTTP request: method, path, headers (lower-case names, first value), query (last value wins),
    the route's path parameters, and the body as a stream of chunks."""

    def __init__(self, scope: Scope, receive: Receive, app: App, path_params: dict[str, str]) -> None:
        self.scope = scope
        self.receive = receive
        self.app = app
        self.path_params = path_params
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.headers: dict[str, str] = {}
        for name, value in scope.get("headers") or []:
            self.headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
        self.query_params: dict[str, str] = dict(
            parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        )

    async def stream(self) -> AsyncIterator[bytes]:
        """The body's chunks as they arrive (an empty body yields nothing)."""
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            if body:
                yield body
            if not message.get("more_body", False):
                return


def _raw_headers(headers: dict[str, str] | None, media_type: str | None) -> list[tuple[bytes, bytes]]:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    if media_type is not None and not any(k == b"content-type" for k, _ in raw):
        if media_type.startswith("text/") and "charset" not in media_type:
            media_type += "; charset=utf-8"
        raw.append((b"content-type", media_type.encode("latin-1")))
    return raw


class Response:
    """A whole body at once (``Content-Length`` set; HEAD gets the headers only)."""

    def __init__(
        self,
        content: bytes = b"",
        status_code: int = 200,
        media_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.body = content
        self.status_code = status_code
        self.raw_headers = _raw_headers(headers, media_type)
        self.raw_headers.append((b"content-length", str(len(content)).encode()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else self.body})


class StreamingResponse:
    """A body from an async iterator of bytes, sent as it comes; the iterator is closed (its ``finally`` runs)
    when it ends, when the client disconnects, or when sending fails."""

    def __init__(
        self,
        content: AsyncIterator[bytes],
        status_code: int = 200,
        media_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.content = content
        self.status_code = status_code
        self.raw_headers = _raw_headers(headers, media_type)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream = asyncio.ensure_future(self._stream(send))
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({stream, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stream, gone):
                task.cancel()
            results = await asyncio.gather(stream, gone, return_exceptions=True)
        error = results[0]
        if isinstance(error, BaseException) and not isinstance(error, asyncio.CancelledError):
            raise error

    async def _stream(self, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.content:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            close = getattr(self.content, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def file_response(path: Path, headers: dict[str, str] | None = None, if_none_match: str | None = None) -> Response:
    """A file read now, at the request (nothing is held between requests), with an ``ETag`` of its mtime and
    size: a browser that sends it back (``If-None-Match``) gets a bodiless 304, so a page reload costs a
    round trip per file instead of the files, and an upgrade (new mtime) is seen at once."""
    stat = path.stat()
    etag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
    sent = dict(headers or {})
    sent["etag"] = etag
    if if_none_match is not None and etag in (tag.strip() for tag in if_none_match.split(",")):
        return Response(b"", status_code=304, headers=sent)
    sent.setdefault("cache-control", "no-cache")  # revalidate each time: the files change with the install
    return Response(path.read_bytes(), media_type=CONTENT_TYPES.get(path.suffix, "application/octet-stream"),
                    headers=sent)  # fmt: skip


Endpoint = Callable[[Request], Awaitable[Response | StreamingResponse]]
ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]


class Route:
    """``path`` with ``{name}`` (or ``{name:str}``) parameters, one path segment each; GET allows HEAD."""

    def __init__(self, path: str, endpoint: Endpoint, methods: Iterable[str]) -> None:
        self.path = path
        self.endpoint = endpoint
        self.methods = {m.upper() for m in methods}
        if "GET" in self.methods:
            self.methods.add("HEAD")
        pattern, at = "", 0
        for match in re.finditer(r"{([A-Za-z_][A-Za-z0-9_]*)(?::str)?}", path):
            pattern += re.escape(path[at : match.start()]) + f"(?P<{match.group(1)}>[^/]+)"
            at = match.end()
        self.regex = re.compile("^" + pattern + re.escape(path[at:]) + "$")

    def match(self, path: str) -> dict[str, str] | None:
        found = self.regex.match(path)
        return found.groupdict() if found else None


class StaticFiles:
    """``prefix/NAME`` → the regular file NAME inside ``directory`` (nothing outside it, no listing)."""

    def __init__(self, prefix: str, directory: Path) -> None:
        self.prefix = prefix.rstrip("/") + "/"
        self.directory = directory

    def find(self, path: str) -> Path | None:
        """The file for ``path`` (which starts with the prefix), or None."""
        name = path[len(self.prefix) :]
        parts = name.split("/")
        if not name or any(p in ("", ".", "..") or "\\" in p or "\0" in p for p in parts):
            return None
        try:  # a name too long for the file system, or a symlink loop, is no file here
            root = self.directory.resolve()
            found = (root / name).resolve()
            return found if found.is_relative_to(root) and found.is_file() else None
        except (OSError, RuntimeError, ValueError):
            return None


class App:
    """The routes in order, the static files, and two handlers: ``http_error`` for 404/405 (`HTTPError`) and
    ``crash`` for any other exception raised before the response started (after that, it propagates to
    the server, which closes the connection)."""

    def __init__(
        self,
        routes: list[Route],
        static: StaticFiles,
        http_error: ErrorHandler,
        crash: ErrorHandler,
        channel: Any,
        mounts: Any = None,
    ) -> None:
        self.routes = routes
        self.mounts = mounts  # other plugins' routes (`routes.Mounts`): any path under a mounted prefix
        self.static = static
        self.http_error = http_error
        self.crash = crash
        self.channel = channel

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan is off and websockets are not served; nothing else comes
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        request = Request(scope, receive, self, {})
        try:
            response = await self._dispatch(request)
        except HTTPError as exc:
            response = await self.http_error(request, exc)
        except Exception as exc:
            response = await self.crash(request, exc)
        try:
            await response(scope, receive, tracking_send)
        except Exception as exc:
            if started:
                raise
            await (await self.crash(request, exc))(scope, receive, send)

    async def _dispatch(self, request: Request) -> Response | StreamingResponse:
        wrong_method = False
        for route in self.routes:
            params = route.match(request.path)
            if params is None:
                continue
            if request.method not in route.methods:
                wrong_method = True
                continue
            request.path_params = params
            return await route.endpoint(request)
        owner = self.mounts.find(request.path) if self.mounts is not None else None
        if owner is not None:
            return await self.mounts.forward(request, owner)  # type: ignore[no-any-return]
        if request.path.startswith(self.static.prefix):
            if request.method not in ("GET", "HEAD"):
                raise HTTPError(405)
            found = self.static.find(request.path)
            if found is not None:
                return file_response(found, if_none_match=request.headers.get("if-none-match"))
        raise HTTPError(405 if wrong_method else 404)
