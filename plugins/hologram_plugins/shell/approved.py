"""Running a side-effecting command once its call is approved: shared by `shell_run` and `code_run`.

Both tools refuse a call whose approval the before_toolcall hook did not record (the second checkpoint:
a call that bypassed the stage is still refused), cap the time, stream output as `tool_output` events and
report a non-zero exit or a timeout as a readable result, not as a failed call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hologram.sdk import Plugin, ToolContext
from hologram_plugins.shell.policy import Approvals, Policy, refusal
from hologram_plugins.shell.runner import run_process


async def run_approved(
    plugin: Plugin,
    tool: str,
    ctx: ToolContext,
    arguments: dict[str, Any],
    argv: Sequence[str],
    *,
    policy: Policy,
    approvals: Approvals,
    workspace: Path,
    timeout_s: float,
    max_timeout_s: float,
    max_output_bytes: int,
    env: dict[str, str],
    preexec: Callable[[], None] | None = None,
) -> dict[str, Any]:
    refused = refusal(policy, approvals, ctx, arguments)
    if refused is not None:
        return {"content": f"error: {tool} {refused}", "is_error": True}
    limit = min(float(arguments.get("timeout_s") or timeout_s), max_timeout_s)

    async def stream(name: str, text: str) -> None:
        event = {"type": "tool_output", "tool": tool, "call_id": ctx.call_id, "session_id": ctx.session_id}
        await plugin.publish({**event, "stream": name, "text": text})

    result = await run_process(
        argv,
        cwd=workspace,
        timeout_s=limit,
        max_output_bytes=max_output_bytes,
        on_chunk=stream,
        env=env,
        preexec=preexec,
    )
    return {"content": result.summary(max_output_bytes, limit)}
