"""Turn API version 2 end to end (a real `hologram up`, the strict mock, `TurnClient` over the control socket):
items, identity at ``initialize``, several approvals open at once, the partial answer of a cancelled turn.

Mutation checks (done, each turned the named test red): `TurnItems.before` not setting ``event.item`` (the
deltas name no item); `Executor._approve_all` asking one call after another (the second request comes only
after the first is answered); `TurnService._as_initialized` ignoring the capability (the watch with
``approvals: true`` is accepted); `_Turn._complete` not storing the streamed text on a cancel (the session has
no cancelled response).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.rpc import INVALID_PARAMS, NOT_ALLOWED, RpcError
from mock_llm import MockLLM

from .test_approvals_e2e import ApprovalKernel, script_one_call

pytestmark = pytest.mark.slow
SLOW_ANSWER = "".join(f"part{i} 部分{i} " for i in range(400))  # streamed 4 characters a chunk, slowly


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ApprovalKernel]:
    k = ApprovalKernel(tmp_path_factory.mktemp("turnv2"), mock)
    k.start()
    yield k
    k.stop()


async def run_turn(client: TurnClient, text: str, session: str, answer: bool | None = True) -> list[Any]:
    turn = await client.start(text, session=session)
    async with asyncio.timeout(60):
        async for event in turn:
            if isinstance(event, api.ApprovalRequested) and answer is not None:
                await client.approve(event, answer, "yes")
    return turn.events


def test_a_turn_is_items_each_delta_names_its_item_and_completed_items_hold_the_content(
    kernel: ApprovalKernel, mock: MockLLM
) -> None:
    script_one_call(mock, "deploy", "mark-items")

    async def go() -> tuple[list[Any], dict[str, Any], int]:
        async with await TurnClient.connect(kernel.data, client="items", approvals=True) as client:
            events = await run_turn(client, "deploy please", "items-1")
            read = await client.read_turn("items-1", events[0].turn)
            return events, read, client.protocol_version

    events, read, version = asyncio.run(go())
    assert version == 2
    started = {e.item["id"]: e.item for e in events if isinstance(e, api.ItemStarted)}
    completed = {e.item["id"]: e.item for e in events if isinstance(e, api.ItemCompleted)}
    assert started.keys() == completed.keys(), "every item started is completed"
    types = [item["type"] for item in started.values()]
    assert types == ["user_message", "reasoning", "tool_call", "approval", "reasoning", "agent_message"], types
    for event in events:  # each delta, call, result and approval names an item that is open at that moment
        if isinstance(event, (api.ContentDelta, api.ReasoningDelta, api.ToolCallStarted, api.ToolResult)):
            assert event.item in started, event
    by_type = {item["type"]: item for item in completed.values()}
    streamed = "".join(e.text for e in events if isinstance(e, api.ContentDelta))
    assert by_type["agent_message"]["text"] == streamed == "done" == events[-1].output
    assert by_type["user_message"]["text"] == "deploy please"
    assert (by_type["tool_call"]["status"], by_type["tool_call"]["tool"]) == ("ok", "deploy")
    assert (by_type["approval"]["approved"], by_type["approval"]["by"]) == (True, "items")
    assert read["status"] == "ended" and [i["type"] for i in read["items"]] == types
    assert "mark-items" in kernel.received()


def test_a_connection_that_did_not_declare_approvals_is_not_asked_and_cannot_answer(
    kernel: ApprovalKernel, mock: MockLLM
) -> None:
    """Initialized without ``capabilities.approvals``: its watch with ``approvals: true`` is refused, it is not
    sent the request while it watches, and an answer with the request's id (read from the owner) is refused;
    the owner's denial decides and the call never reaches its plugin."""
    script_one_call(mock, "deploy", "mark-undeclared")

    async def go() -> tuple[int, list[Any], int, api.ApprovalResolved]:
        async with (
            await TurnClient.connect(kernel.data, client="owner", approvals=True) as owner,
            await TurnClient.connect(kernel.data, client="bystander") as bystander,
        ):
            with pytest.raises(RpcError) as refused_watch:
                await bystander.connection.request(api.TURN_WATCH, {"session": "guarded-v2", "approvals": True})
            turn = await owner.start("deploy", session="guarded-v2")
            watched = await bystander.watch("guarded-v2")
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ApprovalRequested):
                        with pytest.raises(RpcError) as refused_answer:
                            await bystander.approve(event, True, "not mine")
                        await owner.approve(event, False, "mine")
            async with asyncio.timeout(60):
                async for seen in watched:
                    if isinstance(seen, api.TurnEnded):
                        break
            resolved = next(e for e in turn.events if isinstance(e, api.ApprovalResolved))
            return refused_watch.value.code, watched.events, refused_answer.value.code, resolved

    watch_code, bystander_saw, answer_code, resolved = asyncio.run(go())
    assert watch_code == INVALID_PARAMS
    assert answer_code == NOT_ALLOWED
    assert any(isinstance(e, api.ToolCallStarted) for e in bystander_saw), "it watched the turn"
    assert not any(isinstance(e, api.ApprovalRequested) for e in bystander_saw), "but was not asked"
    assert (resolved.approved, resolved.by) == (False, "owner")
    assert "mark-undeclared" not in kernel.received()


def test_three_calls_of_one_step_are_asked_at_once_and_answered_in_any_order(
    kernel: ApprovalKernel, mock: MockLLM
) -> None:
    calls = [
        {"id": f"m{i}", "name": "deploy", "arguments": json.dumps({"target": f"mark-many-{i}"})} for i in (1, 2, 3)
    ]
    mock.script([{"reasoning_content": "r", "tool_calls": calls}, {"reasoning_content": "r", "content": "done"}])

    async def go() -> tuple[list[Any], list[Any]]:
        async with await TurnClient.connect(kernel.data, client="many", approvals=True) as client:
            turn = await client.start("deploy three", session="many-1")
            open_requests: list[api.ApprovalRequested] = []
            async with asyncio.timeout(60):
                async for event in turn:
                    assert not isinstance(event, api.ApprovalResolved) or len(open_requests) == 3, (
                        "a request was resolved before all three were asked"
                    )
                    if isinstance(event, api.ApprovalRequested):
                        open_requests.append(event)
                        if len(open_requests) == 3:  # all open: answer the last first, then the first, the second
                            by_call = {r.call_id: r for r in open_requests}
                            for call_id, yes in (("m3", True), ("m1", False), ("m2", True)):
                                assert await client.approve(by_call[call_id], yes, "ok" if yes else "no")
            return turn.events, open_requests

    events, requests = asyncio.run(go())
    assert sorted(r.call_id for r in requests) == ["m1", "m2", "m3"]
    results = {e.call_id: e.status for e in events if isinstance(e, api.ToolResult)}
    assert results == {"m1": "denied", "m2": "ok", "m3": "ok"}
    assert sorted(m for m in kernel.received() if m.startswith("mark-many")) == ["mark-many-2", "mark-many-3"]


def test_a_cancelled_turn_keeps_its_partial_answer(kernel: ApprovalKernel, mock: MockLLM) -> None:
    mock.script([{"reasoning_content": "r", "content": SLOW_ANSWER, "chunk_delay": 0.05}])

    async def go() -> tuple[list[Any], dict[str, Any], dict[str, Any]]:
        async with await TurnClient.connect(kernel.data, client="canceller") as client:
            turn = await client.start("say a lot", session="partial-1")
            deltas = 0
            async with asyncio.timeout(60):
                async for event in turn:
                    if isinstance(event, api.ContentDelta):
                        deltas += 1
                        if deltas == 5:
                            assert await client.cancel("partial-1")
            stored = await client.read("partial-1")
            read = await client.read_turn("partial-1", turn.events[0].turn)
            return turn.events, stored, read

    events, stored, read = asyncio.run(go())
    ended = events[-1]
    assert isinstance(ended, api.TurnEnded) and ended.stop_reason == "cancelled"
    seen = "".join(e.text for e in events if isinstance(e, api.ContentDelta))
    assert len(seen) >= 20 and SLOW_ANSWER.startswith(seen) and len(seen) < len(SLOW_ANSWER)
    assert ended.output == seen, "the turn's output is what was streamed before the cancel"
    [message] = [e.item for e in events if isinstance(e, api.ItemCompleted) and e.item["type"] == "agent_message"]
    assert (message["status"], message["text"]) == ("cancelled", seen)
    [response] = [e["data"] for e in stored["events"] if e["kind"] == "response"]
    assert response["cancelled"] is True and SLOW_ANSWER.startswith(response["content"])
    assert response["content"].startswith(seen)  # the kernel may have had a delta more than the client saw
    assert stored["messages"][-1]["role"] == "assistant", "the next request sends the partial answer as said"
    assert read["stop_reason"] == "cancelled" and read["output"] == seen
