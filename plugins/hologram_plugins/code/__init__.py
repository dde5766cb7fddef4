"""code: run a Python snippet in a child interpreter with time, CPU, memory and output limits.

The child is `sys.executable -I -c CODE` (isolated mode: no user site-packages, no PYTHON* variables, the
workspace not on sys.path) started in the workspace, under the same process guardian as shell_run (every
process it starts dies with the call; at most `max_processes` at once). Running code is as powerful as
running a shell command, so its manifest declares ``needs_approval`` like shell_run's: the kernel asks
before a call reaches this plugin (settings.toml ``[approvals]``, default `ask`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from hologram.sdk import Plugin, StartContext, ToolContext
from hologram_plugins._process.run import RunSettings, run_command
from hologram_plugins._process.runner import child_env
from hologram_plugins.code.limits import Limits

MAX_PROCESSES = 64  # per call, the interpreter included: a snippet rarely needs more, a fork loop gets stopped


@dataclass(frozen=True)
class CodeState:
    run: RunSettings
    limits: Limits


def _state(ctx: StartContext) -> CodeState:
    config = ctx.config
    return CodeState(
        RunSettings.from_config(config, ctx.data_dir, timeout_s=30.0, max_timeout_s=300.0, max_processes=MAX_PROCESSES),
        Limits(
            memory_mb=int(config.get("memory_mb", Limits.memory_mb)),
            cpu_s=int(config.get("cpu_s", Limits.cpu_s)),
            max_file_mb=int(config.get("max_file_mb", Limits.max_file_mb)),
        ),
    )


plugin = Plugin("code", state=_state)


@plugin.tool("code_run")
async def code_run(ctx: ToolContext, code: str, timeout_s: float | None = None) -> dict[str, Any]:
    return await run_command(
        plugin,
        "code_run",
        ctx,
        ctx.arguments,  # explicit nulls included; timeout_s is read from here
        [sys.executable, "-I", "-c", code],
        settings=plugin.state.run,
        env=child_env({"PYTHONIOENCODING": "utf-8"}),
        rlimits=plugin.state.limits.rlimits(),
    )
