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
`hologram.sdk.testing` runs a plugin as a real process for its tests; it is loaded on first use, because it
imports the kernel's supervisor, which a running plugin never needs.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from hologram.sdk._plugin import FacilityClient, Plugin, StartContext, ToolContext, tool_error
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

if TYPE_CHECKING:
    from hologram.sdk import testing

__all__ = [
    "AfterOutputView",
    "AfterToolcallView",
    "BeforeOutputView",
    "BeforeToolcallView",
    "Change",
    "FacilityClient",
    "OnInputView",
    "Plugin",
    "PostActionView",
    "PreActionView",
    "StageView",
    "StartContext",
    "ToolCallView",
    "ToolContext",
    "ToolResultView",
    "testing",
    "tool_error",
]


def __getattr__(name: str) -> ModuleType:
    if name == "testing":
        import importlib

        return importlib.import_module("hologram.sdk.testing")
    raise AttributeError(f"module 'hologram.sdk' has no attribute {name!r}")
