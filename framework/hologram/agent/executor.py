"""Running the tool calls of one model response: checks, stage hooks, concurrency, results in call order.

For each call, in call order: unknown tool or invalid arguments → an error result at once; otherwise
``before_toolcall`` (deny, rewrite — re-validated —, or answer in the tool's place). The calls left run
**concurrently** when every one of their tools is ``parallel_safe``, else **serially**. Either way results
are finalised in call order: ``after_toolcall``, then ``record`` (which persists the result). Each path
records its own results — the concurrent path after awaiting each call's task in order — so a result is
written exactly once, in order, whichever path ran (tests/agent/test_executor.py checks both).

A plugin that dies mid-call costs that call an error result naming the plugin; a cancelled batch leaves
the unrecorded calls to the turn loop, which closes them with a synthetic result.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from hologram.agent.tools import Tool, ToolInvocation, ToolSet
from hologram.llm import ToolCall
from hologram.rpc import ConnectionClosed, RequestTimeout, RpcError
from hologram.stages import StageContext, StageDispatcher

PluginInvoke = Callable[..., Awaitable[dict[str, Any]]]  # Supervisor.invoke_tool's signature
Record = Callable[[ToolCall, "Outcome"], None]
Notify = Callable[[dict[str, Any]], None]


@dataclass
class Outcome:
    """The result of one call as the model will see it; ``status`` says how it came about."""

    content: str
    is_error: bool = False
    status: str = "ok"  # ok | error | denied | answered | invalid | unknown | skipped
    by: str | None = None


@dataclass
class BatchReport:
    outcomes: list[Outcome] = field(default_factory=list)
    concurrent: bool = False

    @property
    def all_denied(self) -> bool:
        return bool(self.outcomes) and all(o.status == "denied" for o in self.outcomes)


@dataclass
class _Prepared:
    call: ToolCall
    tool: Tool | None
    ctx: StageContext
    arguments: dict[str, Any] = field(default_factory=dict)
    outcome: Outcome | None = None


class Executor:
    def __init__(
        self,
        stages: StageDispatcher,
        invoke_plugin: PluginInvoke | None,
        *,
        timeout_s: float = 120.0,
    ) -> None:
        self.stages = stages
        self.invoke_plugin = invoke_plugin
        self.timeout_s = timeout_s

    async def run_batch(
        self, calls: tuple[ToolCall, ...], tools: ToolSet, ctx: StageContext, record: Record, notify: Notify
    ) -> BatchReport:
        prepared = [await self._prepare(call, tools, ctx) for call in calls]
        runnable = [p for p in prepared if p.outcome is None]
        concurrent = len(runnable) > 1 and all(p.tool is not None and p.tool.parallel_safe for p in runnable)
        report = BatchReport(concurrent=concurrent)
        for p in runnable:
            notify({"type": "tool_call", "id": p.call.id, "name": p.call.name, "arguments": p.arguments})
        if concurrent:
            tasks = {id(p): asyncio.ensure_future(self._invoke(p, ctx)) for p in runnable}
            try:
                for p in prepared:
                    if p.outcome is None:
                        p.outcome = await self._after(p, await tasks[id(p)])
                    record(p.call, p.outcome)  # the concurrent path's record: one per call, in call order
                    report.outcomes.append(p.outcome)
            finally:
                for task in tasks.values():
                    task.cancel()
        else:
            for p in prepared:
                if p.outcome is None:
                    p.outcome = await self._after(p, await self._invoke(p, ctx))
                record(p.call, p.outcome)  # the serial path's record
                report.outcomes.append(p.outcome)
        return report

    async def _prepare(self, call: ToolCall, tools: ToolSet, turn: StageContext) -> _Prepared:
        tool = tools.get(call.name)
        ctx = turn.for_call({"id": call.id, "name": call.name, "plugin": tool.plugin if tool else None})
        p = _Prepared(call, tool, ctx)
        if tool is None:
            known = ", ".join(sorted(tools.tools)) or "none"
            p.outcome = Outcome(f"error: there is no tool named {call.name!r} (tools: {known})", True, "unknown")
            return p
        arguments, problem = tools.parse(tool, call.arguments)
        if arguments is None:
            p.outcome = Outcome(problem or "error: invalid arguments", True, "invalid")
            return p
        ctx.tool_call = {**(ctx.tool_call or {}), "arguments": arguments}
        if await self.stages.run("before_toolcall", ctx):
            if ctx.denied is not None:
                p.outcome = Outcome(ctx.denied, True, "denied")
            else:
                p.outcome = Outcome(str(ctx.respond), False, "answered", ctx.responded_by)
            return p
        rewritten = dict((ctx.tool_call or {}).get("arguments") or {})
        if rewritten != arguments:
            problem = tools.check(tool, rewritten)
            if problem:
                p.outcome = Outcome(f"{problem} (after a before_toolcall hook rewrote them)", True, "invalid")
                return p
        p.arguments = rewritten
        return p

    async def _invoke(self, p: _Prepared, turn: StageContext) -> Outcome:
        tool = p.tool
        assert tool is not None
        started = time.monotonic()
        try:
            if tool.kernel_handler is not None:
                invocation = ToolInvocation(p.call.id, turn.session_id, turn.turn_id)
                value = await _within(tool.kernel_handler(p.arguments, invocation), self.timeout_s)
            elif self.invoke_plugin is None:
                return Outcome(f"error: {tool.name} cannot run: no plugin host", True, "error")
            else:
                value = await self.invoke_plugin(
                    tool.plugin,
                    tool.name,
                    p.arguments,
                    call_id=p.call.id,
                    session_id=turn.session_id,
                    timeout=self.timeout_s,
                )
        except (asyncio.TimeoutError, RequestTimeout):
            return Outcome(f"error: {tool.name} did not answer within {self.timeout_s:g} s", True, "error")
        except ConnectionClosed:
            return Outcome(
                f"error: plugin {tool.plugin} stopped while running {tool.name} (it crashed or was restarted); "
                "the call's effect is unknown",
                True,
                "error",
            )
        except RpcError as exc:
            return Outcome(f"error: {tool.name} failed: {exc.message}", True, "error")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a kernel tool's bug costs one error result, not the turn
            return Outcome(f"error: {tool.name} failed: {type(exc).__name__}: {exc}", True, "error")
        outcome = _to_outcome(value)
        outcome.by = f"{time.monotonic() - started:.3f}s"
        return outcome

    async def _after(self, p: _Prepared, outcome: Outcome) -> Outcome:
        p.ctx.result = {"content": outcome.content, "is_error": outcome.is_error}
        await self.stages.run("after_toolcall", p.ctx)
        result = p.ctx.result or {}
        outcome.content = str(result.get("content", outcome.content))
        outcome.is_error = bool(result.get("is_error", outcome.is_error))
        return outcome


async def _within(awaitable: Awaitable[Any], timeout_s: float) -> Any:
    """``asyncio.wait_for`` without its extra task where Python has ``asyncio.timeout`` (3.11+): a kernel
    tool that answers at once then costs no task switch (tools/bench/turn.py)."""
    timeout = getattr(asyncio, "timeout", None)
    if timeout is None:  # Python 3.10
        return await asyncio.wait_for(awaitable, timeout_s)
    async with timeout(timeout_s):
        return await awaitable


def _to_outcome(value: Any) -> Outcome:
    if isinstance(value, dict) and "content" in value:
        is_error = bool(value.get("is_error", False))
        return Outcome(str(value["content"]), is_error, "error" if is_error else "ok")
    if isinstance(value, str):
        return Outcome(value)
    return Outcome(json.dumps(value, ensure_ascii=False, default=str))
