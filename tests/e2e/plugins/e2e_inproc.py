"""Test plugin (in the kernel process): a before_output hook, called as a direct function hook."""

from __future__ import annotations

import os
from typing import Any

from hologram.sdk import Plugin

plugin = Plugin("e2e-inproc")


@plugin.stage("before_output")
def sign(ctx: dict[str, Any]) -> dict[str, Any] | None:
    if "sign me" in ctx["output"]:
        return {"output": ctx["output"] + f" [signed in pid {os.getpid()}]"}
    return None
