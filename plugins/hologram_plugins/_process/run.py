"""Running a command for a tool call: shared by `shell_run` and `code_run`.

Both cap the time and the number of processes, stream output as `tool_output` events and report a non-zero
exit, a timeout, a cancel or the process limit — and what was killed — as a readable result, not as a
failed call. Both tools declare ``needs_approval`` in their manifests, so the kernel has approved every call
that reaches here (hologram/agent/approvals.py); the plugins hold no policy of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, ToolContext
from hologram_plugins._process.runner import run_process
from hologram_plugins._process.tree import Rlimit
from hologram_plugins.files.workspace import workspace_root

MAX_OUTPUT_BYTES = 64 * 1024


class ProcessConfig(BaseModel):
    """What the shell and code plugins' ``[plugins.NAME]`` share; each subclass sets its own defaults."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    workspace: str = Field(
        "../../workspace",
        min_length=1,
        description="The folder commands run in, relative to the plugin's data dir (shared with files).",
    )
    timeout_s: float = Field(60, gt=0, description="Seconds a call may run when it does not ask for a time.")
    max_timeout_s: float = Field(600, gt=0, description="The most seconds a call may ask for.")
    max_processes: int = Field(
        256, ge=1, description="Processes of one call at once; more stops the call and kills them all."
    )
    max_output_bytes: int = Field(MAX_OUTPUT_BYTES, gt=0, description="Output kept of a call, stdout and stderr.")


@dataclass(frozen=True)
class RunSettings:
    """Where and how long an approved command may run, from the plugin's config over its defaults."""

    workspace: Path
    timeout_s: float
    max_timeout_s: float
    max_processes: int
    max_output_bytes: int = MAX_OUTPUT_BYTES

    @classmethod
    def from_config(cls, config: ProcessConfig, data_dir: str) -> RunSettings:
        """The settings of this start, from the config the SDK validated (``Plugin(config=...)``)."""
        return cls(
            workspace=workspace_root(config.workspace, data_dir),
            timeout_s=config.timeout_s,
            max_timeout_s=config.max_timeout_s,
            max_processes=config.max_processes,
            max_output_bytes=config.max_output_bytes,
        )


async def run_command(
    plugin: Plugin,
    tool: str,
    ctx: ToolContext,
    arguments: dict[str, Any],
    argv: Sequence[str],
    *,
    settings: RunSettings,
    env: dict[str, str],
    rlimits: Sequence[Rlimit] = (),
) -> dict[str, Any]:
    limit = min(float(arguments.get("timeout_s") or settings.timeout_s), settings.max_timeout_s)

    async def stream(name: str, text: str) -> None:
        event = {"type": "tool_output", "tool": tool, "call_id": ctx.call_id, "session_id": ctx.session_id}
        await plugin.publish({**event, "stream": name, "text": text})

    result = await run_process(
        argv,
        cwd=settings.workspace,
        timeout_s=limit,
        max_output_bytes=settings.max_output_bytes,
        max_processes=settings.max_processes,
        on_chunk=stream,
        env=env,
        rlimits=rlimits,
    )
    return {"content": result.summary(settings.max_output_bytes, limit)}
