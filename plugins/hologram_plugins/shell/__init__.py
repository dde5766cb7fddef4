"""shell: run a command with `bash -c` in the workspace, with a timeout and an output cap.

The shell is not a sandbox — a command can touch anything the user can — so approval is the security
boundary. Its manifest declares ``needs_approval`` with ``command`` as the subject, and the kernel decides
before the call reaches this plugin (policy in settings.toml ``[approvals]``: ask / allow-list / allow /
deny). Output is streamed as `tool_output` events while the command runs; the call owns its processes
(`hologram_plugins._process`): whatever it started is killed when it ends, however it ends.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hologram.sdk import Plugin, StartContext, ToolContext
from hologram_plugins._process.run import ProcessConfig, RunSettings, run_command
from hologram_plugins._process.runner import child_env

MAX_PROCESSES = 256  # per call: a build (make -j, a test runner) forks far more than a snippet of Python


class ShellConfig(ProcessConfig):
    """settings.toml's ``[plugins.shell]``, checked at start (its JSON Schema: manifests/shell.config.schema.json)."""

    max_processes: int = Field(
        MAX_PROCESSES, ge=1, description="Processes of one call at once; more stops the call and kills them all."
    )


def _settings(ctx: StartContext[ShellConfig]) -> RunSettings:
    return RunSettings.from_config(ctx.config, ctx.data_dir)


plugin = Plugin("shell", state=_settings, config=ShellConfig)


@plugin.tool("shell_run")
async def shell_run(ctx: ToolContext, command: str, timeout_s: float | None = None) -> dict[str, Any]:
    return await run_command(
        plugin,
        "shell_run",
        ctx,
        ctx.arguments,  # explicit nulls included; timeout_s is read from here
        ["bash", "-c", command],
        settings=plugin.state,
        env=child_env({"PWD": str(plugin.state.workspace)}),
    )
