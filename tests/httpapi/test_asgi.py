"""The plugin's own ASGI layer (`hologram_plugins.http.asgi`, which replaced Starlette) over real HTTP: the
plugin's `HttpServer` (uvicorn) on a loopback port, in this process, serving the real app or a small one.

What the routes rely on, case by case: static files only from inside their directory, HEAD wherever GET is,
404/405 as JSON errors, a crash before the response as a JSON 500, and a streamed response whose iterator is
closed when its client disconnects (how an SSE stream stops watching its session).

Mutation checks (done): making `StaticFiles.find` skip its ``..`` check turns the traversal test red (the
raw request reads access.py); dropping the disconnect watcher from `StreamingResponse.__call__` turns the
disconnect test red (its deadline passes, the iterator never closed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from hologram_plugins.http.app import STATIC, build_app
from hologram_plugins.http.asgi import App, Request, Response, Route, StaticFiles, StreamingResponse
from hologram_plugins.http.channel import Channel
from hologram_plugins.http.config import HttpConfig
from hologram_plugins.http.server import HttpServer
from tests.kit.loop import run


async def _no_kernel(facility: str, method: str, params: dict[str, Any]) -> Any:
    raise AssertionError(f"this test calls no facility ({facility}.{method})")


async def _json_error(request: Request, exc: Exception) -> Response:
    return Response(orjson.dumps({"error": str(exc)}), getattr(exc, "status_code", 500), "application/json")


def serve(app: Any, tmp_path: Path, check: Callable[[str], Awaitable[None]]) -> None:
    """Run `check(base_url)` against `app` served by the plugin's HttpServer on a free loopback port."""

    async def main() -> None:
        server = HttpServer(app, HttpConfig.from_config({"port": 0}), tmp_path)
        await server.start()
        try:
            await check(server.url)
        finally:
            await server.stop()

    run(main())


async def raw_get(url: str, target: str) -> tuple[int, bytes]:
    """GET exactly `target` (no client-side normalisation of ``..``): (status, body)."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def test_static_files_come_only_from_inside_their_directory(tmp_path: Path) -> None:
    async def check(url: str) -> None:
        async with httpx.AsyncClient(base_url=url) as http:
            page = await http.get("/static/app.js")
            assert page.status_code == 200 and page.content == (STATIC / "app.js").read_bytes()
            assert page.headers["content-type"] == "text/javascript; charset=utf-8"
            missing = await http.get("/static/nothing-here.css")
            assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        too_long = "/static/" + "a" * 5000 + ".js"
        for target in ("/static/../access.py", "/static/%2e%2e/access.py", "/static//etc/passwd", "/static/", too_long):
            status, body = await raw_get(url, target)
            assert status == 404, (target[:60], status)
            assert b"AccessControl" not in body and b"root:" not in body, target

    serve(build_app(Channel(_no_kernel)), tmp_path, check)


def test_static_files_revalidate_with_their_etag(tmp_path: Path) -> None:
    """A reload sends If-None-Match and gets a bodiless 304; a changed file (an upgrade) a new ETag and body."""
    static = tmp_path / "static"
    static.mkdir()
    (static / "app.js").write_text("one();", encoding="utf-8")

    async def check(url: str) -> None:
        async with httpx.AsyncClient(base_url=url) as http:
            first = await http.get("/static/app.js")
            assert first.status_code == 200 and first.headers["cache-control"] == "no-cache"
            etag = first.headers["etag"]
            again = await http.get("/static/app.js", headers={"if-none-match": f'"other", {etag}'})
            assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
            stale = await http.get("/static/app.js", headers={"if-none-match": '"other"'})
            assert stale.status_code == 200 and stale.content == b"one();"
            (static / "app.js").write_text("two(); // longer", encoding="utf-8")
            changed = await http.get("/static/app.js", headers={"if-none-match": etag})
            assert changed.status_code == 200 and changed.content.startswith(b"two();")
            assert changed.headers["etag"] != etag

    app = App([], StaticFiles("/static", static), http_error=_json_error, crash=_json_error, channel=None)
    serve(app, tmp_path, check)


def test_head_wherever_get_and_json_404_405(tmp_path: Path) -> None:
    async def check(url: str) -> None:
        async with httpx.AsyncClient(base_url=url) as http:
            get, head = await http.get("/"), await http.head("/")
            assert get.status_code == head.status_code == 200 and head.content == b""
            assert head.headers["content-length"] == str(len(get.content)) == get.headers["content-length"]
            assert head.headers["content-security-policy"].startswith("default-src 'self'")
            wrong = await http.post("/static/app.js")
            assert wrong.status_code == 405 and "POST is not allowed on /static/app.js" in wrong.text
            wrong = await http.delete("/api/sessions")
            assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "bad_request"
            unknown = await http.get("/api/nothing")
            assert unknown.status_code == 404 and "there is no /api/nothing" in unknown.json()["error"]["message"]

    serve(build_app(Channel(_no_kernel)), tmp_path, check)


def test_a_crash_before_the_response_is_a_json_500_and_path_parameters_are_one_segment(tmp_path: Path) -> None:
    async def boom(request: Request) -> Response:
        raise RuntimeError("boom")

    async def echo(request: Request) -> Response:
        body = b"".join([chunk async for chunk in request.stream()])
        data = {"params": request.path_params, "q": request.query_params, "body": body.decode(),
                "header": request.headers.get("x-thing")}  # fmt: skip
        return Response(orjson.dumps(data), media_type="application/json")

    async def crash(request: Request, exc: Exception) -> Response:
        return Response(orjson.dumps({"crashed": str(exc)}), 500, "application/json")

    async def http_error(request: Request, exc: Exception) -> Response:
        return Response(b"no", getattr(exc, "status_code", 500))

    routes = [Route("/boom", boom, ["GET"]), Route("/echo/{a}/{b:str}", echo, ["POST"])]
    app = App(routes, StaticFiles("/static", STATIC), http_error=http_error, crash=crash, channel=None)

    async def check(url: str) -> None:
        async with httpx.AsyncClient(base_url=url) as http:
            crashed = await http.get("/boom")
            assert crashed.status_code == 500 and crashed.json() == {"crashed": "boom"}
            echoed = await http.post("/echo/x%20y/二?q=1&q=%E4%B8%AD&e=", content=b"body", headers={"X-Thing": "t"})
            assert echoed.json() == {"params": {"a": "x y", "b": "二"}, "q": {"q": "中", "e": ""}, "body": "body",
                                     "header": "t"}  # fmt: skip
            assert (await http.post("/echo/x/y/z")).status_code == 404

    serve(app, tmp_path, check)


def test_a_streamed_response_closes_its_iterator_when_the_client_disconnects(tmp_path: Path) -> None:
    closed = asyncio.Event()
    sent_first = asyncio.Event()

    async def forever() -> AsyncIterator[bytes]:
        try:
            yield b"data: first\n\n"
            sent_first.set()
            await asyncio.Event().wait()  # nothing more, ever: only a disconnect ends this stream
            yield b"never"
        finally:
            closed.set()

    async def stream(request: Request) -> StreamingResponse:
        return StreamingResponse(forever(), media_type="text/event-stream")

    async def unused(request: Request, exc: Exception) -> Response:
        raise AssertionError(exc)

    app = App([Route("/s", stream, ["GET"])], StaticFiles("/static", STATIC), unused, unused, None)

    async def check(url: str) -> None:
        async with httpx.AsyncClient(base_url=url) as http, http.stream("GET", "/s") as response:
            assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
            chunks = response.aiter_raw()
            assert await anext(chunks) == b"data: first\n\n"
        await sent_first.wait()
        try:
            await asyncio.wait_for(closed.wait(), 30)  # a failure bound: the disconnect closes it at once
        except TimeoutError:
            raise AssertionError("the client disconnected and the stream's iterator was not closed") from None

    serve(app, tmp_path, check)
