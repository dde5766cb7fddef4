"""A tiny third-party-style plugin that keeps its memos in notes.store: run by test_notes as a real process."""

from __future__ import annotations

from typing import Any

from hologram.sdk import Plugin

plugin = Plugin("memo")


@plugin.tool("memo_save")
async def memo_save(title: str, text: str) -> Any:
    return await plugin.facility("notes.store").call("put", title=title, body=text, tags=["memo"])


@plugin.tool("memo_find")
async def memo_find(query: str) -> Any:
    return await plugin.facility("notes.store").call("search", query=query)


if __name__ == "__main__":
    plugin.run()
