"""A synthetic plugin for tools/bench/startup.py: waits `config.delay` seconds in on_start, then is ready.

It also records when its own code first ran, when the SDK was imported and when on_start was called (all on
CLOCK_MONOTONIC, which every process on the machine shares) and its CPU time at on_start, in
`<data_dir>/timing.json`, so the benchmark can split a plugin's start-up into interpreter start, SDK import,
handshake and the configured delay.

Run by the supervisor as `python -m synthetic_plugin` with this directory on PYTHONPATH.
"""

import time

MAIN_AT = time.monotonic()  # first line of plugin code: the interpreter (and runpy) are up

import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import hologram.sdk._runtime  # noqa: E402,F401  (plugin.run() imports it; count it in the import time)
from hologram.sdk import Plugin  # noqa: E402

IMPORTED_AT = time.monotonic()

plugin = Plugin(os.environ.get("HOLOGRAM_PLUGIN", "synthetic"))


@plugin.on_start
async def start(ctx: Any) -> None:
    timing = {
        "main": MAIN_AT,
        "imported": IMPORTED_AT,
        "on_start": time.monotonic(),
        "cpu_at_start": time.process_time(),
    }
    Path(ctx.data_dir, "timing.json").write_text(json.dumps(timing), encoding="utf-8")
    delay = float(ctx.config.get("delay", 0.0))
    if delay > 0:
        await asyncio.sleep(delay)


if __name__ == "__main__":
    plugin.run()
