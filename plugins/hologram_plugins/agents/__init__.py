"""agents: sub-agents — ``agent_delegate`` runs a task as a child turn and returns its answer as the tool's result.

The child is an ordinary turn the plugin starts through ``kernel.turns`` (the public turn API, docs/protocol.md §9)
in a fresh session, with ``tools`` (only those tools or plugins), ``max_steps`` and ``parent`` — the session of the
call. The kernel holds the child to its parent's tool policy and cancels it when the parent's turn ends
(hologram/agent/scope.py), so the guarantees do not rest on this plugin: a child never outlives its parent and a
chat channel limited to reading cannot delegate its way to a shell. The plugin watches the child (its events come
over the plugin's connection) and answers the call with the child's final answer, stop reason, steps and session
id. When the call itself is cancelled (the parent's Ctrl-C, a timeout) it cancels the child at once. While the
child runs, each of its tool calls and results is published as a line of the delegate call's ``tool_output``
(``→ web_fetch {"url": …}``, ``← web_fetch: …``), so the clients watching the parent see the sub-agent work.

The tool is ``parallel_safe``: several calls in one step run at once, each child in its own session. A child cannot
delegate again, so delegation never recurses: the kernel sends each call of a sub-agent's turn with its ``parent``
(``ToolContext.parent``, docs/protocol.md section 7), and a call that has one is refused. The call itself says it, so
the refusal holds whatever order start's answer and the child's calls are read in, and across a restart of this
plugin (a set of the sessions it had started did not: a child's call read before the delegating call resumed on
start's answer, a few loop passes after it was read, started a grandchild).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, RpcError, StartContext, ToolContext, tool_error

log = logging.getLogger("hologram_plugins.agents")
CLIENT = "agent_delegate"  # the child turn's `client`; its `partner` is the parent's session
MAX_TASK = 20_000  # characters: a task is a brief, not a document (the kernel's input limit is far higher)
EARLY_TURNS, EARLY_EVENTS = 200, 100  # events of a child that came before start's answer, kept until it does
PROGRESS_CHARS = 200  # of a child's call's arguments or result's first line, shown live under the delegate call


class AgentsConfig(BaseModel):
    """settings.toml's ``[plugins.agents]`` (its JSON Schema: manifests/agents.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(
        8, ge=1, le=1000, description="A sub-agent's LLM calls when the call does not say ([agent] max_steps caps it)."
    )
    tools: list[str] = Field(
        default_factory=list,
        description="The tools or plugins a sub-agent gets when the call does not say; empty: all its parent may use.",
    )


@dataclass
class Child:
    session: str = ""
    call_id: str = ""  # the agent_delegate call it answers, and the session of that call: its progress is shown there
    parent: str | None = None
    error: str = ""  # turn.error's message, when the child failed
    ended: asyncio.Future[dict[str, Any]] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass
class AgentsState:
    config: AgentsConfig
    children: dict[str, Child] = field(default_factory=dict)  # turn id → the child turn this plugin waits for
    early: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # events before start's answer


def _state(ctx: StartContext[AgentsConfig]) -> AgentsState:
    return AgentsState(ctx.config)


plugin = Plugin("agents", state=_state, config=AgentsConfig)


@plugin.on_turn_event
async def on_turn_event(event: dict[str, Any]) -> None:
    state = plugin.state
    turn = str(event.get("turn"))
    child = state.children.get(turn)
    if child is None:  # start's answer has not come back yet (events and answers share the connection)
        kept = state.early.setdefault(turn, [])
        if len(kept) < EARLY_EVENTS or event.get("type") in ("turn.ended", "turn.error"):
            kept.append(event)
        while len(state.early) > EARLY_TURNS:
            state.early.pop(next(iter(state.early)))
        return
    await _handle(child, event)


async def _handle(child: Child, event: dict[str, Any]) -> None:
    _apply(child, event)
    line = progress(event)
    if line is not None:  # the child's steps, live under the delegate call (as shell streams its output)
        await plugin.publish(
            {"type": "tool_output", "tool": CLIENT, "call_id": child.call_id, "session_id": child.parent,
             "stream": "stdout", "text": line}
        )  # fmt: skip


def _apply(child: Child, event: dict[str, Any]) -> None:
    kind = event.get("type")
    if kind == "turn.error":
        child.error = str(event.get("message") or "")
    elif kind == "turn.ended" and not child.ended.done():
        child.ended.set_result(event)


def progress(event: dict[str, Any]) -> str | None:
    """A line on what the child does, for the clients watching the parent: each call and its result's first line."""
    kind = event.get("type")
    if kind == "tool.call":
        arguments = json.dumps(event.get("arguments") or {}, ensure_ascii=False)
        return f"→ {event.get('tool')} {_short(arguments)}\n"
    if kind == "tool.result":
        first = str(event.get("content") or "").strip().split("\n", 1)[0]
        return f"← {event.get('tool')}: {_short(first)}\n"
    return None


def _short(text: str, limit: int = PROGRESS_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _subset(tools: list[str] | None) -> list[str] | None:
    """The child's tools: those named (never this tool: a child cannot delegate), or None for its parent's."""
    chosen = tools if tools is not None else (plugin.state.config.tools or None)
    if chosen is None:
        return None
    return sorted({t.strip() for t in chosen if t.strip() and t.strip() != CLIENT})


@plugin.tool("agent_delegate")
async def agent_delegate(
    task: str, ctx: ToolContext, tools: list[str] | None = None, max_steps: int | None = None
) -> Any:
    state = plugin.state
    if not task.strip():
        return tool_error("say what the sub-agent should do (task)")
    if len(task) > MAX_TASK:
        return tool_error(f"the task is {len(task):,} characters; at most {MAX_TASK:,}: brief it, or save it to a file")
    if ctx.session_id is None:
        return tool_error("agent_delegate runs within a turn (it has no session to work for)")
    if ctx.parent is not None:  # the call is a sub-agent's (the kernel says so with the call)
        return tool_error("a sub-agent cannot delegate further: do the task with your own tools")
    params: dict[str, Any] = {
        "text": task,
        "client": CLIENT,
        "partner": ctx.session_id[:128],
        "watch": True,
        "on_disconnect": "cancel",
        "parent": ctx.session_id,
        "max_steps": max_steps or state.config.max_steps,
    }
    subset = _subset(tools)
    if subset is not None:
        params["tools"] = subset
    turns = plugin.facility("kernel.turns")
    starting = asyncio.ensure_future(turns.call("start", **params))
    try:
        started = await asyncio.shield(starting)
    except RpcError as exc:  # the kernel refused (stopping, the parent's turn gone, a tool name too long)
        return tool_error(f"the sub-agent could not start: {exc.message}")
    except asyncio.CancelledError:  # cancelled while starting: the child, once it has an id, is cancelled too
        with contextlib.suppress(Exception):
            late = await starting
            await turns.call("cancel", session=str(late["session"]), turn=str(late["turn"]))
        raise
    session, turn = str(started["session"]), str(started["turn"])
    child = Child(session, ctx.call_id, ctx.session_id)
    try:
        while pending := state.early.pop(turn, None):  # what came first, in order; what comes meanwhile is kept too
            for event in pending:
                await _handle(child, event)
        state.children[turn] = child  # no await since the last pop: nothing slips between
        ended = await child.ended
    except asyncio.CancelledError:  # the parent's call was cancelled: so is the child, now (the kernel would too)
        with contextlib.suppress(Exception):
            await asyncio.shield(turns.call("cancel", session=session, turn=turn))
        raise
    finally:
        state.children.pop(turn, None)
    reason = str(ended.get("stop_reason") or "")
    answer = {
        "answer": str(ended.get("output") or ""),
        "session": session,
        "stop_reason": reason,
        "steps": ended.get("steps"),
    }
    if reason == "error":
        return tool_error(f"the sub-agent failed: {child.error or 'no answer'} (session {session})")
    if reason == "cancelled":
        return tool_error(f"the sub-agent's turn was cancelled (session {session})")
    return answer
