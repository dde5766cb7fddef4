"""The app: the page and its static files, the native JSON/SSE API, the OpenAI-compatible API.

Routes are thin: each checks its input (a 4xx naming the field otherwise) and calls a kernel facility through
the `Channel`; the page (H3's ``static/``) and the remote CLI use exactly these routes (docs/web.md, "HTTP
API"). Access control wraps the whole app (`access.AccessControl`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from hologram import __version__
from hologram.rpc import APPLICATION_ERROR, RpcError
from hologram_plugins.http.asgi import (
    App,
    HTTPError,
    Request,
    Response,
    Route,
    StaticFiles,
    StreamingResponse,
    file_response,
)
from hologram_plugins.http.channel import PAGE, Channel
from hologram_plugins.http.responses import (
    BadRequest,
    error,
    field,
    json_response,
    read_object,
    rpc_error,
)

log = logging.getLogger("hologram_plugins.http")

STATIC = Path(__file__).parent / "static"
KEEPALIVE_S = 15.0
PAGE_HEADERS = {
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",  # the link carries the token: never pass it on
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
}


def _channel(request: Request) -> Channel:
    channel: Channel = request.app.channel
    return channel


Handler = Callable[[Request, Channel], Awaitable[Response | StreamingResponse]]


async def _guarded(request: Request, handler: Handler) -> Response | StreamingResponse:
    try:
        return await handler(request, _channel(request))
    except BadRequest as exc:
        return error(exc.status, exc.code, exc.message)
    except RpcError as exc:
        return rpc_error(exc)


def route(path: str, methods: list[str]) -> Callable[[Handler], Handler]:
    """A route whose handler takes ``(request, channel)``; `BadRequest`/`RpcError` become JSON errors."""

    def register(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response | StreamingResponse:
            return await _guarded(request, handler)

        endpoint.__doc__ = handler.__doc__
        ROUTES.append(Route(path, endpoint, methods=methods))
        return handler

    return register


ROUTES: list[Any] = []


# -- the page -----------------------------------------------------------------------------------------------


async def index(request: Request) -> Response:
    page = STATIC / "index.html"
    if not page.is_file():
        return error(404, "not_found", "the page is not installed (static/index.html); the API works")
    return file_response(page, headers=PAGE_HEADERS)


# -- native API -----------------------------------------------------------------------------------------------


@route("/api/info", ["GET"])
async def info(request: Request, channel: Channel) -> Response:
    """What the page needs first: versions, and how many providers (0: show the first-run screen)."""
    providers: int | None
    try:
        listed = await channel.call("kernel.llm", "providers_list")
        providers = len(listed.get("providers") or [])
    except RpcError as exc:
        log.warning("kernel.llm providers_list: %s", exc.message)
        providers = None
    from hologram.api.turn import TURN_API_VERSION  # ~0.5 MB of dataclasses for one number: on first use

    return json_response({"version": __version__, "turn_api": TURN_API_VERSION, "providers": providers})


def _text(data: dict[str, Any]) -> str:
    text = field(data, "text", str, required=True)
    if not text.strip():
        raise BadRequest("text: empty; send what to ask")
    return str(text)


def _session_id(value: Any, name: str = "session") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > 200 or not value.isprintable() or "/" in value:
        raise BadRequest(f"{name}: must be a session id (1-200 printable characters, no '/'), or left out")
    return value


@route("/api/turns", ["POST"])
async def start_turn(request: Request, channel: Channel) -> Response:
    """The socket's ``turn/start`` params in a JSON body (`Channel.start` checks them with StartParams)."""
    data = await read_object(request)
    session = _session_id(data.get("session"))
    text = _text(data) if "text" in data or "input" not in data else None  # or typed parts: `input`
    rest = {k: v for k, v in data.items() if k not in ("text", "session")}
    started = await channel.start(text, session, **rest)
    return json_response({"session": started["session"], "turn": started["turn"]})


def _after(request: Request) -> int | None:
    raw = request.headers.get("last-event-id") or request.query_params.get("after")
    if raw is None or raw == "":
        return None
    try:
        after = int(raw)
    except ValueError:
        raise BadRequest(f"Last-Event-ID / after: must be an event seq (a whole number), not {raw[:40]!r}") from None
    if after < 0:
        raise BadRequest("Last-Event-ID / after: must be 0 or more")
    return after


@route("/api/sessions/{sid}/events", ["GET"])
async def events(request: Request, channel: Channel) -> StreamingResponse:
    """The session's turn events as SSE: ``id: seq``, ``data: event``; resumable by Last-Event-ID/after."""
    sid = _session_id(request.path_params["sid"]) or ""
    after = _after(request)
    listener = await channel.open_stream(sid, after)

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield b"retry: 1000\n: connected\n\n"
            while True:
                try:
                    out = await asyncio.wait_for(listener.get(), KEEPALIVE_S)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                if out is None:  # dropped (too far behind) or the session deleted: the client reconnects
                    return
                yield b"id: %d\ndata: %s\n\n" % (out.seq, out.line)
        finally:
            channel.close_stream(listener)

    return StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


@route("/api/sessions/{sid}/cancel", ["POST"])
async def cancel(request: Request, channel: Channel) -> Response:
    sid = _session_id(request.path_params["sid"])
    result = await channel.turns("cancel", session=sid)
    return json_response({"cancelled": bool(result.get("cancelled"))})


@route("/api/sessions/{sid}/approvals/{approval}", ["POST"])
async def approve(request: Request, channel: Channel) -> Response:
    sid = _session_id(request.path_params["sid"])
    data = await read_object(request)
    answer: dict[str, Any] = {}
    if "decision" in data or "approved" not in data:
        answer["decision"] = field(data, "decision", str, required="approved" not in data)
    if "approved" in data:  # version 1: true = approve_once, false = deny
        answer["approved"] = field(data, "approved", bool, required=True)
    reason = field(data, "reason", str) or ""
    if len(reason) > 2000:
        raise BadRequest("reason: at most 2000 characters")
    approval = request.path_params["approval"]
    accepted = await channel.approve(sid or "", approval, reason=reason, principal=PAGE, **answer)
    return json_response({"accepted": accepted})


@route("/api/approvals", ["GET"])
async def approvals(request: Request, channel: Channel) -> Response:
    """The approval policy the kernel applies (the rules an "always" answer wrote among them)."""
    return json_response(await channel.turns("approvals_list"))


@route("/api/sessions", ["GET"])
async def sessions(request: Request, channel: Channel) -> Response:
    return json_response(await channel.turns("sessions_list"))


@route("/api/sessions/{sid}", ["GET", "PATCH", "DELETE"])
async def session(request: Request, channel: Channel) -> Response:
    sid = _session_id(request.path_params["sid"])
    if request.method == "GET":  # ?limit=N&before=SEQ: a page of sessions/read (the page reads a title by limit=1)
        paging: dict[str, int] = {}
        if request.query_params.get("limit"):
            paging["limit"] = _int_query(request, "limit", 50, 1, 500)
        if request.query_params.get("before"):
            paging["before"] = _int_query(request, "before", 1, 1, 2**63 - 1)
        return json_response(await channel.turns("sessions_read", session=sid, **paging))
    if request.method == "PATCH":
        data = await read_object(request)
        title = field(data, "title", str, required=True)
        if len(title) > 200:
            raise BadRequest("title: at most 200 characters")
        return json_response(await channel.turns("sessions_rename", session=sid, title=title))
    result = await channel.turns("sessions_delete", session=sid)
    if result.get("deleted"):
        channel.forget(str(sid))
    return json_response({"deleted": bool(result.get("deleted"))})


MEDIA_ID = frozenset("0123456789abcdef")
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})  # never served as anything else
MEDIA_HEADERS = {
    "x-content-type-options": "nosniff",
    # an id is the bytes' sha256: what it names never changes, so the browser may keep it (privately: no proxy)
    "cache-control": "private, max-age=31536000, immutable",
    "content-security-policy": "default-src 'none'; sandbox",  # opened alone in a tab: an image, nothing else
    "referrer-policy": "no-referrer",
}


@route("/api/sessions/{sid}/media/{mid}", ["GET"])
async def media(request: Request, channel: Channel) -> Response:
    """An image a tool result of the session carried (``tool.result``'s ``images[].id``), through ``media/read``:
    only the session's own (the kernel checks the pair), only an image type, never sniffed as anything else."""
    sid = _session_id(request.path_params["sid"])
    mid = str(request.path_params["mid"])
    if len(mid) != 64 or not set(mid) <= MEDIA_ID:
        return error(404, "not_found", "an image id is 64 lowercase hex characters (a tool.result's images[].id)")
    answer = await channel.turns("media_read", session=sid, id=mid)
    mime = str(answer.get("mime"))
    if mime not in IMAGE_TYPES:
        return error(502, "upstream", f"the kernel answered {mime[:40]!r} for an image")
    import base64

    data = base64.b64decode(str(answer.get("data") or ""))
    return Response(data, media_type=mime, headers={**MEDIA_HEADERS, "etag": f'"{mid}"'})


# -- pass-throughs to the kernel's admin facilities ----------------------------------------------------------


@route("/api/providers", ["GET", "PUT"])
async def providers(request: Request, channel: Channel) -> Response:
    if request.method == "GET":
        return json_response(await channel.call("kernel.llm", "providers_list"))
    data = await read_object(request)
    chain = field(data, "providers", list, required=True)
    if not all(isinstance(p, dict) for p in chain):
        raise BadRequest("providers: must be a list of objects, one per provider")
    return json_response(await channel.call("kernel.llm", "providers_save", providers=chain))


@route("/api/providers/test", ["POST"])
async def providers_test(request: Request, channel: Channel) -> Response:
    data = await read_object(request)
    provider = field(data, "provider", dict)
    name = field(data, "name", str)
    if provider is None and name is None:
        raise BadRequest("send provider (an object, as in PUT /api/providers) or name (a saved provider)")
    params: dict[str, Any] = {}
    if provider is not None:
        params["provider"] = provider
    if name is not None:
        params["name"] = name
    return json_response(await channel.call("kernel.llm", "providers_test", **params))


def _plugin_name(request: Request) -> str:
    name = str(request.path_params["name"])
    if not name or len(name) > 100 or not name.isprintable():
        raise BadRequest("the plugin name in the path is not a plugin name")
    return name


@route("/api/plugins", ["GET"])
async def plugins(request: Request, channel: Channel) -> Response:
    return json_response(await channel.call("kernel.plugins", "list"))


@route("/api/plugins/{name}/{action:str}", ["POST"])
async def plugin_action(request: Request, channel: Channel) -> Response:
    action = request.path_params["action"]
    if action not in ("restart", "stop", "start"):
        raise BadRequest(f"no action {action[:40]!r}; use restart, stop or start", 404, "not_found")
    return json_response(await channel.call("kernel.plugins", action, name=_plugin_name(request)))


# -- plugins added and removed at run time (kernel.plugins inventory/add/remove, as `hologram plugin …`) ------


@route("/api/plugins/inventory", ["GET"])
async def plugins_inventory(request: Request, channel: Channel) -> Response:
    """`hologram plugin list` as data: every plugin the project knows of, installed vs locked vs running."""
    return json_response(await channel.call("kernel.plugins", "inventory"))


def _confirm(data: dict[str, Any]) -> dict[str, str]:
    """``confirm``: the preview's value (do it), or absent (only preview)."""
    confirm = field(data, "confirm", str)
    if confirm is None:
        return {}
    if not confirm or len(confirm) > 200 or not confirm.isprintable():
        raise BadRequest("confirm: the `confirm` value of the preview's answer, or left out to preview")
    return {"confirm": confirm}


async def _change(channel: Channel, method: str, params: dict[str, Any]) -> Response:
    """An add or remove; the kernel refusing it (the resolver's or pip's error, a stale confirmation) is a
    422 with the kernel's own text — the same as the CLI prints — and nothing changed."""
    try:
        return json_response(await channel.call("kernel.plugins", method, **params))
    except RpcError as exc:
        if exc.code == APPLICATION_ERROR:
            return error(422, "refused", exc.message)
        raise


@route("/api/plugins/add", ["POST"])
async def plugins_add(request: Request, channel: Channel) -> Response:
    """Preview (no ``confirm``) or add ``target``: an absolute path on the kernel's machine, or PACKAGE[==VERSION]."""
    data = await read_object(request)
    target = field(data, "target", str, required=True).strip()
    if not target:
        raise BadRequest("target: empty; send an absolute path on the kernel's machine, or PACKAGE[==VERSION]")
    if len(target) > 4096 or not target.isprintable():
        raise BadRequest("target: a path or a package name, at most 4096 printable characters")
    return await _change(channel, "add", {"target": target, **_confirm(data)})


@route("/api/plugins/remove", ["POST"])
async def plugins_remove(request: Request, channel: Channel) -> Response:
    """Preview (no ``confirm``) or remove the plugin ``name`` that `add` brought."""
    data = await read_object(request)
    name = field(data, "name", str, required=True)
    if not name or len(name) > 100 or not name.isprintable():
        raise BadRequest("name: the name of a plugin `add` brought (the Plugins table's first column)")
    return await _change(channel, "remove", {"name": name, **_confirm(data)})


def _int_query(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}: must be a whole number {low}-{high}, not {raw[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}: must be {low}-{high}, not {value}")
    return value


def _text_query(request: Request, name: str, most: int, usage: str) -> str:
    """A required text parameter, stripped: missing or longer than `most` characters is a 400 naming it."""
    text = request.query_params.get(name, "").strip()
    if not text:
        raise BadRequest(f"{name}: missing; {usage}")
    if len(text) > most:
        raise BadRequest(f"{name}: at most {most} characters")
    return text


@route("/api/plugins/{name}/log", ["GET"])
async def plugin_log(request: Request, channel: Channel) -> Response:
    lines = _int_query(request, "lines", 200, 1, 10_000)
    return json_response(await channel.call("kernel.plugins", "log", name=_plugin_name(request), lines=lines))


@route("/api/memory", ["GET"])
async def memory(request: Request, channel: Channel) -> Response:
    return json_response(await channel.call("kernel.memory", "stats"))


@route("/api/memory/search", ["GET"])
async def memory_search(request: Request, channel: Channel) -> Response:
    text = _text_query(request, "q", 2000, "GET /api/memory/search?q=TEXT")
    limit = _int_query(request, "limit", 20, 1, 200)
    return json_response(await channel.call("kernel.memory", "search", text=text, limit=limit))


@route("/api/memory/graph", ["GET"])
async def memory_graph(request: Request, channel: Channel) -> Response:
    """An entity's neighbourhood in the L3 graph, each triple with its source (the Memory tab's entity box)."""
    entity = _text_query(request, "entity", 200, "GET /api/memory/graph?entity=NAME&hops=1")
    hops = _int_query(request, "hops", 1, 1, 2)
    limit = _int_query(request, "limit", 50, 1, 200)
    return json_response(await channel.call("kernel.memory", "graph", entity=entity, hops=hops, limit=limit))


@route("/api/memory/scenes", ["GET"])
async def memory_scenes(request: Request, channel: Channel) -> Response:
    return json_response(await channel.call("kernel.memory", "scenes"))


@route("/api/memory/distill", ["POST"])
async def memory_distill(request: Request, channel: Channel) -> Response:
    """Cooling now ("Distill now"): `idle_hours`, `max_accesses` optional, [memory.cooling]'s otherwise."""
    data = await read_object(request)
    params: dict[str, Any] = {}
    idle_hours = field(data, "idle_hours", (int, float))
    if idle_hours is not None:
        if isinstance(idle_hours, bool) or idle_hours < 0:
            raise BadRequest("idle_hours: must be a number of hours >= 0")
        params["idle_hours"] = idle_hours
    max_accesses = field(data, "max_accesses", int)
    if max_accesses is not None:
        params["max_accesses"] = max_accesses
    return json_response(await channel.call("kernel.memory", "distill", **params))


# -- the app ----------------------------------------------------------------------------------------------------


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPError)
    if exc.status_code == 404:
        return error(404, "not_found", f"there is no {request.path[:200]}; see docs/web.md for the routes")
    if exc.status_code == 405:
        return error(405, "bad_request", f"{request.method} is not allowed on {request.path[:200]}")
    return error(exc.status_code, "bad_request", str(exc.detail))


async def _crash(request: Request, exc: Exception) -> Response:
    log.error("%s %s failed: %s: %s", request.method, request.path[:200], type(exc).__name__, str(exc)[:500])
    return error(500, "internal", "the request failed inside the HTTP plugin; its log has the details")


#: The OpenAI-compatible API's routes (`openai_api.ROUTES`, the same paths and methods: a test holds them equal).
#: Its module is imported on the first such request: forked from the zygote, http finds it preloaded there (shared
#: with the zygote, hologram/zygote/main.py); run on its own, an idle plugin no OpenAI client uses does not hold it.
OPENAI_ROUTES = (("/v1/models", ("GET",)), ("/v1/models/{model}", ("GET",)), ("/v1/chat/completions", ("POST",)))


def _openai_route(path: str, methods: tuple[str, ...]) -> Route:
    async def endpoint(request: Request) -> Response | StreamingResponse:
        from hologram_plugins.http import openai_api

        return await openai_api.ENDPOINTS[path](request)

    return Route(path, endpoint, methods=list(methods))


def build_app(channel: Channel, mounts: Any = None) -> App:
    """The app; ``mounts`` (`routes.Mounts`) serves the paths other plugins mounted through ``http.routes``."""
    routes = [
        Route("/", index, methods=["GET", "HEAD"]),
        *ROUTES,
        *(_openai_route(path, methods) for path, methods in OPENAI_ROUTES),
    ]
    static = StaticFiles("/static", STATIC)
    return App(routes, static, http_error=_http_error, crash=_crash, channel=channel, mounts=mounts)
