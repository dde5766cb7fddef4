"""Which tools a turn may use, decided by the kernel from who the turn is from (issue 38, item 5).

A channel open to other people (a QQ group) must not hand its members the owner's shell: what they type is
user content, and a model can be talked into anything. So the kernel, not the channel, decides a turn's tools —
from the turn's **channel**, which the kernel sets (the calling plugin's name, or a control client's
``initialize`` name: never a param), and, within it, the **peer** the channel names (the declared scene's peer,
``chan:qq/peer:group_1`` → ``group_1``, else the partner). The policy, first found wins:

1. settings.toml ``[channels.NAME.peers.PEER] tools``,
2. settings.toml ``[channels.NAME] tools``,
3. the channel plugin's manifest ``[channel] tools`` (the shipped qq plugin: ``["@read"]``),
4. none: every tool (the web page, the CLI, a script).

A tool outside it is not offered to the model (`ToolRegistry.snapshot`) and a call of it — a model that knows
the name from elsewhere, a script's ``tools/call`` — is refused with the reason before any hook or approval, so
its plugin never receives it (`Executor`, `DirectTools`). A tool's effect (``@read``) is its manifest's word as
the lock has it — a running plugin cannot promote its tool by registering it again; a tool registered at run time
(an MCP server's) has none, and the kernel's own tools (memory search) only read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from hologram.tools.policy import ToolPolicy

if TYPE_CHECKING:
    from hologram.config.settings import ChannelTools
    from hologram.plan.lock import Lock

KERNEL_EFFECT = "read"  # the kernel's tools search memory (coldcontext_query, memory_recall) or load schemas


def peer_of(scene: str | None, partner: str | None) -> str | None:
    """The peer a turn's policy is looked up by: its declared scene's peer, else its partner."""
    if scene:
        _, _, rest = scene.partition("/peer:")
        if rest:
            return rest
    return partner or None


class ChannelPolicies:
    """The settings' ``[channels]`` and the lock's channel defaults and tool effects, asked per turn."""

    def __init__(self, channels: Mapping[str, ChannelTools], lock: Callable[[], Lock | None]) -> None:
        self.channels = dict(channels)
        self.lock = lock
        self._lock: Lock | None = None
        self._effects: dict[tuple[str, str], str] = {}
        self._defaults: dict[str, tuple[str, ...]] = {}

    def _read_lock(self) -> None:
        lock = self.lock()
        if lock is self._lock:
            return
        self._lock = lock
        plugins = lock.plugins if lock is not None else ()
        self._effects = {(p.name, t.name): t.effect for p in plugins for t in p.tools if t.effect is not None}
        self._defaults = {p.name: p.channel_tools for p in plugins if p.channel_tools is not None}

    def prepare(self) -> None:
        """Read the lock's effects and channel defaults now, not in the first turn (issue 39 item 9)."""
        self._read_lock()

    def effect(self, plugin: str, tool: str) -> str | None:
        """What the manifest says a call of ``tool`` does (None: it does not say)."""
        if plugin == "kernel":
            return KERNEL_EFFECT
        self._read_lock()
        return self._effects.get((plugin, tool))

    def for_turn(self, channel: str, *, scene: str | None = None, partner: str | None = None) -> ToolPolicy | None:
        """The policy of a turn from ``channel`` (None: every tool)."""
        table = self.channels.get(channel)
        peer = peer_of(scene, partner)
        if table is not None:
            rule = table.peers.get(peer) if peer else None
            if rule is not None:
                return ToolPolicy(rule.tools, f"[channels.{channel}.peers.{peer}] in settings.toml")
            if table.tools is not None:
                return ToolPolicy(table.tools, f"[channels.{channel}] in settings.toml")
        self._read_lock()
        default = self._defaults.get(channel)
        if default is not None:
            return ToolPolicy(
                default, f"the {channel} plugin's default; set [channels.{channel}] tools in settings.toml"
            )
        return None
