"""An in-process plugin: the same SDK object, loaded into the kernel (manifest `run = { inproc = ... }`)."""

from __future__ import annotations

import os

from hologram.sdk import Plugin

plugin = Plugin("inside")


@plugin.tool("whereami")
def whereami() -> str:
    return f"pid {os.getpid()}"
