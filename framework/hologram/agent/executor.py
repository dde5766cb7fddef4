"""Running the tool calls of one model response: checks, stage hooks, concurrency, results in call order.

For each call, in call order: unknown tool or invalid arguments → an error result at once; otherwise
``before_toolcall`` (deny, rewrite — re-validated —, or answer in the tool's place). The calls left run
**concurrently** when every one of their tools is ``parallel_safe``, else **serially**. Either way results
are finalised in call order: ``after_toolcall``, then ``record`` (which persists the result). Each path
records its own results — the concurrent path after awaiting each call's task in order — so a result is
written exactly once, in order, whichever path ran (tests/agent/test_executor.py checks both).

A plugin that dies mid-call costs that call an error result naming the plugin; a cancelled batch leaves
the unrecorded calls to the turn loop, which closes them with a synthetic result.

Abandoning a plugin call — the turn is cancelled, or ``timeout_s`` passes — sends the plugin ``$/cancel``
(``Connection.request``), so it stops the call (shell and code kill the call's process tree). After a
timeout the plugin gets ``CANCEL_GRACE_S`` to answer with what it stopped; that answer goes to the model
behind the timeout text, so a model that would retry knows what was killed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hologram.agent.tools import Tool, ToolInvocation, ToolSet
from hologram.api import turn as api
from hologram.llm import ToolCall
from hologram.rpc import ConnectionClosed, RequestTimeout, RpcError
from hologram.stages import StageContext, StageDispatcher
from hologram.stages.dispatch import BatchMemo
from hologram.tools.outcome import ToolImage, ToolOutcome

if TYPE_CHECKING:
    from hologram.agent.approvals import Approver, Requirement

PluginInvoke = Callable[..., Awaitable[ToolOutcome]]  # Supervisor.invoke_tool's signature
CANCEL_GRACE_S = 2.0  # after a plugin call's timeout: how long its final "stopped: …" answer is awaited
Record = Callable[[ToolCall, "Outcome"], None]
Notify = Callable[[Any], None]  # receives `hologram.api.turn` events


@dataclass(slots=True)
class Outcome:
    """The result of one call as the model will see it; ``status`` says how it came about."""

    content: str
    is_error: bool = False
    status: str = "ok"  # ok | error | denied | answered | invalid | unknown | skipped
    by: str | None = None
    approval: dict[str, Any] | None = None  # the approval decision, stored with the result
    images: tuple[ToolImage, ...] = ()  # for the clients only: the turn stores them (sessions/media.py)


@dataclass
class BatchReport:
    outcomes: list[Outcome] = field(default_factory=list)
    concurrent: bool = False

    @property
    def all_denied(self) -> bool:
        return bool(self.outcomes) and all(o.status == "denied" for o in self.outcomes)


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: Tool | None
    ctx: StageContext
    batch: BatchMemo
    arguments: dict[str, Any] = field(default_factory=dict)
    outcome: Outcome | None = None
    approval: dict[str, Any] | None = None


class Executor:
    def __init__(
        self,
        stages: StageDispatcher,
        invoke_plugin: PluginInvoke | None,
        *,
        timeout_s: float = 120.0,
        approver: Approver | None = None,
    ) -> None:
        self.stages = stages
        self.invoke_plugin = invoke_plugin
        self.timeout_s = timeout_s
        self.approver = approver

    async def run_batch(
        self,
        calls: tuple[ToolCall, ...],
        tools: ToolSet,
        ctx: StageContext,
        record: Record,
        notify: Notify,
        refused: Mapping[str, str] | None = None,
    ) -> BatchReport:
        """Run one response's calls. ``refused``: call id → the result of a call the turn decided not to run (the
        loop guard, the call limit: agent/loop_guard.py), recorded in its place without a hook or approval."""
        batch: BatchMemo = {}  # which hooks apply, asked of pluggy once per batch (stages/dispatch.py)
        prepared = []
        for call in calls:  # in call order: hooks, then the call is announced
            if refused and call.id in refused:
                prepared.append(_Prepared(call, None, ctx, batch, outcome=Outcome(refused[call.id], True, "skipped")))
                continue
            p = await self._prepare(call, tools, ctx, batch)
            if p.outcome is None:
                assert p.tool is not None
                notify(
                    api.ToolCallStarted(
                        session=ctx.session_id,
                        turn=ctx.turn_id,
                        call_id=call.id,
                        tool=call.name,
                        plugin=p.tool.plugin,
                        arguments=p.arguments,
                    )
                )
            prepared.append(p)
        await self._approve_all([p for p in prepared if p.outcome is None], ctx)
        runnable = [p for p in prepared if p.outcome is None]
        concurrent = len(runnable) > 1 and all(p.tool is not None and p.tool.parallel_safe for p in runnable)
        report = BatchReport(concurrent=concurrent)
        if concurrent:
            await self._run_concurrently(prepared, ctx, record, report)
        else:
            for p in prepared:
                if p.outcome is None:
                    p.outcome = await self._after(p, await self._invoke(p, ctx, timed=True))
                record(p.call, p.outcome)  # the serial path's record
                report.outcomes.append(p.outcome)
        return report

    async def _run_concurrently(
        self, prepared: list[_Prepared], ctx: StageContext, record: Record, report: BatchReport
    ) -> None:
        """Every runnable call in a task of its own, started together; results taken in call order.

        One deadline for the batch's kernel tools instead of a timeout per call (the calls start together
        and share ``timeout_s``, so it is the same moment; an ``asyncio.timeout`` per call was ~10% of a
        50-call turn): at the deadline the kernel calls still running are cancelled and get the timeout
        result. Plugin calls are left to their own RPC timeout (it fires at the same moment), which also
        gives the plugin its grace to say what it stopped; cancelling them here would skip that."""
        loop = asyncio.get_running_loop()
        tasks = [
            None if p.outcome is not None else loop.create_task(self._invoke(p, ctx, timed=False)) for p in prepared
        ]
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            for p, task in zip(prepared, tasks, strict=True):
                if task is not None and p.tool is not None and p.tool.kernel_handler is not None:
                    task.cancel()

        deadline = loop.call_later(self.timeout_s, expire)
        try:
            for p, task in zip(prepared, tasks, strict=True):
                if task is not None:
                    try:
                        outcome = await task
                    except asyncio.CancelledError:
                        if not (expired and task.cancelled()):
                            raise  # the batch itself was cancelled
                        assert p.tool is not None
                        outcome = self._timed_out(p.tool)
                    p.outcome = await self._after(p, outcome)
                assert p.outcome is not None
                record(p.call, p.outcome)  # the concurrent path's record: one per call, in call order
                report.outcomes.append(p.outcome)
        finally:
            deadline.cancel()
            for task in tasks:
                if task is not None:
                    task.cancel()

    def _timed_out(self, tool: Tool, answer: ToolOutcome | None = None) -> Outcome:
        """The timeout result; with the plugin's answer to the cancel (what it stopped) when one came."""
        text = f"error: {tool.name} did not answer within {self.timeout_s:g} s"
        if answer is not None:
            text += f" and was stopped; it reported:\n{answer.content}"
        return Outcome(text, True, "error")

    async def _prepare(self, call: ToolCall, tools: ToolSet, turn: StageContext, batch: BatchMemo) -> _Prepared:
        tool = tools.get(call.name)
        ctx = turn.for_call({"id": call.id, "name": call.name, "plugin": tool.plugin if tool else None})
        p = _Prepared(call, tool, ctx, batch)
        if tool is None and call.name in tools.excluded:  # outside the turn's tool policy: before any hook or ask
            p.outcome = Outcome(f"denied: {tools.excluded[call.name]}", True, "denied")
            return p
        if tool is None:
            known = ", ".join(sorted(tools.tools)) or "none"
            p.outcome = Outcome(f"error: there is no tool named {call.name!r} (tools: {known})", True, "unknown")
            return p
        arguments, problem = tools.parse(tool, call.arguments)
        if arguments is None:
            p.outcome = Outcome(problem or "error: invalid arguments", True, "invalid")
            return p
        asked = ctx.tool_call = {**(ctx.tool_call or {}), "arguments": arguments}
        if await self.stages.run("before_toolcall", ctx, batch=batch):
            if ctx.denied is not None:
                p.outcome = Outcome(ctx.denied, True, "denied")
            else:
                p.outcome = Outcome(str(ctx.respond), False, "answered", ctx.responded_by)
            return p
        if ctx.tool_call is asked:  # no hook rewrote the arguments (a rewrite replaces ctx.tool_call)
            p.arguments = arguments
            return p
        rewritten = dict((ctx.tool_call or {}).get("arguments") or {})
        if rewritten != arguments:
            problem = tools.check(tool, rewritten)
            if problem:
                p.outcome = Outcome(f"{problem} (after a before_toolcall hook rewrote them)", True, "invalid")
                return p
        p.arguments = rewritten
        return p

    async def _approve_all(self, prepared: list[_Prepared], turn: StageContext) -> None:
        """The approval step of every call of the step at once: a person asked about three calls sees three
        requests together and answers them in any order, rather than one after another with the model's
        step stalled between. Only calls that need an answer are waited on (a step of fifty unguarded calls
        costs no task), and a cancel of the turn cancels every wait, so each request is resolved."""
        asked = [(p, r) for p in prepared if (r := self._requirement(p)) is not None]
        if len(asked) == 1:
            await self._approve(*asked[0], turn)
        elif asked:
            waits = {asyncio.ensure_future(self._approve(p, r, turn)) for p, r in asked}
            try:
                while waits:
                    done, waits = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    for wait in done:
                        wait.result()  # a failure of one wait is the step's, as it would be serially
            finally:
                for wait in waits:
                    wait.cancel()
                if waits:  # each cancelled wait resolves its request (approval.resolved) before the turn ends
                    await asyncio.wait(waits)

    def _requirement(self, p: _Prepared) -> Requirement | None:
        tool = p.tool
        if self.approver is None or tool is None or tool.kernel_handler is not None:
            return None
        return self.approver.requirement(
            tool.plugin, tool.name, registered=tool.needs_approval, subject=tool.approval_subject
        )

    async def _approve(self, p: _Prepared, requirement: Requirement, turn: StageContext) -> None:
        """The kernel's approval step (agent/approvals.py): a denied call gets its outcome here and never
        reaches the plugin; an approved one carries the decision to its stored result."""
        assert self.approver is not None and p.tool is not None
        decision = await self.approver.decide(
            requirement,
            session=turn.session_id,
            turn=turn.turn_id,
            call_id=p.call.id,
            tool=p.tool.name,
            plugin=p.tool.plugin,
            arguments=p.arguments,
        )
        p.approval = decision.record()
        if not decision.approved:
            why = f": {decision.reason}" if decision.reason else ""
            p.outcome = Outcome(f"denied: the call was not approved{why}", True, "denied", approval=p.approval)

    async def _invoke(self, p: _Prepared, turn: StageContext, *, timed: bool) -> Outcome:
        """Run one call. ``timed``: enforce ``timeout_s`` on a kernel tool here (the serial path; the
        concurrent path has one deadline for the batch). A plugin tool's timeout is the RPC request's."""
        tool = p.tool
        assert tool is not None
        try:
            if tool.kernel_handler is not None:
                pending = tool.kernel_handler(p.arguments, ToolInvocation(p.call.id, turn.session_id, turn.turn_id))
                result = ToolOutcome.of(await (_within(pending, self.timeout_s) if timed else pending))
            elif self.invoke_plugin is None:
                return Outcome(f"error: {tool.name} cannot run: no plugin host", True, "error")
            else:
                result = await self.invoke_plugin(
                    tool.plugin,
                    tool.name,
                    p.arguments,
                    call_id=p.call.id,
                    session_id=turn.session_id,
                    timeout=self.timeout_s,
                    grace=CANCEL_GRACE_S,
                    parent=turn.parent,
                )
        except RequestTimeout as exc:
            return self._timed_out(tool, exc.answer)
        except asyncio.TimeoutError:
            return self._timed_out(tool)
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
        return Outcome(result.content, result.is_error, "error" if result.is_error else "ok", images=result.images)

    async def _after(self, p: _Prepared, outcome: Outcome) -> Outcome:
        outcome.approval = p.approval
        p.ctx.result = {"content": outcome.content, "is_error": outcome.is_error}
        await self.stages.run("after_toolcall", p.ctx, batch=p.batch)
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
