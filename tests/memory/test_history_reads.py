"""A request reads the session log once: the request builder and memory share one `SessionLog`.

Before, every turn read the log for `HistoryCache` (unused when memory is on), again in
`SessionMemory.prepare`, and a third time for the standing cold-context reminder (`cold_ids`).

Mutation checks (done): reading `HistoryCache` whatever memory says (the old ``self.history = ...`` line
in `_Turn._run`) turns `test_a_request_with_memory_reads_the_log_once` red (3 reads for 2 requests); giving
`SessionMemory` a `SessionLog` of its own instead of the agent taking memory's turns
`test_the_agent_and_memory_share_one_log` red; ``held`` counting only what was already in L2 (not this
request's losers) turns `test_held_counts_this_requests_losers` red.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hologram.agent import Agent, KernelTool, ToolInvocation, ToolRegistry
from hologram.agent.turn import COLD_CONTEXT_NOTE
from hologram.llm import ChatRequest, ChatResult, ToolCall
from hologram.memory import session_memory as sm
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore
from hologram.stages import StageDispatcher

from .test_session_memory import long_session, window_for

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


class OneToolRound:
    """A call to ``t``, then a plain answer: two requests per turn. Keeps every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest, on_delta: Any = None) -> ChatResult:
        self.requests.append(request)
        if len(self.requests) % 2:
            return ChatResult("", None, (ToolCall(f"c{len(self.requests)}", "t", '{"x": 1}'),), None, "tool_calls")
        return ChatResult("done", None, (), None, "stop")


def agent_for(store: SessionStore, memory: SessionMemory | None, llm: OneToolRound, window: int = 64_000) -> Agent:
    async def t(arguments: dict[str, Any], invocation: ToolInvocation) -> str:
        return "v"

    tools = ToolRegistry()
    tools.add_kernel_tool(KernelTool("t", "t", t, SCHEMA))
    return Agent(llm=llm, store=store, tools=tools, stages=StageDispatcher(), memory=memory, context_window=window)


def count_reads(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = store.events

    def events(sid: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(sid)
        return real(sid, *args, **kwargs)

    monkeypatch.setattr(store, "events", events)
    return reads


@pytest.mark.parametrize("with_memory", [True, False], ids=["memory", "no-memory"])
def test_a_request_with_memory_reads_the_log_once(
    mem: SessionMemory, monkeypatch: pytest.MonkeyPatch, with_memory: bool
) -> None:
    llm = OneToolRound()
    agent = agent_for(mem.store, mem if with_memory else None, llm)
    asyncio.run(agent.run_turn("warm up", session_id="s"))  # the first look at a session may scan it (repair)
    reads = count_reads(mem.store, monkeypatch)
    asyncio.run(agent.run_turn("go", session_id="s"))
    assert len(llm.requests) == 4
    # memory ranks the log before each request; without it the turn reads the history once and extends it
    assert reads == (["s", "s"] if with_memory else ["s"])


def test_the_agent_and_memory_share_one_log(mem: SessionMemory) -> None:
    agent = agent_for(mem.store, mem, OneToolRound())
    assert agent.history.log is mem.log


def test_the_standing_reminder_counts_what_l2_holds(mem: SessionMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    sid = long_session(mem.store, turns=30)
    llm = OneToolRound()
    agent = agent_for(mem.store, mem, llm, window=window_for(600))
    asyncio.run(agent.run_turn("Tell me about the weather in Lisbon", session_id=sid))
    assert str(llm.requests[0].messages[1].content).startswith("[memory]")  # this request moved events
    held = len(mem.cold_ids(sid))
    assert held > 0
    agent.context_window = window_for(100_000)  # everything fits now: nothing moves ...
    monkeypatch.setattr(sm, "AUTO_RECALL_MIN_SCORE", float("inf"))  # ... and nothing comes back
    asyncio.run(agent.run_turn("and in Porto?", session_id=sid))
    assert llm.requests[2].messages[1].content == COLD_CONTEXT_NOTE.format(n=held)


def test_held_counts_this_requests_losers(mem: SessionMemory) -> None:
    sid = long_session(mem.store, turns=30)
    prepared = asyncio.run(mem.prepare(sid, "Lisbon weather", window_tokens=window_for(600), fixed_tokens=0))
    assert prepared.pruned and prepared.held == len(mem.cold_ids(sid))
    preview = asyncio.run(mem.preview(sid, "passport", window_tokens=window_for(300), fixed_tokens=0))
    assert preview.pruned and preview.held == len(mem.cold_ids(sid))  # a preview moves nothing
