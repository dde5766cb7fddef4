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

from pydantic import Field

from hologram.sdk import Plugin, StartContext, ToolContext
from hologram_plugins._process.run import ProcessConfig, RunSettings, run_command
from hologram_plugins._process.runner import child_env
from hologram_plugins.code.limits import Limits

MAX_PROCESSES = 64  # per call, the interpreter included: a snippet rarely needs more, a fork loop gets stopped


@dataclass(frozen=True)
class CodeState:
    run: RunSettings
    limits: Limits


class CodeConfig(ProcessConfig):
    """settings.toml's ``[plugins.code]``, checked at start (its JSON Schema: manifests/code.config.schema.json)."""

    timeout_s: float = Field(30, gt=0, description="Seconds a snippet may run when it does not ask for a time.")
    max_timeout_s: float = Field(300, gt=0, description="The most seconds a snippet may ask for.")
    max_processes: int = Field(
        MAX_PROCESSES, ge=1, description="Processes of one call at once (the interpreter included)."
    )
    cpu_s: int = Field(Limits.cpu_s, gt=0, description="CPU seconds a snippet may use (RLIMIT_CPU).")
    memory_mb: int = Field(Limits.memory_mb, gt=0, description="Address space of a snippet in MiB (RLIMIT_AS).")
    max_file_mb: int = Field(Limits.max_file_mb, gt=0, description="Largest file a snippet may write, in MiB.")


def _state(ctx: StartContext[CodeConfig]) -> CodeState:
    config = ctx.config
    return CodeState(
        RunSettings.from_config(config, ctx.data_dir),
        Limits(memory_mb=config.memory_mb, cpu_s=config.cpu_s, max_file_mb=config.max_file_mb),
    )


plugin = Plugin("code", state=_state, config=CodeConfig)


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
