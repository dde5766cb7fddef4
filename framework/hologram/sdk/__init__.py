"""What plugin authors import: declare tools, stage hooks and facility methods; the protocol is hidden.

    from hologram.sdk import Plugin

    plugin = Plugin("notes")

    @plugin.tool("notes_write")
    async def notes_write(title: str, body: str) -> str:
        ...

    if __name__ == "__main__":
        plugin.run()

See docs/authoring.md; `hologram.sdk.testing` runs a plugin as a real process for its tests.
"""

from hologram.sdk.plugin import FacilityClient, Plugin, StartContext, ToolContext, tool_error
from hologram.sdk.runtime import SDK_NAME, Runtime

__all__ = ["SDK_NAME", "FacilityClient", "Plugin", "Runtime", "StartContext", "ToolContext", "tool_error"]
