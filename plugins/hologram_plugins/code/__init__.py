"""code: run a Python snippet in a child interpreter with time, CPU, memory and output limits.

The child is `sys.executable -I -c CODE` (isolated mode: no user site-packages, no PYTHON* variables, the
workspace not on sys.path) started in the workspace, under the same process guardian as shell_run (every
process it starts dies with the call; at most `max_processes` at once). Running code is as powerful as
running a shell command, so code_run goes through the same approval policy as shell_run (policy.py),
default `ask`.
"""

from __future__ import annotations

import sys
from typing import Any

from hologram.sdk import Plugin, StartContext, ToolContext
from hologram_plugins.code.limits import Limits
from hologram_plugins.shell.approved import RunSettings, run_approved
from hologram_plugins.shell.policy import Approvals, Policy, ask_policy, call_from_context
from hologram_plugins.shell.runner import child_env

plugin = Plugin("code")
TOOLS = frozenset({"code_run"})
MAX_PROCESSES = 64  # per call, the interpreter included: a snippet rarely needs more, a fork loop gets stopped


class State:
    run: RunSettings
    approvals = Approvals()
    limits = Limits()


@plugin.on_start
def _start(ctx: StartContext) -> None:
    config = ctx.config
    policy = Policy.from_config({k: v for k, v in config.items() if k != "allow"})
    State.run = RunSettings.from_config(
        config, ctx.data_dir, policy=policy, timeout_s=30.0, max_timeout_s=300.0, max_processes=MAX_PROCESSES
    )
    State.limits = Limits(
        memory_mb=int(config.get("memory_mb", Limits.memory_mb)),
        cpu_s=int(config.get("cpu_s", Limits.cpu_s)),
        max_file_mb=int(config.get("max_file_mb", Limits.max_file_mb)),
    )


@plugin.stage("before_toolcall")
async def before_toolcall(context: dict[str, Any]) -> dict[str, Any] | None:
    call = call_from_context(context)
    if call is None or call.tool not in TOOLS:
        return None
    code = call.arguments.get("code")
    summary = f"Run Python code in {State.run.workspace}:\n{code}"
    reason = await ask_policy(plugin, State.run.policy, State.approvals, call, summary, None)
    return None if reason is None else {"deny": reason}


@plugin.tool("code_run")
async def code_run(ctx: ToolContext, code: str, timeout_s: float | None = None) -> dict[str, Any]:
    return await run_approved(
        plugin,
        "code_run",
        ctx,
        ctx.arguments,  # as approved (explicit nulls included); timeout_s is read from here
        [sys.executable, "-I", "-c", code],
        settings=State.run,
        approvals=State.approvals,
        env=child_env({"PYTHONIOENCODING": "utf-8"}),
        rlimits=State.limits.rlimits(),
    )
