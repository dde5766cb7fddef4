"""http: the HTTP channel — the web UI, its JSON/SSE API and an OpenAI-compatible API on one port.

A channel plugin, like the terminal: it runs turns through ``kernel.turns`` and gets the events of the sessions
it watches over its own connection (`plugin.on_turn_event`), fanned out per session to the browsers' SSE
streams (`events`). The server
is h11 inside this plugin's event loop (`server`, `http11`); every request passes `access.AccessControl` first
(token, Host, Origin). Files it keeps in the kernel's data directory (the parent of its own plugin data dir):
``http-token`` (0600) and ``http.json`` (where it listens, while it does; no token). docs/web.md is the
user's reference.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hologram.sdk import Plugin, StartContext
from hologram_plugins.http.access import AccessControl, load_token
from hologram_plugins.http.app import build_app
from hologram_plugins.http.channel import Channel
from hologram_plugins.http.config import HttpConfig, HttpSettings
from hologram_plugins.http.server import HttpServer

log = logging.getLogger("hologram_plugins.http")


class State:
    """This start's server and channel (module level: turn events may arrive before ``on_start`` ends)."""

    def __init__(self) -> None:
        self.channel: Channel | None = None
        self.server: HttpServer | None = None


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
    channel = Channel(_call)
    access = AccessControl(build_app(channel), token, tls=config.tls)
    server = HttpServer(access, config, data_dir)
    access.bind(config.host, server.port)
    await server.start()
    STATE.channel, STATE.server = channel, server
    if not config.loopback:
        how = "TLS" if config.tls else "NO TLS (allow_insecure_remote = true): the token travels in clear text"
        log.warning("http: listening on %s, reachable from other machines, with %s", server.url, how)
    log.info("http: listening on %s", server.url)


@plugin.on_stop
async def stop() -> None:
    server, STATE.server, STATE.channel = STATE.server, None, None
    if server is not None:
        await server.stop()


@plugin.on_turn_event
def on_turn_event(event: dict[str, Any]) -> None:
    channel = STATE.channel
    if channel is not None:
        channel.fanout.publish(event)
