"""The plugin protocol's method set (version 1): the one place both the kernel and the SDK take names from.

The wire format (JSON-RPC 2.0, one object per line on the plugin's stdin/stdout, arenas, the event ring) is
in `hologram.rpc`; the reference for authors in other languages is docs/protocol.md.
"""

from __future__ import annotations

from typing import Any, TypedDict

PROTOCOL_VERSION = 1

STAGE_NAMES = (
    "on_input",
    "pre_action",
    "post_action",
    "before_toolcall",
    "after_toolcall",
    "before_output",
    "after_output",
)

# kernel → plugin requests
INITIALIZE = "initialize"
TOOL_INVOKE = "tool/invoke"
STAGE_INVOKE = "stage/invoke"
FACILITY_CALL = "facility/call"  # also plugin → kernel: the kernel routes it to the provider
SHUTDOWN = "shutdown"
# kernel → plugin notifications
FACILITY_STATUS = "facility/status"  # a required facility went away or came back
# plugin → kernel notifications and requests
FACILITY_READY = "facility/ready"
EVENT_SUBSCRIBE = "event/subscribe"
EVENT_PUBLISH = "event/publish"
TOOL_REGISTER = "tool/register"
ARENA_RELEASE = "arena/release"
# plugin → kernel: a line saying how the plugin fares (`{"text": …}`, "" clears it; e.g. the mcp plugin's servers
# that are down), shown by `hologram status` and `kernel.plugins.list`. Additive to protocol 1: optional.
PLUGIN_STATUS = "plugin/status"
STATUS_CHARS = 500  # longer lines are cut
# plugin → kernel: `initialize` arrived and the plugin's own start code begins (its process is up): the kernel
# lets the next plugin in (hologram/supervisor/gate.py). Additive to protocol 1: optional for a plugin.
STARTING = "$/starting"
# both directions: the sender of request `id` stopped waiting for it (cancelled, or its timeout fired); the
# receiver cancels that request's handler. Additive to protocol 1: a peer that ignores it is still correct.
CANCEL = "$/cancel"

# The turn API (control socket and the kernel.turns facility) has its own module and version:
# `hologram.api.turn`. Its one kernel → plugin message: a turn event of a session the plugin watches (or of
# every session, for a plugin that observes), as a notification whose params are the event (`api.turn.TURN_EVENT`).
TURN_EVENT = "turn/event"

#: Keys of settings.toml's ``[plugins.NAME]`` the kernel itself reads: ``env``/``pass_env`` (the plugin's
#: environment, never sent) and ``mode``/``allow`` (the pre-[approvals] tool policy, sent as before). The SDK
#: keeps them away from a ``Plugin(config=Model)`` that does not declare them, so a strict model does not
#: refuse a key that was never the plugin's.
KERNEL_CONFIG_KEYS = frozenset({"env", "pass_env", "mode", "allow"})

ENV_PLUGIN = "HOLOGRAM_PLUGIN"
ENV_PROTOCOL = "HOLOGRAM_PROTOCOL"


class InitializeParams(TypedDict):
    protocol: int
    kernel_version: str
    plugin: dict[str, Any]  # name, version, provides, requires ({facility: provider})
    config: dict[str, Any]
    data_dir: str
    arenas: dict[str, Any]  # {"kernel": ArenaSpec (kernel writes), "plugin": ArenaSpec (plugin writes)}
    events: dict[str, Any]  # {"ring": RingSpec, "eventfd": int}


class InitializeResult(TypedDict, total=False):
    protocol: int
    sdk: str
    tools: list[dict[str, Any]]  # tools registered at start, in addition to the manifest's
    stages: list[str]
    methods: dict[str, list[str]]  # facility → method names this plugin serves
    facility_loss: str  # "survive": keep me running when a required facility goes; "restart" (default)


def facility_name(text: str) -> str:
    """`notes.store@1` → `notes.store`: readiness and calls are keyed by name, versions were checked at build."""
    return text.split("@", 1)[0].split(":", 1)[0]
