"""A kernel process killed (SIGKILL) in the middle of a tool batch leaves a session that loads as a valid
history: the batch's group commit (`SessionStore.deferred`) may lose results finished within
``commit_delay_s`` of the kill, and those calls — like the one still running — get a synthetic error result
when the session is next loaded (`SessionStore.repair`, run by a new turn and by ``sessions/events``).

Mutation checks (done):
- `SessionStore._begin` not starting its commit timer → ``test_killed_mid_batch[timer]`` red: c0/c1,
  finished long before the kill, are lost and come back synthetic.
- `TurnService.read_session` not calling `repair` → the pairing assertion on its answer goes red.
- `Agent.run_turn` not calling `repair` → the strict mock rejects the next turn's request (a tool_calls
  message without a tool message per id), so the next turn fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hologram.agent.service import TurnService
from hologram.sessions import SessionStore, pairing_problems
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .helpers import make_agent

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from hologram.agent import Agent, KernelTool, ToolRegistry
    from hologram.llm import ChatResult, ToolCall
    from hologram.sessions import SessionStore
    from hologram.stages import StageDispatcher

    db, marker, delay = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])

    class LLM:
        async def complete(self, request, on_delta=None):
            calls = tuple(ToolCall(f"c{i}", "t", json.dumps({"x": i})) for i in range(5))
            return ChatResult("", "fan out", calls, None, "tool_calls")

    async def t(arguments, invocation):
        if arguments["x"] == 2:
            marker.write_text("c2 is running")
            await asyncio.Event().wait()  # never returns: the parent kills us here
        return f"v{arguments['x']}"

    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    tools = ToolRegistry()
    tools.add_kernel_tool(KernelTool("t", "t", t, schema, parallel_safe=True))
    store = SessionStore(db, commit_delay_s=delay)
    agent = Agent(llm=LLM(), store=store, tools=tools, stages=StageDispatcher())
    asyncio.run(agent.run_turn("go", session_id="s1"))
    """
)


def committed_results(db: Path) -> list[str]:
    """Call ids of the tool results committed to ``db``, read by a connection of our own (WAL: a reader sees
    what was committed, never the child's open transaction)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as reader:
        rows = reader.execute("SELECT call_id FROM events WHERE kind='tool_result' ORDER BY seq").fetchall()
    return [str(row[0]) for row in rows]


def while_alive(child: subprocess.Popen[str], condition: Callable[[], Any]) -> Callable[[], Any]:
    """`condition`, failing at once with the child's stderr if the child died (it would never come true)."""

    def check() -> Any:
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        return condition()

    return check


def kill_mid_batch(tmp_path: Path, delay: float, committed: list[str]) -> None:
    """Kill the child while c2 blocks, once the results in ``committed`` are on disk."""
    marker = tmp_path / "marker"
    db = tmp_path / "sessions.db"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(marker), str(delay)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(while_alive(child, marker.exists), timeout=30, what="the child to reach the blocking call")
        if committed:
            # the group-commit timer has committed c0 and c1 (c3 and c4 finished but wait behind c2): wait for
            # that to be on disk rather than for a time that a slow machine may not be done in
            wait_until(
                while_alive(child, lambda: committed_results(db)), accept=lambda found: found == committed, timeout=30,
                what=f"the committed results {committed}",
            )  # fmt: skip
        else:
            # nothing may commit within a one-hour delay, however long we wait: this pause only gives a wrongly
            # armed timer (or no deferral at all) the time to commit c0 and c1, which would turn the test red
            time.sleep(0.5)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        if child.stderr:
            child.stderr.close()


@pytest.mark.parametrize(("delay", "real"), [(0.05, ["c0", "c1"]), (3600.0, [])], ids=["timer", "window"])
def test_killed_mid_batch_loads_as_a_valid_history(tmp_path: Path, delay: float, real: list[str]) -> None:
    """``timer``: results finished before the kill were committed by the group-commit timer and survive.
    ``window``: a commit delay longer than the batch — every result of the batch is lost with the process,
    which is the crash-within-the-window case; the session is still valid after repair."""
    kill_mid_batch(tmp_path, delay, real)
    store = SessionStore(tmp_path / "sessions.db")
    events = store.events("s1")
    assert [e.kind for e in events][:2] == ["input", "response"]
    assert [e.call_id for e in events if e.kind == "tool_result"] == real
    assert len(pairing_problems(events)) == 5 - len(real)  # the kill left calls open …
    store.close()

    mock = MockLLM("deepseek")
    with mock:
        agent = make_agent(tmp_path, mock, thinking=True)
        service = TurnService(agent)
        answer = asyncio.run(service.read_session({"session": "s1"}))  # … loading the session closes them
        results: list[dict[str, Any]] = [e for e in answer["events"] if e["kind"] == "tool_result"]
        assert [r["call_id"] for r in results] == ["c0", "c1", "c2", "c3", "c4"]
        assert [r["data"]["content"] for r in results[: len(real)]] == [f"v{i}" for i in range(len(real))]
        assert all(r["data"].get("synthetic") for r in results[len(real) :])
        assert pairing_problems(agent.store.events("s1")) == []
        assert [m["role"] for m in answer["messages"]] == ["user", "assistant", *["tool"] * 5]

        mock.script([{"reasoning_content": "ok", "content": "recovered"}])
        result = asyncio.run(agent.run_turn("again", session_id="s1"))
        assert result.output == "recovered"
        assert mock.rejections == []
        sent = mock.requests[-1].body["messages"]
        assert [m["role"] for m in sent].count("tool") == 5
        agent.store.close()


def test_a_new_turn_repairs_without_a_client_reading_first(tmp_path: Path) -> None:
    kill_mid_batch(tmp_path, 3600.0, [])
    with MockLLM("deepseek") as mock:
        agent = make_agent(tmp_path, mock, thinking=True)
        mock.script([{"reasoning_content": "ok", "content": "recovered"}])
        result = asyncio.run(agent.run_turn("again", session_id="s1"))
        assert result.output == "recovered" and mock.rejections == []
        assert pairing_problems(agent.store.events("s1")) == []
        agent.store.close()
