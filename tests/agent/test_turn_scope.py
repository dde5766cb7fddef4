"""A turn started for another (a sub-agent, agent/scope.py) through the turn API: ``tools`` narrows what it is
offered and may call, ``max_steps`` lowers the step limit, ``parent`` holds it to the parent turn's tools and ends
it with the parent's turn. A real `TurnService` and agent on the strict mock, a real SQLite store.

Mutation checks (done): the hub's cancel of the children at the end of a turn removed turns
test_a_child_ends_with_its_parents_turn red (the child runs on); ``Restriction.refusal`` ignoring ``parent``
turns test_a_child_never_exceeds_its_parents_tools red (b offered to the child); the turn's ``ctx.parent`` not set
from its scope turns test_a_childs_plugin_calls_carry_its_parent red (the child's call sent without it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import KernelTool, ToolInvocation, ToolRegistry
from hologram.agent.service import TurnService
from hologram.agent.turn import CANCELLED
from hologram.rpc import RpcError
from hologram.tools.outcome import ToolOutcome
from mock_llm import MockLLM
from tests.kit.loop import run

from .helpers import OBJ, calls, make_agent
from .test_sessions_append import wait_idle


def echo(name: str) -> KernelTool:
    async def handler(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        return f"{name}:{arguments['x']}"

    return KernelTool(name, f"echo ({name})", handler, OBJ, parallel_safe=True)


def offered(request: Any) -> list[str]:
    return sorted(t["function"]["name"] for t in request.body.get("tools") or [])


def results(service: TurnService, sid: str) -> dict[str, str]:
    return {str(e.call_id): e.data["content"] for e in service.agent.store.events(sid) if e.kind == "tool_result"}


def test_tools_and_max_steps_narrow_the_turn(tmp_path: Path, mock_llm: MockLLM) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm, tools=[echo("a"), echo("b")], max_steps=8))
    mock_llm.script(
        [
            {"tool_calls": calls(("1", "b", '{"x": 1}'), ("3", "a", '{"x": 3}'))},
            {"content": "last", "tool_calls": calls(("2", "a", '{"x": 2}'))},
        ]
    )

    async def go() -> dict[str, str]:
        try:
            started = await service.start(None, {"text": "go", "tools": ["a"], "max_steps": 2}, channel="agents")
            await wait_idle(service, started["session"])
            return results(service, started["session"])
        finally:
            await service.aclose()

    got = run(go())
    assert [offered(r) for r in mock_llm.requests] == [["a"], ["a"]]
    assert got["1"] == "denied: b is not among the tools this turn was given (a)"
    assert got["3"] == "a:3"
    assert got["2"] == "not run: the step limit of 2 LLM calls was reached"
    assert mock_llm.requests[1].body["tool_choice"] == "none"
    assert mock_llm.rejections == []


def test_a_parent_must_be_running(tmp_path: Path, mock_llm: MockLLM) -> None:
    service = TurnService(make_agent(tmp_path, mock_llm))

    async def go() -> None:
        try:
            with pytest.raises(RpcError, match="parent: no turn is running in session 'nope'"):
                await service.start(None, {"text": "go", "parent": "nope"}, channel="agents")
            assert service.agent.store.list_sessions() == []  # refused before a session was made
        finally:
            await service.aclose()

    run(go())


class Family:
    """A parent turn whose ``spawn`` tool starts a child turn through ``kernel.turns`` (as the agents plugin does)
    and returns once the child sits in its ``block`` tool, which waits until it is cancelled."""

    def __init__(self, tmp_path: Path, mock: MockLLM) -> None:
        self.child: dict[str, Any] = {}
        self.blocked = asyncio.Event()
        self.child_offered: list[str] = []
        self.service = TurnService(
            make_agent(tmp_path, mock, tools=[echo("a"), echo("b"), self.spawn_tool(), self.block_tool()])
        )

    def spawn_tool(self) -> KernelTool:
        async def spawn(arguments: dict[str, Any], inv: ToolInvocation) -> str:
            start = self.service.facility_methods()["start"]
            self.child = await start("agents", text="child", parent=inv.session_id, watch=False)
            await self.blocked.wait()
            return "spawned"

        return KernelTool("spawn", "start a child", spawn, OBJ)

    def block_tool(self) -> KernelTool:
        async def block(arguments: dict[str, Any], inv: ToolInvocation) -> str:
            self.blocked.set()
            await asyncio.Event().wait()
            return "never"

        return KernelTool("block", "wait forever", block, OBJ)


def test_a_child_ends_with_its_parents_turn(tmp_path: Path, mock_llm: MockLLM) -> None:
    family = Family(tmp_path, mock_llm)
    service = family.service
    mock_llm.script(
        [
            {"tool_calls": calls(("p1", "spawn", '{"x": 1}'))},  # the parent
            {"tool_calls": calls(("c1", "block", '{"x": 1}'))},  # the child
            {"content": "parent done"},  # the parent, while its child still blocks
        ]
    )

    async def go() -> tuple[dict[str, str], dict[str, str]]:
        try:
            started = await service.start(None, {"text": "go"}, channel="cli")
            await wait_idle(service, started["session"])
            child = str(family.child["session"])
            await wait_idle(service, child)  # ends only because the parent's turn ended
            return results(service, started["session"]), results(service, child)
        finally:
            await service.aclose()

    parent, child = run(go())
    assert parent["p1"] == "spawned"
    assert child["c1"] == CANCELLED
    assert service.agent.running == {}


def test_a_child_never_exceeds_its_parents_tools(tmp_path: Path, mock_llm: MockLLM) -> None:
    """The parent may use a, spawn and block (its own subset); the child, given no subset, is offered only those."""
    family = Family(tmp_path, mock_llm)
    service = family.service
    mock_llm.script(
        [
            {"tool_calls": calls(("p1", "spawn", '{"x": 1}'))},
            {"tool_calls": calls(("c1", "b", '{"x": 1}'), ("c2", "block", '{"x": 1}'))},
            {"content": "parent done"},
        ]
    )

    async def go() -> dict[str, str]:
        try:
            started = await service.start(None, {"text": "go", "tools": ["a", "spawn", "block"]}, channel="cli")
            await wait_idle(service, started["session"])
            child = str(family.child["session"])
            await wait_idle(service, child)
            return results(service, child)
        finally:
            await service.aclose()

    child = run(go())
    assert offered(mock_llm.requests[1]) == ["a", "block", "spawn"]
    assert child["c1"].startswith("denied: b is not among the tools this turn was given")


def test_a_childs_plugin_calls_carry_its_parent(tmp_path: Path, mock_llm: MockLLM) -> None:
    """Each plugin tool call of a child's turn is sent with the session it works for (``tool/invoke`` ``parent``,
    `Supervisor.invoke_tool`); the parent's own calls without one. The agents plugin refuses a child's delegation on
    it, whatever order it reads the child's start and calls in."""
    sent: list[tuple[str, str | None]] = []

    async def invoke_plugin(plugin: str, tool: str, arguments: dict[str, Any], **kw: Any) -> ToolOutcome:
        sent.append((kw["session_id"], kw.get("parent")))
        return ToolOutcome("done")

    family = Family(tmp_path, mock_llm)
    service = family.service
    service.agent.tools = ToolRegistry(lambda: [{"name": "p_tool", "plugin": "p", "parameters": OBJ}])
    for tool in (echo("a"), family.spawn_tool(), family.block_tool()):
        service.agent.tools.add_kernel_tool(tool)
    service.agent.executor.invoke_plugin = invoke_plugin
    mock_llm.script(
        [
            {"tool_calls": calls(("p1", "p_tool", '{"x": 1}'), ("p2", "spawn", '{"x": 1}'))},  # the parent
            {"tool_calls": calls(("c1", "p_tool", '{"x": 2}'), ("c2", "block", '{"x": 1}'))},  # the child
            {"content": "parent done"},
        ]
    )

    async def go() -> str:
        try:
            started = await service.start(None, {"text": "go"}, channel="cli")
            await wait_idle(service, started["session"])
            child = str(family.child["session"])
            await wait_idle(service, child)
            return str(started["session"])
        finally:
            await service.aclose()

    parent = run(go())
    assert sent == [(parent, None), (str(family.child["session"]), parent)]
    assert mock_llm.rejections == []
