"""shell: run a command with `bash -c` in the workspace, after approval, with a timeout and an output cap.

The shell is not a sandbox — a command can touch anything the user can — so the approval policy is the
security boundary (see policy.py), enforced twice: in this plugin's `before_toolcall` hook and again inside
`shell_run`. Output is streamed as `tool_output` events while the command runs; the call owns its
processes (runner.py): whatever it started is killed when it ends, however it ends.
"""

from __future__ import annotations

from typing import Any

from hologram.sdk import Plugin, StartContext, ToolContext
from hologram_plugins.shell.approved import RunSettings, run_approved
from hologram_plugins.shell.policy import Approvals, Policy, ask_policy, call_from_context
from hologram_plugins.shell.runner import child_env

plugin = Plugin("shell")
TOOLS = frozenset({"shell_run"})
MAX_PROCESSES = 256  # per call: a build (make -j, a test runner) forks far more than a snippet of Python


class State:
    run: RunSettings
    approvals = Approvals()


@plugin.on_start
def _start(ctx: StartContext) -> None:
    policy = Policy.from_config(ctx.config)
    State.run = RunSettings.from_config(
        ctx.config, ctx.data_dir, policy=policy, timeout_s=60.0, max_timeout_s=600.0, max_processes=MAX_PROCESSES
    )


@plugin.stage("before_toolcall")
async def before_toolcall(context: dict[str, Any]) -> dict[str, Any] | None:
    call = call_from_context(context)
    if call is None or call.tool not in TOOLS:
        return None
    command = call.arguments.get("command")
    command = command if isinstance(command, str) else None
    summary = f"Run a shell command in {State.run.workspace}:\n{command}"
    reason = await ask_policy(plugin, State.run.policy, State.approvals, call, summary, command)
    return None if reason is None else {"deny": reason}


@plugin.tool("shell_run")
async def shell_run(ctx: ToolContext, command: str, timeout_s: float | None = None) -> dict[str, Any]:
    return await run_approved(
        plugin,
        "shell_run",
        ctx,
        ctx.arguments,  # as approved (explicit nulls included); timeout_s is read from here
        ["bash", "-c", command],
        settings=State.run,
        approvals=State.approvals,
        env=child_env({"PWD": str(State.run.workspace)}),
    )
