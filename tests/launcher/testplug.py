"""A configurable plugin for launcher tests: its manifest's [config] says how to behave.

Every lifecycle step is appended as a JSON line to `config.events_file`, so tests can assert order and
timing from what the real processes did, not from what the kernel believes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from hologram.sdk import Plugin, StartContext, tool_error, tool_result

NAME = os.environ.get("HOLOGRAM_PLUGIN", "testplug")
plugin = Plugin(NAME)
plugin.auto_ready = not os.environ.get("TESTPLUG_SKIP_READY")  # started, but never announces its facility
config: dict[str, Any] = {}


def record(event: str, **extra: Any) -> None:
    path = config.get("events_file")
    if path:
        line = json.dumps({"plugin": NAME, "event": event, "t": time.time(), "pid": os.getpid(), **extra})
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


async def crash_later(seconds: float) -> None:
    await asyncio.sleep(seconds)
    record("crash")
    os._exit(3)


@plugin.on_start
async def start(ctx: StartContext) -> None:
    config.update(ctx.config)
    record("start", config=ctx.config)
    if config.get("crash_on_start"):
        record("crash")
        os._exit(2)
    for _ in range(int(config.get("garbage_lines", 0))):
        os.write(1, b"this is not json\n")
    if config.get("touch_on_start"):  # another plugin's ready_gate: it opens when this one starts
        with open(config["touch_on_start"], "w", encoding="utf-8"):
            pass
    await asyncio.sleep(float(config.get("ready_delay", 0)))
    if config.get("ready_gate"):  # not ready until the test creates this file: "still starting" by construction
        while not os.path.exists(config["ready_gate"]):
            await asyncio.sleep(0.02)
    if config.get("never_ready"):
        await asyncio.sleep(3600)
    record("ready")
    if config.get("crash_after") is not None:
        asyncio.get_running_loop().create_task(crash_later(float(config["crash_after"])))


@plugin.on_stop
def stop() -> None:
    record("stop")


@plugin.tool("echo", parallel_safe=True)
async def echo(text: str) -> str:
    return f"{NAME}: {text}"


@plugin.tool("big")
async def big(size: int) -> bytes:
    return bytes(range(256)) * (size // 256)


# What a tool may return, one value per `kind` (tests/launcher/test_sdk.py: what each becomes on the wire)
RETURNS: dict[str, Any] = {
    "int": 5,
    "none": None,
    "list": [1, "二"],
    "data": {"name": "apples", "total": 5},
    "data_with_content": {"content": "a note", "author": "Ada"},
    "result_object": {"content": "done", "is_error": False},
    "tool_result": tool_result('{"content": "a note"}'),
    "tool_result_error": tool_result("quota exceeded", is_error=True),
    "tool_error": tool_error("no such counter"),
}


@plugin.tool("shape")
def shape(kind: str) -> Any:
    return RETURNS[kind]


if os.environ.get("TESTPLUG_SURVIVE"):

    @plugin.on_facility_status
    def on_status(facility: str, ready: bool) -> None:
        record("facility_status", facility=facility, ready=ready)


@plugin.subscribe(["greeting"])
def on_greeting(event: dict[str, Any]) -> None:
    record("event", data=event)


if __name__ == "__main__":
    sys.exit(plugin.run())
