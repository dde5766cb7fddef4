"""qq: QQ groups and private chats through NapCat (OneBot v11), a channel open to other people, made safe.

A channel written only with `hologram.sdk` and the ``kernel.turns`` facility (tests/guard/test_channel_imports.py):
NapCat's events become turns, or messages recorded without a turn (``sessions_append``), and the answers go back
as NapCat actions (channel.py); the connection is link.py. The kernel decides which tools its turns get — by
default those that only read (the manifest's ``[channel] tools``; settings ``[channels.qq]``). docs/channels/qq.md
is the user's reference.

Without ``listen`` or ``connect`` the plugin is ready and idle, its status says so, and it imports nothing more
than this module and its config: ``websockets`` and ``markdown-it-py`` load only when QQ is configured, so the
default graph pays for a small plugin (the zygote preloads this module: tests/guard/test_plugin_preload.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from hologram.sdk import Plugin, StartContext
from hologram_plugins.qq.config import QqConfig

if TYPE_CHECKING:
    from hologram_plugins.qq.channel import Channel

log = logging.getLogger("hologram_plugins.qq")
NOT_CONFIGURED = "not configured: set listen or connect, and access_token, in [plugins.qq] (docs/channels/qq.md)"

plugin: Plugin[None] = Plugin("qq", config=QqConfig)
_channel: list[Channel] = []  # the running channel, when configured (one per start)


async def turns(method: str, **params: Any) -> Any:
    return await plugin.facility("kernel.turns").call(method, **params)


@plugin.on_start
async def start(ctx: StartContext[QqConfig]) -> None:
    _channel.clear()
    if not ctx.config.configured:
        await plugin.set_status(NOT_CONFIGURED)
        return
    from hologram_plugins.qq.channel import Channel  # websockets and markdown-it-py: only now

    channel = Channel(ctx.config, ctx.data_dir, turns, plugin.set_status)
    _channel.append(channel)
    await channel.start()


@plugin.on_stop
async def stop() -> None:
    for channel in _channel:
        await channel.stop()


@plugin.on_turn_event
async def on_turn_event(event: dict[str, Any]) -> None:
    for channel in _channel:
        await channel.on_turn_event(event)
