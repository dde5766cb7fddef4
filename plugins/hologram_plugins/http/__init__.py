"""http: the HTTP channel — the web UI, its JSON/SSE API and an OpenAI-compatible API on one port.

A channel plugin, like the terminal: it runs turns through ``kernel.turns`` and gets the events of the sessions
it watches over its own connection (`plugin.on_turn_event`), routed per session to the browsers' SSE streams and
the OpenAI API's requests (`events`); it keeps no events itself (the kernel replays them). The server
is h11 inside this plugin's event loop (`server`, `http11`); every request passes `access.AccessControl` first
(token, Host, Origin). Files it keeps in the kernel's data directory (the parent of its own plugin data dir):
``http-token`` (0600) and ``http.json`` (where it listens, while it does; no token). docs/web.md is the
user's reference.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hologram.rpc import APPLICATION_ERROR, INVALID_PARAMS, RpcError
from hologram.sdk import Plugin, StartContext
from hologram_plugins.http.access import AccessControl, load_token
from hologram_plugins.http.app import build_app
from hologram_plugins.http.channel import Channel
from hologram_plugins.http.config import HttpConfig, HttpSettings
from hologram_plugins.http.routes import Mounts, RouteError
from hologram_plugins.http.server import HttpServer
from hologram_plugins.http.warm import warm

log = logging.getLogger("hologram_plugins.http")


class State:
    """This start's server and channel (module level: turn events may arrive before ``on_start`` ends)."""

    def __init__(self) -> None:
        self.channel: Channel | None = None
        self.server: HttpServer | None = None
        self.mounts: Mounts | None = None


STATE = State()
plugin: Plugin[None] = Plugin("http", config=HttpSettings)


def kernel_data_dir(plugin_data_dir: str) -> Path:
    """The kernel's data directory: plugins get ``<data>/plugins/<name>`` (supervisor/core.py)."""
    path = Path(plugin_data_dir).resolve()
    return path.parent.parent if path.parent.name == "plugins" else path


#: Calls with no time bound of ours: an add or remove runs pip and waits for the new plugin to come up (pip's
#: network timeouts and the plugin's start timeout bound it, as for `hologram plugin add`). Ours running out
#: would cancel the kernel's side of it half-way, after the lock was written and before it was adopted.
UNBOUNDED = {("kernel.plugins", "add"), ("kernel.plugins", "remove")}


async def _call(facility: str, method: str, params: dict[str, Any]) -> Any:
    timeout = None if (facility, method) in UNBOUNDED else 60.0
    return await plugin.facility(facility, timeout=timeout).call(method, **params)


@plugin.on_start
async def start(ctx: StartContext[HttpSettings]) -> None:
    config = HttpConfig.from_config(ctx.config.model_dump())
    data_dir = kernel_data_dir(ctx.data_dir)
    token = load_token(data_dir)
    settings = ctx.config
    channel = Channel(
        _call, stream_queue_bytes=settings.stream_queue_bytes, reasoning_bytes=settings.openai_reasoning_bytes
    )
    mounts = Mounts(max_body_bytes=config.max_body_bytes, timeout_s=config.route_timeout_s)
    api = lambda path: mounts.find(path) is not None  # noqa: E731  (a mounted route answers a refusal in JSON)
    access = AccessControl(build_app(channel, mounts), token, tls=config.tls, api=api)
    server = HttpServer(access, config, data_dir)
    access.bind(config.host, server.port)
    await server.start()
    STATE.channel, STATE.server, STATE.mounts = channel, server, mounts
    await warm(server.sock, token, channel, tls=config.tls)  # the first request's one-time costs, before ready
    if not config.loopback:
        how = "TLS" if config.tls else "NO TLS (allow_insecure_remote = true): the token travels in clear text"
        log.warning("http: listening on %s, reachable from other machines, with %s", server.url, how)
    log.info("http: listening on %s", server.url)


@plugin.on_stop
async def stop() -> None:
    server, STATE.server, STATE.channel, STATE.mounts = STATE.server, None, None, None
    if server is not None:
        await server.stop()


@plugin.on_turn_event
def on_turn_event(event: dict[str, Any]) -> None:
    channel = STATE.channel
    if channel is not None:
        channel.on_event(event)


# -- http.routes: other plugins' routes on this port (routes.py; docs/protocol.md, "http.routes") ---------------


def _mounts() -> Mounts:
    if STATE.mounts is None:
        raise RpcError(APPLICATION_ERROR, "http.routes: the web server is not running")
    return STATE.mounts


def _refused(exc: RouteError) -> RpcError:
    return RpcError(INVALID_PARAMS, f"http.routes {exc}")


@plugin.method("http.routes", "mount")
def mount(caller: str, prefix: str | None = None, well_known: list[str] | None = None) -> dict[str, Any]:
    """Serve ``prefix`` (and the exact ``well_known`` paths) to ``caller``; a second mount replaces the first."""
    try:
        answer = _mounts().mount(caller, prefix, well_known)
    except RouteError as exc:
        raise _refused(exc) from None
    server = STATE.server
    return {**answer, "url": server.url if server is not None else None}


@plugin.method("http.routes", "unmount")
def unmount(caller: str) -> dict[str, Any]:
    return _mounts().unmount(caller)


@plugin.method("http.routes", "accept")
async def accept(caller: str, wait_s: float | None = None) -> dict[str, Any]:
    try:
        return await _mounts().accept(caller, wait_s)
    except RouteError as exc:
        raise _refused(exc) from None


@plugin.method("http.routes", "respond")
async def respond(
    caller: str,
    id: str = "",
    status: int | None = None,
    headers: Any = None,
    body: Any = None,
    more: bool = False,
) -> dict[str, Any]:
    try:
        return await _mounts().respond(caller, id, status, headers, body, more)
    except RouteError as exc:
        raise _refused(exc) from None
