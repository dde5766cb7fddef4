"""The memory tools are offered only where they can find something (`KernelTool.offered`).

``coldcontext_query`` searches the calling session's cold context (L2) and ``memory_recall`` the memory graph
(L3). A new session has nothing in L2, and a kernel that never cooled has nothing in L3, yet their schemas
(~1.2 kB) would ride on every request of every new session — a one-word "hello" included (docs/guards.md).
So a request carries ``coldcontext_query`` once L2 holds an event of its session, and ``memory_recall`` once L3
holds anything; a hidden tool stays callable by name.

Mutation checks (done): `ColdStore.remove` not subtracting from the per-session counts fails
`test_cold_store_counts_what_it_holds_per_session` and `test_the_tool_is_offered_once_the_session_has_cold_context`
(the deleted session still "holds" events); `ToolSet` sending hidden schemas fails
`test_a_hidden_kernel_tool_is_not_sent_but_stays_callable`; `offered=self.cold.session_holds` removed from
`SessionMemory.kernel_tool` fails `test_the_tool_is_offered_once_the_session_has_cold_context`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from hologram.agent.tools import KernelTool, ToolRegistry
from hologram.memory.cold.blocks import build_event
from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory
from tests.memory.test_session_memory import long_session, total_tokens, window_for


def _names(registry: ToolRegistry, session: str | None) -> list[str]:
    return [s["function"]["name"] for s in registry.snapshot(session).schemas()]


def test_cold_store_counts_what_it_holds_per_session(tmp_path: Path) -> None:
    store = ColdStore(tmp_path / "cold.db")
    a = [build_event(timestamp=1_700_000_000 + i, input=f"alpha {i}", session="a") for i in range(3)]
    b = build_event(timestamp=1_700_000_100, input="beta", session="b")
    assert not store.session_holds("a")
    store.put([*a, b])
    assert store.session_holds("a") and store.session_holds("b") and not store.session_holds("c")
    store.remove([a[0].id, a[1].id])
    assert store.session_holds("a")  # one left
    store.remove([a[2].id])
    assert not store.session_holds("a") and store.session_holds("b")
    store.close()
    reopened = ColdStore(tmp_path / "cold.db")  # counted again from the file
    assert reopened.session_holds("b") and not reopened.session_holds("a")
    reopened.remove_session("b")
    assert not reopened.session_holds("b")
    reopened.close()


def test_a_hidden_kernel_tool_is_not_sent_but_stays_callable() -> None:
    async def handler(arguments: dict[str, object], invocation: object) -> str:
        return "found"

    registry = ToolRegistry()
    registry.add_kernel_tool(KernelTool("always", "always there", handler))
    registry.add_kernel_tool(KernelTool("lookup", "only for s1", handler, offered=lambda session: session == "s1"))
    assert _names(registry, "s1") == ["always", "lookup"]
    assert _names(registry, "s2") == ["always"]
    hidden = registry.snapshot("s2").get("lookup")
    assert hidden is not None and hidden.hidden  # a model (or script) that calls it by name is still served


def test_the_tool_is_offered_once_the_session_has_cold_context(mem: SessionMemory) -> None:
    registry = ToolRegistry()
    registry.add_kernel_tool(mem.kernel_tool())
    registry.add_kernel_tool(mem.recall_tool())
    sid = long_session(mem.store, turns=30)
    assert _names(registry, sid) == []  # nothing in L2 yet, no graph: neither memory tool is sent
    window = window_for(total_tokens(mem, sid) // 4)
    prepared = asyncio.run(mem.prepare(sid, "the lake house", window_tokens=window, fixed_tokens=0))
    assert prepared.pruned  # the path under test: this request moved events to L2
    assert _names(registry, sid) == ["coldcontext_query"]
    assert _names(registry, "a-new-session") == []  # per session
    removed = asyncio.run(mem.delete(sid))
    assert removed and _names(registry, sid) == []
