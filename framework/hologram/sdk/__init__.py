"""What plugin authors import: declare tools, stage hooks and facility methods; the protocol is hidden.

    from hologram.sdk import Plugin

    plugin = Plugin("notes")

    @plugin.tool("notes_write")
    async def notes_write(title: str, body: str) -> str:
        ...

    if __name__ == "__main__":
        plugin.run()

See docs/authoring.md. Everything an author uses is re-exported here; the modules behind it (``_plugin``,
``_runtime``, ``_views``) are private, pluggy's style, so they can change without breaking plugins.
`hologram.sdk.testing` runs a plugin as a real process for its tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hologram.rpc import RpcError  # what a facility call raises when its provider (or the kernel) refuses it
from hologram.sdk._plugin import (
    FacilityClient,
    Plugin,
    RuntimeTool,
    StartContext,
    StartRefused,
    ToolContext,
    ToolResult,
    tool_error,
    tool_result,
)

if TYPE_CHECKING:
    from hologram.sdk import testing
    from hologram.sdk._http import ASGIApp, Mounted
    from hologram.sdk._views import (
        AfterOutputView,
        AfterToolcallView,
        BeforeOutputView,
        BeforeToolcallView,
        Change,
        OnInputView,
        PostActionView,
        PreActionView,
        StageView,
        ToolCallView,
        ToolResultView,
    )

# Loaded on first use: the views cost ~7 ms to create, which a plugin without typed hooks need not pay at start
# (the zygote preloads them); `testing` imports the kernel's supervisor, which a running plugin never needs.
_LAZY = {
    "ASGIApp": "hologram.sdk._http",
    "Mounted": "hologram.sdk._http",
    "AfterOutputView": "hologram.sdk._views",
    "AfterToolcallView": "hologram.sdk._views",
    "BeforeOutputView": "hologram.sdk._views",
    "BeforeToolcallView": "hologram.sdk._views",
    "Change": "hologram.sdk._views",
    "OnInputView": "hologram.sdk._views",
    "PostActionView": "hologram.sdk._views",
    "PreActionView": "hologram.sdk._views",
    "StageView": "hologram.sdk._views",
    "ToolCallView": "hologram.sdk._views",
    "ToolResultView": "hologram.sdk._views",
}

__all__ = [
    "ASGIApp",
    "AfterOutputView",
    "AfterToolcallView",
    "BeforeOutputView",
    "BeforeToolcallView",
    "Change",
    "FacilityClient",
    "Mounted",
    "OnInputView",
    "Plugin",
    "PostActionView",
    "PreActionView",
    "RpcError",
    "RuntimeTool",
    "StageView",
    "StartContext",
    "StartRefused",
    "ToolCallView",
    "ToolContext",
    "ToolResult",
    "ToolResultView",
    "testing",
    "tool_error",
    "tool_result",
]


def __getattr__(name: str) -> Any:
    import importlib

    if name == "testing":
        return importlib.import_module("hologram.sdk.testing")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hologram.sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found once; later lookups do not come back here
    return value
