"""Test plugin (out of process): a parallel_safe tool that runs until the kernel cancels it, then says so."""

from __future__ import annotations

import asyncio

from hologram.sdk import Plugin

plugin = Plugin("e2e-stoppable")
_calls = {"running": 0, "most": 0}


@plugin.tool("stoppable")
async def stoppable(x: int) -> str:
    """What a tool that stops its work on `$/cancel` answers — and how many ran at once (proof of a
    concurrent batch)."""
    _calls["running"] += 1
    _calls["most"] = max(_calls["most"], _calls["running"])
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        return f"stopped x={x} ({_calls['most']} running at once)"
    finally:
        _calls["running"] -= 1
    return "finished"


if __name__ == "__main__":
    plugin.run()
