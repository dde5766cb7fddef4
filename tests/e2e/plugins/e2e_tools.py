"""Test plugin (out of process): tools for the e2e tests, and a guard hooking before_toolcall / on_input."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from hologram.sdk import Plugin

plugin = Plugin("e2e-tools")


@plugin.tool("lookup")
async def lookup(x: int) -> str:
    await asyncio.sleep(0.05)
    return f"v{x}"


@plugin.tool("crash")
async def crash(x: int) -> str:
    await asyncio.sleep(0.05)
    os._exit(1)


@plugin.stage("before_toolcall")
def guard(ctx: dict[str, Any]) -> dict[str, Any] | None:
    x = ctx["tool_call"]["arguments"].get("x")
    if x == 13:
        return {"deny": "13 is unlucky"}
    if x == 7:
        return {"arguments": {"x": 70}}
    return None


@plugin.stage("on_input")
def ping(ctx: dict[str, Any]) -> dict[str, Any] | None:
    text = ctx["input"].strip()
    if text == "ping":
        return {"respond": "pong"}
    if text == "answer for me":  # e2e-inproc's before_output signs it: output stages run after a respond
        return {"respond": "sign me"}
    return None


if __name__ == "__main__":
    plugin.run()
