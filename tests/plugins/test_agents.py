"""agents as a real subprocess (the conformance harness), with ``kernel.turns`` served by the test: the child turn's
start as the kernel receives it, its events sent over the plugin's connection as the kernel sends them, and the
cancel of a child whose call was cancelled. tests/e2e/test_agents_e2e.py runs it under `hologram up`.

Mutation checks (done): the cancel of the child in either CancelledError path of the call removed turns its
case of test_a_cancelled_call_cancels_its_child red; the events kept before start's answer (``early``) dropped turns
test_a_child_that_ends_before_start_answers red (the call waits until its bound).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from hologram.base import protocol
from hologram.sdk.testing import PluginHarness
from hologram.testing.conformance import check_conformance
from tests.kit.loop import run
from tests.plugins.helpers import MANIFESTS, err, ok


class Turns:
    """``kernel.turns`` as the kernel serves it: ``start`` answers with a new session and turn; ``end_at_start``
    sends the child's end before the answer (events and answers share the connection, so it can come first)."""

    def __init__(self) -> None:
        self.harness: PluginHarness | None = None
        self.started: list[dict[str, Any]] = []
        self.cancelled: list[dict[str, Any]] = []
        self.changed = asyncio.Event()
        self.end_at_start: str | None = None

    async def start(self, caller: str, **params: Any) -> dict[str, Any]:
        self.started.append({"caller": caller, **params})
        n = len(self.started)
        session, turn = f"child-{n}", f"turn-{n}"
        if self.end_at_start is not None:
            await self.send({"type": "turn.ended", "session": session, "turn": turn, "stop_reason": "answer",
                             "output": self.end_at_start, "steps": 1})  # fmt: skip
        self.changed.set()
        return {"session": session, "turn": turn, "status": "running"}

    def cancel(self, caller: str, **params: Any) -> dict[str, Any]:
        self.cancelled.append(params)
        self.changed.set()
        return {"cancelled": True}

    async def send(self, event: dict[str, Any]) -> None:
        assert self.harness is not None
        await self.harness.plugin.runtime.connection.notify(protocol.TURN_EVENT, event)  # type: ignore[union-attr]

    async def until(self, what: Any, timeout: float = 30) -> None:
        async with asyncio.timeout(timeout):  # a failure bound, not an expected duration
            while not what():
                self.changed.clear()
                await self.changed.wait()


@asynccontextmanager
async def agents(turns: Turns, config: dict[str, Any] | None = None) -> AsyncIterator[PluginHarness]:
    h = PluginHarness.from_manifest(
        MANIFESTS / "agents.toml",
        config=config,
        provide={"kernel.turns": {"start": turns.start, "cancel": turns.cancel}},
    )
    turns.harness = h
    async with h:
        yield h


def test_the_child_runs_in_a_fresh_session_for_its_parent_and_its_answer_comes_back() -> None:
    async def go() -> None:
        turns = Turns()
        async with agents(turns) as h:
            call = asyncio.ensure_future(
                h.call_tool("agent_delegate", {"task": "sum 2+2", "tools": ["code_run", "agent_delegate", " "]},
                            session_id="parent-1")
            )  # fmt: skip
            await turns.until(lambda: turns.started)
            started = turns.started[0]
            assert "session" not in started  # a fresh session
            assert started["parent"] == "parent-1" and started["partner"] == "parent-1"
            assert started["tools"] == ["code_run"]  # never itself: a child cannot delegate
            assert started["max_steps"] == 8 and started["watch"] is True and started["on_disconnect"] == "cancel"
            await turns.send({"type": "content.delta", "session": "child-1", "turn": "turn-1", "text": "4"})
            await turns.send({"type": "turn.ended", "session": "child-1", "turn": "turn-1", "stop_reason": "answer",
                              "output": "4", "steps": 2})  # fmt: skip
            answer = json.loads(ok(await call))
            assert answer == {"answer": "4", "session": "child-1", "stop_reason": "answer", "steps": 2}

    run(go())


def test_a_child_may_not_delegate_again_and_a_failed_child_says_why() -> None:
    async def go() -> None:
        turns = Turns()
        async with agents(turns, config={"max_steps": 3, "tools": ["web"]}) as h:
            call = asyncio.ensure_future(h.call_tool("agent_delegate", {"task": "look"}, session_id="p"))
            await turns.until(lambda: turns.started)
            assert turns.started[0]["tools"] == ["web"] and turns.started[0]["max_steps"] == 3  # the config's
            # a round trip after start's answer: the plugin has read the answer (and so knows the child's session)
            assert "task" in err(await h.call_tool("agent_delegate", {"task": " "}, call_id="c3"))
            nested = await h.call_tool("agent_delegate", {"task": "deeper"}, session_id="child-1", call_id="c2")
            assert "cannot delegate further" in err(nested)
            await turns.send(
                {"type": "turn.error", "session": "child-1", "turn": "turn-1", "message": "all 1 provider failed"}
            )
            await turns.send({"type": "turn.ended", "session": "child-1", "turn": "turn-1", "stop_reason": "error"})
            assert err(await call) == "error: the sub-agent failed: all 1 provider failed (session child-1)"

    run(go())


def test_a_child_that_ends_before_start_answers() -> None:
    async def go() -> None:
        turns = Turns()
        turns.end_at_start = "quick"
        async with agents(turns) as h:
            answer = json.loads(ok(await h.call_tool("agent_delegate", {"task": "t"}, timeout=20)))
            assert answer["answer"] == "quick"

    run(go())


@pytest.mark.parametrize("answered", [False, True], ids=["while-starting", "while-running"])
def test_a_cancelled_call_cancels_its_child(answered: bool) -> None:
    """The parent's Ctrl-C reaches the plugin as ``$/cancel`` of the call: the child is cancelled whether start had
    answered yet or not."""

    async def go() -> None:
        turns = Turns()
        async with agents(turns) as h:
            call = asyncio.ensure_future(h.call_tool("agent_delegate", {"task": "forever"}, timeout=3600))
            await turns.until(lambda: turns.started)
            if answered:  # a round trip: the plugin has read start's answer and waits for the child's end
                assert "task" in err(await h.call_tool("agent_delegate", {"task": " "}, call_id="c2"))
            call.cancel()  # the caller stops waiting: `$/cancel` goes to the plugin
            await turns.until(lambda: turns.cancelled)
            assert turns.cancelled == [{"session": "child-1", "turn": "turn-1"}]

    run(go())


def test_the_conformance_kit_passes() -> None:
    """Every check the kernel relies on, with ``kernel.turns`` stubbed (a start the kernel refuses: the call says
    so instead of waiting for a turn that will not come)."""
    from hologram.rpc import APPLICATION_ERROR, RpcError

    def start(caller: str, **params: Any) -> Any:
        raise RpcError(APPLICATION_ERROR, "the kernel is stopping")

    report = check_conformance(MANIFESTS / "agents.toml", provide={"kernel.turns": {"start": start}})
    assert report.ok, report.render()
