"""A tool's answer is normalised once, where it enters the kernel (`ToolOutcome.of`), and used as is after.

Mutation checks (done): the executor normalising a plugin's result again (``ToolOutcome.of(await
self.invoke_plugin(...))``) turns `test_a_plugin_result_is_used_as_the_supervisor_normalised_it` red (a
ToolOutcome is neither the protocol's mapping nor a string, so it came out as JSON); dropping ``str()`` of
the content in `ToolOutcome.of` turns `test_what_a_tool_may_answer` red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hologram.agent import Agent, KernelTool, ToolInvocation, ToolRegistry
from hologram.llm import ChatRequest, ChatResult, ToolCall
from hologram.sessions import SessionStore
from hologram.stages import StageDispatcher
from hologram.tools.outcome import ToolOutcome


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"content": "text"}, ToolOutcome("text")),
        ({"content": "no", "is_error": True, "blob": {"ref": [0, 1]}}, ToolOutcome("no", True)),
        ({"content": 5, "is_error": 1}, ToolOutcome("5", True)),
        ("bare", ToolOutcome("bare")),
        ({"no": "content"}, ToolOutcome('{"no":"content"}')),
        ([1, "a"], ToolOutcome('[1,"a"]')),
        (None, ToolOutcome("null")),
    ],
)
def test_what_a_tool_may_answer(answer: Any, expected: ToolOutcome) -> None:
    assert ToolOutcome.of(answer) == expected


class OneCall:
    """Calls `tool` once, then answers."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.steps = 0

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.steps += 1
        if self.steps == 1:
            return ChatResult("", None, (ToolCall("c1", self.tool, "{}"),), None, "tool_calls")
        return ChatResult("done", None, (), None, "stop")


def stored_result(store: SessionStore, sid: str) -> dict[str, Any]:
    return next(e.data for e in store.events(sid) if e.kind == "tool_result")


def test_a_plugin_result_is_used_as_the_supervisor_normalised_it(tmp_path: Path) -> None:
    async def invoke_plugin(plugin: str, tool: str, arguments: dict[str, Any], **kw: Any) -> ToolOutcome:
        return ToolOutcome("it failed", True)

    catalog = [{"name": "p_tool", "plugin": "p", "parameters": {"type": "object", "properties": {}}}]
    store = SessionStore(tmp_path / "s.db")
    agent = Agent(
        llm=OneCall("p_tool"),
        store=store,
        tools=ToolRegistry(lambda: catalog),
        stages=StageDispatcher(),
        invoke_plugin=invoke_plugin,
    )
    result = asyncio.run(agent.run_turn("go"))
    data = stored_result(store, result.session_id)
    assert (data["content"], data["is_error"], data["status"]) == ("it failed", True, "error")


def test_a_kernel_tool_answer_is_normalised_like_a_plugins(tmp_path: Path) -> None:
    async def handler(arguments: dict[str, Any], invocation: ToolInvocation) -> dict[str, Any]:
        return {"content": 42, "is_error": True}

    tools = ToolRegistry()
    tools.add_kernel_tool(KernelTool("k", "k", handler, {"type": "object", "properties": {}}))
    store = SessionStore(tmp_path / "s.db")
    agent = Agent(llm=OneCall("k"), store=store, tools=tools, stages=StageDispatcher())
    result = asyncio.run(agent.run_turn("go"))
    data = stored_result(store, result.session_id)
    assert (data["content"], data["is_error"], data["status"]) == ("42", True, "error")
