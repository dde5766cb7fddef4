"""agents as a real subprocess (the conformance harness), with ``kernel.turns`` served by the test: the child turn's
start as the kernel receives it, its events sent over the plugin's connection as the kernel sends them, and the
cancel of a child whose call was cancelled. tests/e2e/test_agents_e2e.py runs it under `hologram up`.

Mutation checks (done): the cancel of the child in either CancelledError path of the call removed turns its
case of test_a_cancelled_call_cancels_its_child red; the events kept before start's answer (``early``) dropped turns
test_a_child_that_ends_before_start_answers red (the call waits until its bound); the refusal of a call with a
``parent`` removed turns test_a_child_may_not_delegate_again_and_a_failed_child_says_why red in ~20 s (the nested
call's bound: it starts a grandchild and waits for it), the harness's exit cancelling the call left running.
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
        self.hold: asyncio.Event | None = None  # set: start answers only once it is set

    async def start(self, caller: str, **params: Any) -> dict[str, Any]:
        self.started.append({"caller": caller, **params})
        n = len(self.started)
        session, turn = f"child-{n}", f"turn-{n}"
        if self.end_at_start is not None:
            await self.send({"type": "turn.ended", "session": session, "turn": turn, "stop_reason": "answer",
                             "output": self.end_at_start, "steps": 1})  # fmt: skip
        self.changed.set()
        if self.hold is not None:
            await self.hold.wait()
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
    """The child's call comes as the kernel sends it, with its turn's ``parent``, before start has even answered: the
    refusal rests on the call alone, not on the order in which the plugin reads start's answer and the child's calls
    (it used to look the call's session up among those it had started, and a call read a few loop turns after
    start's answer, before the delegating call resumed on it, started a grandchild: 6 runs of 30 under load; marking
    the session from a done callback of start's task, ab369a5, 5 of 30 in the same hour: the callback runs a loop pass
    after the task's step, and the child's line, read by then, is dispatched in that step's pass)."""

    async def go() -> None:
        turns = Turns()
        turns.hold = asyncio.Event()
        async with agents(turns, config={"max_steps": 3, "tools": ["web"]}) as h:
            call = asyncio.ensure_future(h.call_tool("agent_delegate", {"task": "look"}, session_id="p"))
            await turns.until(lambda: turns.started)
            assert turns.started[0]["tools"] == ["web"] and turns.started[0]["max_steps"] == 3  # the config's
            nested = await h.call_tool(
                "agent_delegate", {"task": "deeper"}, session_id="child-1", parent="p", call_id="c2", timeout=20
            )  # a failure bound: unrefused, it would start a grandchild and wait for it
            assert "cannot delegate further" in err(nested)
            assert len(turns.started) == 1 and not call.done()  # no grandchild; the child's start still unanswered
            turns.hold.set()
            assert "task" in err(await h.call_tool("agent_delegate", {"task": " "}, call_id="c3"))
            await turns.send(
                {"type": "turn.error", "session": "child-1", "turn": "turn-1", "message": "all 1 provider failed"}
            )
            await turns.send({"type": "turn.ended", "session": "child-1", "turn": "turn-1", "stop_reason": "error"})
            assert err(await call) == "error: the sub-agent failed: all 1 provider failed (session child-1)"

    run(go())


def test_the_harness_exit_cancels_a_call_left_running_when_the_test_fails() -> None:
    """A failure in the body is the one reported, at once: the call that will not end (its child never does) is
    cancelled by the harness's exit instead of the exit waiting behind it."""

    class Failed(Exception):
        pass

    async def go() -> None:
        turns = Turns()
        with pytest.raises(Failed):
            async with agents(turns) as h:
                call = asyncio.ensure_future(h.call_tool("agent_delegate", {"task": "forever"}, timeout=3600))
                await turns.until(lambda: turns.started)
                raise Failed
        assert call.cancelled()

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
