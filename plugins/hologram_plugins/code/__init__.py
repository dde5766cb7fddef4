"""code: run a Python snippet in a child interpreter with time, CPU, memory and output limits.

The child is `sys.executable -I -c CODE` (isolated mode: no user site-packages, no PYTHON* variables, the
workspace not on sys.path) started in the workspace. Running code is as powerful as running a shell command,
so code_run goes through the same approval policy as shell_run (policy.py), default `ask`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hologram.sdk import Plugin, StartContext, ToolContext
from hologram_plugins.code.limits import Limits
from hologram_plugins.files.workspace import workspace_root
from hologram_plugins.shell.approved import run_approved
from hologram_plugins.shell.policy import Approvals, Policy, ask_policy, call_from_context
from hologram_plugins.shell.runner import child_env

plugin = Plugin("code")
TOOLS = frozenset({"code_run"})


class State:
    workspace: Path
    policy = Policy()
    approvals = Approvals()
    limits = Limits()
    timeout_s = 30.0
    max_timeout_s = 300.0
    max_output_bytes = 64 * 1024


@plugin.on_start
def _start(ctx: StartContext) -> None:
    config = ctx.config
    State.workspace = workspace_root(config, ctx.data_dir)
    State.policy = Policy.from_config({k: v for k, v in config.items() if k != "allow"})
    State.limits = Limits(
        memory_mb=int(config.get("memory_mb", Limits.memory_mb)),
        cpu_s=int(config.get("cpu_s", Limits.cpu_s)),
        max_file_mb=int(config.get("max_file_mb", Limits.max_file_mb)),
    )
    State.timeout_s = float(config.get("timeout_s", State.timeout_s))
    State.max_timeout_s = float(config.get("max_timeout_s", State.max_timeout_s))
    State.max_output_bytes = int(config.get("max_output_bytes", State.max_output_bytes))


@plugin.stage("before_toolcall")
async def before_toolcall(context: dict[str, Any]) -> dict[str, Any] | None:
    call = call_from_context(context)
    if call is None or call.tool not in TOOLS:
        return None
    code = call.arguments.get("code")
    summary = f"Run Python code in {State.workspace}:\n{code}"
    reason = await ask_policy(plugin, State.policy, State.approvals, call, summary, None)
    return None if reason is None else {"deny": reason}


@plugin.tool("code_run")
async def code_run(ctx: ToolContext, code: str, timeout_s: float | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"code": code}
    if timeout_s is not None:
        arguments["timeout_s"] = timeout_s
    return await run_approved(
        plugin,
        "code_run",
        ctx,
        arguments,
        [sys.executable, "-I", "-c", code],
        policy=State.policy,
        approvals=State.approvals,
        workspace=State.workspace,
        timeout_s=State.timeout_s,
        max_timeout_s=State.max_timeout_s,
        max_output_bytes=State.max_output_bytes,
        env=child_env({"PYTHONIOENCODING": "utf-8"}),
        preexec=State.limits.preexec(),
    )
