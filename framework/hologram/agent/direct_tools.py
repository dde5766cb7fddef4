"""The graph's tools called by a client directly, outside a turn: turn API ``tools/list`` and ``tools/call``.

What `hologram mcp --tools` offers an MCP client (docs/channels.md, "MCP"): the tools the plugins serve, with
their schemas, and a call of one of them that takes the same path a model's call takes — the arguments checked
against the schema, the ``before_toolcall`` hooks (audit, deny, rewrite), the kernel's approval step, the
plugin, the ``after_toolcall`` hooks — without a model and without a session (nothing is stored).

Approval: such a caller cannot answer approval requests (there is no turn whose watchers could be asked), so a
call the user's policy would *ask* about is refused; what the policy allows (``mode = "allow"``, the
allow-list) runs, what it denies is denied. Kernel tools (``coldcontext_query``, ``tools_load`` …) belong to a
session's turn and are neither listed nor callable here.
"""

from __future__ import annotations

import base64
import itertools
from typing import TYPE_CHECKING, Any

from hologram.agent.approvals import Answer, ApprovalRequest, Approver
from hologram.agent.tools import KERNEL
from hologram.api.params import ToolCallParams, ToolsListParams
from hologram.api.turn import TOOLS_CALL, TOOLS_LIST
from hologram.config.settings import MediaSettings
from hologram.rpc import INVALID_PARAMS, ConnectionClosed, RequestTimeout, RpcError
from hologram.stages import StageContext
from hologram.tools.outcome import ToolImage

if TYPE_CHECKING:
    from hologram.agent.turn import Agent

NOBODY_TO_ASK = (
    "{tool} needs approval under your policy, and a direct call has nobody to ask: allow it in [approvals] "
    '(e.g. [approvals.tools.{tool}] mode = "allow"; docs/settings.md)'
)


def _parse(model: Any, method: str, params: Any) -> Any:
    try:
        return model.parse(method, params)
    except ValueError as exc:
        raise RpcError(INVALID_PARAMS, str(exc)) from None


async def _refuse(request: ApprovalRequest) -> Answer:
    return Answer(False, "kernel", NOBODY_TO_ASK.format(tool=request.tool), "deny")


class DirectTools:
    """``tools/list`` and ``tools/call`` over the agent's registry, stages, approver and plugins."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._ids = itertools.count(1)

    def _approver(self) -> Approver | None:
        """The kernel's policy as it is now (re-read after an "always"), asking nobody."""
        current = self.agent.executor.approver
        if current is None:
            return None
        return Approver(current.settings, current.declared, _refuse, legacy=current.legacy)

    async def list(self, params: Any, *, channel: str = "") -> dict[str, Any]:
        _parse(ToolsListParams, TOOLS_LIST, params)
        approver = self._approver()
        out = []
        restriction = self.agent.restriction(channel) if channel else None  # the caller's tool policy
        for tool in self.agent.tools.snapshot(None, restriction).tools.values():
            if tool.plugin == KERNEL:
                continue
            requirement = (
                approver.requirement(tool.plugin, tool.name, registered=tool.needs_approval) if approver else None
            )
            out.append(
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "plugin": tool.plugin,
                    "needs_approval": requirement is not None,
                }
            )
        return {"tools": out}

    async def call(self, params: Any, *, channel: str = "") -> dict[str, Any]:
        p = _parse(ToolCallParams, TOOLS_CALL, params)
        tools = self.agent.tools.snapshot(None, self.agent.restriction(channel) if channel else None)
        tool = tools.get(p.tool)
        if tool is None and p.tool in tools.excluded:  # the caller's channel may not use it: refused before anything
            return _result(f"denied: {tools.excluded[p.tool]}", "denied")
        if tool is None or tool.plugin == KERNEL:
            raise RpcError(INVALID_PARAMS, f"tools/call: tool: no tool named {p.tool!r} (tools/list lists them)")
        problem = tools.check(tool, dict(p.arguments))
        if problem:
            return _result(problem, "invalid")
        call_id = f"direct_{next(self._ids)}"
        ctx = StageContext(session_id="", turn_id="", channel=channel or "direct", client=channel)
        asked = {"id": call_id, "name": tool.name, "plugin": tool.plugin, "arguments": dict(p.arguments)}
        ctx.tool_call = asked
        stages = self.agent.executor.stages
        if await stages.run("before_toolcall", ctx):
            if ctx.denied is not None:
                return _result(ctx.denied, "denied")
            return _result(str(ctx.respond), "answered", is_error=False)
        arguments = dict((ctx.tool_call or asked).get("arguments") or {})
        if ctx.tool_call is not asked and (problem := tools.check(tool, arguments)):
            return _result(f"{problem} (after a before_toolcall hook rewrote them)", "invalid")
        approver = self._approver()
        if approver is not None:
            requirement = approver.requirement(
                tool.plugin, tool.name, registered=tool.needs_approval, subject=tool.approval_subject
            )
            if requirement is not None:
                decision = await approver.decide(
                    requirement, session="", turn="", call_id=call_id, tool=tool.name, plugin=tool.plugin,
                    arguments=arguments,
                )  # fmt: skip
                if not decision.approved:
                    return _result(f"denied: {decision.reason}", "denied")
        content, is_error, images = await self._invoke(tool.plugin, tool.name, arguments, call_id)
        ctx.result = {"content": content, "is_error": is_error}
        await stages.run("after_toolcall", ctx)
        after = ctx.result or {}
        is_error = bool(after.get("is_error", is_error))
        answer = _result(str(after.get("content", content)), "error" if is_error else "ok", is_error=is_error)
        if images:  # no session to keep them under: inline, each bounded as a turn's ([media] max_image_bytes)
            media = self.agent.media
            cap = media.max_image_bytes if media is not None else MediaSettings().max_image_bytes
            answer["images"], notes = _inline(images, cap)
            answer["content"] += "".join(f"\n[{note}]" for note in notes)
        return answer

    async def _invoke(
        self, plugin: str, tool: str, arguments: dict[str, Any], call_id: str
    ) -> tuple[str, bool, tuple[ToolImage, ...]]:
        invoke = self.agent.executor.invoke_plugin
        if invoke is None:
            return "error: this kernel runs no plugins", True, ()
        try:
            result = await invoke(
                plugin, tool, arguments, call_id=call_id, session_id=None, timeout=self.agent.executor.timeout_s
            )
        except RpcError as exc:
            return f"error: {tool} failed: {exc.message}", True, ()
        except (ConnectionClosed, RequestTimeout, ConnectionError) as exc:
            return f"error: {tool} failed: {type(exc).__name__}: {exc}", True, ()
        return result.content, result.is_error, result.images


def _result(content: str, status: str, *, is_error: bool = True) -> dict[str, Any]:
    return {"content": content, "is_error": is_error, "status": status}


def _inline(images: tuple[ToolImage, ...], cap: int) -> tuple[list[dict[str, str]], list[str]]:
    """A direct call's images as ``{mime, data}`` (base64), and why any was left out."""
    from hologram.sessions.media import looks_like

    out, notes = [], []
    for image in images:
        if len(image.data) > cap:
            notes.append(f"the {image.mime} image ({len(image.data):,} bytes) was left out: over {cap:,} bytes")
        elif not looks_like(image.mime, image.data):
            notes.append(f"the image was left out: its bytes are not {image.mime}")
        else:
            out.append({"mime": image.mime, "data": base64.b64encode(image.data).decode("ascii")})
    return out, notes
